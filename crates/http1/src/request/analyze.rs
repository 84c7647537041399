//! The checks nginx runs once the head is complete, and what they tell about the body.

use crate::error::RequestError;
use crate::host::write_validated_host;
use crate::method::Method;
use crate::request::known::{contains_ignore_case, eq_lowercase};
use crate::request::{BodyFraming, ConnectionOption, RequestHead, RequestInfo, Version};

/// Validates a head that [`crate::request::parse_head`] completed, as nginx's
/// `ngx_http_process_request_header` does, and fills `info` (cleared first; reuse it).
///
/// In nginx's order: HTTP/1.1 needs `Host` (400); `Content-Length` must be digits only and
/// fit `i64` (400); `Transfer-Encoding` is refused on HTTP/1.0 (400), must be exactly
/// `chunked` (else 501, RFC 9112 §6.1 lets a server refuse codings it does not know) and
/// must not come with `Content-Length` (400: RFC 9112 §6.3 calls the pair a smuggling
/// vector); TRACE is answered 405. CONNECT passes: whether it is allowed depends on the
/// server the host selects, which [`check_connect`] is asked once it is known.
pub fn analyze(buf: &[u8], head: &RequestHead, info: &mut RequestInfo) -> Result<(), RequestError> {
    info.target = head.target_parts.clone();
    info.known = head.known.clone();
    info.host.clear();
    info.framing = BodyFraming::None;
    info.connection = ConnectionOption::Default;
    info.expect_continue = false;
    info.browser = Default::default();
    let known = &head.known;
    let value = |index: usize| head.headers[index].value_in(buf);

    if head.version != Version::Http09 {
        if known.host.is_none() && head.version > Version::Http10 {
            return Err(RequestError::MissingHost);
        }
        let content_length = known.content_length.map(|i| parse_content_length(value(i)));
        let content_length = content_length.transpose()?;
        if let Some(index) = known.transfer_encoding {
            if head.version < Version::Http11 {
                return Err(RequestError::TransferEncodingHttp10);
            }
            if !value(index).eq_ignore_ascii_case(b"chunked") {
                let value = head.headers[index].value.clone();
                return Err(RequestError::UnknownTransferEncoding { value });
            }
            if content_length.is_some() {
                return Err(RequestError::ContentLengthAndTransferEncoding);
            }
            info.framing = BodyFraming::Chunked;
        } else if let Some(length) = content_length {
            info.framing = BodyFraming::Length(length);
        }
        if head.method == Method::Trace {
            return Err(RequestError::TraceMethod);
        }
    }

    // parse_head validated both sources already; only the lower-casing is left.
    let raw_host = match (&head.target_parts.authority, known.host) {
        (Some(authority), _) => Some(&buf[authority.clone()]),
        (None, Some(index)) => Some(value(index)),
        (None, None) => None,
    };
    if let Some(raw_host) = raw_host {
        write_validated_host(raw_host, &mut info.host);
    }

    info.expect_continue = head.version >= Version::Http11
        && known
            .expect
            .is_some_and(|i| value(i).eq_ignore_ascii_case(b"100-continue"));
    read_connection_and_user_agent(buf, head, info);
    Ok(())
}

/// Whether a CONNECT request may go on, as nginx checks it once the server is chosen:
/// only HTTP/1.1, only to a server that tunnels (`tunnel_pass` somewhere in it), else
/// 405; a CONNECT with a body is 400. Any other method passes.
pub fn check_connect(
    head: &RequestHead,
    info: &RequestInfo,
    allowed: ConnectAllowed,
) -> Result<(), RequestError> {
    if head.method != Method::Connect {
        return Ok(());
    }
    if head.version != Version::Http11 || allowed == ConnectAllowed::No {
        return Err(RequestError::ConnectMethod);
    }
    match info.framing {
        BodyFraming::Length(0) | BodyFraming::None => Ok(()),
        BodyFraming::Length(_) | BodyFraming::Chunked => Err(RequestError::ConnectWithBody),
    }
}

/// Whether the server a request reached tunnels CONNECT requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectAllowed {
    Yes,
    No,
}

/// Reads every `Connection` and `User-Agent` header, in order: a later `Connection` that
/// matches wins and `User-Agent` flags accumulate, as in nginx. Both names are first
/// recorded in `known`, so the walk starts there, and is skipped when neither is present.
fn read_connection_and_user_agent(buf: &[u8], head: &RequestHead, info: &mut RequestInfo) {
    let known = &head.known;
    let Some(first) = known.connection.into_iter().chain(known.user_agent).min() else {
        return;
    };
    let mut upgrade = false;
    for field in head.headers.iter().skip(first) {
        let name = field.name_in(buf);
        // Both names are 10 bytes long; most other names are not.
        if name.len() != 10 {
            continue;
        }
        if eq_lowercase(name, b"connection") {
            let value = field.value_in(buf);
            info.connection = connection_option(value, info.connection);
            upgrade |= contains_ignore_case(value, b"upgrade");
        } else if eq_lowercase(name, b"user-agent") {
            info.browser.detect(field.value_in(buf));
        }
    }
    if upgrade && info.connection == ConnectionOption::Default {
        info.connection = ConnectionOption::Upgrade;
    }
}

/// The option one `Connection` value sets, or `current` if it names neither "close" nor
/// "keep-alive".
fn connection_option(value: &[u8], current: ConnectionOption) -> ConnectionOption {
    // What most clients send, checked whole before the substring searches.
    if eq_lowercase(value, b"keep-alive") {
        return ConnectionOption::KeepAlive;
    }
    if contains_ignore_case(value, b"close") {
        ConnectionOption::Close
    } else if contains_ignore_case(value, b"keep-alive") {
        ConnectionOption::KeepAlive
    } else {
        current
    }
}

/// `Content-Length` as nginx's `ngx_atoof` reads it: one or more ASCII digits, nothing else
/// (no sign, space, comma list or hex; RFC 9112 §6.3), at most `i64::MAX`.
fn parse_content_length(value: &[u8]) -> Result<u64, RequestError> {
    if value.is_empty() {
        return Err(RequestError::InvalidContentLength);
    }
    let mut length: u64 = 0;
    for &byte in value {
        if !byte.is_ascii_digit() {
            return Err(RequestError::InvalidContentLength);
        }
        length = length
            .checked_mul(10)
            .and_then(|length| length.checked_add(u64::from(byte - b'0')))
            .filter(|&length| length <= i64::MAX as u64)
            .ok_or(RequestError::InvalidContentLength)?;
    }
    Ok(length)
}
