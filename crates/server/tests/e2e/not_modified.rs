//! Conditional requests (the not-modified filter), `if_modified_since` and `etag`:
//! nginx-tests `not_modified.t` and the shape of 304 and 412 responses.

use crate::support::{Instance, Response};

const CONDITIONAL: &str = "
log_format sent '$uri $status $body_bytes_sent';
access_log logs/sent.log sent;
server {
    listen 127.0.0.1:8080;
    root html;
    location / { if_modified_since before; }
    location /exact/ { }
    location /off/ { if_modified_since off; }
    location /no_etag/ { etag off; }
    location /decorated/ { expires 1h; add_header X-Added yes; add_header X-Only-Always always always; }
    location /text { return 200 text; }
}";

fn start() -> Instance {
    Instance::http_builder(CONDITIONAL)
        .file("html/t", "")
        .file("html/exact/t", "exact")
        .file("html/off/t", "off")
        .file("html/no_etag/t", "no etag")
        .file("html/decorated/t", "decorated")
        .start()
}

fn with_header(path: &str, header: &str) -> String {
    format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{header}\r\n\r\n")
}

fn conditional(server: &Instance, path: &str, name: &str, value: &str) -> Response {
    server.request(with_header(path, &format!("{name}: {value}")))
}

#[test]
fn if_modified_since_before_accepts_later_dates() {
    let server = start();
    let ims = |date: &str| conditional(&server, "/t", "If-Modified-Since", date).status;
    assert_eq!(ims("Wed, 08 Jul 2037 22:53:52 GMT"), 304, "0x7F000000");
    assert_eq!(ims("Tue, 19 Jan 2038 03:14:07 GMT"), 304, "0x7FFFFFFF");
    assert_eq!(ims("Tue, 19 Jan 2038 03:14:08 GMT"), 304, "0x7FFFFFFF + 1");
    assert_eq!(ims("Fri, 25 Feb 2174 09:42:23 GMT"), 304, "0x17FFFFFFF");
    assert_eq!(ims("Thu, 01 Jan 1970 00:00:01 GMT"), 200, "earlier");
    assert_eq!(ims("not a date"), 200);
}

#[test]
fn if_none_match() {
    let server = start();
    let etag = server.get("/t").header("ETag").unwrap().to_owned();
    let inm = |value: &str| conditional(&server, "/t", "If-None-Match", value).status;
    assert_eq!(inm(&etag), 304);
    assert_eq!(inm("\"foo\""), 200);
    assert_eq!(inm(&format!("\"foo\", \"bar\", {etag} , \"baz\"")), 304);
    assert_eq!(inm("*"), 304);
    assert_eq!(inm(&format!("W/{etag}")), 304);
}

#[test]
fn if_match() {
    let server = start();
    let etag = server.get("/t").header("ETag").unwrap().to_owned();
    let im = |value: &str| conditional(&server, "/t", "If-Match", value).status;
    assert_eq!(im(&etag), 200);
    assert_eq!(im("\"foo\""), 412);
    assert_eq!(im(&format!("\"foo\", \"bar\", \t{etag} , \"baz\"")), 200);
    assert_eq!(im("*"), 200);
    assert_eq!(im(&format!("W/{etag}")), 412);
    // A precondition is ignored when the response would not be a 200.
    assert_eq!(
        conditional(&server, "/nx", "If-Match", "\"foo\"").status,
        404
    );
}

#[test]
fn if_modified_since_exact_and_off() {
    let server = start();
    let modified = server
        .get("/exact/t")
        .header("Last-Modified")
        .unwrap()
        .to_owned();
    let exact = conditional(&server, "/exact/t", "If-Modified-Since", &modified);
    assert_eq!(exact.status, 304);
    let later = "Fri, 25 Feb 2174 09:42:23 GMT";
    assert_eq!(
        conditional(&server, "/exact/t", "If-Modified-Since", later).status,
        200
    );
    let modified = server
        .get("/off/t")
        .header("Last-Modified")
        .unwrap()
        .to_owned();
    assert_eq!(
        conditional(&server, "/off/t", "If-Modified-Since", &modified).status,
        200
    );
}

