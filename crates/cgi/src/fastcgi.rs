//! FastCGI 1.0 as a web server speaks it to a responder (PHP-FPM): one request per
//! connection at a time, with request id 1 as nginx uses, and `FCGI_KEEP_CONN` when the
//! connection is to be kept for the next request.
//!
//! A request is written by [`RequestEncoder`]: BEGIN_REQUEST, the PARAMS stream (the CGI
//! variables as name-value pairs, §3.4) ended by an empty PARAMS record, then the STDIN
//! stream (the request body) ended by an empty STDIN record. Records are padded to a
//! multiple of 8 bytes, as nginx pads them (the specification recommends it, §3.3).
//!
//! The answer is read by [`Decoder`] (records to events: stdout and stderr bytes, the end
//! of stdout, END_REQUEST with its statuses) or, one level up, by [`ResponseReader`], which
//! also reads the CGI head from stdout and applies nginx's rules on which record may come
//! when. Both take bytes as they arrive, in any split, and borrow stdout and stderr bytes
//! from the input instead of copying them.

mod decoder;
mod params;
mod record;
mod request;
mod response;

pub use decoder::{Decoder, EndRequest, Event, ProtocolStatus};
pub use params::NameValuePairs;
pub use record::{CONTENT_LEN_MAX, HEADER_LEN, RecordHeader, RecordType, VERSION_1, padding_len};
pub use request::{KeepConn, RequestEncoder, STDIN_RECORD_CONTENT_MAX};
pub use response::{ResponseEvent, ResponseReader};

/// What nginx logs of a piece of stderr, as `FastCGI sent in stderr: "..."`: the piece
/// without its trailing line ends, spaces and dots (PHP ends its messages with `.` and
/// `\n`). nginx logs each piece of a STDERR record as it arrives, line breaks inside it
/// included, so one record read in two pieces is two messages.
pub fn stderr_message(piece: &[u8]) -> &[u8] {
    let kept = piece
        .iter()
        .rposition(|&byte| !matches!(byte, b'\n' | b'\r' | b'.' | b' '))
        .map_or(0, |last| last + 1);
    &piece[..kept]
}

#[cfg(test)]
mod tests_stderr {
    use super::stderr_message;

    #[test]
    fn trailing_line_ends_spaces_and_dots_are_dropped() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"PHP message: hello.\n", b"PHP message: hello"),
            (b"a\r\n. \n", b"a"),
            (b"first\nsecond\n", b"first\nsecond"),
            (b"...\n", b""),
            (b"", b""),
            (b" keep leading", b" keep leading"),
        ];
        for (piece, message) in cases {
            assert_eq!(stderr_message(piece), message, "{piece:?}");
        }
    }
}
