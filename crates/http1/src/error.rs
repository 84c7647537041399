//! Request errors: one variant per distinct nginx outcome, with nginx's status and log text.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use crate::request::HeaderField;

/// Why a request was rejected. Each variant maps to the status nginx answers
/// ([`RequestError::status`]) and the text nginx logs at `info` ([`RequestError::log_message`]).
///
/// Ranges index the caller's head buffer (the `buf` given to `parse_head`/`analyze`);
/// [`RequestError::log_message_in`] renders them the way nginx quotes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// A method byte outside `A-Z`, `_`, `-` (nginx checks the method before anything else).
    InvalidMethod,
    /// Any other malformed request line, and a URI that normalisation rejects
    /// (bad `%` escape, `%00`, a dot segment climbing above `/`).
    InvalidRequest,
    /// `HTTP/2.0` and later majors: nginx answers 505.
    InvalidVersion,
    /// An HTTP/0.9 request (no version) whose method is not `GET`.
    InvalidMethodHttp09,
    /// The request line does not fit one `large_client_header_buffers` buffer.
    UriTooLong,
    /// The host of an absolute-form target (or a CONNECT authority) fails Host validation.
    InvalidHostInRequestLine,
    /// A byte nginx never accepts in a header line (control or space in the name, NUL in the
    /// value, CR not followed by LF). `offset` is the byte nginx quotes as `\xNN`.
    InvalidHeaderLine { line_start: usize, offset: usize },
    /// A header line does not fit one large buffer, or the buffers ran out while a header
    /// line was being read. `line` is what nginx quotes: the line up to the buffer end.
    HeaderLineTooLong { line: Range<usize> },
    /// The buffers ran out right after the request line, before any header line started.
    RequestTooLarge,
    /// More than `max_headers` header lines (invalid lines that were ignored do not count).
    TooManyHeaders { limit: usize },
    /// A second `Host` header.
    DuplicateHost {
        previous: HeaderField,
        duplicate: HeaderField,
    },
    /// A second header of a kind nginx requires to be unique (`Content-Length`,
    /// `Transfer-Encoding`, `If-Match`, `Authorization`, ...).
    DuplicateHeader {
        previous: HeaderField,
        duplicate: HeaderField,
    },
    /// The `Host` header fails Host validation.
    InvalidHost,
    /// HTTP/1.1 (or later 1.x) without a `Host` header.
    MissingHost,
    /// `Content-Length` is not a plain decimal number that fits in `i64`.
    InvalidContentLength,
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    TransferEncodingHttp10,
    /// `Content-Length` together with `Transfer-Encoding: chunked` (RFC 9112 §6.1: a
    /// request smuggling vector, rejected rather than resolved).
    ContentLengthAndTransferEncoding,
    /// `Transfer-Encoding` other than exactly `chunked` (case-insensitive); nginx answers 501.
    UnknownTransferEncoding { value: Range<usize> },
    /// CONNECT is answered 405 unless HTTP/1.1 reaches a server that tunnels.
    ConnectMethod,
    /// A CONNECT request with a body (`Content-Length` above 0, or chunked).
    ConnectWithBody,
    /// TRACE is always answered 405 by nginx.
    TraceMethod,
    /// A malformed chunked body; `offset` counts body bytes from the first chunk-size byte.
    InvalidChunkedBody { offset: u64 },
}

