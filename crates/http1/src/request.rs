//! Request heads: finding and checking a head as nginx does, then validating its framing.
//!
//! [`parse_head`] plays nginx's "reading client request line / headers" steps: it scans the
//! request line, normalises the URI, reads header lines (common lines through
//! `fast_path.rs`, the rest through the exact scanners), applies the header-buffer limits
//! and runs the per-header checks nginx runs as each line arrives (duplicate and invalid
//! `Host`, duplicate unique headers, `max_headers`). [`analyze`] plays
//! `ngx_http_process_request_header`: missing `Host`, `Content-Length` and
//! `Transfer-Encoding` (RFC 9112 §6), CONNECT and TRACE, then body framing and connection
//! options.

use std::ops::Range;

use crate::error::RequestError;
use crate::method::Method;
use crate::uri::{self, Target, TargetForm};

mod analyze;
pub mod assemble;
mod buffers;
mod fast_path;
mod header_line;
mod known;
mod request_line;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fast_path;
#[cfg(test)]
mod tests_framing;
#[cfg(test)]
mod tests_httparse;
#[cfg(test)]
mod tests_known;
#[cfg(test)]
mod tests_limits;

pub use analyze::{ConnectAllowed, analyze, check_connect};

use buffers::BufferScheme;
use header_line::{FieldLine, Line};
use request_line::{RequestLine, Scan};

/// The protocol version. nginx accepts `HTTP/1.x` for any x up to three digits and treats
/// every x above 0 as 1.1; a request line without a version is HTTP/0.9.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    Http09,
    Http10,
    #[default]
    Http11,
}

/// A header line as ranges into the head buffer. `value` is what nginx keeps: without the
/// leading and trailing spaces (tabs are part of the value, as in nginx).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderField {
    pub name: Range<usize>,
    pub value: Range<usize>,
}

impl HeaderField {
    pub fn name_in<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.name.clone()]
    }

    pub fn value_in<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.value.clone()]
    }
}

/// A request head found by [`parse_head`]. Reuse one per connection: parsing clears the
/// vectors without giving their memory back.
#[derive(Clone, Debug, Default)]
pub struct RequestHead {
    pub method: Method,
    pub method_bytes: Range<usize>,
    /// nginx's unparsed URI, `$request_uri`: from the path's first byte to the end of the
    /// target. For an absolute-form target this leaves out `scheme://host`.
    pub target: Range<usize>,
    pub version: Version,
    /// Kept header lines, in order.
    pub headers: Vec<HeaderField>,
    /// Header lines skipped under `ignore_invalid_headers`, each from its first byte to the
    /// end of its value: what nginx quotes in "client sent invalid header line" (at info).
    pub ignored_headers: Vec<Range<usize>>,
    /// Bytes of the head, leading empty lines and the final empty line included.
    pub len: usize,
    /// `$request`: from the method to the end of the line, CR and LF excluded.
    pub request_line: Range<usize>,
    /// `$server_protocol` (`HTTP/1.1`); empty for HTTP/0.9.
    pub protocol: Range<usize>,
    /// The request target in parts.
    pub target_parts: Target,
    /// `$uri`: the normalised path (see [`uri::normalize`]).
    pub uri: Vec<u8>,
    /// Where the well-known headers are among `headers`.
    pub known: KnownHeaders,
}

impl RequestHead {
    fn clear(&mut self) {
        self.method = Method::Other;
        self.method_bytes = 0..0;
        self.target = 0..0;
        self.version = Version::Http11;
        self.headers.clear();
        self.ignored_headers.clear();
        self.len = 0;
        self.request_line = 0..0;
        self.protocol = 0..0;
        self.target_parts = Target::default();
        self.uri.clear();
        self.known = KnownHeaders::default();
    }
}

