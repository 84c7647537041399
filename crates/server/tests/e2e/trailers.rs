//! `add_trailer` and chunked responses: nginx-tests `trailers.t` without its proxy cases,
//! `$sent_trailer_NAME`, and `chunked_transfer_encoding off`.

use crate::support::{Instance, get};

const TRAILERS: &str = "
log_format trailers '$uri $status [$sent_trailer_x_var] $body_bytes_sent';
access_log logs/trailers.log trailers;
server {
    listen 127.0.0.1:8080;
    server_name localhost;
    root html;

    add_trailer X-Var $host;
    add_trailer X-Always $host always;
    add_trailer X-Empty '';
    add_trailer X-Sent-HTTP $sent_http_content_type;
    add_trailer X-Sent-Trailer $sent_trailer_x_var;
    add_trailer X-Complex $host:$host;

    location /t1 { }
    location /nx { }
    location /header { add_header X-Var foo; }
    location /empty { add_trailer X-Var $host; }
    location /not_chunked { chunked_transfer_encoding off; }
    location /no_content { return 204; }
    location /text { return 200 'some text'; }
    location /big { }
    location /long { return 200 $http_x_a$http_x_b$http_x_c; }
}";

/// The trailer section of a 200 response in `/t1`'s location.
const ALL_TRAILERS: &str = "0\r\nX-Var: localhost\r\nX-Always: localhost\r\n\
                            X-Sent-HTTP: text/plain\r\nX-Sent-Trailer: localhost\r\n\
                            X-Complex: localhost:localhost\r\n\r\n";

const BIG_BYTES: usize = 600 * 1024;

fn big_body() -> Vec<u8> {
    (0..BIG_BYTES).map(|index| (index % 251) as u8).collect()
}

fn start() -> Instance {
    Instance::http_builder(TRAILERS)
        .file("html/t1", "SEE-THIS")
        .file("html/header", "")
        .file("html/empty", "")
        .file("html/not_chunked", "SEE-THIS")
        .file("html/big", big_body())
        .start()
}

fn http11(method: &str, path: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
}

#[test]
fn trailers_follow_the_last_chunk() {
    let server = start();
    let response = server.request(http11("GET", "/t1"));
    assert!(response.is_chunked());
    assert!(!response.has_header("Content-Length"));
    assert_eq!(response.body_text(), "SEE-THIS");
    let raw = String::from_utf8_lossy(&response.raw).into_owned();
    assert!(
        raw.ends_with(&format!("\r\n\r\n8\r\nSEE-THIS\r\n{ALL_TRAILERS}")),
        "{raw}"
    );
    assert!(!response.has_header("X-Var"), "not in the head");
    assert_eq!(response.trailer("X-Empty"), None);
}

#[test]
fn error_responses_get_only_always_trailers() {
    let server = start();
    let response = server.request(http11("GET", "/nx"));
    assert_eq!(response.status, 404);
    assert!(response.is_chunked());
    assert!(response.body_text().contains("404 Not Found"));
    assert_eq!(response.trailer("X-Always"), Some("localhost"));
    assert_eq!(response.trailer("X-Var"), None);
}

#[test]
fn a_header_of_the_same_name_stays_in_the_head() {
    let server = start();
    let response = server.request(http11("GET", "/header"));
    assert_eq!(response.header("X-Var"), Some("foo"));
    assert_eq!(response.trailer("X-Var"), Some("localhost"));
    assert!(response.raw.ends_with(ALL_TRAILERS.as_bytes()));
}

#[test]
fn no_trailers_without_chunks() {
    let server = start();
    let http10 = server.request("GET /t1 HTTP/1.0\r\nHost: localhost\r\n\r\n");
    assert!(!http10.is_chunked());
    assert_eq!(http10.content_length(), Some(8));
    assert!(http10.raw.ends_with(b"\r\n\r\nSEE-THIS"));
    let off = server.request(http11("GET", "/not_chunked"));
    assert!(!off.is_chunked());
    assert_eq!(off.content_length(), Some(8));
    assert!(!String::from_utf8_lossy(&off.raw).contains("X-Always"));
    let mut client = server.connect();
    client.write(http11("HEAD", "/t1"));
    let head = client.read_head_response();
    assert!(!head.is_chunked());
    assert_eq!(head.content_length(), Some(8));
    assert!(client.read_to_end().is_empty(), "nothing after the head");
    let no_content = server.request(http11("GET", "/no_content"));
    assert_eq!(no_content.status, 204);
    assert!(!no_content.is_chunked());
}

#[test]
fn a_level_with_its_own_trailers_replaces_the_list() {
    let server = start();
    let response = server.request(http11("GET", "/empty"));
    assert!(response.is_chunked());
    assert_eq!(response.body, b"");
    assert!(
        response
            .raw
            .ends_with(b"\r\n\r\n0\r\nX-Var: localhost\r\n\r\n")
    );
    assert_eq!(response.trailer("X-Always"), None);
}

#[test]
fn text_bodies_and_large_files_are_chunked_whole() {
    let server = start();
    let text = server.request(http11("GET", "/text"));
    let expected = format!("\r\n\r\n9\r\nsome text\r\n{ALL_TRAILERS}");
    assert!(text.raw.ends_with(expected.as_bytes()));
    // Keep-alive after a chunked file larger than one read from the pool.
    let mut client = server.connect();
    let big = client.request(crate::support::get_keepalive("/big"));
    assert!(big.is_chunked());
    assert_eq!(big.body.len(), BIG_BYTES);
    assert!(big.body == big_body(), "the body arrives intact");
    assert_eq!(big.trailer("X-Var"), Some("localhost"));
    let next = client.request(get("/t1"));
    assert_eq!(next.body_text(), "SEE-THIS");
}

#[test]
fn sent_trailer_variable_in_the_log() {
    let server = start();
    server.request(http11("GET", "/t1"));
    let line = server.wait_for_line("logs/trailers.log", "/t1 200");
    // $body_bytes_sent counts the chunk framing and the trailer section, as nginx's does.
    let framed = "8\r\nSEE-THIS\r\n".len() + ALL_TRAILERS.len();
    assert_eq!(line, format!("/t1 200 [localhost] {framed}"));
    // A HEAD response has no body, so no trailers were added.
    let mut client = server.connect();
    client.write(http11("HEAD", "/t1"));
    client.read_head_response();
    let line = server.wait_for_line("logs/trailers.log", "/t1 200 [-]");
    assert_eq!(line, "/t1 200 [-] 0");
}

#[test]
fn a_long_text_body_is_chunked_apart_from_the_head() {
    let server = start();
    // Three header values of 7000 bytes make a body larger than what goes out with the head.
    let part = |byte: char| byte.to_string().repeat(7000);
    let request = format!(
        "GET /long HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         X-A: {}\r\nX-B: {}\r\nX-C: {}\r\n\r\n",
        part('a'),
        part('b'),
        part('c')
    );
    let response = server.request(request);
    assert!(response.is_chunked());
    assert_eq!(
        response.body_text(),
        format!("{}{}{}", part('a'), part('b'), part('c'))
    );
    assert_eq!(response.trailer("X-Var"), Some("localhost"));
}
