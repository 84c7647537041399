//! `gzip`: responses compressed on the way to clients that accept it, with nginx's rules
//! for which responses qualify (status 200, 403 or 404, `gzip_types`, `gzip_min_length`,
//! no `Content-Encoding` yet, `gzip_http_version`, `gzip_disable`, `gzip_proxied` for
//! requests with `Via`) and what it changes (`Content-Encoding: gzip`, no
//! `Content-Length` nor ranges, a weak `ETag`, `Vary: Accept-Encoding` with `gzip_vary`).
//! The compression itself is the send path's (`send/compress.rs`).

pub mod directives;
pub mod settings;
pub mod variables;

use crate::kernel::conf::Location;
use crate::kernel::request::Request;
use crate::kernel::response::Bytes;

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
    if encoded
        || length.is_some_and(|length| length < settings.min_length)
        || !settings.types.contains(response.media_type())
    {
        return Decision::default();
    }
    if settings.vary {
        request.response.add_vary_accept_encoding();
    }
    if !crate::kernel::gzip_ok::gzip_ok(request, location) {
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

#[cfg(test)]
mod tests {
    use crate::kernel::gzip_ok::takes_gzip;

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
