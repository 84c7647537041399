//! The client role: a response head as an upstream sends it, read the way nginx's upstream
//! module reads it. The status line is scanned here (nginx accepts `HTTP/D.D NNN` without a
//! reason, and anything that is not a status line is an HTTP/0.9 answer); the field lines
//! go through httparse. Framing that nginx refuses (a duplicate or invalid
//! `Content-Length`, both `Content-Length` and `Transfer-Encoding`, a transfer coding other
//! than `chunked`) is an [`InvalidResponseHead`], whose text is nginx's error-log message.
//! [`framing`] then says how the body that follows is delimited (RFC 9112 §6.3).

use std::fmt;
use std::ops::Range;

use crate::ascii::eq_lowercase;

/// How the body after a response head is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseFraming {
    /// No body (a response to HEAD, 1xx, 204, 304).
    None,
    Length(u64),
    Chunked,
    /// Until the upstream closes the connection.
    Close,
}

/// A parsed response head.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// `NNN Reason` as the upstream wrote it, a range of the buffer the head was parsed
    /// from ([`ResponseHead::status_line_in`]).
    pub status_line: Range<usize>,
    pub http_11: bool,
    /// An HTTP/0.9 answer: no head at all; everything is body.
    pub http_09: bool,
    /// Each field's name and value, as ranges of the buffer the head was parsed from.
    pub fields: Vec<(Range<usize>, Range<usize>)>,
    pub content_length: Option<u64>,
    pub chunked: bool,
    pub connection_close: bool,
    /// Bytes of the head, final empty line included.
    pub len: usize,
}

impl ResponseHead {
    /// The status line's `NNN Reason` in `buf`, the buffer the head was parsed from.
    pub fn status_line_in<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        buf.get(self.status_line.clone()).unwrap_or_default()
    }
}

/// Why a head was refused. nginx treats every one as `invalid_header` (502, and a reason to
/// try the next server); `Display` writes nginx's error-log text, to which the caller adds
/// the action ("while reading response header from upstream").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvalidResponseHead {
    /// A field line httparse refuses.
    InvalidField,
    /// `Content-Length` is not a plain decimal number that fits in `i64`.
    InvalidContentLength { name: Vec<u8>, value: Vec<u8> },
    /// A second `Content-Length`; `previous` is the first one's value.
    DuplicateContentLength {
        name: Vec<u8>,
        value: Vec<u8>,
        previous: u64,
    },
    /// A second `Transfer-Encoding` after a `chunked` one.
    DuplicateTransferEncoding { name: Vec<u8>, value: Vec<u8> },
    /// `Transfer-Encoding` other than exactly `chunked` (case-insensitive).
    UnknownTransferEncoding { value: Vec<u8> },
    /// Both `Content-Length` and `Transfer-Encoding: chunked` (RFC 9112 §6.3 lets a
    /// recipient resolve this; nginx refuses it, as a smuggling vector).
    ContentLengthAndTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 response.
    TransferEncodingHttp10,
}

impl fmt::Display for InvalidResponseHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = String::from_utf8_lossy;
        match self {
            InvalidResponseHead::InvalidField => f.write_str("upstream sent invalid header"),
            InvalidResponseHead::InvalidContentLength { name, value } => write!(
                f,
                "upstream sent invalid \"Content-Length\" header: \"{}: {}\"",
                text(name),
                text(value)
            ),
            InvalidResponseHead::DuplicateContentLength {
                name,
                value,
                previous,
            } => write!(
                f,
                "upstream sent duplicate header line: \"{}: {}\", previous value: \
                 \"Content-Length: {previous}\"",
                text(name),
                text(value)
            ),
            InvalidResponseHead::DuplicateTransferEncoding { name, value } => write!(
                f,
                "upstream sent duplicate header line: \"{}: {}\", previous value: \
                 \"Transfer-Encoding: chunked\"",
                text(name),
                text(value)
            ),
            InvalidResponseHead::UnknownTransferEncoding { value } => write!(
                f,
                "upstream sent unknown \"Transfer-Encoding\": \"{}\"",
                text(value)
            ),
            InvalidResponseHead::ContentLengthAndTransferEncoding => f.write_str(
                "upstream sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time",
            ),
            InvalidResponseHead::TransferEncodingHttp10 => {
                f.write_str("upstream sent HTTP/1.0 response with \"Transfer-Encoding\" header")
            }
        }
    }
}

