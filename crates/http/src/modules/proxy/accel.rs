//! `X-Accel-Redirect`: the upstream names a URI (or a named location) that serves the
//! request instead, internally; nginx's safety check on that URI.

use logging::Level;

use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::handler::ProxyOutcome;
use crate::modules::proxy::response::UpstreamHead;
use crate::modules::proxy::{IgnoreHeaders, Proxy};

/// Fields of an `X-Accel-Redirect` response that the redirected request keeps.
const KEPT_ON_REDIRECT: &[&[u8]] = &[
    b"set-cookie",
    b"content-disposition",
    b"cache-control",
    b"expires",
    b"accept-ranges",
];

/// `X-Accel-Redirect`: an internal redirect to the URI (or named location) the upstream
/// named, keeping the fields nginx keeps; an unsafe URI is a 404.
pub(super) fn accel_redirect<'a>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    proxy: &Proxy,
    head: &UpstreamHead,
    raw: &[u8],
    target: Vec<u8>,
) -> ProxyOutcome<'a> {
    for (name, value) in &head.fields {
        let (name, value) = (&raw[name.clone()], &raw[value.clone()]);
        if name.eq_ignore_ascii_case(b"content-type") {
            request.response.content_type =
                Some(crate::kernel::response::Bytes::Owned(value.to_vec()));
        } else if KEPT_ON_REDIRECT
            .iter()
            .any(|kept| kept.eq_ignore_ascii_case(name))
        {
            request.response.headers.push((
                crate::kernel::response::Bytes::Owned(name.to_vec()),
                crate::kernel::response::Bytes::Owned(value.to_vec()),
            ));
        } else if name.eq_ignore_ascii_case(b"x-accel-limit-rate")
            && !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_LIMIT_RATE)
            && let Some(rate) = std::str::from_utf8(value)
                .ok()
                .and_then(|text| text.parse().ok())
        {
            request.limit_rate = Some(rate);
        }
    }
    if target.starts_with(b"@") {
        return ProxyOutcome::Named(target);
    }
    let Some((uri, args)) = safe_uri(&target) else {
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!(
                "unsafe URI \"{}\" was detected",
                String::from_utf8_lossy(&target)
            ),
        );
        return ProxyOutcome::Finalize(404);
    };
    if !request.is_head() {
        request.head.method = http1::Method::Get;
        request.method_is_get = true;
    }
    ProxyOutcome::Redirect { uri, args }
}

/// A URI from a header, as nginx checks one: arguments split off at `?`, `%XX` decoded, and
/// refused when a segment is `.` or `..` or it holds a NUL.
pub(crate) fn safe_uri(value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (path, args) = match memchr::memchr(b'?', value) {
        Some(question) => (&value[..question], value[question + 1..].to_vec()),
        None => (value, Vec::new()),
    };
    let mut uri = Vec::with_capacity(path.len());
    http1::uri::unescape(path, &mut uri);
    if uri.contains(&0) {
        return None;
    }
    let unsafe_segment = uri
        .split(|&byte| byte == b'/')
        .any(|segment| segment == b"." || segment == b"..");
    (!unsafe_segment).then_some((uri, args))
}

/// The response's non-empty `X-Accel-Redirect`, if it has one.
pub(super) fn accel_target(head: &UpstreamHead, buffer: &[u8]) -> Option<Vec<u8>> {
    head.fields
        .iter()
        .map(|(name, value)| (&buffer[name.clone()], &buffer[value.clone()]))
        .find(|(name, value)| name.eq_ignore_ascii_case(b"x-accel-redirect") && !value.is_empty())
        .map(|(_, value)| value.to_vec())
}
