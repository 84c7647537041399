//! The range filter: single and multipart ranges, 416, `If-Range`, `max_ranges`,
//! `Accept-Ranges`, and ranges with HEAD, HTTP/1.0, conditionals, trailers and
//! `limit_rate` (nginx-tests `range.t` and `range_if_range.t`, and more). Every expectation
//! was checked against nginx 1.22 with `PORTICO_E2E_BINARY=/usr/sbin/nginx`.

use std::time::{Duration, Instant};

use crate::support::{Instance, Response};

const RANGES: &str = "
log_format sent '$uri $status $body_bytes_sent $sent_http_content_range $sent_http_accept_ranges';
access_log logs/sent.log sent;
server {
    listen 127.0.0.1:8080;
    root html;
    location /t2.html { add_header Last-Modified \"\"; }
    location /t3.html { add_header Last-Modified \"Mon, 28 Sep 1970 06:00:00 GMT\"; }
    location /two/ { max_ranges 2; }
    location /none/ { max_ranges 0; }
    location /added/ { add_header X-A yes; expires 1h; add_header X-B always always; }
    location /trailer/ { add_trailer X-T t; }
    location /slow/ { limit_rate 4k; }
    location /errors/ { error_page 404 /t1.html; }
    location /found/ { error_page 404 =200 /t1.html; }
    location /text { return 200 '0123456789'; }
}";

/// `X000XXXXXX` .. `X099XXXXXX`: 1000 bytes.
fn numbered() -> String {
    (0..100).map(|index| format!("X{index:03}XXXXXX")).collect()
}

fn start() -> Instance {
    let data = numbered();
    let mut builder = Instance::http_builder(RANGES);
    for path in [
        "t1.html",
        "t2.html",
        "t3.html",
        "two/t",
        "none/t",
        "added/t",
        "trailer/t",
    ] {
        builder = builder.file(&format!("html/{path}"), &data);
    }
    builder.file("html/slow/big", big()).start()
}

fn range(server: &Instance, path: &str, headers: &str) -> Response {
    server.request(format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{headers}\r\n"
    ))
}

fn bytes(value: &str) -> String {
    format!("Range: bytes={value}\r\n")
}

/// The boundary of a multipart response, from its `Content-Type`.
fn boundary(response: &Response) -> String {
    let content_type = response.header("Content-Type").expect("a Content-Type");
    let boundary = content_type
        .strip_prefix("multipart/byteranges; boundary=")
        .unwrap_or_else(|| panic!("{content_type}"));
    // nginx's boundary: its temporary-file counter in 20 digits.
    assert_eq!(boundary.len(), 20, "{boundary}");
    assert!(boundary.bytes().all(|b| b.is_ascii_digit()), "{boundary}");
    boundary.to_owned()
}

fn part(boundary: &str, content_type: &str, range: &str, data: &str) -> String {
    format!(
        "\r\n--{boundary}\r\nContent-Type: {content_type}\r\nContent-Range: bytes {range}/1000\r\n\r\n{data}"
    )
}

#[test]
fn single_ranges() {
    let server = start();
    let first = range(&server, "/t1.html", &bytes("0-8"));
    assert_eq!(first.status, 206);
    assert_eq!(first.header("Content-Length"), Some("9"));
    assert_eq!(first.header("Content-Range"), Some("bytes 0-8/1000"));
    assert_eq!(first.body_text(), "X000XXXXX");
    assert!(!first.has_header("Accept-Ranges"));
    assert!(first.has_header("Last-Modified") && first.has_header("ETag"));
    for spec in ["-10", "990-", "990-1990"] {
        let last = range(&server, "/t1.html", &bytes(spec));
        assert_eq!(last.status, 206, "{spec}");
        assert_eq!(last.header("Content-Length"), Some("10"), "{spec}");
        assert_eq!(last.header("Content-Range"), Some("bytes 990-999/1000"));
        assert_eq!(last.body_text(), "X099XXXXXX", "{spec}");
    }
    let adjusted = range(&server, "/t1.html", &bytes("0-10001"));
    assert_eq!(adjusted.status, 206);
    assert_eq!(adjusted.header("Content-Range"), Some("bytes 0-999/1000"));
    assert_eq!(adjusted.body_text(), numbered());
    let line = server.wait_for_line("logs/sent.log", "/t1.html 206 9");
    assert_eq!(line, "/t1.html 206 9 bytes 0-8/1000 -");
    range(&server, "/t1.html", "");
    let line = server.wait_for_line("logs/sent.log", "/t1.html 200");
    assert_eq!(line, "/t1.html 200 1000 - bytes");
}

#[test]
fn multipart_ranges_are_byte_exact() {
    let server = start();
    let response = range(&server, "/t1.html", &bytes("0-9, -10, 10-19"));
    assert_eq!(response.status, 206);
    let first = boundary(&response);
    let expected = [
        part(&first, "text/html", "0-9", "X000XXXXXX"),
        part(&first, "text/html", "990-999", "X099XXXXXX"),
        part(&first, "text/html", "10-19", "X001XXXXXX"),
        format!("\r\n--{first}--\r\n"),
    ]
    .concat();
    assert_eq!(response.body_text(), expected);
    let length = expected.len().to_string();
    assert_eq!(response.header("Content-Length"), Some(length.as_str()));
    assert!(!response.has_header("Content-Range"));
    // A range past the end is left out.
    let big = range(&server, "/t1.html", &bytes("0-9, -10, 100000-, 10-19"));
    assert_eq!(big.status, 206);
    let second = boundary(&big);
    assert_ne!(first, second);
    assert_eq!(big.body_text(), expected.replace(&first, &second));
}

#[test]
fn unsatisfiable_and_malformed_ranges() {
    let server = start();
    // nginx's answer for each header, with a 1000-byte file.
    let cases: &[(&str, u16)] = &[
        ("bytes=100000-", 416),
        ("bytes=alpha", 416),
        ("bytes=10-alpha", 416),
        ("bytes=10", 416),
        ("bytes=10-11 12-", 416),
        ("bytes=-0", 416),
        ("bytes=5-1", 416),
        ("bytes=1-2,", 416),
        ("bytes=,1-2", 416),
        ("bytes=99999999999999999999-", 416),
        ("bytes=1000-", 416),
        ("bytes=0-1\t", 416),
        ("bytes=0-10001, 0-0", 200),
        ("bytes=0-499,500-999,0-1", 200),
        ("bytes=", 200),
        ("items=0-1", 200),
        ("bytes= 1 - 2", 206),
        ("BYTES=0-1", 206),
        ("bytes=5-1,2-3", 206),
    ];
    for &(value, status) in cases {
        let response = range(&server, "/t1.html", &format!("Range: {value}\r\n"));
        assert_eq!(response.status, status, "{value:?}");
        match status {
            416 => {
                assert_eq!(response.header("Content-Range"), Some("bytes */1000"));
                assert!(
                    response
                        .body_text()
                        .contains("416 Requested Range Not Satisfiable")
                );
                assert!(!response.has_header("Last-Modified") && !response.has_header("ETag"));
            }
            200 => assert_eq!(response.header("Accept-Ranges"), Some("bytes"), "{value:?}"),
            _ => assert!(response.has_header("Content-Range")),
        }
    }
}

#[test]
fn a_416_keeps_the_connection_and_the_headers_of_the_200() {
    let server = start();
    let mut client = server.connect();
    let response =
        client.request("GET /added/t HTTP/1.1\r\nHost: localhost\r\nRange: bytes=5000-\r\n\r\n");
    assert_eq!(response.status, 416);
    assert!(response.keeps_alive());
    // nginx's headers filter added its fields for the 200 before the range filter made the
    // response a 416; the second pass adds the `always` one again.
    let names: Vec<&str> = response
        .headers
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| !matches!(*name, "Server" | "Date" | "Content-Type" | "Content-Length"))
        .collect();
    assert_eq!(
        names,
        [
            "Connection",
            "Expires",
            "Cache-Control",
            "X-A",
            "X-B",
            "Content-Range",
            "X-B"
        ]
    );
    let next =
        client.request("GET /added/t HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-3\r\n\r\n");
    assert_eq!(next.status, 206);
    assert_eq!(next.body_text(), "X000");
    // The range comes after the added fields.
    let head = next.head_text();
    assert!(
        head.find("X-B:").unwrap() < head.find("Content-Range:").unwrap(),
        "{head}"
    );
}

