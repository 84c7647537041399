//! The upstream's response head: the status line and fields read, checked for framing
//! nginx refuses (duplicate or invalid `Content-Length`, both `Content-Length` and
//! `Transfer-Encoding`, an unknown transfer coding), then turned into the client's
//! response: hidden fields dropped, `Location` and `Refresh` rewritten by
//! `proxy_redirect`, `Set-Cookie` by `proxy_cookie_domain`/`proxy_cookie_path`.

use crate::proxy::{CookieRewrite, IgnoreHeaders, Proxy, Redirect, RedirectRule};
use crate::response::{Bytes, Location};
use crate::variables::render;
use crate::worker::HttpWorker;

/// How the upstream frames its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamFraming {
    /// No body (HEAD, 204, 304).
    None,
    Length(u64),
    Chunked,
    /// Until the upstream closes the connection.
    Close,
}

/// A parsed response head.
#[derive(Debug, Default)]
pub struct UpstreamHead {
    pub status: u16,
    /// `NNN Reason` as the upstream wrote it.
    pub status_line: Vec<u8>,
    pub http_11: bool,
    /// An HTTP/0.9 answer: no head at all; everything is body.
    pub http_09: bool,
    /// Each field's name and value, as ranges of the buffer the head was parsed from.
    pub fields: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    pub content_length: Option<u64>,
    pub chunked: bool,
    pub connection_close: bool,
    /// Bytes of the head, final empty line included.
    pub len: usize,
}

/// Why a head was refused: the error-log message; all of these are nginx's
/// `invalid_header` (502, and a reason to try the next server).
#[derive(Debug, PartialEq, Eq)]
pub struct InvalidHead(pub String);

