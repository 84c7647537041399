//! The upstream's response on its way to the client: each framing passed on, nginx's 502
//! for every kind of malformed, missing or too big head (`proxy_buffer_size`), a body cut
//! short, and a client that leaves while the upstream thinks.

use std::time::Duration;

use crate::support::proxy::{SIMPLE, proxy_with};
use crate::support::upstream::MockUpstream;
use crate::support::{Instance, PATIENCE, wait_until};

#[test]
fn chunked_and_close_delimited_bodies_reach_the_client() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        let Some(request) = conn.read_request() else {
            return;
        };
        if request.starts_with(b"GET /chunked") {
            conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
            std::thread::sleep(Duration::from_millis(50));
            conn.write("6\r\n world\r\n0\r\n\r\n");
        } else {
            conn.write("HTTP/1.0 200 OK\r\n\r\nuntil ");
            std::thread::sleep(Duration::from_millis(50));
            conn.write("close");
            conn.close();
        }
    });
    let chunked = server.get("/chunked");
    assert_eq!(chunked.body_text(), "hello world");
    assert!(chunked.is_chunked());
    let close = server.get("/close");
    assert_eq!(close.body_text(), "until close");
    assert!(
        close.is_chunked(),
        "an HTTP/1.1 client gets the unknown length chunked"
    );
    let old = server.request("GET /close HTTP/1.0\r\nHost: x\r\n\r\n");
    assert_eq!(old.body_text(), "until close");
    assert!(!old.has_header("Content-Length"));
}

#[test]
fn a_slow_upstream_body_arrives_whole() {
    let body = "0123456789".repeat(100);
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (server, _upstream) = proxy_with(SIMPLE, move |mut conn| {
        if conn.read_request().is_some() {
            conn.write_slowly(answer.as_bytes(), 200, Duration::from_millis(20));
        }
    });
    let response = server.get("/slow");
    assert_eq!(response.body, body.as_bytes());
}

fn refused_with(answer: &'static str, log: &str) {
    let (server, _upstream) = proxy_with(SIMPLE, move |mut conn| {
        if conn.read_request().is_some() {
            conn.write(answer);
        }
    });
    let response = server.get("/bad");
    assert_eq!(response.status, 502, "{answer:?}");
    server.wait_for_error_log(log);
    // The server keeps serving.
    assert_eq!(server.get("/again").status, 502);
}

/// Current nginx refuses these; nginx 1.22 still passed some of them on.
#[test]
fn conflicting_or_invalid_framing_is_a_502() {
    refused_with(
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
        "upstream sent duplicate header line: \"Content-Length: 2\", previous value: \"Content-Length: 1\" whi\
            le reading response header from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "upstream sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time while reading res\
            ponse header from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        "upstream sent invalid \"Content-Length\" header: \"Content-Length: abc\" while reading response heade\
            r from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "upstream sent unknown \"Transfer-Encoding\": \"gzip\" while reading response header from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nBad Header Line\r\n\r\n",
        "upstream sent invalid header while reading response header from upstream",
    );
}

#[test]
fn an_upstream_closing_or_resetting_before_answering_is_a_502() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if let Some(request) = conn.read_request() {
            if request.starts_with(b"GET /reset") {
                conn.reset();
            } else {
                conn.close();
            }
        }
    });
    assert_eq!(server.get("/close").status, 502);
    server.wait_for_error_log(
        "upstream prematurely closed connection while reading response header from upstream",
    );
    assert_eq!(server.get("/reset").status, 502);
    server.wait_for_error_log("while reading response header from upstream, client: 127.0.0.1");
}

#[test]
fn a_body_cut_short_closes_the_client_connection() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
            conn.close();
        }
    });
    let mut client = server.connect();
    client.write("GET /short HTTP/1.1\r\nHost: x\r\n\r\n");
    let (_, received) = client.wait_closed();
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.ends_with("only ten b"), "{text}");
    server.wait_for_error_log("upstream prematurely closed connection while reading upstream");
}

#[test]
fn a_client_leaving_while_the_upstream_thinks_ends_the_request_with_499() {
    let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::sync::Arc::clone(&closed);
    let mut builder = Instance::http_builder(
        "log_format st '$status $upstream_header_time';
         server {
             listen 127.0.0.1:8080;
             access_log logs/st.log st;
             location / { proxy_pass http://127.0.0.1:8081; }
         }",
    );
    let port = builder.port(8081);
    let _upstream = MockUpstream::start(port, move |mut conn| {
        if conn.read_request().is_some() && conn.wait_closed(Duration::from_secs(5)) {
            seen.store(true, std::sync::atomic::Ordering::Release);
        }
    });
    let server = builder.start();
    let mut client = server.connect();
    client.write("GET /think HTTP/1.1\r\nHost: x\r\n\r\n");
    std::thread::sleep(Duration::from_millis(200));
    drop(client);
    server.wait_for_line("logs/st.log", "499 -");
    server.wait_for_error_log(
        "epoll_wait() reported that client prematurely closed connection, \
         so upstream connection is closed too while sending request to upstream",
    );
    wait_until("the upstream connection to close", PATIENCE, || {
        closed.load(std::sync::atomic::Ordering::Acquire)
    });
}

/// A response head that does not fit in `proxy_buffer_size` is refused with a 502.
#[test]
fn proxy_buffer_size_limits_the_upstream_response_head() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location /small { proxy_pass http://127.0.0.1:8081; proxy_buffer_size 1k; }
            location /large { proxy_pass http://127.0.0.1:8081; proxy_buffer_size 8k; }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                let padding = "p".repeat(2000);
                conn.write(format!(
                    "HTTP/1.1 200 OK\r\nX-Padding: {padding}\r\nContent-Length: 5\r\n\r\nhello"
                ));
            }
        },
    );
    assert_eq!(server.get("/large").body_text(), "hello");
    assert_eq!(server.get("/small").status, 502);
    server.wait_for_error_log(
        "upstream sent too big header while reading response header from upstream, client: 127.0.0.1",
    );
}

/// An upstream's `Upgrade` reaches an HTTP/1.1 client with any status (a 426's required
/// one, a 200's offer), and never an HTTP/2 client, for which it is connection-specific.
#[test]
fn upgrade_is_passed_over_http1_and_left_out_over_http2() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            http2 on;
            location / { proxy_pass http://127.0.0.1:8081; proxy_http_version 1.1; }
        }",
        |mut conn| {
            while let Some(request) = conn.read_request() {
                let status = if request.starts_with(b"GET /426") {
                    "426 Upgrade Required"
                } else {
                    "200 OK"
                };
                conn.write(format!(
                    "HTTP/1.1 {status}\r\nUpgrade: TLS/1.2\r\nContent-Length: 2\r\n\r\nok"
                ));
            }
        },
    );
    for (path, status) in [("/426", 426), ("/200", 200)] {
        let response = server.get(path);
        assert_eq!(response.status, status);
        assert_eq!(response.header("Upgrade"), Some("TLS/1.2"), "{path}");
        let answers =
            crate::support::h2::exchange(server.port(), vec![crate::support::h2::get(path)]);
        assert_eq!(answers[0].status, status);
        assert!(
            !answers[0].headers.contains_key("upgrade"),
            "{path} over HTTP/2"
        );
        assert_eq!(answers[0].body, b"ok");
    }
}
