use super::*;

fn parsed(head: &[u8]) -> ResponseHead {
    parse(head).unwrap().unwrap()
}

fn refused(head: &[u8]) -> String {
    parse(head).unwrap_err().to_string()
}

#[test]
fn status_line_and_fields() {
    let raw = b"HTTP/1.1 404 Not Here\r\nContent-Length: 3\r\nX-A: b\r\n\r\nabc";
    let head = parsed(raw);
    assert_eq!(head.status, 404);
    assert_eq!(head.status_line_in(raw), b"404 Not Here");
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
fn status_lines_nginx_accepts() {
    let raw = b"HTTP/1.1 200\n\n";
    let bare = parsed(raw);
    assert_eq!((bare.status, bare.status_line_in(raw)), (200, &b"200"[..]));
    assert_eq!(bare.len, 14);
    assert!(parsed(b"HTTP/2.0 200 OK\r\n\r\n").http_11);
    assert!(parsed(b"HTTP/1.2 299 Custom\r\n\r\n").http_11);
    assert!(!parsed(b"HTTP/0.9 200 OK\r\n\r\n").http_11);
}

#[test]
fn not_a_status_line_is_http_09() {
    for answer in [
        &b"hello world\n"[..],
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 20x OK\r\n\r\n",
        b"HTTP/1 200 OK\r\n\r\n",
        b"HTTP/1.1000 200 OK\r\n\r\n",
        b"HTTP/1.1\r\n\r\n",
        b"http/1.1 200 OK\r\n\r\n",
    ] {
        let head = parsed(answer);
        assert!(head.http_09, "{answer:?}");
        assert_eq!(head.status, 200);
        assert_eq!(head.len, 0);
        assert!(head.connection_close);
        assert_eq!(framing(&head, true), ResponseFraming::Close);
    }
}

#[test]
fn incomplete_heads_wait_for_more() {
    assert!(parse(b"").unwrap().is_none());
    assert!(parse(b"HTT").unwrap().is_none());
    assert!(parse(b"HTTP/1.1 200 OK\r\nContent-").unwrap().is_none());
    assert!(parse(b"HTTP/1.1 200 OK\r\n\r").unwrap().is_none());
    // A status line is waited for up to 4096 bytes, then taken for an HTTP/0.9 answer.
    let mut long = b"HTTP/1.1 200 ".to_vec();
    long.resize(STATUS_LINE_WAIT_BYTES_MAX, b'x');
    assert!(parse(&long).unwrap().is_none());
    long.push(b'x');
    assert!(parsed(&long).http_09);
}

#[test]
fn http_10_and_connection_close_end_the_connection() {
    assert!(parsed(b"HTTP/1.0 200 OK\r\n\r\n").connection_close);
    assert!(parsed(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").connection_close);
    assert!(parsed(b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n\r\n").connection_close);
    assert!(!parsed(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n").connection_close);
    assert!(!parsed(b"HTTP/1.1 200 OK\r\nConnection: closed\r\n\r\n").connection_close);
}

#[test]
fn many_fields_are_parsed_past_the_inline_storage() {
    let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
    for _ in 0..FIELDS_INLINE + 1 {
        raw.extend_from_slice(b"X: y\r\n");
    }
    raw.extend_from_slice(b"\r\n");
    assert_eq!(parsed(&raw).fields.len(), FIELDS_INLINE + 1);
}

#[test]
fn conflicting_framing_is_refused() {
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
        "upstream sent duplicate header line: \"Content-Length: 2\", previous value: \"Content-Length: 1\""
    );
    // The previous value is quoted as the number it was read as.
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\ncontent-length: 01\r\nCONTENT-LENGTH: 1\r\n\r\n"),
        "upstream sent duplicate header line: \"CONTENT-LENGTH: 1\", previous value: \"Content-Length: 1\""
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
        "upstream sent invalid \"Content-Length\" header: \"Content-Length: -1\""
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n"),
        "upstream sent invalid \"Content-Length\" header: \"Content-Length: 9223372036854775808\""
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n"),
        "upstream sent invalid \"Content-Length\" header: \"Content-Length: \""
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
        refused(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
        ),
        "upstream sent duplicate header line: \"Transfer-Encoding: chunked\", \
         previous value: \"Transfer-Encoding: chunked\""
    );
    assert_eq!(
        refused(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        "upstream sent HTTP/1.0 response with \"Transfer-Encoding\" header"
    );
    assert_eq!(
        refused(b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"),
        "upstream sent invalid header"
    );
    assert_eq!(
        parse(b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"),
        Err(InvalidResponseHead::InvalidField)
    );
}

#[test]
fn framing_follows_method_status_and_fields() {
    let length = parsed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(framing(&length, false), ResponseFraming::Length(5));
    assert_eq!(framing(&length, true), ResponseFraming::None);
    let chunked = parsed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n");
    assert_eq!(framing(&chunked, false), ResponseFraming::Chunked);
    let close = parsed(b"HTTP/1.1 200 OK\r\n\r\n");
    assert_eq!(framing(&close, false), ResponseFraming::Close);
    for status in [b"100", b"101", b"103", b"204", b"304"] {
        let mut raw = b"HTTP/1.1 ".to_vec();
        raw.extend_from_slice(status);
        raw.extend_from_slice(b" X\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(framing(&parsed(&raw), false), ResponseFraming::None);
    }
}
