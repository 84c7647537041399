//! Head size limits (`client_header_buffer_size`, `large_client_header_buffers`,
//! `max_headers`) and header-name rules (`ignore_invalid_headers`, `underscores_in_headers`).

use crate::support::{Instance, get};

const LIMITED: &str = "server {
    listen 127.0.0.1:8080;
    client_header_buffer_size 64;
    large_client_header_buffers 2 1k;
    location / {
        return 200 \"x=$http_x_test\\n\";
    }
}";

#[test]
fn request_line_too_long() {
    let server = Instance::http(LIMITED);
    let mut client = server.connect();
    let response = client.request(format!(
        "GET /{} HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "a".repeat(1100)
    ));
    assert_eq!(response.status, 414);
    assert_eq!(response.reason, "Request-URI Too Large");
    assert_eq!(response.header("Connection"), Some("close"));
    client.wait_closed();
}

#[test]
fn request_line_within_a_large_buffer() {
    let server = Instance::http(LIMITED);
    let response = server.request(get(&format!("/{}", "a".repeat(900))));
    assert_eq!(response.status, 200);
}

#[test]
fn header_line_too_long() {
    let server = Instance::http(LIMITED);
    for name in ["X-Test", "Cookie"] {
        let response = server.request(format!(
            "GET / HTTP/1.1\r\nHost: localhost\r\n{name}: {}\r\n\r\n",
            "b".repeat(1100)
        ));
        assert_eq!(response.status, 400, "for a long {name}");
        assert_eq!(response.reason, "Bad Request");
        let body = response.body_text();
        assert!(
            body.contains("<title>400 Request Header Or Cookie Too Large</title>"),
            "{body}"
        );
        assert!(
            body.contains("<center>Request Header Or Cookie Too Large</center>"),
            "{body}"
        );
    }
}

#[test]
fn header_lines_filling_every_buffer() {
    let server = Instance::http(LIMITED);
    let lines: String = (0..4)
        .map(|index| format!("X-Fill-{index}: {}\r\n", "c".repeat(600)))
        .collect();
    let response = server.request(format!("GET / HTTP/1.1\r\nHost: localhost\r\n{lines}\r\n"));
    assert_eq!(response.status, 400);
    assert!(
        response
            .body_text()
            .contains("Request Header Or Cookie Too Large")
    );
}

#[test]
fn header_lines_within_the_large_buffers() {
    let server = Instance::http(LIMITED);
    let response = server.request(format!(
        "GET / HTTP/1.1\r\nHost: localhost\r\nX-Test: {}\r\nConnection: close\r\n\r\n",
        "d".repeat(900)
    ));
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), format!("x={}\n", "d".repeat(900)));
}

#[test]
fn max_headers() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; max_headers 3; location / { return 200 ok; } }",
    );
    let ok = server.request("GET / HTTP/1.0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n");
    assert_eq!(ok.status, 200);
    let too_many = server.request("GET / HTTP/1.0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n");
    assert_eq!(too_many.status, 400);
    assert!(
        too_many
            .body_text()
            .contains("Request Header Or Cookie Too Large")
    );
}

const UNDERSCORE: &str = "GET / HTTP/1.0\r\nHost: localhost\r\nX_Test: 1\r\n\r\n";

#[test]
fn invalid_headers_are_ignored_by_default() {
    let server = Instance::http(LIMITED);
    let response = server.request(UNDERSCORE);
    assert_eq!(response.body_text(), "x=\n");
    let line = server.wait_for_error_log("client sent invalid header line");
    assert!(
        line.contains("[info]")
            && line.contains(
                "client sent invalid header line: \"X_Test: 1\" while reading client request headers, \
                 client: 127.0.0.1, server: , request: \"GET / HTTP/1.0\", host: \"localhost\""
            ),
        "{line}"
    );
}

#[test]
fn ignore_invalid_headers_off() {
    let server = Instance::http(&LIMITED.replace(
        "listen 127.0.0.1:8080;",
        "listen 127.0.0.1:8080; ignore_invalid_headers off;",
    ));
    assert_eq!(server.request(UNDERSCORE).body_text(), "x=1\n");
}

#[test]
fn underscores_in_headers_on() {
    let server = Instance::http(&LIMITED.replace(
        "listen 127.0.0.1:8080;",
        "listen 127.0.0.1:8080; underscores_in_headers on;",
    ));
    assert_eq!(server.request(UNDERSCORE).body_text(), "x=1\n");
}

#[test]
fn header_rules_follow_the_server_chosen_by_host() {
    // Headers after Host are read with the settings of the server Host selects, as nginx
    // switches to the virtual server as soon as it has read Host.
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; location / { return 200 \"default x=$http_x_test\\n\"; } }
         server {
             listen 127.0.0.1:8080;
             server_name underscores.example;
             underscores_in_headers on;
             location / { return 200 \"named x=$http_x_test\\n\"; }
         }",
    );
    let response =
        server.request("GET / HTTP/1.0\r\nHost: underscores.example\r\nX_Test: 1\r\n\r\n");
    assert_eq!(response.body_text(), "named x=1\n");
}
