//! `gzip`: responses compressed on the way to clients that accept it, with nginx's rules
//! for which responses qualify (status 200, 403 or 404, `gzip_types`, `gzip_min_length`,
//! no `Content-Encoding` yet, `gzip_http_version`, `gzip_disable`, `gzip_proxied` for
//! requests with `Via`) and what it changes (`Content-Encoding: gzip`, no
//! `Content-Length` nor ranges, a weak `ETag`, `Vary: Accept-Encoding` with `gzip_vary`).
//! The compression itself is the send path's (`send/compress.rs`).

pub mod directives;
pub mod settings;

use crate::conf::Location;
use crate::request::Request;
use crate::response::Bytes;

/// What the filter decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Compress at this level.
    pub level: Option<u32>,
}

/// nginx's gzip header filter: whether this response is compressed; sets the head.
pub fn filter(request: &mut Request<'_>, location: &Location, body_len: Option<u64>) -> Decision {
    let settings = &location.settings.gzip;
    let response = &request.response;
    if !settings.gzip || !matches!(response.status, 200 | 403 | 404) {
        return Decision::default();
    }
    let encoded = response
        .headers
        .iter()
        .any(|(name, _)| name.as_slice().eq_ignore_ascii_case(b"content-encoding"));
    let length = response.content_length.or(body_len);
    let content_type = response
        .content_type
        .as_ref()
        .map(|value| {
            let value = value.as_slice();
            let end = memchr::memchr(b';', value).unwrap_or(value.len());
            value[..end].trim_ascii().to_vec()
        })
        .unwrap_or_default();
    if encoded
        || length.is_some_and(|length| length < settings.min_length)
        || !settings.types.contains(&content_type)
    {
        return Decision::default();
    }
    if settings.vary {
        request.response.headers.push((
            Bytes::Borrowed(b"Vary"),
            Bytes::Borrowed(b"Accept-Encoding"),
        ));
    }
    if !accepted(request, location) {
        return Decision::default();
    }
    let response = &mut request.response;
    response.headers.push((
        Bytes::Borrowed(b"Content-Encoding"),
        Bytes::Borrowed(b"gzip"),
    ));
    response.content_length = None;
    response.accept_ranges = false;
    // Ranges of the compressed body are not offered, the upstream's offer included.
    response
        .headers
        .retain(|(name, _)| !name.as_slice().eq_ignore_ascii_case(b"accept-ranges"));
    if let Some(etag) = &mut response.etag
        && !etag.starts_with(b"W/")
    {
        etag.splice(0..0, b"W/".iter().copied());
    }
    Decision {
        level: Some(settings.comp_level),
    }
}

/// nginx's `ngx_http_gzip_ok`: the client takes gzip, and nothing rules it out.
fn accepted(request: &Request<'_>, location: &Location) -> bool {
    let settings = &location.settings.gzip;
    let Some(accept) = request.header(b"accept-encoding") else {
        return false;
    };
    if !takes_gzip(accept) {
        return false;
    }
    let version_ok = match request.head.version {
        http1::Version::Http11 => true,
        http1::Version::Http10 => !settings.http_11,
        _ => false,
    };
    if !version_ok {
        return false;
    }
    if let Some(agent) = request.header(b"user-agent") {
        if settings.disable_msie6 && request.info.browser.msie6 {
            return false;
        }
        if settings.disable.iter().any(|regex| regex.is_match(agent)) {
            return false;
        }
    }
    if request.header(b"via").is_some() {
        return proxied_ok(request, location);
    }
    true
}

/// `Accept-Encoding` names `gzip` with a weight above zero.
fn takes_gzip(accept: &[u8]) -> bool {
    accept.split(|b| *b == b',').any(|item| {
        let mut parts = item.split(|b| *b == b';');
        let coding = parts.next().unwrap_or_default().trim_ascii();
        if !coding.eq_ignore_ascii_case(b"gzip") && !coding.eq_ignore_ascii_case(b"x-gzip") {
            return false;
        }
        parts.all(|parameter| {
            let parameter = parameter.trim_ascii();
            let Some(weight) = parameter
                .strip_prefix(b"q=")
                .or_else(|| parameter.strip_prefix(b"Q="))
            else {
                return true;
            };
            std::str::from_utf8(weight)
                .ok()
                .and_then(|weight| weight.parse::<f32>().ok())
                .is_some_and(|weight| weight > 0.0)
        })
    })
}

/// `gzip_proxied` for a request that came through a proxy (`Via`).
fn proxied_ok(request: &Request<'_>, location: &Location) -> bool {
    use crate::gzip::settings::Proxied;
    let proxied = location.settings.gzip.proxied;
    if proxied.has(Proxied::OFF) {
        return false;
    }
    if proxied.has(Proxied::ANY) {
        return true;
    }
    let response = &request.response;
    let header = |name: &[u8]| {
        response
            .headers
            .iter()
            .find(|(field, _)| field.as_slice().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_slice().to_ascii_lowercase())
    };
    let control = header(b"cache-control").unwrap_or_default();
    let has = |token: &[u8]| control.windows(token.len()).any(|window| window == token);
    (proxied.has(Proxied::EXPIRED) && header(b"expires").is_some())
        || (proxied.has(Proxied::NO_CACHE) && has(b"no-cache"))
        || (proxied.has(Proxied::NO_STORE) && has(b"no-store"))
        || (proxied.has(Proxied::PRIVATE) && has(b"private"))
        || (proxied.has(Proxied::NO_LAST_MODIFIED) && response.last_modified.is_none())
        || (proxied.has(Proxied::NO_ETAG) && response.etag.is_none())
        || (proxied.has(Proxied::AUTH) && request.header(b"authorization").is_some())
}

#[cfg(test)]
mod tests {
    use super::takes_gzip;

    #[test]
    fn accept_encoding() {
        assert!(takes_gzip(b"gzip"));
        assert!(takes_gzip(b"deflate, gzip;q=0.5"));
        assert!(takes_gzip(b"x-gzip"));
        assert!(!takes_gzip(b"gzip;q=0"));
        assert!(!takes_gzip(b"deflate, br"));
        assert!(!takes_gzip(b"gzipx"));
    }
}
