//! The request to the upstream server: the request line with nginx's URI rules, the fields
//! `proxy_set_header` gives (and its defaults), then the client's own fields.

use http1::ascii::{eq_ignore_case, eq_lowercase};
use logging::time::push_number;

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::variables::HttpTemplate;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::Proxy;

/// Fields the proxy sets itself unless `proxy_set_header` names them; the client's fields
/// of these names are never passed.
const DEFAULT_FIELDS: &[&[u8]] = &[
    b"host",
    b"connection",
    b"content-length",
    b"transfer-encoding",
    b"te",
    b"keep-alive",
    b"expect",
    b"upgrade",
];

/// What the request head depends on besides the request.
pub(crate) struct HeadInput<'i> {
    /// The URI part of the `proxy_pass` URL, if it has one.
    pub uri_part: Option<&'i [u8]>,
    /// The URL had variables: its URI part, if any, is the whole URI.
    pub variables: bool,
    /// The method sent: the client's, or `proxy_method`'s.
    pub method: &'i [u8],
    /// `$proxy_host`.
    pub host: &'i [u8],
    /// The body's length when one is sent.
    pub body_len: Option<u64>,
    /// The body is passed on chunked, as it arrives.
    pub chunked: bool,
    /// The response may be stored: the client's conditions and ranges stay back, and a
    /// revalidation sends the stored entry's validators instead.
    pub cache: Option<CacheFields>,
}

/// The fields a request that may fill the cache sends in place of the client's
/// conditional and range fields (nginx's cache headers).
pub(crate) struct CacheFields {
    pub if_modified_since: Option<i64>,
    pub if_none_match: Option<Vec<u8>>,
}

/// The client's fields a cacheable request does not pass on.
pub(crate) const CACHE_CLEARED_FIELDS: &[&[u8]] = &[
    b"if-modified-since",
    b"if-unmodified-since",
    b"if-none-match",
    b"if-match",
    b"range",
    b"if-range",
];

/// The URI sent upstream, by nginx's rules: the client's own target when the URL has no
/// URI part and nothing changed the URI; else the URL's URI part in place of the
/// location's prefix (or the whole changed URI), escaped when it was decoded.
pub(crate) fn upstream_uri(
    request: &Request<'_>,
    location: &Location,
    input: &HeadInput<'_>,
    uri: &mut Vec<u8>,
) {
    uri.clear();
    if input.variables
        && let Some(part) = input.uri_part
    {
        uri.extend_from_slice(part);
        return;
    }
    let unparsed_valid = !request.internal && !request.args_changed;
    if input.uri_part.is_none() && unparsed_valid && !request.request_uri().is_empty() {
        uri.extend_from_slice(request.request_uri());
        return;
    }
    let valid_location = !request.location_uri_changed;
    let prefix_len = match input.uri_part {
        Some(_) if valid_location => location.prefix().len().min(request.uri.len()),
        _ => 0,
    };
    if valid_location && let Some(part) = input.uri_part {
        uri.extend_from_slice(part);
    }
    let rest = &request.uri[prefix_len..];
    let path_end =
        memchr::memchr(b'?', request.request_uri()).unwrap_or(request.request_uri().len());
    let quoted = request.request_uri()[..path_end].contains(&b'%');
    if quoted || request.internal {
        crate::kernel::response::escape_uri(rest, uri);
    } else {
        uri.extend_from_slice(rest);
    }
    if !request.args.is_empty() {
        uri.push(b'?');
        uri.extend_from_slice(&request.args);
    }
}

/// The `proxy_set_header` value for `name`, given in lower case.
fn find_set<'p>(proxy: &'p Proxy, name: &[u8]) -> Option<&'p HttpTemplate> {
    proxy
        .set_header
        .iter()
        .find(|header| eq_lowercase(&header.name, name))
        .map(|header| &header.value)
}

/// Writes the request head.
pub(crate) fn write_head(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    proxy: &Proxy,
    uri: &[u8],
    input: &HeadInput<'_>,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(input.method);
    out.push(b' ');
    out.extend_from_slice(uri);
    out.extend_from_slice(if proxy.http_11 {
        b" HTTP/1.1\r\n"
    } else {
        b" HTTP/1.0\r\n"
    });
    // `Host` first: as set, or `$proxy_host` (also when set empty for HTTP/1.1).
    match find_set(proxy, b"host") {
        Some(template) => {
            let rendered = render(worker, connection, request, template);
            let host = if rendered.is_empty() && proxy.http_11 {
                input.host
            } else {
                &rendered
            };
            if !host.is_empty() {
                field(out, b"Host", host);
            }
        }
        None if !input.host.is_empty() => field(out, b"Host", input.host),
        None => {}
    }
    for header in &proxy.set_header {
        if eq_lowercase(&header.name, b"host") {
            continue;
        }
        // A literal value is written from the configuration, without a copy.
        if let Some(literal) = header.value.as_literal() {
            if !literal.is_empty() {
                field(out, &header.name, literal);
            }
            continue;
        }
        let value = render(worker, connection, request, &header.value);
        if !value.is_empty() {
            field(out, &header.name, &value);
        }
    }
    if find_set(proxy, b"connection").is_none() {
        field(out, b"Connection", b"close");
    }
    if find_set(proxy, b"content-length").is_none()
        && let Some(length) = input.body_len
    {
        out.extend_from_slice(b"Content-Length: ");
        push_number(out, length as i64, 1);
        out.extend_from_slice(b"\r\n");
    }
    if input.chunked && find_set(proxy, b"transfer-encoding").is_none() {
        field(out, b"Transfer-Encoding", b"chunked");
    }
    if let Some(cache) = &input.cache {
        if let Some(time) = cache.if_modified_since
            && find_set(proxy, b"if-modified-since").is_none()
        {
            let mut value = Vec::new();
            http1::response::write_http_date(&mut value, time);
            field(out, b"If-Modified-Since", &value);
        }
        if let Some(etag) = &cache.if_none_match
            && find_set(proxy, b"if-none-match").is_none()
        {
            field(out, b"If-None-Match", etag);
        }
    }
    if proxy.pass_request_headers {
        for header in &request.head.headers {
            let (Some(name), Some(value)) = (
                request.head_bytes.get(header.name.clone()),
                request.head_bytes.get(header.value.clone()),
            ) else {
                continue;
            };
            let overridden = DEFAULT_FIELDS
                .iter()
                .any(|default| eq_lowercase(name, default))
                || (input.cache.is_some()
                    && CACHE_CLEARED_FIELDS
                        .iter()
                        .any(|cleared| eq_lowercase(name, cleared)))
                || proxy
                    .set_header
                    .iter()
                    .any(|set| eq_ignore_case(&set.name, name));
            if !overridden {
                field(out, name, value);
            }
        }
    }
    out.extend_from_slice(b"\r\n");
}

fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Whether a method may be retried on another server after the request was sent
/// (`non_idempotent` lifts this).
pub(crate) fn is_idempotent(method: &[u8]) -> bool {
    !matches!(method, b"POST" | b"LOCK" | b"PATCH")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_rules_follow_idempotency() {
        assert!(is_idempotent(b"GET"));
        assert!(is_idempotent(b"PUT"));
        assert!(!is_idempotent(b"POST"));
        assert!(!is_idempotent(b"PATCH"));
    }
}
