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

const OWN_FIELDS: &str = "
server {
    listen 127.0.0.1:8080;
    root html;
    location /etag { add_header ETag foo; }
    location /etag_removed { add_header ETag ''; }
    location /set_then_removed { add_header ETag foo always; add_header ETag '' always; }
    location /last_modified {
        add_header X-Before 1;
        add_header Last-Modified 'Mon, 28 Sep 1970 06:00:00 GMT';
    }
    location /last_modified_removed { add_header Last-Modified ''; }
    location /added { add_header X-A a; add_header ETag bar; return 200 x; }
}";

fn own_fields() -> Instance {
    let mut builder = Instance::http_builder(OWN_FIELDS);
    for name in [
        "etag",
        "etag_removed",
        "set_then_removed",
        "last_modified",
        "last_modified_removed",
    ] {
        builder = builder.file(&format!("html/{name}"), "x");
    }
    builder.start()
}

fn header_names(response: &crate::support::Response) -> Vec<&str> {
    response
        .headers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect()
}

#[test]
fn etag_is_replaced_or_removed_not_added_twice() {
    let server = own_fields();
    let replaced = server.get("/etag");
    assert_eq!(replaced.header_all("ETag"), vec!["foo"]);
    let names = header_names(&replaced);
    let etag_at = names.iter().position(|name| *name == "ETag").unwrap();
    assert_eq!(names[etag_at - 1], "Connection", "replaced where it was");
    assert!(!server.get("/etag_removed").has_header("ETag"));
    assert!(!server.get("/set_then_removed").has_header("ETag"));
    // A response without an ETag gets one where the add_header is.
    let added = server.get("/added");
    let names = header_names(&added);
    let a_at = names.iter().position(|name| *name == "X-A").unwrap();
    assert_eq!(names[a_at + 1], "ETag");
    assert_eq!(added.header_all("ETag"), vec!["bar"]);
}

#[test]
fn last_modified_is_replaced_or_removed() {
    let server = own_fields();
    let replaced = server.get("/last_modified");
    assert_eq!(
        replaced.header_all("Last-Modified"),
        vec!["Mon, 28 Sep 1970 06:00:00 GMT"]
    );
    let names = header_names(&replaced);
    let before_at = names.iter().position(|name| *name == "X-Before").unwrap();
    assert_eq!(names[before_at + 1], "Last-Modified");
    let removed = server.get("/last_modified_removed");
    assert!(!removed.has_header("Last-Modified"));
    assert!(removed.has_header("ETag"));
}

#[test]
fn sent_http_joins_every_field_of_a_name() {
    let server = Instance::http(
        r#"
log_format cc "$uri: $sent_http_cache_control|$sent_http_x_none|$arg_";
server {
    listen 127.0.0.1:8080;
    access_log logs/cc.log cc;
    location /set {
        add_header Cache-Control max-age=3600;
        add_header Cache-Control "";
        add_header Cache-Control private;
        add_header Cache-Control must-revalidate;
        return 200 OK;
    }
}"#,
    );
    let response = server.get("/set?=bare");
    assert_eq!(
        response.header_all("Cache-Control"),
        vec!["max-age=3600", "private", "must-revalidate"]
    );
    let line = server.wait_for_line("logs/cc.log", "/set");
    assert_eq!(line, "/set: max-age=3600, private, must-revalidate|-|-");
}
