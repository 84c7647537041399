//! `auth_request` and `auth_request_set`: access decided by a subrequest to an
//! authentication service, its verdicts, the values copied from its answer, `satisfy any`,
//! and an authentication service that is down.

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

const AUTH: &str = "
server {
    listen 127.0.0.1:8080;
    root site;
    location /app/ {
        auth_request /auth;
        auth_request_set $user $upstream_http_x_user;
        auth_request_set $auth_status $upstream_status;
        add_header X-User $user;
        add_header X-Auth-Status $auth_status;
    }
    location /open/ { auth_request off; }
    location /either/ {
        satisfy any;
        allow 10.0.0.1;
        deny all;
        auth_request /auth;
    }
    location /dead/ { auth_request /dead-auth; }
    location /odd/ { auth_request /odd-auth; }
    location = /auth {
        internal;
        proxy_pass http://127.0.0.1:8081;
        proxy_pass_request_body off;
        proxy_set_header Content-Length \"\";
        proxy_set_header X-Original-URI $request_uri;
    }
    location = /dead-auth { proxy_pass http://127.0.0.1:8082; }
    location = /odd-auth { return 302 /elsewhere; }
}";

#[test]
fn auth_request_lets_in_refuses_and_copies_values() {
    let mut builder = Instance::http_builder(AUTH);
    let _auth = MockUpstream::start(builder.port(8081), |mut conn| {
        while let Some(request) = conn.read_request() {
            let text = String::from_utf8_lossy(&request).into_owned();
            assert!(
                text.starts_with("GET /auth "),
                "a GET to the auth URI: {text}"
            );
            let answer = if text.contains("Authorization: yes") {
                "HTTP/1.1 204 No Content\r\nX-User: alice\r\n\r\n"
            } else if text.contains("Authorization: two") {
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"a\"\r\n\
                 WWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\r\n"
            } else if text.contains("Authorization: forbidden") {
                "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
            } else {
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"app\"\r\nContent-Length: 4\r\n\r\nnope"
            };
            conn.write(answer);
        }
    });
    let server = builder
        .file("site/app/index.html", "APP")
        .file("site/open/index.html", "OPEN")
        .file("site/either/index.html", "EITHER")
        .file("site/dead/index.html", "DEAD")
        .file("site/odd/index.html", "ODD")
        .start();
    let ask = |path: &str, authorization: &str| {
        server.request(format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {authorization}\r\n\
             Content-Length: 4\r\nConnection: close\r\n\r\nbody"
        ))
    };
    let get = |path: &str, authorization: &str| {
        server.request(format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {authorization}\r\nConnection: close\r\n\r\n"
        ))
    };
    let allowed = get("/app/", "yes");
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.body_text(), "APP");
    assert_eq!(allowed.header("X-User"), Some("alice"));
    assert_eq!(allowed.header("X-Auth-Status"), Some("204"));
    let challenged = get("/app/", "no");
    assert_eq!(challenged.status, 401);
    assert_eq!(
        challenged.header("WWW-Authenticate"),
        Some("Bearer realm=\"app\"")
    );
    // Every challenge the subrequest sent is passed, in its order.
    let two = get("/app/", "two");
    assert_eq!(two.status, 401);
    assert_eq!(
        two.header_all("WWW-Authenticate"),
        ["Basic realm=\"a\"", "Bearer"]
    );
    assert_eq!(get("/app/", "forbidden").status, 403);
    // The subrequest is a GET without the client's body, whatever the request.
    assert_eq!(ask("/app/", "forbidden").status, 403);
    assert_eq!(get("/open/", "no").body_text(), "OPEN");
    // `satisfy any`: the address rule refuses, the subrequest lets in.
    let either = get("/either/", "yes");
    assert_eq!(either.status, 200);
    assert_eq!(either.header("WWW-Authenticate"), None);
    assert_eq!(get("/either/", "no").status, 401);
    // `internal`: the auth location is not served to clients.
    assert_eq!(get("/auth", "yes").status, 404);
}

#[test]
fn auth_request_to_a_dead_service_or_an_odd_answer_is_a_500() {
    let server = Instance::http_builder(AUTH)
        .file("site/dead/index.html", "DEAD")
        .file("site/odd/index.html", "ODD")
        .start();
    assert_eq!(server.get("/dead/").status, 500);
    server.wait_for_error_log("auth request unexpected status: 502");
    assert_eq!(server.get("/odd/").status, 500);
    server.wait_for_error_log("auth request unexpected status: 302");
    assert_eq!(server.get("/odd/").status, 500, "the server keeps serving");
}
