//! Upstream keep-alive: `keepalive` in an `upstream` block (with `proxy_http_version 1.1`),
//! `keepalive_requests`, connections that die while idle or on reuse, and the client's
//! own connection after a proxied response.

use std::time::Duration;

use crate::support::proxy::{NAMED, OK, proxy_with};
use crate::support::upstream::MockUpstream;
use crate::support::{Client, Instance, PATIENCE, wait_until};

const KEEPALIVE: &str = "upstream backend { server 127.0.0.1:8081; keepalive 4; }
    server {
        listen 127.0.0.1:8080;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }";

#[test]
fn keepalive_reuses_upstream_connections() {
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    for _ in 0..5 {
        assert_eq!(server.get("/").body_text(), "hello");
    }
    assert_eq!(upstream.connections(), 1);
    let request = &upstream.requests()[0];
    assert!(
        request.contains(" HTTP/1.1\r\n") && !request.contains("Connection:"),
        "{request}"
    );
}

#[test]
fn keepalive_replaces_a_connection_the_upstream_closed_while_idle() {
    // The upstream answers one request per connection but says nothing about closing:
    // the cached connection is dead when the next request comes.
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write(OK);
            std::thread::sleep(Duration::from_millis(20));
            conn.close();
        }
    });
    for _ in 0..4 {
        assert_eq!(server.get("/").body_text(), "hello");
        std::thread::sleep(Duration::from_millis(60));
    }
    assert_eq!(upstream.connections(), 4);
}

#[test]
fn keepalive_retries_a_stale_connection_for_get_not_for_post() {
    // The upstream reads the next request and closes without answering: the proxy learns
    // the connection was stale only after sending.
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write(OK);
        }
        let _ = conn.read_request();
        conn.close();
    });
    assert_eq!(server.get("/first").status, 200);
    assert_eq!(
        server.get("/second").status,
        200,
        "a GET is repeated on a new connection"
    );
    let post = server.request(
        "POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
    );
    assert_eq!(post.status, 502, "a POST is not repeated");
    // The first connection, then the one the GET was repeated on (the POST's).
    assert_eq!(upstream.connections(), 2);
}

#[test]
fn keepalive_client_connection_stays_usable_after_a_proxied_response() {
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let mut client: Client = server.connect();
    for _ in 0..3 {
        let response = client.request("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(response.body_text(), "hello");
        assert!(response.keeps_alive());
    }
    wait_until("one upstream connection", PATIENCE, || {
        upstream.connections() == 1
    });
}

#[test]
fn keepalive_requests_one_opens_a_connection_per_request() {
    let mut builder = Instance::http_builder(
        "upstream limited { server 127.0.0.1:8081; keepalive 4; keepalive_requests 1; }
         upstream kept { server 127.0.0.1:8082; keepalive 4; }
         server {
             listen 127.0.0.1:8080;
             proxy_http_version 1.1;
             proxy_set_header Connection \"\";
             location /limited { proxy_pass http://limited; }
             location /kept { proxy_pass http://kept; }
         }",
    );
    let limited = MockUpstream::answering(builder.port(8081), NAMED[0].1);
    let kept = MockUpstream::answering(builder.port(8082), NAMED[1].1);
    let server = builder.start();
    for _ in 0..3 {
        assert_eq!(server.get("/limited").body_text(), "one");
        assert_eq!(server.get("/kept").body_text(), "two");
    }
    assert_eq!(limited.connections(), 3);
    assert_eq!(kept.connections(), 1);
}

#[test]
fn keepalive_drops_a_connection_with_bytes_past_the_body() {
    // The head and the body's start, then the rest of the body with bytes its length did
    // not announce: the rest is read straight into the response's buffer, asking for
    // exactly the body's bytes, and the connection is not kept.
    let body = "b".repeat(60_000);
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
    let (start, rest) = body.split_at(1000);
    let (start, rest) = (format!("{head}{start}"), format!("{rest}STRAY"));
    let (server, upstream) = proxy_with(KEEPALIVE, move |mut conn| {
        while conn.read_request().is_some() {
            conn.write(start.as_bytes());
            std::thread::sleep(Duration::from_millis(30));
            conn.write(rest.as_bytes());
        }
    });
    // A POST is not repeated on a new connection when a reused one fails: it shows the
    // connection was dropped when the first response ended, not found stale on reuse.
    let get = server.get("/");
    let post = server
        .request("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
    for response in [get, post] {
        assert_eq!(response.status, 200);
        assert_eq!(response.body.len(), 60_000);
        assert!(response.body.iter().all(|&byte| byte == b'b'));
    }
    assert_eq!(upstream.connections(), 2);
}