/// The limits nginx applies while reading a head, with nginx's directive names.
#[derive(Clone, Debug)]
pub struct HeadLimits {
    /// `client_header_buffer_size`: the first buffer (nginx default 1k).
    pub client_header_buffer_size: usize,
    /// `large_client_header_buffers`: (count, size) (nginx default 4 8k).
    pub large_client_header_buffers: (usize, usize),
    /// `max_headers` (nginx 1.27+, default 1000); `None` for no limit.
    pub max_headers: Option<usize>,
    /// `ignore_invalid_headers` (default on).
    pub ignore_invalid_headers: bool,
    /// `underscores_in_headers` (default off).
    pub underscores_in_headers: bool,
    /// `merge_slashes` (default on) of the default server: nginx normalises the URI before
    /// it knows which server the `Host` header selects.
    pub merge_slashes: bool,
}

impl Default for HeadLimits {
    fn default() -> HeadLimits {
        HeadLimits {
            client_header_buffer_size: 1024,
            large_client_header_buffers: (4, 8192),
            max_headers: Some(1000),
            ignore_invalid_headers: true,
            underscores_in_headers: false,
            merge_slashes: true,
        }
    }
}

/// Whether [`parse_head`] found the end of the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    Complete,
    /// Valid so far; call again with more bytes.
    Partial,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BodyFraming {
    #[default]
    None,
    Length(u64),
    Chunked,
}

/// What the `Connection` headers ask for. nginx looks for "close", then "keep-alive",
/// anywhere in each value (case-insensitive); a later header that matches wins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConnectionOption {
    #[default]
    Default,
    Close,
    KeepAlive,
    /// Neither "close" nor "keep-alive" but "upgrade" appears. nginx itself treats this
    /// like `Default`; it is reported for the proxy.
    Upgrade,
}

/// Which well-known headers are present: indexes into [`RequestHead::headers`] (first
/// occurrence).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownHeaders {
    pub host: Option<usize>,
    pub connection: Option<usize>,
    pub content_length: Option<usize>,
    pub transfer_encoding: Option<usize>,
    pub expect: Option<usize>,
    pub user_agent: Option<usize>,
    pub referer: Option<usize>,
    pub if_modified_since: Option<usize>,
    pub if_none_match: Option<usize>,
    pub if_match: Option<usize>,
    pub if_unmodified_since: Option<usize>,
    pub if_range: Option<usize>,
    pub range: Option<usize>,
    pub authorization: Option<usize>,
    pub keep_alive: Option<usize>,
    pub upgrade: Option<usize>,
    pub te: Option<usize>,
    pub cookie: Option<usize>,
    pub x_forwarded_for: Option<usize>,
    pub accept_encoding: Option<usize>,
    pub content_range: Option<usize>,
    pub content_type: Option<usize>,
    pub proxy_authorization: Option<usize>,
}

/// Browser families nginx recognises in `User-Agent`, for `keepalive_disable msie6|safari`,
/// `msie_padding` and `msie_refresh`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Browser {
    pub msie: bool,
    /// MSIE 4 to 6 (MSIE 6 only without "SV1").
    pub msie6: bool,
    pub opera: bool,
    pub gecko: bool,
    pub chrome: bool,
    pub safari: bool,
    pub konqueror: bool,
}

/// What [`analyze`] learned from a head.
#[derive(Clone, Debug, Default)]
pub struct RequestInfo {
    pub target: Target,
    /// `$host` before server_name fallback: validated, lower-cased, port and trailing dot
    /// stripped; from an absolute-form target if any, else `Host`; empty if neither.
    pub host: Vec<u8>,
    pub framing: BodyFraming,
    pub connection: ConnectionOption,
    /// `Expect: 100-continue` (exactly, case-insensitive) on HTTP/1.1.
    pub expect_continue: bool,
    pub browser: Browser,
    pub known: KnownHeaders,
}

