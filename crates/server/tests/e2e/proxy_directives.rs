//! The `proxy_*` directives one at a time: `proxy_redirect` rules, `proxy_next_upstream`
//! limits, request bodies, timeouts and the `$upstream_*` variables in a log line.

use std::time::Duration;

use crate::proxy::{OK, proxy_with, redirect_answer};
use crate::support::Instance;
use crate::support::upstream::MockUpstream;

#[test]
fn proxy_redirect_off_prefix_and_regex_rules() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            absolute_redirect off;
            location /off/ { proxy_pass http://127.0.0.1:8081/inner/; proxy_redirect off; }
            location /one/ {
                proxy_pass http://127.0.0.1:8081;
                proxy_redirect http://upstream/one/ /two/;
            }
            location /regex/ {
                proxy_pass http://127.0.0.1:8081;
                proxy_redirect ~^http://[^/]+(/.*)$ $1;
            }
        }",
    );
    let port = builder.port(8081);
    let _upstream = MockUpstream::start(port, move |mut conn| {
        while let Some(request) = conn.read_request() {
            let text = String::from_utf8_lossy(&request).into_owned();
            let path = text.split(' ').nth(1).unwrap_or_default().to_owned();
            conn.write(redirect_answer(&path, port));
        }
    });
    let server = builder.start();
    let location = |path: &str| {
        let response = server.get(path);
        assert_eq!(response.status, 302, "{path}");
        response.header("Location").unwrap_or_default().to_owned()
    };
    // `off`: what `default` would have rewritten to `/off/next` is passed as it came.
    assert_eq!(
        location("/off/next"),
        format!("http://127.0.0.1:{port}/inner/next")
    );
    // A prefix rule replaces the prefix of `Location` and of `Refresh`'s URL.
    let response = server.get("/one/x");
    assert_eq!(response.header("Location"), Some("/two/x?y=1"));
    assert_eq!(response.header("Refresh"), Some("3; url=/two/r"));
    // An explicit rule replaces `default`: the upstream's own URL is no longer rewritten.
    assert_eq!(
        location("/one/other"),
        format!("http://127.0.0.1:{port}/one/other")
    );
    // A regex rule replaces the whole value with its replacement, captures filled in.
    assert_eq!(location("/regex/x"), "/path/q?z");
    assert_eq!(location("/regex/none"), "/relative/kept");
}

