//! `flv` (nginx's ngx_http_flv_module): pseudo-streaming of Flash video. A request with
//! `?start=N` gets the 13-byte FLV header and then the file from byte `N`, so that a player
//! can seek without the whole file; without it (or with a `start` that is no offset inside
//! the file) the file is served as the static handler serves it. Ranges apply to what is
//! sent, as nginx allows them.

pub mod directives;

use crate::kernel::request::Request;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;
use crate::kernel::send::pieces::{Piece, Pieces};

/// The FLV file header a response from `start` begins with: signature, version 1, audio
/// and video, a header of 9 bytes, then a previous-tag size of 0.
pub const HEADER: &[u8; 13] = b"FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00";

/// The `start` argument as nginx reads it: a decimal offset above 0 and below `len`;
/// anything else serves the whole file.
pub fn start(args: &[u8], len: u64) -> Option<u64> {
    let mut value = Vec::new();
    if !crate::kernel::variables::evaluate::append_argument(args, b"start", &mut value) {
        return None;
    }
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let start: u64 = std::str::from_utf8(&value).ok()?.parse().ok()?;
    (start > 0 && start < len).then_some(start)
}

/// The static handler's answer for the file, made to start at `?start=`: the header, then
/// the file from that offset, with the length to match. Other answers are left alone.
pub(crate) fn from_start<'a>(request: &mut Request<'a>, body: Body<'a>) -> Body<'a> {
    let Body::File(file) = body else {
        return body;
    };
    let Some(start) = start(&request.args, file.len) else {
        return Body::File(file);
    };
    let rest = file.len - start;
    request.response.content_length = Some(HEADER.len() as u64 + rest);
    Body::Pieces(Pieces {
        pieces: vec![
            Piece::Bytes(Bytes::Borrowed(HEADER)),
            Piece::File {
                offset: file.offset + start,
                len: rest,
            },
        ],
        file: Some(file),
        recoder: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_is_an_offset_inside_the_file() {
        assert_eq!(start(b"start=100", 1000), Some(100));
        assert_eq!(start(b"a=1&start=999", 1000), Some(999));
        assert_eq!(start(b"start=1000", 1000), None);
        assert_eq!(start(b"start=0", 1000), None);
        assert_eq!(start(b"start=-5", 1000), None);
        assert_eq!(start(b"start=1x", 1000), None);
        assert_eq!(start(b"start=", 1000), None);
        assert_eq!(start(b"begin=5", 1000), None);
        assert_eq!(start(b"start=99999999999999999999999", 1000), None);
    }
}
