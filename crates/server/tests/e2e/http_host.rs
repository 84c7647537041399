//! The Host header: validation and `$host`.

use crate::support::{Instance, get_host};

const ECHO_HOST: &str = "server {
    listen 127.0.0.1:8080;
    server_name example.org;
    location / {
        return 200 \"host=$host\\n\";
    }
}";

#[test]
fn invalid_hosts_are_rejected() {
    let server = Instance::http(ECHO_HOST);
    for host in ["..", "a..b", "a/b", ""] {
        let response = server.request(format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n"));
        assert_eq!(response.status, 400, "for Host: {host:?}");
        assert_eq!(response.header("Connection"), Some("close"));
    }
}

#[test]
fn duplicate_host_is_rejected() {
    let server = Instance::http(ECHO_HOST);
    let response = server.request("GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n");
    assert_eq!(response.status, 400);
}

#[test]
fn http11_without_host_is_rejected() {
    let server = Instance::http(ECHO_HOST);
    assert_eq!(server.request("GET / HTTP/1.1\r\n\r\n").status, 400);
}

#[test]
fn host_is_normalised() {
    let server = Instance::http(ECHO_HOST);
    for (host, expected) in [
        ("Example.COM.", "example.com"),
        ("example.com:8080", "example.com"),
        ("[::1]:80", "[::1]"),
    ] {
        assert_eq!(
            server.request(get_host("/", host)).body_text(),
            format!("host={expected}\n"),
            "for {host}"
        );
    }
}

#[test]
fn host_defaults_to_the_server_name() {
    let server = Instance::http(ECHO_HOST);
    assert_eq!(
        server.request("GET / HTTP/1.0\r\n\r\n").body_text(),
        "host=example.org\n"
    );
}
