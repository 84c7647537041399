//! `proxy_next_upstream` and its limits (`proxy_next_upstream_tries`,
//! `proxy_next_upstream_timeout`): which failures move a request to the next server, and
//! `proxy_intercept_errors` for an error the upstream answers.

use std::time::Duration;

use crate::support::Instance;
use crate::support::proxy::OK;
use crate::support::upstream::MockUpstream;

#[test]
fn proxy_next_upstream_error_tries_the_next_server_after_a_refused_connect() {
    let mut builder = Instance::http_builder(
        "upstream two { server 127.0.0.1:8082; server 127.0.0.1:8081; }
         log_format up '$upstream_addr $upstream_status';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / { proxy_pass http://two; }
             location /dead { proxy_pass http://127.0.0.1:8082; }
         }",
    );
    let live = builder.port(8081);
    let dead = builder.port(8082);
    let _upstream = MockUpstream::answering(live, OK);
    let server = builder.start();
    let response = server.get("/dead");
    assert_eq!(response.status, 502);
    server.wait_for_error_log(&format!(
        "connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, server\
            : , request: \"GET /dead HTTP/1.1\", upstream: \"http://127.0.0.1:{dead}/dead\""
    ));
    // Round robin starts with the dead server once; the live one answers.
    for _ in 0..2 {
        assert_eq!(server.get("/").status, 200);
    }
    // The failed try is logged first, with the status nginx gives a failed connect.
    server.wait_for_line(
        "logs/up.log",
        &format!("127.0.0.1:{dead}, 127.0.0.1:{live} 502, 200"),
    );
}

#[test]
fn proxy_next_upstream_http_500_and_proxy_intercept_errors() {
    let mut builder = Instance::http_builder(
        "upstream two { server 127.0.0.1:8081; server 127.0.0.1:8082; }
         server {
             listen 127.0.0.1:8080;
             location / { proxy_pass http://two; proxy_next_upstream error http_500; }
             location /intercept { proxy_pass http://127.0.0.1:8081; proxy_intercept_errors on;
                                   error_page 500 = /fallback; }
             location /fallback { return 200 \"fallback $upstream_status\"; }
         }",
    );
    let failing = builder.port(8081);
    let good = builder.port(8082);
    let _failing = MockUpstream::answering(
        failing,
        "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\nfail",
    );
    let _good = MockUpstream::answering(good, OK);
    let server = builder.start();
    for _ in 0..3 {
        assert_eq!(server.get("/").body_text(), "hello");
    }
    assert_eq!(server.get("/intercept").body_text(), "fallback 500");
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