#[test]
fn proxy_next_upstream_tries_limits_the_servers_tried() {
    let mut builder = Instance::http_builder(
        "upstream limited { server 127.0.0.1:8082; server 127.0.0.1:8083; }
         upstream every { server 127.0.0.1:8084; server 127.0.0.1:8085; }
         log_format up '$uri $upstream_addr|$upstream_status';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location /limited { proxy_pass http://limited; proxy_next_upstream_tries 1; }
             location /every { proxy_pass http://every; }
         }",
    );
    let [first, second, third, fourth] = [8082, 8083, 8084, 8085].map(|port| builder.port(port));
    let server = builder.start();
    assert_eq!(server.get("/limited").status, 502);
    assert_eq!(server.get("/every").status, 502);
    // One try: the first server only, one connect error.
    let limited = server.wait_for_line("logs/up.log", "/limited ");
    assert_eq!(limited, format!("/limited 127.0.0.1:{first}|502"));
    // Without the limit both servers of the group are tried.
    let every = server.wait_for_line("logs/up.log", "/every ");
    assert_eq!(
        every,
        format!("/every 127.0.0.1:{third}, 127.0.0.1:{fourth}|502, 502")
    );
    server.wait_for_error_log(&format!("upstream: \"http://127.0.0.1:{fourth}/every\""));
    assert!(
        !server
            .error_log()
            .contains(&format!("upstream: \"http://127.0.0.1:{second}/")),
        "{}",
        server.error_log()
    );
}

#[test]
fn proxy_next_upstream_timeout_stops_trying_other_servers() {
    let mut builder = Instance::http_builder(
        "upstream limited { server 127.0.0.1:8081; server 127.0.0.1:8082; }
         upstream unlimited { server 127.0.0.1:8081; server 127.0.0.1:8082; }
         log_format up '$uri $upstream_addr|$upstream_status';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             proxy_read_timeout 500ms;
             location /limited { proxy_pass http://limited; proxy_next_upstream_timeout 200ms; }
             location /unlimited { proxy_pass http://unlimited; }
         }",
    );
    let stalled = builder.port(8081);
    let live = builder.port(8082);
    let _stalled = MockUpstream::start(stalled, |mut conn| {
        if conn.read_request().is_some() {
            let _ = conn.wait_closed(Duration::from_secs(5));
        }
    });
    let live_upstream = MockUpstream::answering(live, OK);
    let server = builder.start();
    // The stalled server's read timeout comes after the 200 ms: no other server is tried.
    assert_eq!(server.get("/limited").status, 504);
    assert_eq!(live_upstream.connections(), 0);
    server.wait_for_line("logs/up.log", &format!("/limited 127.0.0.1:{stalled}|504"));
    // Without the limit the timeout moves on to the live server.
    assert_eq!(server.get("/unlimited").body_text(), "hello");
    server.wait_for_line(
        "logs/up.log",
        &format!("/unlimited 127.0.0.1:{stalled}, 127.0.0.1:{live}|504, 200"),
    );
}

#[test]
fn proxy_pass_request_body_off_sends_no_body() {
    let after_head = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = std::sync::Arc::clone(&after_head);
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / { proxy_pass http://127.0.0.1:8081; proxy_pass_request_body off; }
        }",
        move |mut conn| {
            if conn.read_head().is_some() {
                conn.write(OK);
                let rest = conn.read_to_close(std::time::Duration::from_secs(5));
                *seen.lock().unwrap() = Some(rest);
            }
        },
    );
    let response = server.request(
        "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\nConnection: close\r\n\r\nthe body!",
    );
    assert_eq!(response.status, 200);
    // As nginx does, the client's `Content-Length` goes with the head, and no body follows
    // (configurations add `proxy_set_header Content-Length ""`).
    let request = &upstream.requests()[0];
    assert!(request.starts_with("POST /p HTTP/1.0\r\n"), "{request}");
    assert!(request.contains("\r\nContent-Length: 9\r\n"), "{request}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let rest = loop {
        if let Some(rest) = after_head.lock().unwrap().take() {
            break rest;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream saw no close"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
}

#[test]
fn proxy_request_buffering_off_passes_the_body_intact() {
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_request_buffering off;
                proxy_http_version 1.1;
            }
        }",
        |mut conn| {
            while conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    let body = "0123456789abcdef".repeat(4096);
    // A length-delimited body written in pieces, and a chunked one.
    let mut client = server.connect();
    let head = format!(
        "POST /length HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    client.write_pieces(
        &[
            head.as_bytes(),
            &body.as_bytes()[..1000],
            &body.as_bytes()[1000..],
        ],
        Duration::from_millis(50),
    );
    assert_eq!(client.read_response().status, 200);
    let response = client.request(
        "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\
            \r\n2\r\nde\r\n0\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests[0].contains(&format!("Content-Length: {}\r\n", body.len())),
        "{}",
        requests[0]
    );
    assert!(requests[0].ends_with(&format!("\r\n\r\n{body}")));
    // The chunked body is passed on chunked; the chunks carry the same bytes.
    let chunked = &requests[1];
    assert!(
        chunked.contains("Transfer-Encoding: chunked\r\n"),
        "{chunked}"
    );
    let (_, framed) = chunked.split_once("\r\n\r\n").unwrap_or_default();
    assert_eq!(dechunk(framed), "abcde", "{chunked}");
}

/// The data of a chunked body.
fn dechunk(mut framed: &str) -> String {
    let mut data = String::new();
    while let Some((size, rest)) = framed.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        data.push_str(&rest[..size]);
        framed = &rest[size + 2..];
    }
    data
}

/// A listener on `port` whose accept queue is full: it never accepts, and one connection
/// already waits in a queue of one, so the kernel drops further SYNs and a connect hangs.
/// Returns the listener and the waiting connection, to be kept open.
fn full_listener(port: u16) -> (rustix::fd::OwnedFd, std::net::TcpStream) {
    use rustix::net::{AddressFamily, SocketType};
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let listener = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None)
        .expect("a listening socket");
    rustix::net::sockopt::set_socket_reuseaddr(&listener, true).expect("SO_REUSEADDR");
    rustix::net::bind(&listener, &address).expect("bind the full listener");
    rustix::net::listen(&listener, 0).expect("listen with a backlog of 0");
    let waiting = std::net::TcpStream::connect(address).expect("the first connection is queued");
    // The queue is full when a second connect from here gets no answer.
    assert!(
        std::net::TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err(),
        "the accept queue should be full"
    );
    (listener, waiting)
}

