//! The request target: percent-decoding, dot segments, `merge_slashes`, the absolute form,
//! and targets that would climb above the root.

use crate::support::Instance;

const ECHO: &str = "server {
    listen 127.0.0.1:8080;
    location / {
        return 200 \"uri=$uri args=$args\\n\";
    }
}";

fn uri_of(server: &Instance, target: &str) -> (u16, String) {
    let response = server.request(format!("GET {target} HTTP/1.0\r\n\r\n"));
    (response.status, response.body_text())
}

#[test]
fn dot_segments_are_resolved() {
    let server = Instance::http(ECHO);
    for (target, uri) in [
        ("/a/../b", "/b"),
        ("/a/./b/.", "/a/b/"),
        ("/a/..", "/"),
        ("/a/b/%2E%2E/c", "/a/c"),
        ("/%41%2F/./b/.", "/A/b/"),
    ] {
        assert_eq!(
            uri_of(&server, target),
            (200, format!("uri={uri} args=\n")),
            "for {target}"
        );
    }
}

#[test]
fn climbing_above_the_root_is_rejected() {
    let server = Instance::http(ECHO);
    for target in [
        "/../x",
        "/%2e%2e/x",
        "/a/%2e%2e/%2e%2e/x",
        "/%2e%2e",
        "/..%2f",
        "/a%2f..%2f..%2fb",
    ] {
        assert_eq!(uri_of(&server, target).0, 400, "for {target}");
    }
}

#[test]
fn encoded_nul_and_bad_escapes_are_rejected() {
    let server = Instance::http(ECHO);
    for target in ["/a%00b", "/%00", "/a%zz"] {
        assert_eq!(uri_of(&server, target).0, 400, "for {target}");
    }
}

#[test]
fn query_string_is_kept_apart() {
    let server = Instance::http(ECHO);
    assert_eq!(
        uri_of(&server, "/a%20b?b=%2e&c"),
        (200, "uri=/a b args=b=%2e&c\n".to_owned())
    );
    assert_eq!(uri_of(&server, "/a?"), (200, "uri=/a args=\n".to_owned()));
}

#[test]
fn merge_slashes_on_by_default() {
    let server = Instance::http(ECHO);
    assert_eq!(
        uri_of(&server, "//a///b"),
        (200, "uri=/a/b args=\n".to_owned())
    );
}

#[test]
fn merge_slashes_off() {
    let server = Instance::http(&ECHO.replace(
        "listen 127.0.0.1:8080;",
        "listen 127.0.0.1:8080; merge_slashes off;",
    ));
    assert_eq!(
        uri_of(&server, "//a///b"),
        (200, "uri=//a///b args=\n".to_owned())
    );
}

#[test]
fn absolute_form_target() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; location / { return 200 \"uri=$uri host=$host\\n\"; } }",
    );
    let response = server.request(
        "GET http://abs.example/p?q HTTP/1.1\r\nHost: header.example\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(response.body_text(), "uri=/p host=abs.example\n");
}