#[test]
fn max_ranges() {
    let server = start();
    assert_eq!(range(&server, "/two/t", &bytes("0-9, -10")).status, 206);
    assert_eq!(
        range(&server, "/two/t", &bytes("0-9, -10, 10000-")).status,
        206
    );
    let over = range(&server, "/two/t", &bytes("0-9, -10, 10-19"));
    assert_eq!(over.status, 200);
    assert_eq!(over.header("Accept-Ranges"), Some("bytes"));
    // `max_ranges 0` turns ranges off, and `Accept-Ranges` with them.
    let none = range(&server, "/none/t", &bytes("0-9"));
    assert_eq!(none.status, 200);
    assert!(!none.has_header("Accept-Ranges"));
}

#[test]
fn accept_ranges_only_where_ranges_are_allowed() {
    let server = start();
    let whole = range(&server, "/t1.html", "");
    assert_eq!(whole.header("Accept-Ranges"), Some("bytes"));
    // Accept-Ranges is the last field.
    assert_eq!(
        whole.headers.last().map(|(name, _)| name.as_str()),
        Some("Accept-Ranges")
    );
    let text = range(&server, "/text", &bytes("1-2"));
    assert_eq!(
        (text.status, text.body_text().as_str()),
        (200, "0123456789")
    );
    assert!(!text.has_header("Accept-Ranges"));
    // A file sent with an error status takes no ranges and has no Last-Modified.
    let error = range(&server, "/errors/missing", &bytes("0-3"));
    assert_eq!(error.status, 404);
    assert_eq!(error.body.len(), 1000);
    assert!(!error.has_header("Accept-Ranges") && !error.has_header("Last-Modified"));
    // error_page with =200 makes it a 200 again.
    let found = range(&server, "/found/missing", &bytes("0-3"));
    assert_eq!((found.status, found.body_text().as_str()), (206, "X000"));
}