#[test]
fn proxy_connect_timeout_ends_a_hanging_connect_with_504() {
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_addr|$upstream_status|$upstream_connect_time';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / { proxy_pass http://127.0.0.1:8081; proxy_connect_timeout 300ms; }
         }",
    );
    let port = builder.port(8081);
    let _full = full_listener(port);
    let server = builder.start();
    let started = std::time::Instant::now();
    assert_eq!(server.get("/").status, 504);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    server.wait_for_error_log(&format!(
        "upstream timed out (110: Connection timed out) while connecting to upstream, client: 127.0.0.1, \
         server: , request: \"GET / HTTP/1.1\", upstream: \"http://127.0.0.1:{port}/\""
    ));
    server.wait_for_line("logs/up.log", &format!("127.0.0.1:{port}|504|-"));
}

#[test]
fn proxy_send_timeout_ends_a_stalled_request_with_504() {
    // The upstream reads nothing: once the socket buffers are full the body cannot be sent.
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            client_max_body_size 64m;
            location / { proxy_pass http://127.0.0.1:8081; proxy_send_timeout 300ms; }
        }",
        |_conn| std::thread::sleep(Duration::from_secs(5)),
    );
    let body = vec![b'x'; 32 << 20];
    let mut request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    assert_eq!(server.request(request).status, 504);
    assert_eq!(upstream.connections(), 1);
    server.wait_for_error_log(
        "upstream timed out (110: Connection timed out) while sending request to upstream",
    );
}

#[test]
fn upstream_timing_and_byte_variables_are_logged() {
    let answer = "HTTP/1.1 200 OK\r\nSet-Cookie: other=1\r\nSet-Cookie: sid=abc123; Path=/\r\n\
                  Content-Length: 5\r\n\r\nhello";
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_response_time|$upstream_connect_time|$upstream_header_time|\
$upstream_bytes_received|$upstream_bytes_sent|$upstream_cookie_sid|$upstream_cookie_none|$proxy_port';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / { proxy_pass http://127.0.0.1:8081; }
         }",
    );
    let port = builder.port(8081);
    let upstream = MockUpstream::answering(port, answer);
    let server = builder.start();
    assert_eq!(server.get("/vars").body_text(), "hello");
    let line = server.wait_for_line("logs/up.log", "|abc123|");
    let fields: Vec<&str> = line.split('|').collect();
    assert_eq!(fields.len(), 8, "{line}");
    for time in &fields[..3] {
        assert!(
            crate::support::log::matches(r"^\d+\.\d{3}$", time),
            "{line}"
        );
    }
    let sent = upstream.requests()[0].len();
    assert_eq!(
        fields[3..],
        [
            answer.len().to_string().as_str(),
            sent.to_string().as_str(),
            "abc123",
            "-",
            port.to_string().as_str()
        ],
        "{line}"
    );
}

#[test]
fn request_body_file_names_the_kept_body_file() {
    let (server, upstream) = proxy_with(
        "log_format file '$request_body_file';
         server {
             listen 127.0.0.1:8080;
             access_log logs/file.log file;
             location / { proxy_pass http://127.0.0.1:8081; client_body_in_file_only on; }
         }",
        |mut conn| {
            while conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    let response = server.request(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nConnection: close\r\n\r\nin the file",
    );
    assert_eq!(response.status, 200);
    assert!(upstream.requests()[0].ends_with("\r\n\r\nin the file"));
    let path = server.wait_for_line("logs/file.log", "/");
    let prefix = server.prefix().path().display().to_string();
    assert!(path.starts_with(&prefix), "{path}");
    // `on` keeps the file after the request.
    assert_eq!(
        std::fs::read_to_string(&path).ok().as_deref(),
        Some("in the file")
    );
}
