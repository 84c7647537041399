//! `mirror`, `mirror_request_body`, `log_subrequest`: copies of a request sent to other
//! URIs once the response is out, with or without its body, logged when asked; a mirror
//! that is down leaves the client's response alone.

use std::sync::{Arc, Mutex};

use crate::support::upstream::MockUpstream;
use crate::support::{Instance, PATIENCE, wait_until};

const MIRROR: &str = "
log_format sub \"$uri $args $request_body\";
server {
    listen 127.0.0.1:8080;
    root site;
    location / {
        mirror /copy;
        mirror /copy-two;
        proxy_pass http://127.0.0.1:8081;
    }
    location /nobody/ {
        mirror /copy;
        mirror_request_body off;
        proxy_pass http://127.0.0.1:8081;
    }
    location /quiet/ { mirror off; proxy_pass http://127.0.0.1:8081; }
    location /down/ { mirror /dead; proxy_pass http://127.0.0.1:8081; }
    location = /copy {
        internal;
        log_subrequest on;
        access_log logs/mirror.log sub;
        proxy_pass http://127.0.0.1:8082;
    }
    location = /copy-two { internal; proxy_pass http://127.0.0.1:8082; }
    location = /dead { internal; proxy_pass http://127.0.0.1:8083; }
}";

#[test]
fn mirror_copies_requests_after_the_response() {
    let mut builder = Instance::http_builder(MIRROR);
    let _app = MockUpstream::start(builder.port(8081), |mut conn| {
        while conn.read_request().is_some() {
            conn.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nAPP");
        }
    });
    let copies = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&copies);
    let _shadow = MockUpstream::start(builder.port(8082), move |mut conn| {
        while let Some(request) = conn.read_request() {
            seen.lock()
                .expect("not poisoned")
                .push(String::from_utf8_lossy(&request).into_owned());
            conn.write("HTTP/1.1 500 Oops\r\nContent-Length: 6\r\n\r\nSHADOW");
        }
    });
    let server = builder.start();
    let post = |path: &str| {
        server.request(format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        ))
    };
    let response = post("/app?a=1");
    assert_eq!(
        (response.status, response.body_text().as_str()),
        (200, "APP")
    );
    wait_until("both mirrors", PATIENCE, || {
        copies.lock().expect("not poisoned").len() == 2
    });
    {
        let seen = copies.lock().expect("not poisoned");
        assert!(
            seen.iter().any(|r| r.starts_with("POST /copy?a=1 ")),
            "the method kept: {seen:?}"
        );
        assert!(
            seen.iter().all(|r| r.ends_with("hello")),
            "the body goes too: {seen:?}"
        );
    }
    let log = server.wait_for_line("logs/mirror.log", "/copy a=1 hello");
    assert!(
        !log.contains("copy-two"),
        "only where log_subrequest is on: {log}"
    );
    copies.lock().expect("not poisoned").clear();
    assert_eq!(post("/nobody/x").body_text(), "APP");
    wait_until("the mirror", PATIENCE, || {
        copies.lock().expect("not poisoned").len() == 1
    });
    assert!(
        !copies.lock().expect("not poisoned")[0].ends_with("hello"),
        "mirror_request_body off"
    );
    copies.lock().expect("not poisoned").clear();
    assert_eq!(server.get("/quiet/x").body_text(), "APP");
    // A mirror that is down: the client's response is as usual, the server goes on.
    assert_eq!(server.get("/down/x").body_text(), "APP");
    assert_eq!(server.get("/down/y").body_text(), "APP");
    assert!(
        copies.lock().expect("not poisoned").is_empty(),
        "mirror off"
    );
}
