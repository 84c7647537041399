//! `add_header`: inheritance across levels, `always`, status codes, empty values.

use crate::support::Instance;

const HEADERS: &str = "
add_header X-Http http;
server {
    listen 127.0.0.1:8080;
    location /inherits-http { return 200 ok; }
}
server {
    listen 127.0.0.1:8081;
    add_header X-Server server;
    add_header X-Server-Second second;
    location /inherits-server { return 200 ok; }
    location /own {
        add_header X-Location location;
        add_header X-Empty \"\";
        add_header X-Always always always;
        return 200 ok;
    }
    location /not-found {
        add_header X-Always always always;
        add_header X-Not-Always not;
        return 404;
    }
    location /redirect { add_header X-Location location; return 302 /elsewhere; }
    location /server-error { add_header X-Location location; return 500; }
}";

fn response_to(server: &Instance, nominal: u16, path: &str) -> crate::support::Response {
    server.request_to(nominal, crate::support::get(path))
}

#[test]
fn inherited_from_http_level() {
    let server = Instance::http(HEADERS);
    let response = response_to(&server, 8080, "/inherits-http");
    assert_eq!(response.header("X-Http"), Some("http"));
}

#[test]
fn a_level_with_its_own_list_replaces_the_outer_list() {
    let server = Instance::http(HEADERS);
    let response = response_to(&server, 8081, "/inherits-server");
    assert_eq!(response.header("X-Server"), Some("server"));
    assert_eq!(response.header("X-Server-Second"), Some("second"));
    assert!(!response.has_header("X-Http"));
    let response = response_to(&server, 8081, "/own");
    assert_eq!(response.header("X-Location"), Some("location"));
    assert!(!response.has_header("X-Server"));
    assert!(!response.has_header("X-Http"));
}

#[test]
fn headers_follow_the_response_headers_in_order() {
    let server = Instance::http(HEADERS);
    let response = response_to(&server, 8081, "/inherits-server");
    let names: Vec<&str> = response
        .headers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    let server_index = names.iter().position(|name| *name == "X-Server").unwrap();
    assert_eq!(names[server_index + 1], "X-Server-Second");
    assert!(
        names
            .iter()
            .position(|name| *name == "Content-Length")
            .unwrap()
            < server_index
    );
}

#[test]
fn empty_value_is_not_sent() {
    let server = Instance::http(HEADERS);
    assert!(!response_to(&server, 8081, "/own").has_header("X-Empty"));
}

#[test]
fn always_adds_to_error_responses() {
    let server = Instance::http(HEADERS);
    let response = response_to(&server, 8081, "/not-found");
    assert_eq!(response.status, 404);
    assert_eq!(response.header("X-Always"), Some("always"));
    assert!(!response.has_header("X-Not-Always"));
    assert_eq!(
        response_to(&server, 8081, "/own").header("X-Always"),
        Some("always")
    );
}

#[test]
fn added_to_redirects_but_not_to_server_errors() {
    let server = Instance::http(HEADERS);
    let redirect = response_to(&server, 8081, "/redirect");
    assert_eq!(redirect.status, 302);
    assert_eq!(redirect.header("X-Location"), Some("location"));
    let error = response_to(&server, 8081, "/server-error");
    assert_eq!(error.status, 500);
    assert!(!error.has_header("X-Location"));
}
