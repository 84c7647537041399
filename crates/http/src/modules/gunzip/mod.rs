//! `gunzip` (nginx's ngx_http_gunzip_filter_module): a response that is gzip-encoded (a
//! proxied one, a stored one, a `gzip_static always` file) is decoded for a client that
//! does not take gzip. Its header filter decides and changes the head (no
//! `Content-Encoding`, `Content-Length` nor ranges, a weak `ETag`, `Vary: Accept-Encoding`
//! with `gzip_vary` whether decoded or not); the decoding is the send path's
//! (`send/coding.rs`), in bounded steps.

pub mod directives;
pub mod settings;

use crate::kernel::conf::Location;
use crate::kernel::request::Request;

/// nginx's gunzip header filter: whether the body is decoded on the way; sets the head.
pub fn filter(request: &mut Request<'_>, location: &Location) -> bool {
    if !location.settings.gunzip.gunzip {
        return false;
    }
    let response = &request.response;
    // Only a body with the one coding `gzip` (nginx compares the whole value).
    let gzip_encoded = response
        .headers
        .iter()
        .find(|(name, _)| name.as_slice().eq_ignore_ascii_case(b"content-encoding"))
        .is_some_and(|(_, value)| value.as_slice().eq_ignore_ascii_case(b"gzip"));
    if !gzip_encoded {
        return false;
    }
    if location.settings.gzip.vary {
        request.response.add_vary_accept_encoding();
    }
    if crate::kernel::gzip_ok::gzip_ok(request, location) {
        return false;
    }
    let response = &mut request.response;
    response
        .headers
        .retain(|(name, _)| !name.as_slice().eq_ignore_ascii_case(b"content-encoding"));
    response.content_length = None;
    response
        .headers
        .retain(|(name, _)| !name.as_slice().eq_ignore_ascii_case(b"content-length"));
    response.accept_ranges = false;
    response
        .headers
        .retain(|(name, _)| !name.as_slice().eq_ignore_ascii_case(b"accept-ranges"));
    if let Some(etag) = &mut response.etag
        && !etag.starts_with(b"W/")
    {
        etag.splice(0..0, b"W/".iter().copied());
    }
    true
}
