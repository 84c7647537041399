//! Timeouts and closing: `client_header_timeout`, `send_timeout`, `lingering_close`.

use std::time::Duration;

use crate::support::{Ending, Instance};

#[test]
fn client_header_timeout_closes_without_a_response() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; client_header_timeout 1s; location / { return 200 ok; } }",
    );
    let mut client = server.connect().with_timeout(Duration::from_secs(10));
    client.write("GET / HTTP/1.1\r\nHost: localhost\r\n");
    client.expect_closed_without_response();
    let line = server.wait_for_error_log("client timed out");
    assert!(
        line.contains(
            "[info]"
        ) && line.contains(
            "client timed out (110: Connection timed out) while reading client request headers, \
             client: 127.0.0.1, server: , request: \"GET / HTTP/1.1\", host: \"localhost\""
        ),
        "{line}"
    );
}

#[test]
fn client_header_timeout_applies_to_an_idle_new_connection() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; client_header_timeout 1s; location / { return 200 ok; } }",
    );
    let mut client = server.connect().with_timeout(Duration::from_secs(10));
    client.expect_closed_without_response();
    let line = server.wait_for_error_log("while waiting for request");
    assert!(
        line.contains("[info]")
            && line.contains(
                "client timed out (110: Connection timed out) while waiting for request, \
                 client: 127.0.0.1, server: 127.0.0.1:"
            ),
        "{line}"
    );
}

#[test]
fn send_timeout_closes_a_client_that_does_not_read() {
    let size = 16 * 1024 * 1024;
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080 sndbuf=32k;
            send_timeout 1s;
            root html;
        }",
    )
    .file("html/big.bin", vec![b'z'; size])
    .start();
    let mut client = server.connect().with_timeout(Duration::from_secs(20));
    client.write("GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let line = server.wait_for_error_log("client timed out");
    assert!(
        line.contains("[info]")
            && line.contains(
                "client timed out (110: Connection timed out) while sending response to client"
            ),
        "{line}"
    );
    let (_, received) = client.wait_closed();
    assert!(
        received.len() < size,
        "the whole file arrived ({} bytes)",
        received.len()
    );
}

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
