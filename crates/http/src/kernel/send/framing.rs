//! How a response body is delimited on the wire (nginx's chunked filter decides it), and the
//! chunked encoding's framing (RFC 9112 §7.1).

use http1::Version;

/// How the body of a response is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// By `Content-Length`, or the response has no body.
    Length,
    /// `Transfer-Encoding: chunked`: chunks, then the last chunk with the trailer section.
    Chunked,
    /// By closing the connection: the length is unknown and chunks cannot be used.
    Close,
}

/// What the decision looks at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FramingInput {
    pub version: Version,
    pub method: http1::Method,
    pub status: u16,
    /// The body's length when known before sending.
    pub content_length: Option<u64>,
    /// Whether `add_trailer` applies to the response.
    pub expect_trailers: bool,
    /// `chunked_transfer_encoding`.
    pub chunked_transfer_encoding: bool,
}

/// nginx's decision: a response with a body whose length is unknown, or that expects
/// trailers, is chunked on HTTP/1.1 with `chunked_transfer_encoding on` (and loses its
/// `Content-Length`); otherwise an unknown length ends keep-alive and the close ends the
/// body. Responses without a body (HEAD, 1xx, 204, 304) keep their headers as they are.
pub(crate) fn response_framing(input: &FramingInput) -> Framing {
    let bodyless = matches!(input.status, 204 | 304)
        || input.status < 200
        || input.method == http1::Method::Head;
    if bodyless {
        return Framing::Length;
    }
    if input.content_length.is_some() && !input.expect_trailers {
        return Framing::Length;
    }
    // A CONNECT's success is the tunnel: its bytes are never chunked (nginx's chunked
    // filter leaves a CONNECT's 2xx alone).
    if input.method == http1::Method::Connect && input.status < 300 {
        return Framing::Close;
    }
    if input.version >= Version::Http11 && input.chunked_transfer_encoding {
        return Framing::Chunked;
    }
    match input.content_length {
        Some(_) => Framing::Length,
        None => Framing::Close,
    }
}

/// Ends a chunk's data.
pub(crate) const CHUNK_END: &[u8] = b"\r\n";

/// The longest chunk-size line for a chunk of at most `len` bytes, to size buffers.
pub(crate) fn chunk_header_len_max(len: usize) -> usize {
    let mut digits = 1;
    let mut rest = len >> 4;
    while rest > 0 {
        digits += 1;
        rest >>= 4;
    }
    digits + 2
}

/// Appends the last chunk with its trailer section: `0\r\n`, the field lines (each ending
/// in CRLF, as header lines are written), then `\r\n`.
pub(crate) fn push_last_chunk(out: &mut Vec<u8>, field_lines: &[u8]) {
    out.extend_from_slice(b"0\r\n");
    out.extend_from_slice(field_lines);
    out.extend_from_slice(b"\r\n");
}

/// Appends `data` as one chunk (nothing for empty data: an empty chunk would end the body).
pub fn push_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    http1::response::write_chunk_header(out, data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(CHUNK_END);
}

#[cfg(test)]
mod tests {
    use super::*;
    use http1::Method;

    fn input() -> FramingInput {
        FramingInput {
            version: Version::Http11,
            method: Method::Get,
            status: 200,
            content_length: Some(8),
            expect_trailers: false,
            chunked_transfer_encoding: true,
        }
    }

    #[test]
    fn known_length_without_trailers_keeps_content_length() {
        assert_eq!(response_framing(&input()), Framing::Length);
    }

    #[test]
    fn trailers_make_an_http11_response_chunked() {
        let trailers = FramingInput {
            expect_trailers: true,
            ..input()
        };
        assert_eq!(response_framing(&trailers), Framing::Chunked);
        // Not with HTTP/1.0, chunked_transfer_encoding off, HEAD, 204, 304 or 1xx.
        for other in [
            FramingInput {
                version: Version::Http10,
                ..trailers
            },
            FramingInput {
                chunked_transfer_encoding: false,
                ..trailers
            },
            FramingInput {
                method: Method::Head,
                ..trailers
            },
            FramingInput {
                status: 204,
                ..trailers
            },
            FramingInput {
                status: 304,
                ..trailers
            },
            FramingInput {
                status: 101,
                ..trailers
            },
        ] {
            assert_eq!(response_framing(&other), Framing::Length, "{other:?}");
        }
        // Error pages are chunked too.
        let error = FramingInput {
            status: 404,
            ..trailers
        };
        assert_eq!(response_framing(&error), Framing::Chunked);
    }

    #[test]
    fn unknown_length_is_chunked_or_closes() {
        let unknown = FramingInput {
            content_length: None,
            ..input()
        };
        assert_eq!(response_framing(&unknown), Framing::Chunked);
        let off = FramingInput {
            chunked_transfer_encoding: false,
            ..unknown
        };
        assert_eq!(response_framing(&off), Framing::Close);
        let http10 = FramingInput {
            version: Version::Http10,
            ..unknown
        };
        assert_eq!(response_framing(&http10), Framing::Close);
        let head = FramingInput {
            method: Method::Head,
            ..off
        };
        assert_eq!(response_framing(&head), Framing::Length);
    }

    #[test]
    fn a_tunnel_is_never_chunked() {
        let tunnel = FramingInput {
            version: Version::Http11,
            method: http1::Method::Connect,
            status: 200,
            content_length: None,
            expect_trailers: false,
            chunked_transfer_encoding: true,
        };
        assert_eq!(response_framing(&tunnel), Framing::Close);
        // Its error pages are framed as any response's.
        let refused = FramingInput {
            status: 502,
            ..tunnel
        };
        assert_eq!(response_framing(&refused), Framing::Chunked);
        let sized = FramingInput {
            content_length: Some(5),
            ..tunnel
        };
        assert_eq!(response_framing(&sized), Framing::Length);
    }

    #[test]
    fn chunk_framing() {
        let mut out = Vec::new();
        push_chunk(&mut out, b"SEE-THIS");
        push_chunk(&mut out, b"");
        let mut fields = Vec::new();
        http1::response::write_header(&mut fields, b"X-Var", b"localhost");
        http1::response::write_header(&mut fields, b"X-Always", b"1");
        push_last_chunk(&mut out, &fields);
        assert_eq!(
            out,
            b"8\r\nSEE-THIS\r\n0\r\nX-Var: localhost\r\nX-Always: 1\r\n\r\n"
        );
        let mut empty = Vec::new();
        push_last_chunk(&mut empty, b"");
        assert_eq!(empty, b"0\r\n\r\n");
        let mut big = Vec::new();
        push_chunk(&mut big, &[b'x'; 0x1a2]);
        assert!(big.starts_with(b"1a2\r\nxx"));
        assert!(big.ends_with(b"xx\r\n"));
    }

    #[test]
    fn chunk_header_lengths() {
        assert_eq!(chunk_header_len_max(0), 3);
        assert_eq!(chunk_header_len_max(15), 3);
        assert_eq!(chunk_header_len_max(16), 4);
        assert_eq!(chunk_header_len_max(256 * 1024), 7);
        let mut line = Vec::new();
        http1::response::write_chunk_header(&mut line, 256 * 1024);
        assert_eq!(line.len(), chunk_header_len_max(256 * 1024));
    }
}
