//! Keep-alive limits: `keepalive_requests`, `keepalive_timeout`, `keepalive_time`,
//! `keepalive_disable`.

use std::time::{Duration, Instant};

use crate::support::{Ending, Instance, get_keepalive};

const MSIE6: &str = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)";
const SAFARI: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 \
                      (KHTML, like Gecko) Version/14.0 Safari/605.1.15";

#[test]
fn keepalive_requests_limits_one_connection() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; keepalive_requests 3; location / { return 200 ok; } }",
    );
    let mut client = server.connect();
    for _ in 0..2 {
        assert_eq!(
            client.request(get_keepalive("/")).header("Connection"),
            Some("keep-alive")
        );
    }
    assert_eq!(
        client.request(get_keepalive("/")).header("Connection"),
        Some("close")
    );
    assert_eq!(client.wait_closed().0, Ending::Closed);
}

#[test]
fn keepalive_timeout_zero_disables_keepalive() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; keepalive_timeout 0; location / { return 200 ok; } }",
    );
    let mut client = server.connect();
    let response = client.request(get_keepalive("/"));
    assert_eq!(response.header("Connection"), Some("close"));
    assert_eq!(client.wait_closed().0, Ending::Closed);
}

#[test]
fn keepalive_timeout_header() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            location / { return 200 ok; }
            location /header { keepalive_timeout 1s 9; return 200 ok; }
        }",
    );
    let response = server.request(get_keepalive("/header"));
    assert_eq!(response.header("Keep-Alive"), Some("timeout=9"));
    assert_eq!(response.header("Connection"), Some("keep-alive"));
    assert!(!server.request(get_keepalive("/")).has_header("Keep-Alive"));
}

#[test]
fn keepalive_timeout_closes_an_idle_connection() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; keepalive_timeout 1s; location / { return 200 ok; } }",
    );
    let mut client = server.connect().with_timeout(Duration::from_secs(10));
    assert!(client.request(get_keepalive("/")).keeps_alive());
    let idle_since = Instant::now();
    assert_eq!(client.wait_closed(), (Ending::Closed, Vec::new()));
    let idle = idle_since.elapsed();
    assert!(
        idle >= Duration::from_millis(900),
        "closed after {idle:?}, before the timeout"
    );
    assert!(idle < Duration::from_secs(5), "closed after {idle:?}");
}

#[test]
fn keepalive_time_limits_the_life_of_a_connection() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; keepalive_time 1s; location / { return 200 ok; } }",
    );
    let mut client = server.connect();
    assert!(client.request(get_keepalive("/")).keeps_alive());
    // The connection's age is what is under test.
    std::thread::sleep(Duration::from_millis(1200));
    let response = client.request(get_keepalive("/"));
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Connection"), Some("close"));
    assert_eq!(client.wait_closed().0, Ending::Closed);
}

fn request_with_agent(method: &str, agent: &str) -> String {
    format!(
        "{method} / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {agent}\r\nContent-Length: 0\r\n\r\n"
    )
}

#[test]
fn keepalive_disable_msie6_is_the_default_and_concerns_post() {
    let server = Instance::http("server { listen 127.0.0.1:8080; location / { return 200 ok; } }");
    assert_eq!(
        server
            .request(request_with_agent("POST", MSIE6))
            .header("Connection"),
        Some("close")
    );
    assert_eq!(
        server
            .request(request_with_agent("GET", MSIE6))
            .header("Connection"),
        Some("keep-alive")
    );
    assert_eq!(
        server
            .request(request_with_agent("POST", SAFARI))
            .header("Connection"),
        Some("keep-alive")
    );
}

#[test]
fn keepalive_disable_safari() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; keepalive_disable safari; location / { return 200 ok; } }",
    );
    assert_eq!(
        server
            .request(request_with_agent("GET", SAFARI))
            .header("Connection"),
        Some("close")
    );
    assert_eq!(
        server
            .request(request_with_agent("POST", MSIE6))
            .header("Connection"),
        Some("keep-alive")
    );
}

#[test]
fn keepalive_disable_none() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; keepalive_disable none; location / { return 200 ok; } }",
    );
    assert_eq!(
        server
            .request(request_with_agent("POST", MSIE6))
            .header("Connection"),
        Some("keep-alive")
    );
    assert_eq!(
        server
            .request(request_with_agent("GET", SAFARI))
            .header("Connection"),
        Some("keep-alive")
    );
}
