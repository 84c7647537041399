//! Request bodies: discarded bodies keep the connection usable, `client_max_body_size`, and
//! strict framing (RFC 9112 §6): what cannot be framed unambiguously is rejected and the
//! connection closed, so no request can be smuggled behind it.

use std::time::Duration;

use crate::support::{Ending, Instance};

const ECHO_URI: &str = "server {
    listen 127.0.0.1:8080;
    client_max_body_size 10;
    location / {
        return 200 \"uri=$uri\\n\";
    }
}";

const NEXT: &str = "GET /next HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

/// Sends `request` followed by a pipelined `GET /next` and expects both answered.
#[track_caller]
fn assert_body_discarded(request: &str) {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write(format!("{request}{NEXT}"));
    let first = client.read_response();
    assert_eq!(first.status, 200, "{}", first.head_text());
    assert_eq!(first.body_text(), "uri=/body\n");
    let next = client.read_response();
    assert_eq!(next.body_text(), "uri=/next\n");
}

/// Sends `request` followed by a pipelined `GET /smuggled`: one error response with
/// `status`, then the connection closes and the second request is never answered.
#[track_caller]
fn assert_rejected_and_closed(request: &str, status: u16) {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write(format!(
        "{request}GET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n"
    ));
    let response = client.read_response();
    assert_eq!(response.status, status, "for {request:?}");
    assert_eq!(
        response.header("Connection"),
        Some("close"),
        "for {request:?}"
    );
    let (_, rest) = client.wait_closed();
    assert_eq!(
        String::from_utf8_lossy(&rest),
        "",
        "nothing after the error for {request:?}"
    );
}

#[test]
fn content_length_body_is_discarded() {
    assert_body_discarded(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello",
    );
}

#[test]
fn chunked_body_is_discarded() {
    assert_body_discarded(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n\
         5\r\nhello\r\n3;name=value\r\nabc\r\n0\r\nTrailer-Field: x\r\n\r\n",
    );
}

#[test]
fn transfer_encoding_is_case_insensitive() {
    assert_body_discarded(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
    );
}

#[test]
fn body_arriving_in_pieces_is_discarded() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write_pieces(
        &[
            b"POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"5\r\nhel",
            b"lo\r\n0\r",
            b"\n\r\n",
            NEXT.as_bytes(),
        ],
        Duration::from_millis(50),
    );
    assert_eq!(client.read_response().body_text(), "uri=/body\n");
    assert_eq!(client.read_response().body_text(), "uri=/next\n");
}

#[test]
fn client_max_body_size() {
    let server = Instance::http(ECHO_URI);
    let response = server
        .request("POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n0123456789");
    assert_eq!(response.status, 200);
    let mut client = server.connect();
    let response = client
        .request("POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n\r\n01234567890");
    assert_eq!(response.status, 413);
    assert_eq!(response.reason, "Request Entity Too Large");
    assert!(
        response
            .body_text()
            .contains("<title>413 Request Entity Too Large</title>")
    );
    assert_eq!(response.header("Connection"), Some("close"));
    assert_eq!(client.wait_closed().0, Ending::Closed);
}

#[test]
fn client_max_body_size_zero_disables_the_check() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; client_max_body_size 0; location / { return 200 ok; } }",
    );
    let body = "x".repeat(2 * 1024 * 1024);
    let response = server.request(format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    assert_eq!(response.status, 200);
}

#[test]
fn content_length_with_transfer_encoding_is_rejected() {
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    );
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        400,
    );
}

#[test]
fn two_content_lengths_are_rejected() {
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        400,
    );
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
        400,
    );
}

#[test]
fn invalid_content_length_is_rejected() {
    for value in ["-1", "1x", "+5", "0x10", "", "99999999999999999999"] {
        assert_rejected_and_closed(
            &format!("POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: {value}\r\n\r\n"),
            400,
        );
    }
}

#[test]
fn unknown_transfer_encoding_is_not_implemented() {
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n",
        501,
    );
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        501,
    );
}

#[test]
fn bad_chunk_size_is_rejected_and_closed() {
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        400,
    );
}

#[test]
fn chunk_without_crlf_after_its_data_is_rejected_and_closed() {
    assert_rejected_and_closed(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        400,
    );
}

#[test]
fn bad_chunk_after_the_response_closes_the_connection() {
    // The response is sent before the body arrives; the broken chunk then ends the
    // connection and the pipelined request behind it is never answered.
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write("POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(client.read_response().status, 200);
    let _ =
        client.try_write("zz\r\nabc\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let (_, rest) = client.wait_closed();
    assert_eq!(String::from_utf8_lossy(&rest), "");
}

#[test]
fn chunked_in_http10_is_rejected() {
    assert_rejected_and_closed(
        "POST /body HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    );
}

#[test]
fn too_large_body_is_read_before_closing() {
    // nginx reads and drops the body of a 413 whatever `lingering_close` says, so that the
    // client sees the response and a clean close instead of a reset.
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            client_max_body_size 1k;
            lingering_close off;
            location / { return 200 ok; }
        }",
    );
    let mut client = server.connect();
    let body = vec![b'x'; 1024 * 1024];
    client.write(format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    client.write(&body);
    let response = client.read_response();
    assert_eq!(response.status, 413);
    assert_eq!(client.wait_closed(), (Ending::Closed, Vec::new()));
}

#[test]
fn malformed_discarded_body_gets_a_consistent_400() {
    let server = Instance::http_builder(
        "server { listen 127.0.0.1:8080; root %%PREFIX%%/html; location / { } }",
    )
    .file("html/two", "ab")
    .start();
    let response = server.request(
        "POST /two HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    );
    assert_eq!(response.status, 400);
    let length: usize = response
        .header("Content-Length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert_eq!(
        length,
        response.body.len(),
        "the length is the error page's, not the file's"
    );
    server.wait_for_error_log("client sent invalid chunked body");
}
