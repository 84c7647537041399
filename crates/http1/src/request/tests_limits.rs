//! Header buffer limits and `max_headers`, each at and one past its value. The expected
//! answers are nginx 1.22's with `client_header_buffer_size 128;
//! large_client_header_buffers 2 256;` (and `http_header_buffers.t`, `http_max_headers.t`).

use super::tests::{parse_checked, show};
use super::*;

fn small() -> HeadLimits {
    HeadLimits {
        client_header_buffer_size: 128,
        large_client_header_buffers: (2, 256),
        ..HeadLimits::default()
    }
}

fn outcome(input: &[u8], limits: &HeadLimits) -> Result<Progress, RequestError> {
    parse_checked(input, limits).map(|(progress, _)| progress)
}

/// A request line of exactly `len` bytes, CRLF included.
fn request_line(len: usize) -> Vec<u8> {
    let mut line = b"GET /".to_vec();
    line.resize(len - 11, b'a');
    line.extend_from_slice(b" HTTP/1.0\r\n");
    line
}

/// A header line of exactly `len` bytes, CRLF included.
fn header_line(name: &str, len: usize) -> Vec<u8> {
    let mut line = format!("{name}: ").into_bytes();
    line.resize(len - 2, b'v');
    line.extend_from_slice(b"\r\n");
    line
}

fn head(parts: &[&[u8]]) -> Vec<u8> {
    let mut input = parts.concat();
    input.extend_from_slice(b"\r\n");
    input
}

#[test]
fn request_line_fits_one_large_buffer() {
    for len in [254, 255, 256] {
        let input = head(&[&request_line(len)]);
        assert_eq!(outcome(&input, &small()), Ok(Progress::Complete), "{len}");
    }
    let input = head(&[&request_line(257)]);
    assert_eq!(outcome(&input, &small()), Err(RequestError::UriTooLong));
    assert_eq!(RequestError::UriTooLong.status(), 414);
    // Known as soon as the line outgrows the buffer, without waiting for its end.
    assert_eq!(
        outcome(&request_line(257)[..256], &small()),
        Err(RequestError::UriTooLong)
    );
    assert_eq!(
        outcome(&request_line(257)[..255], &small()),
        Ok(Progress::Partial)
    );
}

#[test]
fn request_line_fitting_the_first_buffer_needs_no_large_buffer() {
    let limits = HeadLimits {
        client_header_buffer_size: 1024,
        large_client_header_buffers: (1, 128),
        ..HeadLimits::default()
    };
    let input = head(&[&request_line(1000)]);
    assert_eq!(outcome(&input, &limits), Ok(Progress::Complete));
    // Filling the first buffer mid-line with more than one large buffer read is 414.
    let input = head(&[&request_line(1100)]);
    assert_eq!(outcome(&input, &limits), Err(RequestError::UriTooLong));
}

#[test]
fn error_inside_the_buffer_wins_error_beyond_it_loses_to_the_limit() {
    let mut within = b"GET /".to_vec();
    within.resize(205, b'a');
    within.extend_from_slice(b"\x01 HTTP/1.0\r\n\r\n");
    assert_eq!(
        outcome(&within, &small()),
        Err(RequestError::InvalidRequest)
    );
    let mut beyond = b"GET /".to_vec();
    beyond.resize(305, b'a');
    beyond.extend_from_slice(b"\x01 HTTP/1.0\r\n\r\n");
    assert_eq!(outcome(&beyond, &small()), Err(RequestError::UriTooLong));
}

#[test]
fn header_line_fits_one_large_buffer() {
    let start = b"GET / HTTP/1.0\r\n";
    for len in [254, 255, 256] {
        let input = head(&[start, &header_line("X", len)]);
        assert_eq!(outcome(&input, &small()), Ok(Progress::Complete), "{len}");
    }
    let input = head(&[start, &header_line("X", 257)]);
    let error = outcome(&input, &small()).unwrap_err();
    // The line moved to a large buffer and filled it: nginx quotes those 256 bytes.
    assert_eq!(error, RequestError::HeaderLineTooLong { line: 16..272 });
    assert_eq!(error.status(), 494);
    let text = error.log_message_in(&input);
    assert!(
        text.starts_with("client sent too long header line: \"X: vvv"),
        "{text}"
    );
    // The quoted bytes end with the line's CR, as nginx quotes the whole buffer.
    assert!(text.ends_with("vvv\\x0d...\""), "{text}");
}

