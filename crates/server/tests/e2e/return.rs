//! `return`: status only, text, redirects, and 444.

use crate::support::{Instance, get_host};

const RETURNS: &str = "server {
    listen 127.0.0.1:8080;
    default_type text/x-default;
    location /status { return 204; }
    location /text { return 200 \"text for $uri\"; }
    location /forbidden { return 403; }
    location /relative { return 301 /x; }
    location /relative-off { absolute_redirect off; return 301 /x; }
    location /url { return http://example.com/y; }
    location /url-code { return 307 \"http://$host/z\"; }
    location /close { return 444; }
}";

#[test]
fn return_status_only() {
    let server = Instance::http(RETURNS);
    let response = server.get("/status");
    assert_eq!(response.status, 204);
    assert!(response.body.is_empty());
    assert!(!response.has_header("Content-Length"));
}

#[test]
fn return_text_uses_default_type() {
    let server = Instance::http(RETURNS);
    let response = server.get("/text");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Type"), Some("text/x-default"));
    assert_eq!(response.body_text(), "text for /text");
    assert_eq!(response.content_length(), Some("text for /text".len()));
}

#[test]
fn return_text_with_the_default_default_type() {
    let server = Instance::http("server { listen 127.0.0.1:8080; return 200 plain; }");
    assert_eq!(server.get("/").header("Content-Type"), Some("text/plain"));
}

#[test]
fn return_error_code_sends_the_error_page() {
    let server = Instance::http(RETURNS);
    let response = server.get("/forbidden");
    assert_eq!(response.status, 403);
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    assert!(
        response
            .body_text()
            .contains("<title>403 Forbidden</title>")
    );
}

#[test]
fn return_relative_redirect_becomes_absolute() {
    let server = Instance::http(RETURNS);
    let port = server.port();
    let response = server.request(get_host("/relative", "localhost"));
    assert_eq!(response.status, 301);
    assert_eq!(response.reason, "Moved Permanently");
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{port}/x").as_str())
    );
    let response = server.request(get_host("/relative", &format!("localhost:{port}")));
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{port}/x").as_str())
    );
}

#[test]
fn return_relative_redirect_with_absolute_redirect_off() {
    let server = Instance::http(RETURNS);
    assert_eq!(server.get("/relative-off").header("Location"), Some("/x"));
}

#[test]
fn return_url_is_a_302() {
    let server = Instance::http(RETURNS);
    let response = server.get("/url");
    assert_eq!(response.status, 302);
    assert_eq!(response.reason, "Moved Temporarily");
    assert_eq!(response.header("Location"), Some("http://example.com/y"));
}

#[test]
fn return_code_and_url_with_variables() {
    let server = Instance::http(RETURNS);
    let response = server.request(get_host("/url-code", "example.net"));
    assert_eq!(response.status, 307);
    assert_eq!(response.header("Location"), Some("http://example.net/z"));
}

#[test]
fn return_444_closes_without_a_response() {
    let server = Instance::http(RETURNS);
    let mut client = server.connect();
    client.write(crate::support::get("/close"));
    client.expect_closed_without_response();
}

#[test]
fn return_in_server_context() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; return 200 \"server\\n\"; location / { return 200 \"location\\n\"; } }",
    );
    assert_eq!(server.get("/").body_text(), "server\n");
}

#[test]
fn return_408_and_499_close_without_a_response() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080;
            location /t { return 408; } location /c { return 499; } }",
    );
    for target in ["/t", "/c"] {
        let mut client = server.connect();
        client.write(crate::support::get(target));
        client.expect_closed_without_response();
    }
}