#[test]
fn if_range() {
    let server = start();
    let wrong = range(
        &server,
        "/t1.html",
        &format!("{}If-Range: wrong\r\n", bytes("0-9")),
    );
    assert_eq!(wrong.status, 200);
    let modified = wrong.header("Last-Modified").unwrap().to_owned();
    let etag = wrong.header("ETag").unwrap().to_owned();
    let with = |path: &str, if_range: &str| {
        range(
            &server,
            path,
            &format!("{}If-Range: {if_range}\r\n", bytes("0-9")),
        )
        .status
    };
    assert_eq!(with("/t1.html", &modified), 206);
    assert_eq!(with("/t1.html", &etag), 206);
    assert_eq!(with("/t1.html", &format!("W/{etag}")), 200);
    assert_eq!(with("/t1.html", "\"other\""), 200);
    assert_eq!(with("/t1.html", "Thu, 01 Jan 1970 00:00:01 GMT"), 200);
    // Without Last-Modified a date never matches.
    let no_date = range(
        &server,
        "/t2.html",
        &format!("{}If-Range: wrong\r\n", bytes("0-9")),
    );
    assert_eq!(no_date.status, 200);
    assert!(!no_date.has_header("Last-Modified"));
    assert_eq!(with("/t2.html", &modified), 200);
    // `add_header Last-Modified` gives the date If-Range compares.
    let fixed = "Mon, 28 Sep 1970 06:00:00 GMT";
    assert_eq!(with("/t3.html", "wrong"), 200);
    assert_eq!(with("/t3.html", fixed), 206);
    assert_eq!(with("/t3.html", &modified), 200);
}