#[test]
fn header_lines_share_the_large_buffers() {
    // 100-byte lines after a 16-byte request line: the second and fourth line each take a
    // large buffer; the sixth finds none left.
    let lines: Vec<Vec<u8>> = (0..6).map(|i| header_line(&format!("X{i}"), 100)).collect();
    let start: &[u8] = b"GET / HTTP/1.0\r\n";
    for count in [3, 4, 5] {
        let mut parts = vec![start];
        parts.extend(lines[..count].iter().map(Vec::as_slice));
        assert_eq!(
            outcome(&head(&parts), &small()),
            Ok(Progress::Complete),
            "{count}"
        );
    }
    let mut parts = vec![start];
    parts.extend(lines.iter().map(Vec::as_slice));
    let input = head(&parts);
    assert_eq!(
        outcome(&input, &small()),
        Err(RequestError::HeaderLineTooLong { line: 516..572 })
    );
    // One more large buffer and the same head fits.
    let three = HeadLimits {
        large_client_header_buffers: (3, 256),
        ..small()
    };
    assert_eq!(outcome(&input, &three), Ok(Progress::Complete));
}

#[test]
fn line_ending_exactly_at_a_buffer_end() {
    // The request line fills the first buffer exactly; the header starts a large buffer.
    let input = head(&[&request_line(128), b"X: y\r\n"]);
    assert_eq!(outcome(&input, &small()), Ok(Progress::Complete));
    // The request line fills a large buffer exactly; the next line takes the second one,
    // and a long line after it finds none left.
    let input = head(&[&request_line(256), b"X: y\r\n"]);
    assert_eq!(outcome(&input, &small()), Ok(Progress::Complete));
    let input = head(&[&request_line(256), b"X: y\r\n", &header_line("Y", 309)]);
    assert_eq!(
        outcome(&input, &small()),
        Err(RequestError::HeaderLineTooLong { line: 262..512 })
    );
    // With one large buffer only, nothing is left for the line after the request line.
    let one = HeadLimits {
        large_client_header_buffers: (1, 256),
        ..small()
    };
    let input = head(&[&request_line(256), b"X: y\r\n"]);
    assert_eq!(outcome(&input, &one), Err(RequestError::RequestTooLarge));
    assert_eq!(
        RequestError::RequestTooLarge.log_message(),
        "client sent too large request"
    );
    // A header line ending at the end of the last buffer: the next line has nowhere to go,
    // and nginx quotes the line that ended.
    let input = head(&[&request_line(128), &header_line("X", 256), b"Y: z\r\n"]);
    assert_eq!(
        outcome(&input, &one),
        Err(RequestError::HeaderLineTooLong { line: 128..384 })
    );
}

#[test]
fn leading_empty_lines_reuse_the_first_buffer() {
    let mut input = b"\r\n".repeat(150);
    input.extend_from_slice(b"GET /lead HTTP/1.0\r\n\r\n");
    assert_eq!(outcome(&input, &small()), Ok(Progress::Complete));
    assert_eq!(
        outcome(&b"\r\n".repeat(1000), &small()),
        Ok(Progress::Partial)
    );
}

#[test]
fn max_headers_as_http_max_headers_t() {
    let limits = HeadLimits {
        max_headers: Some(5),
        ..HeadLimits::default()
    };
    let get = |count: usize| {
        let extra: String = (1..count).map(|i| format!("X-Blah: {i}\n")).collect();
        format!("GET / HTTP/1.0\nHost: localhost\n{extra}\n").into_bytes()
    };
    assert_eq!(outcome(&get(5), &limits), Ok(Progress::Complete));
    let error = outcome(&get(6), &limits).unwrap_err();
    assert_eq!(error, RequestError::TooManyHeaders { limit: 5 });
    assert_eq!(
        (error.status(), error.log_message()),
        (494, "client sent too many header lines".into())
    );
    // Ignored invalid lines do not count; no limit means none.
    let mut ignored = get(5);
    ignored.splice(15..15, b"x_y: 1\nx.z: 2\n".iter().copied());
    assert_eq!(
        outcome(&ignored, &limits),
        Ok(Progress::Complete),
        "{}",
        show(&ignored)
    );
    let unlimited = HeadLimits {
        max_headers: None,
        ..HeadLimits::default()
    };
    assert_eq!(outcome(&get(2000), &unlimited), Ok(Progress::Complete));
}

#[test]
fn long_lines_as_http_header_buffers_t() {
    let limits = HeadLimits {
        client_header_buffer_size: 128,
        large_client_header_buffers: (5, 256),
        ..HeadLimits::default()
    };
    let mut long_header = b"GET / HTTP/1.0\r\nHost: foo\r\nX-Foo: foo".to_vec();
    long_header.extend(b"1234567890".repeat(20));
    long_header.extend_from_slice(b"bar\r\n\r\n");
    assert_eq!(outcome(&long_header, &limits), Ok(Progress::Complete));
    let mut long_line = b"GET /foo".to_vec();
    long_line.extend(b"1234567890".repeat(20));
    long_line.extend_from_slice(b"bar HTTP/1.0\r\nHost: foo\r\n\r\n");
    let mut head = RequestHead::default();
    assert_eq!(
        parse_head(&long_line, &limits, &mut head),
        Ok(Progress::Complete)
    );
    assert!(head.uri.ends_with(b"7890bar"));
}