impl std::error::Error for InvalidResponseHead {}

/// A status line without its LF is waited for only while it is at most this long; longer,
/// it cannot be one and the answer is HTTP/0.9.
const STATUS_LINE_WAIT_BYTES_MAX: usize = 4096;

/// Field lines parsed without allocating; a head with more is parsed again with room for
/// [`FIELDS_MAX`]. The inline array is filled with empty fields before every parse, so it
/// is sized for common heads (a typical upstream sends 5 to 20 fields), not the largest.
const FIELDS_INLINE: usize = 32;
const FIELDS_MAX: usize = 4096;

/// Parses the head at the start of `buf`; `Ok(None)` when more bytes are needed.
pub fn parse(buf: &[u8]) -> Result<Option<ResponseHead>, InvalidResponseHead> {
    let mut head = ResponseHead::default();
    let line_end = match status_line(buf, &mut head) {
        StatusLine::Partial => return Ok(None),
        StatusLine::Invalid => {
            head.http_09 = true;
            head.status = 200;
            head.connection_close = true;
            return Ok(Some(head));
        }
        StatusLine::Complete(end) => end,
    };
    let mut fields = [httparse::EMPTY_HEADER; FIELDS_INLINE];
    let mut storage;
    let parsed = match httparse::parse_headers(&buf[line_end..], &mut fields) {
        Err(httparse::Error::TooManyHeaders) => {
            storage = vec![httparse::EMPTY_HEADER; FIELDS_MAX];
            httparse::parse_headers(&buf[line_end..], &mut storage)
        }
        other => other,
    };
    let (len, fields) = match parsed {
        Ok(httparse::Status::Complete(done)) => done,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(InvalidResponseHead::InvalidField),
    };
    head.len = line_end + len;
    let base = buf.as_ptr() as usize;
    let range = |part: &[u8]| {
        let start = part.as_ptr() as usize - base;
        start..start + part.len()
    };
    head.fields.reserve(fields.len());
    for field in fields.iter() {
        let name = field.name.as_bytes();
        let value = field.value;
        if eq_lowercase(name, b"content-length") {
            head.content_length = Some(content_length(name, value, head.content_length)?);
        } else if eq_lowercase(name, b"transfer-encoding") {
            if head.chunked {
                return Err(InvalidResponseHead::DuplicateTransferEncoding {
                    name: name.to_vec(),
                    value: value.to_vec(),
                });
            }
            if !value.eq_ignore_ascii_case(b"chunked") {
                return Err(InvalidResponseHead::UnknownTransferEncoding {
                    value: value.to_vec(),
                });
            }
            head.chunked = true;
        } else if eq_lowercase(name, b"connection")
            && value
                .split(|&byte| byte == b',')
                .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"))
        {
            head.connection_close = true;
        }
        head.fields.push((range(name), range(value)));
    }
    if head.chunked && head.content_length.is_some() {
        return Err(InvalidResponseHead::ContentLengthAndTransferEncoding);
    }
    if head.chunked && !head.http_11 {
        return Err(InvalidResponseHead::TransferEncodingHttp10);
    }
    if !head.http_11 {
        head.connection_close = true;
    }
    Ok(Some(head))
}

