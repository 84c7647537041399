//! Header fields through the proxy: the request head nginx sends upstream
//! (`proxy_set_header`), the response fields it hides or passes (`proxy_hide_header`,
//! `proxy_pass_header`) and the cookies it rewrites (`proxy_cookie_domain`,
//! `proxy_cookie_path`).

use crate::support::proxy::{OK, SIMPLE, proxy_with};

#[test]
fn proxy_set_header_defaults_shape_the_request_head() {
    let (server, upstream) = proxy_with(SIMPLE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let response = server.request(
        "GET /a/b?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\nConnection: keep-alive\r\nKeep-Alive\
            : 5\r\nTE: trailers\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "hello");
    let port = upstream.port;
    let request = &upstream.requests()[0];
    // The client's own target, HTTP/1.0, `Host: $proxy_host` and `Connection: close` first;
    // the client's hop-by-hop fields are not passed, its other fields are.
    assert!(
        request.starts_with(&format!(
            "GET /a/b?x=1 HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
        )),
        "{request}"
    );
    assert!(request.contains("User-Agent: t\r\n"), "{request}");
    assert!(
        !request.to_ascii_lowercase().contains("keep-alive: 5"),
        "{request}"
    );
    assert!(!request.contains("TE: trailers"), "{request}");
    assert!(!request.contains("example.com"), "{request}");
}

#[test]
fn proxy_set_header_adds_replaces_and_removes() {
    let (server, upstream) = proxy_with(SIMPLE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let response = server.request(
        "GET /set/ HTTP/1.1\r\nHost: h\r\nUser-Agent: gone\r\nX-Forwarded-For: 10.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    let request = &upstream.requests()[0];
    let port = upstream.port;
    assert!(
        request.contains("X-Forwarded-For: 10.0.0.1, 127.0.0.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains(&format!("X-Proxy-Host: 127.0.0.1:{port}\r\n")),
        "{request}"
    );
    assert!(!request.contains("User-Agent"), "{request}");
    // The client's field of a name set by the proxy is not passed as well.
    assert_eq!(request.matches("X-Forwarded-For").count(), 1, "{request}");
}

#[test]
fn proxy_hide_header_defaults_filter_response_fields() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write(
                "HTTP/1.1 299 Custom Reason\r\nServer: upstream\r\nDate: yesterday\r\nX-Pad: x\r\nX-Kept: yes\
                    \r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
            );
        }
    });
    let response = server.get("/");
    assert_eq!(response.status, 299);
    assert_eq!(response.reason, "Custom Reason");
    assert_eq!(response.header("X-Kept"), Some("yes"));
    assert!(
        response
            .header("Server")
            .is_some_and(|value| value != "upstream")
    );
    assert!(
        response
            .header("Date")
            .is_some_and(|value| value != "yesterday")
    );
    assert!(!response.has_header("X-Pad"));
    assert_eq!(response.body_text(), "ok");
}

#[test]
fn proxy_cookie_and_hide_header_rules_rewrite_response_fields() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_cookie_domain backend.internal example.com;
                proxy_cookie_path /app/ /;
                proxy_hide_header X-Secret;
                proxy_pass_header Server;
            }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write(concat!(
                    "HTTP/1.1 200 OK\r\nServer: app/1.0\r\nX-Secret: s\r\n",
                    "Set-Cookie: a=1; Domain=.Backend.Internal; Path=/app/x\r\n",
                    "Set-Cookie: b=2; path=/other\r\nContent-Length: 0\r\n\r\n"
                ));
            }
        },
    );
    let response = server.get("/");
    assert_eq!(response.header("Server"), Some("app/1.0"));
    assert!(!response.has_header("X-Secret"));
    let cookies = response.header_all("Set-Cookie");
    assert_eq!(
        cookies,
        ["a=1; Domain=.example.com; Path=/x", "b=2; path=/other"]
    );
}
