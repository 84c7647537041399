//! Serving a file: URI to path, `index`, directory redirects, and the file body. The
//! system calls that touch the file system run where `aio` says (the kernel's file access).

use http1::Method;

use crate::kernel::conf::Location;
use crate::kernel::request::Request;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;

/// What the static handler decided.
#[derive(Debug)]
pub(crate) enum StaticOutcome<'a> {
    /// Respond with this status; for 200 the head is set and the body given.
    Respond { status: u16, body: Body<'a> },
    /// `index` found a file: continue with this URI as a new internal request.
    Redirect(Vec<u8>),
    /// A directory without the trailing slash: 301 to the URI with `/`.
    AddSlash,
}

/// The methods the static handler serves; anything else is 405 (nginx lets POST reach the
/// handler so that a missing file is still 404).
pub(crate) fn method_allowed(method: Method) -> bool {
    matches!(method, Method::Get | Method::Head | Method::Post)
}

/// The `Location` of the redirect for a directory without its slash: `$uri/`, escaped as
/// nginx escapes a URI, with `?$args` when there are arguments.
pub(crate) fn directory_location(request: &Request<'_>) -> Vec<u8> {
    let mut value = Vec::with_capacity(request.uri.len() + request.args.len() + 2);
    crate::modules::static_files::autoindex::escape_uri(&request.uri, &mut value);
    value.push(b'/');
    if !request.args.is_empty() {
        value.push(b'?');
        value.extend_from_slice(&request.args);
    }
    value
}

/// The ETag nginx sends for a file: `"MTIME-SIZE"` in hex.
pub fn etag(modified: i64, len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(28);
    out.push(b'"');
    push_hex(&mut out, modified as u64);
    out.push(b'-');
    push_hex(&mut out, len);
    out.push(b'"');
    out
}

/// Lowercase hex without leading zeros, as `{:x}` writes it (for the per-request `ETag`,
/// without the formatting machinery).
fn push_hex(out: &mut Vec<u8>, value: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - value.leading_zeros()).div_ceil(4).max(1);
    for shift in (0..digits).rev() {
        out.push(HEX[((value >> (shift * 4)) & 0xf) as usize]);
    }
}

/// The MIME type of a URI's extension, else `default_type`.
pub fn content_type<'a>(location: &'a Location, uri: &[u8]) -> Bytes<'a> {
    Bytes::Borrowed(crate::kernel::core::types::mime_type(
        &location.settings.core,
        uri,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_is_hex_mtime_and_size() {
        assert_eq!(etag(0x6b02091b, 3), b"\"6b02091b-3\"");
        assert_eq!(etag(0, 0), b"\"0-0\"");
        assert_eq!(
            etag(0x10, u64::MAX as i64 as u64),
            b"\"10-ffffffffffffffff\""
        );
        assert_eq!(etag(-1, 0x1000), b"\"ffffffffffffffff-1000\"");
    }
}