/// Parses the head at the start of `buf`; `Ok(None)` when more bytes are needed.
pub fn parse(buf: &[u8]) -> Result<Option<UpstreamHead>, InvalidHead> {
    let mut head = UpstreamHead::default();
    let Some(line_end) = (match status_line(buf, &mut head) {
        StatusLine::Partial => return Ok(None),
        StatusLine::Invalid => {
            head.http_09 = true;
            head.status = 200;
            head.connection_close = true;
            return Ok(Some(head));
        }
        StatusLine::Complete(end) => Some(end),
    }) else {
        return Ok(None);
    };
    let mut fields = [httparse::EMPTY_HEADER; 128];
    let mut storage;
    let parsed = match httparse::parse_headers(&buf[line_end..], &mut fields) {
        Err(httparse::Error::TooManyHeaders) => {
            storage = vec![httparse::EMPTY_HEADER; 4096];
            httparse::parse_headers(&buf[line_end..], &mut storage)
        }
        other => other,
    };
    let (len, fields) = match parsed {
        Ok(httparse::Status::Complete(done)) => done,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(InvalidHead("upstream sent invalid header".to_owned())),
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
        if name.eq_ignore_ascii_case(b"content-length") {
            if let Some(previous) = head.content_length {
                return Err(duplicate(
                    name,
                    value,
                    b"Content-Length",
                    previous.to_string().as_bytes(),
                ));
            }
            let parsed = std::str::from_utf8(value)
                .ok()
                .filter(|text| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
                .and_then(|text| text.parse::<u64>().ok())
                .filter(|length| *length <= i64::MAX as u64);
            match parsed {
                Some(length) => head.content_length = Some(length),
                None => {
                    return Err(InvalidHead(format!(
                        "upstream sent invalid \"Content-Length\" header: \"{}: {}\"",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(value)
                    )));
                }
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if head.chunked {
                return Err(duplicate(name, value, b"Transfer-Encoding", b"chunked"));
            }
            if !value.eq_ignore_ascii_case(b"chunked") {
                return Err(InvalidHead(format!(
                    "upstream sent unknown \"Transfer-Encoding\": \"{}\"",
                    String::from_utf8_lossy(value)
                )));
            }
            head.chunked = true;
        } else if name.eq_ignore_ascii_case(b"connection")
            && value
                .split(|&byte| byte == b',')
                .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"))
        {
            head.connection_close = true;
        }
        head.fields.push((range(name), range(value)));
    }
    if head.chunked && head.content_length.is_some() {
        return Err(InvalidHead(
            "upstream sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time"
                .to_owned(),
        ));
    }
    if head.chunked && !head.http_11 {
        return Err(InvalidHead(
            "upstream sent HTTP/1.0 response with \"Transfer-Encoding\" header".to_owned(),
        ));
    }
    if !head.http_11 {
        head.connection_close = true;
    }
    Ok(Some(head))
}

fn duplicate(name: &[u8], value: &[u8], first_name: &[u8], first: &[u8]) -> InvalidHead {
    InvalidHead(format!(
        "upstream sent duplicate header line: \"{}: {}\", previous value: \"{}: {}\"",
        String::from_utf8_lossy(name),
        String::from_utf8_lossy(value),
        String::from_utf8_lossy(first_name),
        String::from_utf8_lossy(first)
    ))
}

enum StatusLine {
    Partial,
    Invalid,
    /// The offset after the line's LF.
    Complete(usize),
}

/// `HTTP/D.D NNN [reason]` then CRLF or LF, as nginx's status-line parser accepts it.
fn status_line(buf: &[u8], head: &mut UpstreamHead) -> StatusLine {
    const PREFIX: &[u8] = b"HTTP/";
    let prefix_len = buf.len().min(PREFIX.len());
    if buf[..prefix_len] != PREFIX[..prefix_len] {
        return StatusLine::Invalid;
    }
    let Some(line_len) = memchr::memchr(b'\n', buf) else {
        // A status line without its end is waited for only while it could still be one.
        return if buf.len() > 4096 {
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
        (!digits.is_empty() && digits.len() <= 3 && digits.iter().all(u8::is_ascii_digit))
            .then(|| std::str::from_utf8(digits).ok()?.parse().ok())
            .flatten()
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
    head.status_line = status_text.to_vec();
    head.http_11 = major > 1 || (major == 1 && minor >= 1);
    StatusLine::Complete(line_len + 1)
}

/// How the body of a response to `method_head` with this head is framed.
pub fn framing(head: &UpstreamHead, method_head: bool) -> UpstreamFraming {
    if head.http_09 {
        return UpstreamFraming::Close;
    }
    if method_head || head.status == 204 || head.status == 304 || head.status < 200 {
        return UpstreamFraming::None;
    }
    if head.chunked {
        return UpstreamFraming::Chunked;
    }
    match head.content_length {
        Some(length) => UpstreamFraming::Length(length),
        None => UpstreamFraming::Close,
    }
}

/// Fields nginx hides from the client unless `proxy_pass_header` names them.
const HIDDEN_BY_DEFAULT: &[&[u8]] = &[
    b"date",
    b"server",
    b"x-pad",
    b"x-accel-expires",
    b"x-accel-redirect",
    b"x-accel-limit-rate",
    b"x-accel-buffering",
    b"x-accel-charset",
];

/// Fields about the upstream connection itself, never passed.
const HOP_BY_HOP: &[&[u8]] = &[
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"upgrade",
];

fn hidden(proxy: &Proxy, name: &[u8]) -> bool {
    if proxy
        .hide_header
        .iter()
        .any(|hide| hide.eq_ignore_ascii_case(name))
    {
        return true;
    }
    HIDDEN_BY_DEFAULT
        .iter()
        .any(|hidden| hidden.eq_ignore_ascii_case(name))
        && !proxy
            .pass_header
            .iter()
            .any(|pass| pass.eq_ignore_ascii_case(name))
}

/// Whether `NNN Reason` is what Portico writes for the status anyway.
fn is_portico_line(status: u16, line: &[u8]) -> bool {
    let Some(reason) = http1::status::reason_phrase(status) else {
        return false;
    };
    line.len() == 4 + reason.len() && line[4..] == *reason.as_bytes() && line[3] == b' '
}

fn is(name: &[u8], lowercase: &[u8]) -> bool {
    name.eq_ignore_ascii_case(lowercase)
}

/// What the response rewriting needs to know about the proxying.
pub struct RewriteInput<'r> {
    /// The `proxy_pass` URL as written (for `proxy_redirect default`).
    pub url: Option<&'r [u8]>,
    pub url_has_uri: bool,
    /// The location's prefix.
    pub location: &'r [u8],
}

/// Fills the client's response from the upstream's head and its fields.
pub fn apply(
    worker: &HttpWorker,
    connection: &crate::request::ConnectionInfo,
    request: &mut crate::request::Request<'_>,
    proxy: &Proxy,
    head: &UpstreamHead,
    raw: &[u8],
    input: &RewriteInput<'_>,
) {
    let mut fields = head
        .fields
        .iter()
        .map(|(name, value)| (&raw[name.clone()], &raw[value.clone()]));
    request.response.status = head.status;
    // A reason phrase other than Portico's own is kept (`299 Custom Reason`).
    if !head.http_09 && !is_portico_line(head.status, &head.status_line) {
        request.response.status_line = Some(head.status_line.clone());
    }
    request.response.content_length = head.content_length;
    request.response.accept_ranges = false;
    let mut expires_seen = false;
    for (name, value) in fields.clone() {
        if HOP_BY_HOP.iter().any(|hop| is(name, hop))
            && !(is(name, b"upgrade") && head.status == 101)
        {
            continue;
        }
        if is(name, b"content-length") || hidden(proxy, name) {
            continue;
        }
        if is(name, b"content-type") {
            request.response.content_type = Some(Bytes::Owned(value.to_vec()));
            continue;
        }
        if is(name, b"last-modified")
            && let Some(time) = http1::response::parse_http_date(value)
        {
            request.response.last_modified = Some(time);
            continue;
        }
        if is(name, b"etag") {
            request.response.etag = Some(value.to_vec());
            continue;
        }
        if is(name, b"server") {
            request.response.server = Some(value.to_vec());
            continue;
        }
        if is(name, b"date") {
            request.response.date = Some(value.to_vec());
            continue;
        }
        if is(name, b"location") {
            let value = rewrite_redirect(worker, connection, request, proxy, input, value, 0);
            request.response.location = Some(Location { value });
            continue;
        }
        let value = if is(name, b"refresh") {
            let prefix = find_ascii_ci(value, b"url=").map_or(value.len(), |at| at + 4);
            rewrite_redirect(worker, connection, request, proxy, input, value, prefix)
        } else if is(name, b"set-cookie") {
            rewrite_cookie(worker, connection, request, proxy, value)
        } else if is(name, b"expires") {
            // nginx keeps the first `Expires` only.
            if expires_seen {
                continue;
            }
            expires_seen = true;
            value.to_vec()
        } else {
            value.to_vec()
        };
        request
            .response
            .headers
            .push((Bytes::Owned(name.to_vec()), Bytes::Owned(value)));
    }
    if !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_LIMIT_RATE)
        && let Some((_, value)) =
            fields.find(|(name, _)| name.eq_ignore_ascii_case(b"x-accel-limit-rate"))
    {
        if value.eq_ignore_ascii_case(b"off") {
            request.limit_rate = Some(0);
        } else if let Some(rate) = std::str::from_utf8(value)
            .ok()
            .and_then(|text| text.parse().ok())
        {
            request.limit_rate = Some(rate);
        }
    }
}

fn find_ascii_ci(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// `proxy_redirect`: the first rule that matches at `prefix` rewrites the value.
fn rewrite_redirect(
    worker: &HttpWorker,
    connection: &crate::request::ConnectionInfo,
    request: &mut crate::request::Request<'_>,
    proxy: &Proxy,
    input: &RewriteInput<'_>,
    value: &[u8],
    prefix: usize,
) -> Vec<u8> {
    let rules = match &proxy.redirect {
        Redirect::Off => return value.to_vec(),
        Redirect::Rules(rules) => rules,
    };
    for rule in rules {
        if let Some(rewritten) = apply_rule(worker, connection, request, input, rule, value, prefix)
        {
            return rewritten;
        }
    }
    value.to_vec()
}

/// One rule on `value[prefix..]`; the rewritten value when it matched. A prefix matches
/// case-sensitively (a cookie's domain is matched by [`rewrite_cookie`] itself).
fn apply_rule(
    worker: &HttpWorker,
    connection: &crate::request::ConnectionInfo,
    request: &mut crate::request::Request<'_>,
    input: &RewriteInput<'_>,
    rule: &RedirectRule,
    value: &[u8],
    prefix: usize,
) -> Option<Vec<u8>> {
    let subject = &value[prefix..];
    let (matched_len, replacement) = match rule {
        RedirectRule::Default => {
            let url = input.url?;
            let (pattern, replacement): (Vec<u8>, Vec<u8>) = if input.url_has_uri {
                (url.to_vec(), input.location.to_vec())
            } else {
                let mut pattern = url.to_vec();
                pattern.push(b'/');
                (pattern, b"/".to_vec())
            };
            if !subject.starts_with(&pattern) {
                return None;
            }
            (pattern.len(), replacement)
        }
        RedirectRule::Prefix { from, to } => {
            let pattern = render(worker, connection, request, from);
            if !subject.starts_with(&pattern) {
                return None;
            }
            (pattern.len(), render(worker, connection, request, to))
        }
        RedirectRule::Regex { regex, to } => {
            let mut captures = crate::conf::regex::Captures::default();
            if !regex.captures(subject, &mut captures) {
                return None;
            }
            let saved = std::mem::replace(&mut request.matches.get_mut().captures, captures);
            let replacement = render(worker, connection, request, to);
            request.matches.get_mut().captures = saved;
            (subject.len(), replacement)
        }
    };
    let mut out = Vec::with_capacity(value.len() + replacement.len());
    out.extend_from_slice(&value[..prefix]);
    out.extend_from_slice(&replacement);
    out.extend_from_slice(&subject[matched_len..]);
    Some(out)
}

/// `proxy_cookie_domain` / `proxy_cookie_path` on one `Set-Cookie` value.
fn rewrite_cookie(
    worker: &HttpWorker,
    connection: &crate::request::ConnectionInfo,
    request: &mut crate::request::Request<'_>,
    proxy: &Proxy,
    value: &[u8],
) -> Vec<u8> {
    let mut value = value.to_vec();
    let input = RewriteInput {
        url: None,
        url_has_uri: false,
        location: b"",
    };
    for (attribute, rewrite, caseless) in [
        (&b"domain="[..], &proxy.cookie_domain, true),
        (&b"path="[..], &proxy.cookie_path, false),
    ] {
        let CookieRewrite::Rules(rules) = rewrite else {
            continue;
        };
        // The attribute is found after the first `;` (the cookie's own name=value).
        let Some(start) = attribute_start(&value, attribute) else {
            continue;
        };
        let end = value[start..]
            .iter()
            .position(|&byte| byte == b';')
            .map_or(value.len(), |at| start + at);
        // A domain's leading dot is kept and the rest matched and replaced.
        let kept_dot = caseless && value.get(start) == Some(&b'.');
        let start = if kept_dot { start + 1 } else { start };
        let mut attribute_value = value[start..end].to_vec();
        for rule in rules {
            let rule = match rule {
                RedirectRule::Prefix { from, to } if caseless => {
                    // A domain matches whole, case-insensitively, a leading dot ignored.
                    let pattern = render(worker, connection, request, from);
                    let pattern = pattern.strip_prefix(b".").unwrap_or(&pattern);
                    if !attribute_value.eq_ignore_ascii_case(pattern) {
                        continue;
                    }
                    let replacement = render(worker, connection, request, to);
                    attribute_value = replacement
                        .strip_prefix(b".")
                        .unwrap_or(&replacement)
                        .to_vec();
                    break;
                }
                other => other,
            };
            if let Some(rewritten) = apply_rule(
                worker,
                connection,
                request,
                &input,
                rule,
                &attribute_value,
                0,
            ) {
                attribute_value = rewritten;
                break;
            }
        }
        value.splice(start..end, attribute_value);
    }
    value
}

fn attribute_start(cookie: &[u8], attribute: &[u8]) -> Option<usize> {
    let mut at = memchr::memchr(b';', cookie)? + 1;
    while at < cookie.len() {
        while at < cookie.len() && cookie[at] == b' ' {
            at += 1;
        }
        if cookie.len() - at >= attribute.len()
            && cookie[at..at + attribute.len()].eq_ignore_ascii_case(attribute)
        {
            return Some(at + attribute.len());
        }
        at += memchr::memchr(b';', &cookie[at..])? + 1;
    }
    None
}

#[cfg(test)]
mod tests;
