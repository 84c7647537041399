//! An upstream's response head from arbitrary bytes: no panic; a refusal is worded as nginx
//! words it; a parsed head lies inside the buffer and its fields inside the head; framing
//! agrees with the fields and RFC 9112 §6.3; the head alone parses to the same head, and
//! any shorter prefix of a head that fits the status-line wait asks for more bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http1::response_head::{ResponseFraming, framing, parse};

/// How long a status line is waited for without its LF (`response_head.rs`).
const STATUS_LINE_WAIT_BYTES_MAX: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let head = match parse(data) {
        Ok(Some(head)) => head,
        Ok(None) => return,
        Err(invalid) => {
            assert!(invalid.to_string().starts_with("upstream sent "), "{invalid}");
            return;
        }
    };
    assert!(head.len <= data.len());
    if head.http_09 {
        assert_eq!((head.status, head.len), (200, 0));
        assert!(head.connection_close && head.fields.is_empty());
        assert_eq!(framing(&head, true), ResponseFraming::Close);
        return;
    }
    assert!((100..1000).contains(&head.status));
    let status_line = head.status_line_in(data);
    assert_eq!(status_line[..3], *head.status.to_string().as_bytes());
    assert!(head.status_line.end <= head.len);
    for (name, value) in &head.fields {
        assert!(!name.is_empty() && name.end <= value.start && value.end <= head.len);
    }
    assert!(!(head.chunked && head.content_length.is_some()));
    assert!(!head.chunked || head.http_11);
    assert!(head.http_11 || head.connection_close);
    assert_eq!(framing(&head, true), ResponseFraming::None);
    let expected = match (head.status, head.chunked, head.content_length) {
        (100..=199 | 204 | 304, _, _) => ResponseFraming::None,
        (_, true, _) => ResponseFraming::Chunked,
        (_, false, Some(length)) => ResponseFraming::Length(length),
        (_, false, None) => ResponseFraming::Close,
    };
    assert_eq!(framing(&head, false), expected);
    assert_eq!(parse(&data[..head.len]), Ok(Some(head.clone())));
    if head.len <= STATUS_LINE_WAIT_BYTES_MAX {
        // Every prefix for short heads, a spread of them for longer ones.
        let step = head.len / 64 + 1;
        for len in (0..head.len).step_by(step) {
            assert_eq!(parse(&data[..len]), Ok(None), "prefix of {len} bytes");
        }
    }
});
