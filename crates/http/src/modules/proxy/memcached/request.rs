//! The request memcached gets: `get KEY\r\n`, the key `$memcached_key` escaped as nginx
//! escapes it (space, `%` and control bytes as `%XX`), so that it is one token of the
//! text protocol.

use logging::Level;

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;

/// Writes `get KEY\r\n` into `out`; an empty or unset `$memcached_key` is logged and ends
/// the request with 500, as in nginx. Out of line: `build_head` serves `proxy_pass` too.
#[inline(never)]
pub(crate) fn write_request(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    out: &mut Vec<u8>,
) -> Result<(), u16> {
    let key = location
        .settings
        .gateway
        .key
        .as_ref()
        .map(|template| render(worker, connection, request, template))
        .unwrap_or_default();
    if key.is_empty() {
        crate::kernel::request_log::log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!("the \"$memcached_key\" variable is not set"),
        );
        return Err(500);
    }
    out.extend_from_slice(b"get ");
    escape_key(&key, out);
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// The key of a request [`write_request`] wrote: what an answer's `VALUE` line must
/// name.
pub(crate) fn sent_key(request: &[u8]) -> &[u8] {
    request
        .strip_prefix(b"get ")
        .and_then(|rest| rest.strip_suffix(b"\r\n"))
        .unwrap_or(b"")
}

/// Appends `key` with space, `%` and the bytes below 0x20 as `%XX`.
fn escape_key(key: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in key {
        if byte <= b' ' || byte == b'%' {
            out.extend_from_slice(&[
                b'%',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 15)],
            ]);
        } else {
            out.push(byte);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{escape_key, sent_key};

    #[test]
    fn keys_are_escaped_into_one_token() {
        for (key, escaped) in [
            (&b"/index.html"[..], &b"/index.html"[..]),
            (b"a b", b"a%20b"),
            (b"50%", b"50%25"),
            (b"x\r\ny\x00", b"x%0D%0Ay%00"),
            (b"caf\xc3\xa9\x7f", b"caf\xc3\xa9\x7f"),
        ] {
            let mut out = Vec::new();
            escape_key(key, &mut out);
            assert_eq!(out, escaped);
        }
    }

    #[test]
    fn the_sent_key_is_read_back() {
        assert_eq!(sent_key(b"get /a%20b\r\n"), b"/a%20b");
        assert_eq!(sent_key(b"set x"), b"");
    }
}
