use super::*;

fn parsed(head: &[u8]) -> UpstreamHead {
    parse(head).unwrap().unwrap()
}

fn refused(head: &[u8]) -> String {
    parse(head).unwrap_err().0
}

#[test]
fn status_line_and_fields() {
    let raw = b"HTTP/1.1 404 Not Here\r\nContent-Length: 3\r\nX-A: b\r\n\r\nabc";
    let head = parsed(raw);
    assert_eq!(head.status, 404);
    assert_eq!(head.status_line, b"404 Not Here");
    assert!(head.http_11);
    assert_eq!(head.content_length, Some(3));
    assert_eq!(head.len, 52);
    assert!(!head.connection_close);
    let fields: Vec<(&[u8], &[u8])> = head
        .fields
        .iter()
        .map(|(name, value)| (&raw[name.clone()], &raw[value.clone()]))
        .collect();
    assert_eq!(
        fields,
        [(&b"Content-Length"[..], &b"3"[..]), (b"X-A", b"b")]
    );
}

#[test]
fn incomplete_heads_wait_for_more() {
    assert!(parse(b"HTTP/1.1 200 OK\r\nContent-").unwrap().is_none());
    assert!(parse(b"HTT").unwrap().is_none());
}

#[test]
fn http_10_and_connection_close_end_the_connection() {
    assert!(parsed(b"HTTP/1.0 200 OK\r\n\r\n").connection_close);
    assert!(parsed(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").connection_close);
    assert!(!parsed(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n").connection_close);
}

#[test]
fn not_a_status_line_is_http_09() {
    let head = parsed(b"hello world\n");
    assert!(head.http_09);
    assert_eq!(head.status, 200);
    assert_eq!(head.len, 0);
}

#[test]
fn conflicting_framing_is_refused() {
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
        "upstream sent duplicate header line: \"Content-Length: 2\", previous value: \"Content-Length: 1\""
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
        "upstream sent invalid \"Content-Length\" header: \"Content-Length: -1\""
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
        "upstream sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time"
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
        "upstream sent unknown \"Transfer-Encoding\": \"gzip\""
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"),
        "upstream sent invalid header"
    );
}

#[test]
fn framing_follows_method_status_and_fields() {
    let length = parsed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(framing(&length, false), UpstreamFraming::Length(5));
    assert_eq!(framing(&length, true), UpstreamFraming::None);
    let chunked = parsed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(framing(&chunked, false), UpstreamFraming::Chunked);
    let close = parsed(b"HTTP/1.1 200 OK\r\n\r\n");
    assert_eq!(framing(&close, false), UpstreamFraming::Close);
    let not_modified = parsed(b"HTTP/1.1 304 Not Modified\r\n\r\n");
    assert_eq!(framing(&not_modified, false), UpstreamFraming::None);
}

#[test]
fn cookie_attributes_are_found_after_the_cookie_itself() {
    assert_eq!(
        attribute_start(b"a=b; Domain=x.com; path=/", b"domain="),
        Some(12)
    );
    assert_eq!(attribute_start(b"domain=x; path=/p", b"domain="), None);
    assert_eq!(attribute_start(b"a=b;path=/p", b"path="), Some(9));
}

#[test]
fn standard_reason_phrases_are_not_kept() {
    assert!(is_portico_line(200, b"200 OK"));
    assert!(!is_portico_line(200, b"200 Fine"));
    assert!(!is_portico_line(299, b"299 Custom"));
}
