//! The upstream's response head, as the codec's client role parsed and checked it, turned
//! into the client's response: hidden fields dropped, `Location` and `Refresh` rewritten by
//! `proxy_redirect`, `Set-Cookie` by `proxy_cookie_domain`/`proxy_cookie_path`.

use http1::ascii::{eq_ignore_case, eq_lowercase};

use crate::kernel::response::{Bytes, Location};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::{CookieRewrite, IgnoreHeaders, Proxy, Redirect, RedirectRule};

// The head is parsed by the codec's client role; the proxy keeps its own names for it.
pub use http1::response_head::{
    ResponseFraming as UpstreamFraming, ResponseHead as UpstreamHead, framing,
};

/// Why a head was refused: the error-log message; all of these are nginx's
/// `invalid_header` (502, and a reason to try the next server).
#[derive(Debug, PartialEq, Eq)]
pub struct InvalidHead(pub String);

/// Parses the head at the start of `buf`; `Ok(None)` when more bytes are needed.
pub fn parse(buf: &[u8]) -> Result<Option<UpstreamHead>, InvalidHead> {
    http1::response_head::parse(buf).map_err(|invalid| InvalidHead(invalid.to_string()))
}

/// The upstream fields the proxy treats apart from the others, named once per field: the
/// name's length picks at most three candidates, so a field costs one or two comparisons
/// instead of one per rule (about 190 instructions per field before, under
/// `bench/instructions.sh proxy-ka`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    /// About the upstream connection itself, never passed.
    Connection,
    KeepAlive,
    TransferEncoding,
    Upgrade,
    ContentLength,
    ContentType,
    LastModified,
    ContentRange,
    Etag,
    Server,
    Date,
    Location,
    Expires,
    Refresh,
    SetCookie,
    XPad,
    XAccelExpires,
    XAccelRedirect,
    XAccelLimitRate,
    XAccelBuffering,
    XAccelCharset,
}

impl Special {
    fn of(name: &[u8]) -> Option<Special> {
        use Special::*;
        let candidates: &[(&[u8], Special)] = match name.len() {
            4 => &[(b"date", Date), (b"etag", Etag)],
            5 => &[(b"x-pad", XPad)],
            6 => &[(b"server", Server)],
            7 => &[
                (b"upgrade", Upgrade),
                (b"expires", Expires),
                (b"refresh", Refresh),
            ],
            8 => &[(b"location", Location)],
            10 => &[
                (b"connection", Connection),
                (b"keep-alive", KeepAlive),
                (b"set-cookie", SetCookie),
            ],
            12 => &[(b"content-type", ContentType)],
            13 => &[
                (b"last-modified", LastModified),
                (b"content-range", ContentRange),
            ],
            14 => &[(b"content-length", ContentLength)],
            15 => &[
                (b"x-accel-expires", XAccelExpires),
                (b"x-accel-charset", XAccelCharset),
            ],
            16 => &[(b"x-accel-redirect", XAccelRedirect)],
            17 => &[
                (b"transfer-encoding", TransferEncoding),
                (b"x-accel-buffering", XAccelBuffering),
            ],
            18 => &[(b"x-accel-limit-rate", XAccelLimitRate)],
            _ => return None,
        };
        candidates
            .iter()
            .find(|(lowercase, _)| eq_lowercase(name, lowercase))
            .map(|(_, special)| *special)
    }

    /// Fields nginx hides from the client unless `proxy_pass_header` names them; a
    /// gateway (FastCGI, uwsgi, SCGI) passes its `Date`, `Server` and `X-Pad` and hides
    /// the `X-Accel-*` ones only.
    fn hidden_by_default(
        self,
        protocol: crate::modules::proxy::gateway::settings::Protocol,
    ) -> bool {
        use Special::*;
        match self {
            Date | Server | XPad => {
                protocol == crate::modules::proxy::gateway::settings::Protocol::Http
            }
            XAccelExpires | XAccelRedirect | XAccelLimitRate | XAccelBuffering | XAccelCharset => {
                true
            }
            _ => false,
        }
    }
}

