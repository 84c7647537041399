//! A request head assembled from fields another protocol decoded (HTTP/2's `:method`,
//! `:path` and header fields after HPACK), with the checks nginx runs on them: the method
//! and path as nginx's URI parser reads them, `max_headers`, and each well-known field as
//! it arrives (duplicates, `Host`). The request line is written as `$request` shows it
//! (`GET /a HTTP/2.0`) and read by the URI parser; the fields are stored after it, each
//! name then its value with nothing between, so that the rest of the request path reads
//! them by range as it reads an HTTP/1 head's. No field line is written or scanned.

use crate::error::RequestError;
use crate::request::fast_path;
use crate::request::request_line::{Scan, scan_request_line};
use crate::request::{HeadLimits, HeaderField, RequestHead, accept_request_line};

/// What a protocol with its own framing gives for a request head.
#[derive(Clone, Copy, Debug)]
pub struct Parts<'a> {
    pub method: &'a [u8],
    /// The request target (`:path`).
    pub path: &'a [u8],
    /// What `$server_protocol` says: `HTTP/2.0`, `HTTP/3.0`.
    pub protocol: &'a [u8; 8],
}

/// Assembles `head` (its ranges index `buf`, which is cleared first) from `parts` and the
/// header fields, in order. The names are checked already by the protocol's own rules
/// (lower case, `underscores_in_headers`, `ignore_invalid_headers`); `extra` fields are
/// not the client's (a `Host` from `:authority`) and `max_headers` does not count them.
pub fn assemble<'f>(
    parts: Parts<'_>,
    fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    extra: usize,
    limits: &HeadLimits,
    buf: &mut Vec<u8>,
    head: &mut RequestHead,
) -> Result<(), RequestError> {
    head.clear();
    buf.clear();
    // The line and the fields in one allocation (the fields' sizes are a guess that holds
    // for most heads: a line of 40 bytes each).
    buf.reserve(parts.method.len() + parts.path.len() + 16 + 40 * 8);
    buf.extend_from_slice(parts.method);
    buf.push(b' ');
    buf.extend_from_slice(parts.path);
    // The line is read as HTTP/1.1 (the version rules are HTTP/1's), then says its own
    // protocol: both are eight bytes.
    buf.extend_from_slice(b" HTTP/1.1\r\n");
    // The common shapes through the fast path, as an HTTP/1 head's line (the exact scanner
    // alone measured about 800 instructions per HTTP/2 request).
    let line = match fast_path::scan_request_line(buf) {
        Some(line) => line,
        None => match scan_request_line(buf).1 {
            Scan::Complete(line) => line,
            Scan::Rejected { error, .. } => return Err(error),
            Scan::Incomplete => return Err(RequestError::InvalidRequest),
        },
    };
    accept_request_line(buf, &line, limits, head)?;
    buf[line.protocol.clone()].copy_from_slice(parts.protocol);
    // The line's end was for the scanner only.
    buf.truncate(line.protocol.end);
    let max = limits.max_headers.map(|max| max + extra);
    for (name, value) in fields {
        if max.is_some_and(|max| head.headers.len() >= max) {
            return Err(RequestError::TooManyHeaders {
                limit: limits.max_headers.unwrap_or_default(),
            });
        }
        let start = buf.len();
        buf.extend_from_slice(name);
        buf.extend_from_slice(value);
        let field = HeaderField {
            name: start..start + name.len(),
            value: start + name.len()..buf.len(),
        };
        let index = head.headers.len();
        head.known.record(buf, &head.headers, index, &field)?;
        head.headers.push(field);
    }
    head.len = buf.len();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::Method;

    fn limits() -> HeadLimits {
        HeadLimits {
            client_header_buffer_size: 1024,
            large_client_header_buffers: (4, 8192),
            max_headers: Some(3),
            ignore_invalid_headers: true,
            underscores_in_headers: false,
            merge_slashes: true,
        }
    }

    const H2: &[u8; 8] = b"HTTP/2.0";

    fn parts<'a>(method: &'a [u8], path: &'a [u8]) -> Parts<'a> {
        Parts {
            method,
            path,
            protocol: H2,
        }
    }

    #[test]
    fn fields_become_a_head_read_by_range() {
        let (mut buf, mut head) = (Vec::new(), RequestHead::default());
        let fields: [(&[u8], &[u8]); 2] = [(b"host", b"example.com"), (b"x-a", b"b c")];
        assemble(
            parts(b"GET", b"/a/../b?x=1"),
            fields,
            0,
            &limits(),
            &mut buf,
            &mut head,
        )
        .unwrap();
        assert_eq!(head.method, Method::Get);
        assert_eq!(&buf[head.request_line.clone()], b"GET /a/../b?x=1 HTTP/2.0");
        assert_eq!(&buf[head.protocol.clone()], b"HTTP/2.0");
        assert_eq!(&buf[head.target.clone()], b"/a/../b?x=1");
        assert_eq!(head.uri, b"/b");
        let args = head.target_parts.args.clone().unwrap();
        assert_eq!(&buf[args], b"x=1");
        assert_eq!(head.headers.len(), 2);
        assert_eq!(head.headers[1].name_in(&buf), b"x-a");
        assert_eq!(head.headers[1].value_in(&buf), b"b c");
        assert_eq!(head.known.host, Some(0));
        assert_eq!(head.len, buf.len());
        assert_eq!(
            buf, b"GET /a/../b?x=1 HTTP/2.0hostexample.comx-ab c",
            "no HTTP/1 field syntax"
        );
    }

    #[test]
    fn the_checks_of_each_field_apply() {
        let (mut buf, mut head) = (Vec::new(), RequestHead::default());
        let twice: [(&[u8], &[u8]); 2] = [(b"content-length", b"1"), (b"content-length", b"2")];
        let result = assemble(
            parts(b"POST", b"/"),
            twice,
            0,
            &limits(),
            &mut buf,
            &mut head,
        );
        assert!(matches!(result, Err(RequestError::DuplicateHeader { .. })));
        let bad_host: [(&[u8], &[u8]); 1] = [(b"host", b"a/b")];
        let result = assemble(
            parts(b"GET", b"/"),
            bad_host,
            0,
            &limits(),
            &mut buf,
            &mut head,
        );
        assert!(matches!(result, Err(RequestError::InvalidHost)));
    }

    #[test]
    fn max_headers_counts_the_clients_fields_only() {
        let (mut buf, mut head) = (Vec::new(), RequestHead::default());
        let four: [(&[u8], &[u8]); 4] = [(b"a", b"1"), (b"b", b"2"), (b"c", b"3"), (b"d", b"4")];
        let result = assemble(parts(b"GET", b"/"), four, 0, &limits(), &mut buf, &mut head);
        assert!(matches!(
            result,
            Err(RequestError::TooManyHeaders { limit: 3 })
        ));
        assemble(parts(b"GET", b"/"), four, 1, &limits(), &mut buf, &mut head).unwrap();
        assert_eq!(head.headers.len(), 4);
    }

    #[test]
    fn a_method_or_path_nginx_refuses_is_refused() {
        let (mut buf, mut head) = (Vec::new(), RequestHead::default());
        let none: [(&[u8], &[u8]); 0] = [];
        assert!(assemble(parts(b"get", b"/"), none, 0, &limits(), &mut buf, &mut head).is_err());
        let escape = parts(b"GET", b"/../../etc/passwd");
        assert!(assemble(escape, none, 0, &limits(), &mut buf, &mut head).is_err());
    }
}
