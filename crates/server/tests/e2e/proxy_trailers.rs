//! `proxy_pass_trailers` with an HTTP/1.1 upstream: the trailer section after a chunked
//! body's last chunk goes on to HTTP/1.1 clients in the last chunk and to HTTP/2 clients
//! as a trailing HEADERS frame, with response buffering on or off; without the directive
//! it stops at the proxy; a trailer section that is not fields ends the response short
//! with nginx's log line, and the server goes on.

use crate::support::h2;
use crate::support::upstream::MockUpstream;
use crate::support::{Client, Instance};

const CONFIG: &str = "
    server {
        listen 127.0.0.1:8080;
        http2 on;
        proxy_http_version 1.1;
        location / {
            proxy_pass http://127.0.0.1:8081;
            proxy_pass_trailers on;
        }
        location /unbuffered/ {
            proxy_pass http://127.0.0.1:8081;
            proxy_pass_trailers on;
            proxy_buffering off;
        }
        location /off/ {
            proxy_pass http://127.0.0.1:8081;
        }
    }";

const WITH_TRAILERS: &str = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\
    Trailer: X-Trailer, X-Another\r\n\r\n8\r\nSEE-THIS\r\n0\r\nX-Trailer: foo\r\n\
    X-Another:  bar \r\n\r\n";

const NOT_FIELDS: &str = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
    8\r\nSEE-THIS\r\n0\r\nthis is not a field\r\n\r\n";

/// Answers `/bad...` with a trailer section that is not fields, anything else with two
/// trailer fields.
fn start() -> (Instance, MockUpstream) {
    let mut builder = Instance::http_builder(CONFIG);
    let port = builder.port(8081);
    let upstream = MockUpstream::start(port, |mut conn| {
        while let Some(request) = conn.read_request() {
            let bad = String::from_utf8_lossy(&request).contains("/bad");
            conn.write(if bad { NOT_FIELDS } else { WITH_TRAILERS });
        }
    });
    (builder.start(), upstream)
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: a\r\nTE: trailers\r\nConnection: close\r\n\r\n")
}

#[test]
fn an_http1_upstreams_trailers_reach_http1_clients() {
    let (server, _upstream) = start();
    for path in ["/", "/unbuffered/"] {
        let response = server.request(get(path));
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.body_text(), "SEE-THIS", "{path}");
        assert!(response.is_chunked(), "{path}: {}", response.head_text());
        assert_eq!(response.trailer("X-Trailer"), Some("foo"), "{path}");
        assert_eq!(response.trailer("X-Another"), Some("bar"), "{path}");
    }
    let response = server.request(get("/off/"));
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "SEE-THIS");
    assert_eq!(response.trailer("X-Trailer"), None);
    assert!(response.trailers.is_empty(), "{:?}", response.trailers);
}

#[test]
fn an_http1_upstreams_trailers_reach_http2_clients() {
    let (server, _upstream) = start();
    let answers = h2::exchange(
        server.port(),
        vec![h2::get("/"), h2::get("/unbuffered/"), h2::get("/off/")],
    );
    for answer in &answers[..2] {
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, b"SEE-THIS");
        let trailers = answer.trailers.as_ref().expect("trailers");
        assert_eq!(trailers["x-trailer"], "foo");
        assert_eq!(trailers["x-another"], "bar");
    }
    assert_eq!(answers[2].body, b"SEE-THIS");
    assert!(answers[2].trailers.is_none(), "{:?}", answers[2].trailers);
}

#[test]
fn a_trailer_section_that_is_not_fields_ends_the_response_short() {
    let (server, _upstream) = start();
    let mut client = Client::connect(server.port());
    client.write(get("/bad"));
    let (_, bytes) = client.wait_closed();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        !text.ends_with("0\r\n\r\n"),
        "the body must not look complete: {text}"
    );
    server.wait_for_error_log("upstream sent invalid chunked response");
    // The server goes on.
    let response = server.request(get("/"));
    assert_eq!(response.trailer("X-Trailer"), Some("foo"));
}