/// Whether an upstream's field is kept from the client (`grpc_hide_header` for a
/// trailer).
pub(crate) fn is_hidden(proxy: &Proxy, name: &[u8]) -> bool {
    hidden(proxy, name, Special::of(name))
}

/// `proxy_hide_header`, then the fields hidden by default that `proxy_pass_header` does
/// not name.
#[inline]
fn hidden(proxy: &Proxy, name: &[u8], special: Option<Special>) -> bool {
    if proxy
        .hide_header
        .iter()
        .any(|hide| eq_ignore_case(hide, name))
    {
        return true;
    }
    special.is_some_and(|special| special.hidden_by_default(proxy.protocol))
        && !proxy
            .pass_header
            .iter()
            .any(|pass| eq_ignore_case(pass, name))
}

/// Whether `NNN Reason` is what Portico writes for the status anyway.
fn is_portico_line(status: u16, line: &[u8]) -> bool {
    let Some(reason) = http1::status::reason_phrase(status) else {
        return false;
    };
    line.len() == 4 + reason.len() && line[4..] == *reason.as_bytes() && line[3] == b' '
}

/// The statuses whose `Last-Modified` the header filter writes (nginx's 200, 206 and
/// 304); a 301, 404 or 410 keeps the upstream's field, which its revalidation needs.
fn dates_its_response(status: u16) -> bool {
    matches!(status, 200 | 206 | 304)
}

/// What the response rewriting needs to know about the proxying.
pub struct RewriteInput<'r> {
    /// The `proxy_pass` URL as written (for `proxy_redirect default`).
    pub url: Option<&'r [u8]>,
    pub url_has_uri: bool,
    /// The location's prefix.
    pub location: &'r [u8],
}

/// The bytes of an upstream head: a buffer whose fields are copied into the response, or
/// a cached entry's stored head, whose fields the response refers to.
#[derive(Clone, Copy)]
pub enum RawHead<'r> {
    Buffer(&'r [u8]),
    Stored(&'r std::sync::Arc<[u8]>),
}

impl RawHead<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            RawHead::Buffer(bytes) => bytes,
            RawHead::Stored(bytes) => bytes,
        }
    }

    /// The response's copy of `range`, or its reference to it (a stored head is at most
    /// 64 KiB; a range past `u32` would be copied).
    fn take(&self, range: &std::ops::Range<usize>) -> Bytes<'static> {
        if let RawHead::Stored(bytes) = self
            && let (Ok(start), Ok(end)) = (u32::try_from(range.start), u32::try_from(range.end))
        {
            return Bytes::Part(std::sync::Arc::clone(bytes), start, end);
        }
        Bytes::Owned(self.bytes()[range.clone()].to_vec())
    }
}