/// Parses a request head from the start of `buf`, as far as it goes.
///
/// `Ok(Partial)` means every byte so far is acceptable and no limit is exceeded yet.
/// Errors come in the order nginx meets them, byte by byte, with buffer limits (see
/// `buffers.rs`) checked when a buffer would fill: `UriTooLong` (414) for a request line
/// longer than one large buffer, `HeaderLineTooLong`/`RequestTooLarge` (494) when a header
/// line or the head does not fit, `TooManyHeaders` (494) past `max_headers`.
///
/// Each call starts over from `buf[0]`, so call it when new bytes arrive; the work is one
/// pass over the buffer.
pub fn parse_head(
    buf: &[u8],
    limits: &HeadLimits,
    head: &mut RequestHead,
) -> Result<Progress, RequestError> {
    parse_head_with(buf, limits, head, Scanners::FastThenExact)
}

/// [`parse_head`] without the fast path of `fast_path.rs`: the exact line scanners alone.
/// It is the reference the fast path is checked against by tests and the fuzz target.
#[doc(hidden)]
pub fn parse_head_exact(
    buf: &[u8],
    limits: &HeadLimits,
    head: &mut RequestHead,
) -> Result<Progress, RequestError> {
    parse_head_with(buf, limits, head, Scanners::ExactOnly)
}

/// Which line scanners read a head.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scanners {
    /// `fast_path.rs` for each line, the exact scanner for the lines it leaves.
    FastThenExact,
    ExactOnly,
}

fn parse_head_with(
    buf: &[u8],
    limits: &HeadLimits,
    head: &mut RequestHead,
    scanners: Scanners,
) -> Result<Progress, RequestError> {
    head.clear();
    let mut buffers = BufferScheme::new(limits);
    let fast = match scanners {
        Scanners::FastThenExact => fast_path::scan_request_line(buf),
        Scanners::ExactOnly => None,
    };
    let (start, scan) = match fast {
        Some(line) => (line.start, Scan::Complete(line)),
        None => request_line::scan_request_line(buf),
    };
    let event = match &scan {
        Scan::Complete(line) => line.end - 1,
        Scan::Rejected { offset, .. } => *offset,
        Scan::Incomplete => buf.len(),
    };
    buffers.request_line(start, event)?;
    let line = match scan {
        Scan::Complete(line) => line,
        Scan::Rejected { error, .. } => return Err(error),
        Scan::Incomplete => return Ok(Progress::Partial),
    };
    accept_request_line(buf, &line, limits, head)?;
    if line.version == Version::Http09 {
        // HTTP/0.9 has no headers.
        head.len = line.end;
        return Ok(Progress::Complete);
    }
    parse_header_lines(buf, line.end, limits, head, &mut buffers, scanners)
}

/// Fills `head` from the request line and checks what nginx checks as soon as the line is
/// complete: the URI must normalise, the absolute-form host must validate.
fn accept_request_line(
    buf: &[u8],
    line: &RequestLine,
    limits: &HeadLimits,
    head: &mut RequestHead,
) -> Result<(), RequestError> {
    head.method = line.method;
    head.method_bytes = line.method_bytes.clone();
    head.target = line.target.clone();
    head.version = line.version;
    head.request_line = line.start..line.line_end;
    head.protocol = line.protocol.clone();
    head.target_parts = split_target(buf, line);
    let path = &buf[head.target_parts.path.clone()];
    if head.target_parts.complex {
        uri::normalize(path, limits.merge_slashes, &mut head.uri)?;
    } else {
        head.uri.extend_from_slice(path);
    }
    if let Some(authority) = &line.authority
        && crate::host::host_len(&buf[authority.clone()]).is_none()
    {
        return Err(RequestError::InvalidHostInRequestLine);
    }
    Ok(())
}