#[test]
fn head_and_old_versions() {
    let server = start();
    let mut client = server.connect();
    client.write("HEAD /t1.html HTTP/1.1\r\nHost: localhost\r\nRange: bytes=1-2\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 206);
    assert_eq!(head.header("Content-Length"), Some("2"));
    assert_eq!(head.header("Content-Range"), Some("bytes 1-2/1000"));
    client.write("HEAD /t1.html HTTP/1.1\r\nHost: localhost\r\nRange: bytes=1-2,4-5\r\n\r\n");
    let multi = client.read_head_response();
    assert_eq!(multi.status, 206);
    // Two part heads of 84 bytes with two bytes each and the closing line of 28.
    assert_eq!(multi.header("Content-Length"), Some("200"));
    let http10 = server.request("GET /t1.html HTTP/1.0\r\nRange: bytes=1-2\r\n\r\n");
    assert_eq!((http10.status, http10.body_text().as_str()), (206, "00"));
    // HTTP/0.9 has no head, and no ranges.
    let mut old = server.connect();
    old.write("GET /t1.html\r\n");
    assert_eq!(old.read_to_end(), numbered().as_bytes());
}

#[test]
fn conditionals_come_before_ranges() {
    let server = start();
    let etag = range(&server, "/t1.html", "")
        .header("ETag")
        .unwrap()
        .to_owned();
    let not_modified = range(
        &server,
        "/t1.html",
        &format!("{}If-None-Match: {etag}\r\n", bytes("0-3")),
    );
    assert_eq!(not_modified.status, 304);
    assert!(!not_modified.has_header("Content-Range") && !not_modified.has_header("Accept-Ranges"));
    let failed = range(
        &server,
        "/t1.html",
        &format!("{}If-Match: \"x\"\r\n", bytes("0-3")),
    );
    assert_eq!(failed.status, 412);
    assert!(!failed.has_header("Content-Range"));
    let matched = range(
        &server,
        "/t1.html",
        &format!("{}If-Match: {etag}\r\n", bytes("0-3")),
    );
    assert_eq!(matched.status, 206);
}

#[test]
fn ranges_with_trailers_are_chunked() {
    let server = start();
    let single = range(&server, "/trailer/t", &bytes("5-9"));
    assert_eq!(single.status, 206);
    assert!(single.is_chunked());
    assert_eq!(single.header("Content-Range"), Some("bytes 5-9/1000"));
    assert_eq!(single.body_text(), "XXXXX");
    assert_eq!(single.trailer("X-T"), Some("t"));
    let multi = range(&server, "/trailer/t", &bytes("0-1,3-4"));
    let boundary = boundary(&multi);
    // nginx's chunks: the first part's head, then each part's data with the next head.
    let head = |range: &str| {
        format!(
            "\r\n--{boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes {range}/1000\r\n\r\n"
        )
    };
    let closing = format!("\r\n--{boundary}--\r\n");
    let chunk = |data: String| format!("{:x}\r\n{data}\r\n", data.len());
    let expected = [
        chunk(head("0-1")),
        chunk(format!("X0{}", head("3-4"))),
        chunk(format!("0X{closing}")),
        "0\r\nX-T: t\r\n\r\n".to_owned(),
    ]
    .concat();
    let raw = String::from_utf8_lossy(&multi.raw).into_owned();
    assert!(raw.ends_with(&expected), "{raw}");
    // A 416 stays chunked as the 200 would have been, without the trailer.
    let unsatisfiable = range(&server, "/trailer/t", &bytes("5000-"));
    assert_eq!(unsatisfiable.status, 416);
    assert!(unsatisfiable.is_chunked());
    assert!(unsatisfiable.trailers.is_empty());
}

#[test]
fn ranges_go_at_the_rate() {
    let server = start();
    let started = Instant::now();
    let mut client = server.connect().with_timeout(Duration::from_secs(30));
    let request = "GET /slow/big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
                   Range: bytes=0-3999,5000-8999\r\n\r\n";
    let response = client.request(request);
    let elapsed = started.elapsed();
    assert_eq!(response.status, 206);
    let boundary = boundary(&response);
    let data = big();
    let expected = [
        part_of(&boundary, "0-3999", &data[..4000], SLOW_BYTES),
        part_of(&boundary, "5000-8999", &data[5000..9000], SLOW_BYTES),
        format!("\r\n--{boundary}--\r\n"),
    ]
    .concat();
    assert_eq!(response.body_text(), expected);
    // About 8.4 KB of head and body at 4 KB/s, the first second's share at once.
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
    let line = server.wait_for_line("logs/sent.log", "/slow/big 206");
    assert_eq!(line, format!("/slow/big 206 {} - -", expected.len()));
}

const SLOW_BYTES: usize = 10_000;

fn big() -> String {
    (0..SLOW_BYTES)
        .map(|index| char::from(b'a' + (index % 26) as u8))
        .collect()
}

fn part_of(boundary: &str, range: &str, data: &str, total: usize) -> String {
    format!(
        "\r\n--{boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes {range}/{total}\r\n\r\n{data}"
    )
}