/// Fills the client's response from the upstream's head and its fields.
pub fn apply(
    worker: &HttpWorker,
    connection: &crate::kernel::request::ConnectionInfo,
    request: &mut crate::kernel::request::Request<'_>,
    proxy: &Proxy,
    head: &UpstreamHead,
    source: RawHead<'_>,
    input: &RewriteInput<'_>,
) {
    let raw = source.bytes();
    request.response.status = head.status;
    // A reason phrase other than Portico's own is kept (`299 Custom Reason`).
    let status_line = head.status_line_in(raw);
    if !head.http_09 && !is_portico_line(head.status, status_line) {
        request.response.status_line = Some(status_line.to_vec());
    }
    request.response.content_length = head.content_length;
    request.response.accept_ranges = false;
    // Passed fields the upstream did not send are not made up either.
    for (name, slot) in [
        (&b"date"[..], &mut request.response.date),
        (&b"server"[..], &mut request.response.server),
    ] {
        if proxy
            .pass_header
            .iter()
            .any(|pass| eq_ignore_case(pass, name))
        {
            *slot = Some(Vec::new());
        }
    }
    let mut expires_seen = false;
    let mut accel_charset = None;
    let mut accel_limit_rate = None;
    for (name_range, value_range) in &head.fields {
        let (name, value) = (&raw[name_range.clone()], &raw[value_range.clone()]);
        let special = Special::of(name);
        match special {
            Some(Special::XAccelCharset) if accel_charset.is_none() => accel_charset = Some(value),
            Some(Special::XAccelLimitRate) if accel_limit_rate.is_none() => {
                accel_limit_rate = Some(value);
            }
            _ => {}
        }
        // `Upgrade` is passed with any status (a 426's required one, a 200's offer), as
        // nginx 1.31.3 passes it; the HTTP/2 head leaves it out.
        match special {
            Some(Special::Connection | Special::KeepAlive | Special::TransferEncoding) => continue,
            Some(Special::ContentLength) => continue,
            _ => {}
        }
        if hidden(proxy, name, special) {
            continue;
        }
        match special {
            Some(Special::ContentType) => {
                request.response.content_type = Some(source.take(value_range));
                continue;
            }
            // The response's own `Last-Modified` (conditional requests, `expires`, the
            // header filter's rewrite) only where the header filter writes one: other
            // statuses pass the upstream's field on as it came, as nginx's header filter
            // leaves it (it drops only a `Last-Modified` it computed itself).
            Some(Special::LastModified) if dates_its_response(head.status) => {
                if let Some(time) = http1::response::parse_http_date(value) {
                    request.response.last_modified = Some(time);
                    continue;
                }
            }
            Some(Special::ContentRange) => {
                request.response.content_range = Some(value.to_vec());
                continue;
            }
            Some(Special::Etag) => {
                request.response.etag = Some(value.to_vec());
                continue;
            }
            Some(Special::Server) => {
                request.response.server = Some(value.to_vec());
                continue;
            }
            Some(Special::Date) => {
                request.response.date = Some(value.to_vec());
                continue;
            }
            Some(Special::Location) => {
                let value = rewrite_redirect(worker, connection, request, proxy, input, value, 0);
                request.response.location = Some(Location { value });
                continue;
            }
            // nginx keeps the first `Expires` only.
            Some(Special::Expires) => {
                if expires_seen {
                    continue;
                }
                expires_seen = true;
            }
            _ => {}
        }
        let value = match special {
            Some(Special::Refresh) => {
                let prefix = find_ascii_ci(value, b"url=").map_or(value.len(), |at| at + 4);
                Bytes::Owned(rewrite_redirect(
                    worker, connection, request, proxy, input, value, prefix,
                ))
            }
            Some(Special::SetCookie) => {
                let value = rewrite_cookie(worker, connection, request, proxy, value);
                Bytes::Owned(match &proxy.cookie_flags {
                    crate::modules::proxy::settings::CookieFlags::Rules(rules) => {
                        crate::modules::proxy::cookie_flags::apply(
                            worker, connection, request, rules, value,
                        )
                    }
                    crate::modules::proxy::settings::CookieFlags::Off => value,
                })
            }
            _ => source.take(value_range),
        };
        request
            .response
            .headers
            .push((source.take(name_range), value));
    }
    if !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_CHARSET)
        && let Some(value) = accel_charset
        && !value.is_empty()
    {
        request.response.override_charset = Some(value.to_vec());
    }
    if !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_LIMIT_RATE)
        && let Some(value) = accel_limit_rate
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
    connection: &crate::kernel::request::ConnectionInfo,
    request: &mut crate::kernel::request::Request<'_>,
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
    connection: &crate::kernel::request::ConnectionInfo,
    request: &mut crate::kernel::request::Request<'_>,
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
            let mut captures = shared::regex::Captures::default();
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
    connection: &crate::kernel::request::ConnectionInfo,
    request: &mut crate::kernel::request::Request<'_>,
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
