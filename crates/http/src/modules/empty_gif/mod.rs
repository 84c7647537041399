//! `empty_gif`: a location that answers every GET and HEAD with a 1x1 transparent GIF
//! (nginx's ngx_http_empty_gif_module).

pub mod directives;

use crate::kernel::request::Request;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;

/// The image: GIF89a, one pixel, a two-colour table, transparent colour index 1.
pub const GIF: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x01, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x4c, 0x01, 0x00, 0x3b,
];

/// The fixed modification time nginx gives the image (1970-09-28 06:00:00 UTC), so that
/// conditional requests and caches see one unchanging file.
const LAST_MODIFIED_SECONDS: i64 = 23_349_600;

/// The location's answer: the image, or 405 for a method other than GET and HEAD.
pub(crate) fn respond<'a>(request: &mut Request<'a>) -> Result<Body<'a>, u16> {
    if !matches!(
        request.head.method,
        http1::Method::Get | http1::Method::Head
    ) {
        return Err(405);
    }
    request.discard_body = true;
    request.response.status = 200;
    request.response.content_type = Some(Bytes::Borrowed(b"image/gif"));
    request.response.last_modified = Some(LAST_MODIFIED_SECONDS);
    Ok(Body::Bytes(Bytes::Borrowed(GIF)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_is_a_whole_one_pixel_gif() {
        assert_eq!(GIF.len(), 43);
        assert_eq!(&GIF[..6], b"GIF89a");
        // Logical screen width and height, little-endian.
        assert_eq!(&GIF[6..10], &[1, 0, 1, 0]);
        // The trailer ends the stream.
        assert_eq!(GIF.last(), Some(&0x3b));
    }
}
