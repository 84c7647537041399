//! Closing over TCP: `reset_timedout_connection`, `lingering_close` and `lingering_time`.
//! The timeouts themselves (`client_header_timeout`, `client_body_timeout`,
//! `send_timeout`, `keepalive_timeout`) are tested in process, on a paused clock
//! (`crates/http/src/testing/tests.rs`).

use std::time::{Duration, Instant};

use crate::support::proxy::OK;
use crate::support::upstream::MockUpstream;
use crate::support::{Ending, Instance};

const LINGERING: &str = "server {
    listen 127.0.0.1:8080;
    lingering_timeout 1s;
    location /on { return 200 ok; }
    location /off { lingering_close off; return 200 ok; }
    location /always { lingering_close always; return 200 ok; }
}";

/// A request that closes the connection, followed by data the server will not read.
fn request_with_unread_data(path: &str) -> Vec<u8> {
    let mut bytes =
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").into_bytes();
    bytes.extend(std::iter::repeat_n(b'x', 256 * 1024));
    bytes
}

#[test]
fn lingering_close_on_lets_the_client_read_the_response() {
    let server = Instance::http(LINGERING);
    for path in ["/on", "/always"] {
        let mut client = server.connect();
        client.write(request_with_unread_data(path));
        let response = client.read_response();
        assert_eq!(response.body_text(), "ok", "for {path}");
        assert_eq!(
            client.wait_closed(),
            (Ending::Closed, Vec::new()),
            "for {path}"
        );
    }
}

#[test]
fn lingering_close_off_resets() {
    let server = Instance::http(LINGERING);
    let mut client = server.connect();
    client.write(request_with_unread_data("/off"));
    // Unread data in the server's receive buffer makes close() send RST.
    assert_eq!(client.wait_closed().0, Ending::Reset);
}

/// A proxied location reads the whole body before it connects; the client stops halfway.
const BODY_TIMEOUT: &str = "log_format st '$status';
server {
    listen 127.0.0.1:8080;
    access_log logs/st.log st;
    client_body_timeout 1s;
    location / { proxy_pass http://127.0.0.1:8081; }
    location /reset { reset_timedout_connection on; proxy_pass http://127.0.0.1:8081; }
}";

#[test]
fn reset_timedout_connection_resets_after_client_body_timeout() {
    let mut builder = Instance::http_builder(BODY_TIMEOUT);
    let _upstream = MockUpstream::answering(builder.port(8081), OK);
    let server = builder.start();
    let mut client = server.connect().with_timeout(Duration::from_secs(10));
    client.write("POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nabc");
    assert_eq!(client.wait_closed().0, Ending::Reset);
    server.wait_for_line("logs/st.log", "408");
}

#[test]
fn reset_timedout_connection_resets_after_client_header_timeout() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            client_header_timeout 1s;
            reset_timedout_connection on;
            location / { return 200 ok; }
        }",
    );
    let mut client = server.connect().with_timeout(Duration::from_secs(10));
    client.write("GET / HTTP/1.1\r\nHost: localhost\r\n");
    let (ending, received) = client.wait_closed();
    assert!(
        received.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&received)
    );
    assert_eq!(ending, Ending::Reset);
    server.wait_for_error_log("while reading client request headers");
}

#[test]
fn reset_timedout_connection_resets_a_444() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            location /reset { reset_timedout_connection on; return 444; }
            location /close { return 444; }
        }",
    );
    for (path, expected) in [("/reset", Ending::Reset), ("/close", Ending::Closed)] {
        let mut client = server.connect();
        client.write(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"));
        let (ending, received) = client.wait_closed();
        assert!(
            received.is_empty(),
            "{path}: {:?}",
            String::from_utf8_lossy(&received)
        );
        assert_eq!(ending, expected, "{path}");
    }
}

/// `lingering_time` bounds a lingering close even when the client keeps sending: with
/// `lingering_timeout` longer than the pauses between its writes, only the total time
/// ends it.
#[test]
fn lingering_time_limits_a_lingering_close_to_a_busy_client() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            lingering_close always;
            lingering_timeout 5s;
            location /limited { lingering_time 1s; return 200 ok; }
            location /default { return 200 ok; }
        }",
    );
    // How long the server keeps reading after the response, up to `limit`.
    let lingering = |path: &str, limit: Duration| {
        let mut client = server.connect();
        let response = client.request(format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        ));
        assert_eq!(response.body_text(), "ok", "{path}");
        let started = Instant::now();
        // Once the server has closed its socket, the data it is sent is answered with a
        // reset, which makes a later write fail.
        while started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(100));
            if client.try_write("more").is_err() {
                break;
            }
        }
        started.elapsed()
    };
    let limited = lingering("/limited", Duration::from_secs(8));
    // nginx counts `lingering_time` in whole seconds from the response's end.
    assert!(limited < Duration::from_secs(4), "closed after {limited:?}");
    let default = lingering("/default", Duration::from_secs(4));
    assert!(
        default >= Duration::from_secs(4),
        "closed after {default:?}"
    );
}