#[test]
fn if_unmodified_since() {
    let server = start();
    let modified = server.get("/t").header("Last-Modified").unwrap().to_owned();
    let iums = |value: &str| conditional(&server, "/t", "If-Unmodified-Since", value);
    assert_eq!(iums(&modified).status, 200);
    assert_eq!(iums("Fri, 25 Feb 2174 09:42:23 GMT").status, 200);
    let failed = iums("Thu, 01 Jan 1970 00:00:01 GMT");
    assert_eq!(failed.status, 412);
    assert_eq!(failed.header("Content-Type"), Some("text/html"));
    assert!(failed.body_text().contains("412 Precondition Failed"));
    assert!(!failed.has_header("ETag"));
    assert!(!failed.has_header("Last-Modified"));
}

#[test]
fn a_304_keeps_validators_and_drops_content_headers() {
    let server = start();
    let first = server.get("/decorated/t");
    let etag = first.header("ETag").unwrap();
    let mut client = server.connect();
    let request =
        format!("GET /decorated/t HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: {etag}\r\n\r\n");
    let response = client.request(&request);
    assert_eq!(response.status, 304);
    assert!(!response.has_header("Content-Type"));
    assert!(!response.has_header("Content-Length"));
    assert_eq!(response.header("ETag"), Some(etag));
    assert_eq!(
        response.header("Last-Modified"),
        first.header("Last-Modified")
    );
    assert_eq!(response.header("Cache-Control"), Some("max-age=3600"));
    assert_eq!(response.header("X-Added"), Some("yes"));
    assert_eq!(response.header("X-Only-Always"), Some("always"));
    assert!(response.keeps_alive());
    // Nothing follows the head: the next response on the connection parses cleanly.
    let next = client.request("GET /decorated/t HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(next.status, 200);
    assert_eq!(next.body_text(), "decorated");
    let line = server.wait_for_line("logs/sent.log", "/decorated/t 304");
    assert!(line.ends_with(" 0"), "no body bytes for a 304: {line}");
}

#[test]
fn head_requests_get_304_too() {
    let server = start();
    let request = "HEAD /t HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: *\r\n\
                   Connection: close\r\n\r\n";
    let response = server.connect().request(request);
    assert_eq!(response.status, 304);
}

#[test]
fn etag_off_sends_no_etag() {
    let server = start();
    let response = server.get("/no_etag/t");
    assert_eq!(response.status, 200);
    assert!(!response.has_header("ETag"));
    assert!(response.has_header("Last-Modified"));
    let made_up = "\"0-7\"";
    assert_eq!(
        conditional(&server, "/no_etag/t", "If-None-Match", made_up).status,
        200
    );
    assert_eq!(
        conditional(&server, "/no_etag/t", "If-None-Match", "*").status,
        304
    );
    assert_eq!(
        conditional(&server, "/no_etag/t", "If-Match", made_up).status,
        412
    );
}

#[test]
fn return_responses_are_conditional_as_in_nginx() {
    let server = start();
    // A 200 without validators: only `*` matches, and If-Match fails.
    assert_eq!(
        conditional(&server, "/text", "If-None-Match", "*").status,
        304
    );
    assert_eq!(
        conditional(&server, "/text", "If-None-Match", "\"x\"").status,
        200
    );
    assert_eq!(
        conditional(&server, "/text", "If-Match", "\"x\"").status,
        412
    );
    let ims = "Fri, 25 Feb 2174 09:42:23 GMT";
    let response = conditional(&server, "/text", "If-Modified-Since", ims);
    assert_eq!(
        (response.status, response.body_text().as_str()),
        (200, "text")
    );
}

#[test]
fn duplicate_conditional_headers_are_refused() {
    let server = start();
    let request = "GET /t HTTP/1.0\r\nIf-None-Match: *\r\nIf-None-Match: *\r\n\r\n";
    assert_eq!(server.request(request).status, 400);
}

#[test]
fn a_412_closes_the_connection_as_nginx_does() {
    let server = start();
    let mut client = server.connect();
    let response =
        client.request("GET /t HTTP/1.1\r\nHost: localhost\r\nIf-Match: \"foo\"\r\n\r\n");
    assert_eq!(response.status, 412);
    // The head says keep-alive, as nginx's does, but the connection ends after the page.
    assert!(response.keeps_alive());
    let (_, rest) = client.wait_closed();
    assert!(rest.is_empty());
}
