//! The `$upstream_*` and `$proxy_*` variables in an access-log line.

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

#[test]
fn upstream_variables_are_logged() {
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_addr|$upstream_status|$upstream_http_x_id|$upstream_response_length|$proxy_host';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / { proxy_pass http://127.0.0.1:8081; }
         }",
    );
    let port = builder.port(8081);
    let _upstream = MockUpstream::answering(
        port,
        "HTTP/1.1 201 Created\r\nX-Id: 42\r\nContent-Length: 5\r\n\r\nhello",
    );
    let server = builder.start();
    assert_eq!(server.get("/").status, 201);
    server.wait_for_line(
        "logs/up.log",
        &format!("127.0.0.1:{port}|201|42|5|127.0.0.1:{port}"),
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