impl RequestError {
    /// The status nginx finalizes the request with. 494 is nginx's internal code for "request
    /// header too large": the client sees `400` with the "Request Header Or Cookie Too Large"
    /// page, which the caller renders.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::InvalidVersion => 505,
            RequestError::UriTooLong => 414,
            RequestError::HeaderLineTooLong { .. }
            | RequestError::RequestTooLarge
            | RequestError::TooManyHeaders { .. } => 494,
            RequestError::UnknownTransferEncoding { .. } => 501,
            RequestError::ConnectMethod | RequestError::TraceMethod => 405,
            _ => 400,
        }
    }

    /// nginx's `info`-level log text without the quoted request bytes.
    pub fn log_message(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            RequestError::InvalidMethod => "client sent invalid method",
            RequestError::InvalidRequest => "client sent invalid request",
            RequestError::InvalidVersion => "client sent invalid version",
            RequestError::InvalidMethodHttp09 => "client sent invalid method in HTTP/0.9 request",
            RequestError::UriTooLong => "client sent too long URI",
            RequestError::InvalidHostInRequestLine => "client sent invalid host in request line",
            RequestError::InvalidHeaderLine { .. } => "client sent invalid header line",
            RequestError::HeaderLineTooLong { .. } => "client sent too long header line",
            RequestError::RequestTooLarge => "client sent too large request",
            RequestError::TooManyHeaders { .. } => "client sent too many header lines",
            RequestError::DuplicateHost { .. } => "client sent duplicate host header",
            RequestError::DuplicateHeader { .. } => "client sent duplicate header line",
            RequestError::InvalidHost => "client sent invalid host header",
            RequestError::MissingHost => "client sent HTTP/1.1 request without \"Host\" header",
            RequestError::InvalidContentLength => "client sent invalid \"Content-Length\" header",
            RequestError::TransferEncodingHttp10 => {
                "client sent HTTP/1.0 request with \"Transfer-Encoding\" header"
            }
            RequestError::ContentLengthAndTransferEncoding => {
                "client sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time"
            }
            RequestError::UnknownTransferEncoding { .. } => {
                "client sent unknown \"Transfer-Encoding\""
            }
            RequestError::ConnectMethod => "client sent CONNECT method",
            RequestError::ConnectWithBody => "client sent CONNECT request with body",
            RequestError::TraceMethod => "client sent TRACE method",
            RequestError::InvalidChunkedBody { .. } => "client sent invalid chunked body",
        })
    }

    /// nginx's full log text, quoting the offending bytes of `buf` as nginx does, e.g.
    /// `client sent invalid header line: "X-Foo\x02..."`. Ranges that do not fit `buf` are
    /// left out rather than trusted.
    pub fn log_message_in(&self, buf: &[u8]) -> Cow<'static, str> {
        let mut text = String::from(self.log_message());
        match self {
            RequestError::InvalidHeaderLine { line_start, offset } => {
                let byte = buf.get(*offset).copied().unwrap_or(0);
                text.push_str(": \"");
                push_escaped(&mut text, slice(buf, *line_start..*offset));
                text.push_str(&format!("\\x{byte:02x}...\""));
            }
            RequestError::HeaderLineTooLong { line } => {
                text.push_str(": \"");
                let quoted = slice(buf, line.clone());
                push_escaped(&mut text, &quoted[..quoted.len().min(LOG_LINE_BYTES_MAX)]);
                text.push_str("...\"");
            }
            RequestError::DuplicateHost {
                previous,
                duplicate,
            }
            | RequestError::DuplicateHeader {
                previous,
                duplicate,
            } => {
                text.push_str(": ");
                push_field(&mut text, buf, duplicate);
                text.push_str(", previous value: ");
                push_field(&mut text, buf, previous);
            }
            RequestError::UnknownTransferEncoding { value } => {
                text.push_str(": \"");
                push_escaped(&mut text, slice(buf, value.clone()));
                text.push('"');
            }
            _ => {}
        }
        Cow::Owned(text)
    }
}

/// nginx cuts a quoted header line at `NGX_MAX_ERROR_STR - 300` bytes.
const LOG_LINE_BYTES_MAX: usize = 2048 - 300;

fn slice(buf: &[u8], range: Range<usize>) -> &[u8] {
    buf.get(range).unwrap_or_default()
}

fn push_field(text: &mut String, buf: &[u8], field: &HeaderField) {
    text.push('"');
    push_escaped(text, slice(buf, field.name.clone()));
    text.push_str(": ");
    push_escaped(text, slice(buf, field.value.clone()));
    text.push('"');
}

