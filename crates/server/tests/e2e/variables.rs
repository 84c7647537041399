//! Variables the other families' tests do not cover: `$request_id`, `$remote_user`,
//! `$request_port`, `$document_root`, `$realpath_root`, `$request_filename`, `$pipe`,
//! `$limit_rate` and `set $limit_rate`. nginx 1.22 gives the same answers, except that it
//! has no `$request_port` (added in nginx 1.29).

use crate::support::{Client, Instance};

const VARIABLES: &str = r#"
server {
    listen 127.0.0.1:8080;
    server_name localhost;
    root %%PREFIX%%/html;

    location /id {
        add_header X-Id-Again $request_id;
        return 200 $request_id;
    }
    location /user { return 200 "[$remote_user]"; }
    location /port { return 200 "[$is_request_port$request_port]"; }
    location /roots/ {
        root %%PREFIX%%/$arg_site;
        return 200 "$document_root|$realpath_root|$request_filename";
    }
    location /alias/ {
        alias %%PREFIX%%/html/;
        return 200 "$request_filename";
    }
    location /rate {
        set $limit_rate 4k;
        return 200 "$limit_rate";
    }
    location /bad-rate {
        set $limit_rate lots;
        return 200 "$limit_rate";
    }
}
"#;

fn started() -> Instance {
    let server = Instance::http_builder(VARIABLES)
        .file("html/index.html", "x")
        .file("site-real/f.txt", "y")
        .start();
    std::os::unix::fs::symlink(
        server.prefix().join("site-real"),
        server.prefix().join("site-link"),
    )
    .expect("symlink");
    server
}

#[test]
fn request_id_is_random_hex_and_the_same_within_a_request() {
    let server = started();
    let first = server.get("/id");
    let id = first.body_text();
    assert_eq!(id.len(), 32);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(first.header("X-Id-Again"), Some(id.as_str()));
    assert_ne!(server.get("/id").body_text(), id);
}

#[test]
fn remote_user_comes_from_basic_authorization() {
    let server = started();
    let request = |authorization: &str| {
        server
            .request(format!(
                "GET /user HTTP/1.1\r\nHost: localhost\r\nAuthorization: {authorization}\r\n\
                 Connection: close\r\n\r\n"
            ))
            .body_text()
    };
    // "alice:secret"
    assert_eq!(request("Basic YWxpY2U6c2VjcmV0"), "[alice]");
    assert_eq!(request("basic   YWxpY2U6c2VjcmV0"), "[alice]");
    // No colon, an empty name, a broken encoding, another scheme: no user.
    assert_eq!(request("Basic YWxpY2U="), "[]");
    assert_eq!(request("Basic OnNlY3JldA=="), "[]");
    assert_eq!(request("Basic ***"), "[]");
    assert_eq!(request("Bearer YWxpY2U6c2VjcmV0"), "[]");
}

#[test]
fn request_port_is_the_port_the_client_named() {
    let server = started();
    let port_of = |host: &str| {
        server
            .request(format!(
                "GET /port HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            ))
            .body_text()
    };
    assert_eq!(port_of("localhost"), "[]");
    assert_eq!(port_of("localhost:8080"), "[:8080]");
    assert_eq!(port_of("[::1]:99"), "[:99]");
    let response = server.request(
        "GET http://localhost:1234/port HTTP/1.1\r\nHost: localhost:9\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(response.body_text(), "[:1234]");
}

#[test]
fn document_root_realpath_root_and_request_filename() {
    let server = started();
    let prefix = server.prefix().path().display().to_string();
    let body = server.get("/roots/f.txt?site=site-link").body_text();
    assert_eq!(
        body,
        format!(
            "{prefix}/site-link|{}/site-real|{prefix}/site-link/roots/f.txt",
            std::fs::canonicalize(server.prefix().path())
                .unwrap()
                .display()
        )
    );
    assert_eq!(
        server.get("/alias/a/b.txt").body_text(),
        format!("{prefix}/html/a/b.txt")
    );
}

#[test]
fn set_limit_rate_and_read_it_back() {
    let server = started();
    assert_eq!(server.get("/rate").body_text(), "4096");
    assert_eq!(server.get("/bad-rate").body_text(), "0");
    server.wait_for_error_log("invalid $limit_rate \"lots\"");
}

#[test]
fn pipelined_requests_are_marked_in_the_access_log() {
    let server = Instance::http(
        r#"
log_format pipe "$uri $pipe";
server {
    listen 127.0.0.1:8080;
    access_log logs/pipe.log pipe;
    location / { return 200 ok; }
}
"#,
    );
    let mut client = Client::connect(server.port());
    client.write(
        "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    client.read_response();
    client.read_response();
    let log = server.wait_for_line("logs/pipe.log", "/two");
    assert_eq!(log, "/two p");
    assert!(server.read("logs/pipe.log").starts_with("/one .\n"));
}
