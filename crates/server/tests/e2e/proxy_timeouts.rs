//! `proxy_connect_timeout`, `proxy_send_timeout` and `proxy_read_timeout`: each ends the
//! exchange with nginx's status and log line for the action that timed out.

use std::time::Duration;

use crate::support::Instance;
use crate::support::proxy::{SIMPLE, proxy_with};
use crate::support::upstream::full_listener;

#[test]
fn proxy_read_timeout_waiting_for_the_head_is_a_504() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if conn.read_request().is_some() {
            std::thread::sleep(Duration::from_secs(3));
        }
    });
    let response = server.get("/stall");
    assert_eq!(response.status, 504);
    server.wait_for_error_log(
        "upstream timed out (110: Connection timed out) while reading response header from upstream",
    );
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

/// A head, then a body that stops halfway: the read timeout ends the response where it
/// stands, whether the body is buffered or passed on as it comes, and the client's
/// connection is closed without the rest.
#[test]
fn proxy_read_timeout_mid_body_closes_the_client_connection() {
    for buffering in ["on", "off"] {
        let (server, _upstream) = proxy_with(
            &format!(
                "server {{
                    listen 127.0.0.1:8080;
                    location / {{
                        proxy_pass http://127.0.0.1:8081;
                        proxy_read_timeout 500ms;
                        proxy_buffering {buffering};
                    }}
                }}"
            ),
            |mut conn| {
                if conn.read_request().is_some() {
                    conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
                    // Stalls until the proxy gives up and closes.
                    let _ = conn.wait_closed(Duration::from_secs(10));
                }
            },
        );
        let started = std::time::Instant::now();
        let mut client = server.connect();
        client.write("GET /stall HTTP/1.1\r\nHost: x\r\n\r\n");
        let (_, received) = client.wait_closed();
        let text = String::from_utf8_lossy(&received);
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{buffering}: {text}");
        assert!(
            text.contains("\r\nContent-Length: 100\r\n"),
            "{buffering}: {text}"
        );
        // Cut short: none or part of the ten bytes sent (nginx 1.22 keeps what it buffered,
        // Portico passes it on), never the hundred announced.
        let (_, body) = text.split_once("\r\n\r\n").unwrap_or_default();
        assert!("only ten b".starts_with(body), "{buffering}: {text}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{buffering}: closed after {:?}",
            started.elapsed()
        );
        let line = server.wait_for_error_log(
            "upstream timed out (110: Connection timed out) while reading upstream, client: 127.0.0.1",
        );
        assert!(line.contains(" [error] "), "{buffering}: {line}");
    }
}