/// nginx copies these bytes raw into its log; a `String` cannot hold arbitrary bytes, so
/// control and non-ASCII bytes are written as `\xNN` instead.
fn push_escaped(text: &mut String, bytes: &[u8]) {
    for &byte in bytes {
        if (0x20..0x7f).contains(&byte) {
            text.push(char::from(byte));
        } else {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.log_message())
    }
}

impl std::error::Error for RequestError {}

#[cfg(test)]
mod tests {
    use super::RequestError;
    use crate::request::HeaderField;

    #[test]
    fn every_variant_has_nginx_status_and_text() {
        let field = |start: usize| HeaderField {
            name: start..start + 4,
            value: start + 6..start + 7,
        };
        let cases = [
            (
                RequestError::InvalidMethod,
                400,
                "client sent invalid method",
            ),
            (
                RequestError::InvalidRequest,
                400,
                "client sent invalid request",
            ),
            (
                RequestError::InvalidVersion,
                505,
                "client sent invalid version",
            ),
            (
                RequestError::InvalidMethodHttp09,
                400,
                "client sent invalid method in HTTP/0.9 request",
            ),
            (RequestError::UriTooLong, 414, "client sent too long URI"),
            (
                RequestError::InvalidHostInRequestLine,
                400,
                "client sent invalid host in request line",
            ),
            (
                RequestError::InvalidHeaderLine {
                    line_start: 0,
                    offset: 1,
                },
                400,
                "client sent invalid header line: \"H\\x6f...\"",
            ),
            (
                RequestError::HeaderLineTooLong { line: 0..4 },
                494,
                "client sent too long header line: \"Host...\"",
            ),
            (
                RequestError::RequestTooLarge,
                494,
                "client sent too large request",
            ),
            (
                RequestError::TooManyHeaders { limit: 1 },
                494,
                "client sent too many header lines",
            ),
            (
                RequestError::DuplicateHost {
                    previous: field(0),
                    duplicate: field(9),
                },
                400,
                "client sent duplicate host header: \"Host: b\", previous value: \"Host: a\"",
            ),
            (
                RequestError::DuplicateHeader {
                    previous: field(0),
                    duplicate: field(9),
                },
                400,
                "client sent duplicate header line: \"Host: b\", previous value: \"Host: a\"",
            ),
            (
                RequestError::InvalidHost,
                400,
                "client sent invalid host header",
            ),
            (
                RequestError::MissingHost,
                400,
                "client sent HTTP/1.1 request without \"Host\" header",
            ),
            (
                RequestError::InvalidContentLength,
                400,
                "client sent invalid \"Content-Length\" header",
            ),
            (
                RequestError::TransferEncodingHttp10,
                400,
                "client sent HTTP/1.0 request with \"Transfer-Encoding\" header",
            ),
            (
                RequestError::ContentLengthAndTransferEncoding,
                400,
                "client sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time",
            ),
            (
                RequestError::UnknownTransferEncoding { value: 6..7 },
                501,
                "client sent unknown \"Transfer-Encoding\": \"a\"",
            ),
            (
                RequestError::ConnectMethod,
                405,
                "client sent CONNECT method",
            ),
            (
                RequestError::ConnectWithBody,
                400,
                "client sent CONNECT request with body",
            ),
            (RequestError::TraceMethod, 405, "client sent TRACE method"),
            (
                RequestError::InvalidChunkedBody { offset: 3 },
                400,
                "client sent invalid chunked body",
            ),
        ];
        let buf = b"Host: a\r\nHost: b\r\n";
        for (error, status, text) in cases {
            assert_eq!(error.status(), status, "{error:?}");
            assert_eq!(error.log_message_in(buf), text);
            assert!(text.starts_with(error.log_message().as_ref()));
            assert_eq!(error.to_string(), error.log_message());
        }
        // Ranges beyond the buffer are left out instead of panicking.
        let error = RequestError::HeaderLineTooLong { line: 5..500 };
        assert_eq!(
            error.log_message_in(buf),
            "client sent too long header line: \"...\""
        );
    }
}
