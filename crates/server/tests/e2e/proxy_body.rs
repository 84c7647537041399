//! The request body sent upstream: its framing, `proxy_pass_request_body`,
//! `proxy_request_buffering`, `proxy_set_body` (with `proxy_method` and
//! `proxy_pass_request_headers`) and a body kept in a file (`client_body_in_file_only`,
//! `client_body_buffer_size`, `client_body_temp_path`).

use std::time::Duration;

use crate::support::proxy::{OK, SIMPLE, proxy_with};

#[test]
fn proxy_pass_sends_a_chunked_request_body_with_a_length() {
    let (server, upstream) = proxy_with(SIMPLE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let response = server.request(
        "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\
            \r\n2\r\nde\r\n0\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    let request = &upstream.requests()[0];
    assert!(request.contains("Content-Length: 5\r\n"), "{request}");
    assert!(!request.contains("chunked"), "{request}");
    assert!(request.ends_with("\r\n\r\nabcde"), "{request}");
}

#[test]
fn proxy_pass_request_body_off_sends_no_body() {
    let after_head = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = std::sync::Arc::clone(&after_head);
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / { proxy_pass http://127.0.0.1:8081; proxy_pass_request_body off; }
        }",
        move |mut conn| {
            if conn.read_head().is_some() {
                conn.write(OK);
                let rest = conn.read_to_close(std::time::Duration::from_secs(5));
                *seen.lock().unwrap() = Some(rest);
            }
        },
    );
    let response = server.request(
        "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\nConnection: close\r\n\r\nthe body!",
    );
    assert_eq!(response.status, 200);
    // As nginx does, the client's `Content-Length` goes with the head, and no body follows
    // (configurations add `proxy_set_header Content-Length ""`).
    let request = &upstream.requests()[0];
    assert!(request.starts_with("POST /p HTTP/1.0\r\n"), "{request}");
    assert!(request.contains("\r\nContent-Length: 9\r\n"), "{request}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let rest = loop {
        if let Some(rest) = after_head.lock().unwrap().take() {
            break rest;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream saw no close"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
}

#[test]
fn proxy_request_buffering_off_passes_the_body_intact() {
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_request_buffering off;
                proxy_http_version 1.1;
            }
        }",
        |mut conn| {
            while conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    let body = "0123456789abcdef".repeat(4096);
    // A length-delimited body written in pieces, and a chunked one.
    let mut client = server.connect();
    let head = format!(
        "POST /length HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    client.write_pieces(
        &[
            head.as_bytes(),
            &body.as_bytes()[..1000],
            &body.as_bytes()[1000..],
        ],
        Duration::from_millis(50),
    );
    assert_eq!(client.read_response().status, 200);
    let response = client.request(
        "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\
            \r\n2\r\nde\r\n0\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests[0].contains(&format!("Content-Length: {}\r\n", body.len())),
        "{}",
        requests[0]
    );
    assert!(requests[0].ends_with(&format!("\r\n\r\n{body}")));
    // The chunked body is passed on chunked; the chunks carry the same bytes.
    let chunked = &requests[1];
    assert!(
        chunked.contains("Transfer-Encoding: chunked\r\n"),
        "{chunked}"
    );
    let (_, framed) = chunked.split_once("\r\n\r\n").unwrap_or_default();
    assert_eq!(dechunk(framed), "abcde", "{chunked}");
}

/// The data of a chunked body.
fn dechunk(mut framed: &str) -> String {
    let mut data = String::new();
    while let Some((size, rest)) = framed.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        data.push_str(&rest[..size]);
        framed = &rest[size + 2..];
    }
    data
}

#[test]
fn proxy_set_body_method_and_pass_request_headers_replace_the_request() {
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_method PUT;
                proxy_set_body \"replaced $request_method\";
                proxy_pass_request_headers off;
            }
        }",
        |mut conn| {
            while conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    let response = server.request(
        "POST / HTTP/1.1\r\nHost: x\r\nX-Client: yes\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    );
    assert_eq!(response.status, 200);
    let request = &upstream.requests()[0];
    assert!(request.starts_with("PUT / HTTP/1.0\r\n"), "{request}");
    assert!(!request.contains("X-Client"), "{request}");
    assert!(request.contains("Content-Length: 13\r\n"), "{request}");
    assert!(request.ends_with("\r\n\r\nreplaced POST"), "{request}");
}

#[test]
fn client_body_in_file_only_keeps_the_request_body_file() {
    let (server, upstream) = proxy_with(
        "log_format file '$request_body_file';
         server {
             listen 127.0.0.1:8080;
             access_log logs/file.log file;
             location / { proxy_pass http://127.0.0.1:8081; client_body_in_file_only on; }
         }",
        |mut conn| {
            while conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    let response = server.request(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nConnection: close\r\n\r\nin the file",
    );
    assert_eq!(response.status, 200);
    assert!(upstream.requests()[0].ends_with("\r\n\r\nin the file"));
    let path = server.wait_for_line("logs/file.log", "/");
    let prefix = server.prefix().path().display().to_string();
    assert!(path.starts_with(&prefix), "{path}");
    // `on` keeps the file after the request.
    assert_eq!(
        std::fs::read_to_string(&path).ok().as_deref(),
        Some("in the file")
    );
}

/// A body larger than `client_body_buffer_size` goes to a temporary file under
/// `client_body_temp_path`, which `$request_body_file` names; a smaller one stays in
/// memory.
#[test]
fn client_body_buffer_size_sends_larger_bodies_to_client_body_temp_path() {
    let (server, upstream) = proxy_with(
        "log_format file '$uri $request_body_file';
         server {
             listen 127.0.0.1:8080;
             access_log logs/file.log file;
             client_body_buffer_size 1k;
             client_body_temp_path bodies;
             location / { proxy_pass http://127.0.0.1:8081; }
         }",
        |mut conn| {
            while conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    for (path, size) in [("/small", 1000), ("/large", 3000)] {
        let body = "b".repeat(size);
        let response = server.request(format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n{body}"
        ));
        assert_eq!(response.status, 200, "{path}");
    }
    assert_eq!(server.wait_for_line("logs/file.log", "/small "), "/small -");
    let large = server.wait_for_line("logs/file.log", "/large ");
    let directory = format!("/large {}/bodies/", server.prefix().path().display());
    assert!(large.starts_with(&directory), "{large}");
    let requests = upstream.requests();
    assert!(
        requests.iter().all(|request| request.ends_with("bbbb")),
        "{requests:?}"
    );
}

/// A body read for one upstream goes again to the next after an internal redirect: the
/// first answers 404, `proxy_intercept_errors` and `error_page 404 = @again` send the
/// request to a named location that proxies to the same upstream, which gets the whole
/// body a second time, from memory and from a temporary file.
#[test]
fn a_body_read_before_an_internal_redirect_goes_upstream_again() {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (server, upstream) = proxy_with(
        "server {
             listen 127.0.0.1:8080;
             client_body_buffer_size 1k;
             location / {
                 proxy_pass http://127.0.0.1:8081;
                 proxy_intercept_errors on;
                 error_page 404 = @again;
             }
             location @again { proxy_pass http://127.0.0.1:8081; }
         }",
        move |mut conn| {
            while conn.read_request().is_some() {
                // The first try of each request is refused, the second answered.
                let number = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                conn.write(if number.is_multiple_of(2) {
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
                } else {
                    OK
                });
            }
        },
    );
    for size in [500, 3000] {
        let body = "c".repeat(size);
        let response = server.request(format!(
            "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n{body}"
        ));
        assert_eq!(response.status, 200, "{size}");
    }
    let requests = upstream.requests();
    assert_eq!(requests.len(), 4, "two tries per request");
    for (index, request) in requests.iter().enumerate() {
        let size = if index < 2 { 500 } else { 3000 };
        assert!(
            request.contains(&format!("Content-Length: {size}\r\n")),
            "{index}: {request}"
        );
        assert!(request.ends_with(&"c".repeat(size)), "{index}");
    }
}