/// A `Content-Length` value: digits only, at most `i64::MAX`, and the first of its kind.
fn content_length(
    name: &[u8],
    value: &[u8],
    previous: Option<u64>,
) -> Result<u64, InvalidResponseHead> {
    if let Some(previous) = previous {
        return Err(InvalidResponseHead::DuplicateContentLength {
            name: name.to_vec(),
            value: value.to_vec(),
            previous,
        });
    }
    std::str::from_utf8(value)
        .ok()
        .filter(|text| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
        .and_then(|text| text.parse::<u64>().ok())
        .filter(|length| *length <= i64::MAX as u64)
        .ok_or_else(|| InvalidResponseHead::InvalidContentLength {
            name: name.to_vec(),
            value: value.to_vec(),
        })
}

enum StatusLine {
    Partial,
    Invalid,
    /// The offset after the line's LF.
    Complete(usize),
}

/// `HTTP/D.D NNN [reason]` then CRLF or LF, as nginx's status-line parser accepts it.
fn status_line(buf: &[u8], head: &mut ResponseHead) -> StatusLine {
    const PREFIX: &[u8] = b"HTTP/";
    let prefix_len = buf.len().min(PREFIX.len());
    if buf[..prefix_len] != PREFIX[..prefix_len] {
        return StatusLine::Invalid;
    }
    let Some(line_len) = memchr::memchr(b'\n', buf) else {
        // A status line without its end is waited for only while it could still be one.
        return if buf.len() > STATUS_LINE_WAIT_BYTES_MAX {
            StatusLine::Invalid
        } else {
            StatusLine::Partial
        };
    };
    let line = &buf[..line_len];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let rest = &line[PREFIX.len().min(line.len())..];
    let Some(space) = memchr::memchr(b' ', rest) else {
        return StatusLine::Invalid;
    };
    let version = &rest[..space];
    let Some(dot) = memchr::memchr(b'.', version) else {
        return StatusLine::Invalid;
    };
    let (major, minor) = (&version[..dot], &version[dot + 1..]);
    let number = |digits: &[u8]| -> Option<u32> {
        (!digits.is_empty() && digits.len() <= 3 && digits.iter().all(u8::is_ascii_digit)).then(
            || {
                digits
                    .iter()
                    .fold(0, |number, digit| number * 10 + u32::from(digit - b'0'))
            },
        )
    };
    let (Some(major), Some(minor)) = (number(major), number(minor)) else {
        return StatusLine::Invalid;
    };
    let status_text = &rest[space + 1..];
    if status_text.len() < 3 || !status_text[..3].iter().all(u8::is_ascii_digit) {
        return StatusLine::Invalid;
    }
    if status_text.len() > 3 && status_text[3] != b' ' {
        return StatusLine::Invalid;
    }
    let code = u16::from(status_text[0] - b'0') * 100
        + u16::from(status_text[1] - b'0') * 10
        + u16::from(status_text[2] - b'0');
    if code < 100 {
        return StatusLine::Invalid;
    }
    head.status = code;
    let start = status_text.as_ptr() as usize - buf.as_ptr() as usize;
    head.status_line = start..start + status_text.len();
    head.http_11 = major > 1 || (major == 1 && minor >= 1);
    StatusLine::Complete(line_len + 1)
}

/// How the body of a response with this head is delimited; `method_head` when the request
/// was HEAD. RFC 9112 §6.3: "Any response to a HEAD request and any response with a 1xx
/// (Informational), 204 (No Content), or 304 (Not Modified) status code is always
/// terminated by the first empty line after the header fields"; then `Transfer-Encoding:
/// chunked`, then `Content-Length`; otherwise "the message body length is determined by the
/// number of octets received prior to the server closing the connection". An HTTP/0.9
/// answer is all body, until the close.
pub fn framing(head: &ResponseHead, method_head: bool) -> ResponseFraming {
    if head.http_09 {
        return ResponseFraming::Close;
    }
    if method_head || head.status == 204 || head.status == 304 || head.status < 200 {
        return ResponseFraming::None;
    }
    if head.chunked {
        return ResponseFraming::Chunked;
    }
    match head.content_length {
        Some(length) => ResponseFraming::Length(length),
        None => ResponseFraming::Close,
    }
}

#[cfg(test)]
mod tests;
