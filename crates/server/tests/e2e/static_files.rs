//! Serving files (the basics; the static module has its own tests later): index, 404,
//! directory redirects, `root` and `alias`, HEAD, methods, and types.

use crate::support::log::message_at;
use crate::support::{Instance, get, get_host};

fn files(builder: crate::support::Builder) -> Instance {
    builder
        .file("html/index.html", "<p>index</p>\n")
        .file("html/dir/file.txt", "text file\n")
        .file("html/dir/data.bin", "binary")
        .file("html/dir/noext", "no extension")
        .file("html/dir/sub/index.html", "sub index\n")
        .file("aliased/file.txt", "aliased file\n")
        .start()
}

const STATIC: &str = "
types {
    text/html html;
    text/plain txt;
}
default_type application/x-default;
server {
    listen 127.0.0.1:8080;
    root html;
    location /alias/ { alias aliased/; }
    location /typed/ { alias html/dir/; types { application/x-custom txt; } }
}";

#[test]
fn index_html_for_a_directory() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.get("/");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "<p>index</p>\n");
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    assert_eq!(server.get("/dir/sub/").body_text(), "sub index\n");
}

#[test]
fn missing_file_is_404_with_an_error_line() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.get("/missing.txt");
    assert_eq!(response.status, 404);
    let line = server.wait_for_error_log("missing.txt");
    let message =
        message_at("error", &line).unwrap_or_else(|| panic!("not an [error] line: {line}"));
    let path = server
        .prefix()
        .join("html/missing.txt")
        .display()
        .to_string();
    assert!(
        message.contains(&format!(
            "open() \"{path}\" failed (2: No such file or directory), client: 127.0.0.1"
        )),
        "{line}"
    );
}

#[test]
fn directory_without_slash_redirects() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.request(get_host("/dir", "localhost"));
    assert_eq!(response.status, 301);
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{}/dir/", server.port()).as_str())
    );
    let response = server.request(get_host("/dir?a=b", "localhost"));
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{}/dir/?a=b", server.port()).as_str())
    );
    // Without Host, nginx names the address the client connected to.
    let response = server.request("GET /dir HTTP/1.0\r\n\r\n");
    assert_eq!(
        response.header("Location"),
        Some(format!("http://127.0.0.1:{}/dir/", server.port()).as_str())
    );
}

#[test]
fn directory_without_index_is_forbidden() {
    let server = files(Instance::http_builder(STATIC));
    assert_eq!(server.get("/dir/").status, 403);
    let line = server.wait_for_error_log("directory index of");
    assert!(
        line.contains("[error]") && line.contains("/html/dir/\" is forbidden"),
        "{line}"
    );
}

#[test]
fn root_and_alias() {
    let server = files(Instance::http_builder(STATIC));
    assert_eq!(server.get("/dir/file.txt").body_text(), "text file\n");
    assert_eq!(server.get("/alias/file.txt").body_text(), "aliased file\n");
    assert_eq!(
        server.get("/alias/../index.html").body_text(),
        "<p>index</p>\n"
    );
}

#[test]
fn head_sends_headers_only() {
    let server = files(Instance::http_builder(STATIC));
    let get_response = server.get("/dir/file.txt");
    let mut client = server.connect();
    client.write("HEAD /dir/file.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    client.write(get("/index.html"));
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    for name in ["Content-Length", "Content-Type", "Last-Modified", "ETag"] {
        assert_eq!(head.header(name), get_response.header(name), "{name}");
    }
    assert_eq!(client.read_response().body_text(), "<p>index</p>\n");
}

#[test]
fn post_to_a_file_is_not_allowed() {
    let server = files(Instance::http_builder(STATIC));
    let response = server
        .request("POST /dir/file.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(response.status, 405);
}

#[test]
fn content_type_from_types_and_default_type() {
    let server = files(Instance::http_builder(STATIC));
    assert_eq!(
        server.get("/dir/file.txt").header("Content-Type"),
        Some("text/plain")
    );
    assert_eq!(
        server.get("/dir/data.bin").header("Content-Type"),
        Some("application/x-default")
    );
    assert_eq!(
        server.get("/dir/noext").header("Content-Type"),
        Some("application/x-default")
    );
    assert_eq!(
        server.get("/typed/file.txt").header("Content-Type"),
        Some("application/x-custom")
    );
}

#[test]
fn file_headers() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.get("/dir/file.txt");
    assert_eq!(response.content_length(), Some("text file\n".len()));
    let etag = response.header("ETag").unwrap();
    assert!(
        crate::support::log::matches(r#"^"[0-9a-f]+-a"$"#, etag),
        "ETag: {etag}"
    );
    assert!(response.has_header("Last-Modified"));
}