/// Splits the target into path and arguments where nginx does: at the first `?` unless a
/// `#` comes first; the arguments end at a `#`.
fn split_target(buf: &[u8], line: &RequestLine) -> Target {
    let target = line.target.clone();
    let bytes = &buf[target.clone()];
    // The first `?` or `#`: a `?` starts the arguments, which end at the next `#`.
    let (path, args) = match find_question_or_hash(bytes) {
        Some(q) if bytes[q] == b'?' => {
            let args_start = target.start + q + 1;
            let args_end = memchr::memchr(b'#', &buf[args_start..target.end])
                .map_or(target.end, |h| args_start + h);
            (target.start..target.start + q, Some(args_start..args_end))
        }
        _ => (target.clone(), None),
    };
    let form = match (&line.scheme, &line.authority) {
        (Some(scheme), Some(authority)) => {
            let (host, port) = match line.port_colon {
                Some(colon) => (authority.start..colon, Some(colon + 1..authority.end)),
                None => (authority.clone(), None),
            };
            TargetForm::Absolute {
                scheme: scheme.clone(),
                host,
                port,
            }
        }
        (None, Some(_)) => TargetForm::Authority,
        _ => TargetForm::Origin,
    };
    Target {
        form,
        path,
        args,
        complex: line.complex,
        authority: line.authority.clone(),
    }
}

/// The offset of the first `?` or `#` in `target`. Most targets are short, and on a short
/// target a byte loop beats `memchr2`, whose setup costs more than the search.
fn find_question_or_hash(target: &[u8]) -> Option<usize> {
    const SHORT_TARGET_LEN_MAX: usize = 16;
    if target.len() > SHORT_TARGET_LEN_MAX {
        return memchr::memchr2(b'?', b'#', target);
    }
    target.iter().position(|&byte| byte == b'?' || byte == b'#')
}

/// Reads header lines from `start` to the end of the head.
fn parse_header_lines(
    buf: &[u8],
    start: usize,
    limits: &HeadLimits,
    head: &mut RequestHead,
    buffers: &mut BufferScheme,
    scanners: Scanners,
) -> Result<Progress, RequestError> {
    let mut reader = HeaderReader {
        buf,
        limits,
        head,
        buffers,
        previous: None,
    };
    let underscores = limits.underscores_in_headers;
    let mut pos = start;
    loop {
        let fast = match scanners {
            Scanners::FastThenExact => fast_path::scan_header_line(buf, pos, underscores),
            Scanners::ExactOnly => None,
        };
        let scan = match fast {
            Some(line) => Scan::Complete(line),
            None => header_line::scan_header_line(buf, pos, underscores),
        };
        match scan {
            Scan::Complete(line) => {
                let next = line.lf() + 1;
                let end = matches!(line, Line::End { .. });
                reader.accept(line)?;
                if end {
                    reader.head.len = next;
                    return Ok(Progress::Complete);
                }
                pos = next;
            }
            Scan::Rejected { offset, error } => {
                reader.buffers.header_line(pos, offset, reader.previous)?;
                return Err(error);
            }
            Scan::Incomplete => {
                reader
                    .buffers
                    .header_line(pos, buf.len(), reader.previous)?;
                return Ok(Progress::Partial);
            }
        }
    }
}

/// Takes header lines in order and does what nginx does with each.
struct HeaderReader<'a> {
    buf: &'a [u8],
    limits: &'a HeadLimits,
    head: &'a mut RequestHead,
    buffers: &'a mut BufferScheme,
    /// Start of the previous header line.
    previous: Option<usize>,
}

impl HeaderReader<'_> {
    fn accept(&mut self, line: Line) -> Result<(), RequestError> {
        self.buffers
            .header_line(line.start(), line.lf(), self.previous)?;
        self.previous = Some(line.start());
        match line {
            Line::Field(field) => self.accept_field(field),
            Line::End { .. } => Ok(()),
        }
    }

    fn accept_field(&mut self, line: FieldLine) -> Result<(), RequestError> {
        let head = &mut *self.head;
        if line.invalid_name && self.limits.ignore_invalid_headers {
            head.ignored_headers.push(line.start..line.value.end);
            return Ok(());
        }
        if let Some(limit) = self.limits.max_headers
            && head.headers.len() >= limit
        {
            return Err(RequestError::TooManyHeaders { limit });
        }
        let field = HeaderField {
            name: line.name,
            value: line.value,
        };
        let index = head.headers.len();
        head.known.record(self.buf, &head.headers, index, &field)?;
        head.headers.push(field);
        Ok(())
    }
}
