//! The records a web server sends a responder: BEGIN_REQUEST, PARAMS, STDIN, ABORT_REQUEST.

use super::params::{pair_len, put_pair};
use super::record::{CONTENT_LEN_MAX, HEADER_LEN, RecordHeader, RecordType, put_record};
use crate::error::RequestError;

/// STDIN content per record: nginx sends the body in records of 32 KiB. Aligned to 8, so
/// full records need no padding.
pub const STDIN_RECORD_CONTENT_MAX: usize = 32 * 1024;

/// `FCGI_RESPONDER` (§6.2), the only role nginx asks for.
const ROLE_RESPONDER: u16 = 1;

/// `FCGI_KEEP_CONN` in BEGIN_REQUEST's flags.
const FLAG_KEEP_CONN: u8 = 1;

/// What the application does with the connection after the request (`fastcgi_keep_conn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepConn {
    /// The application closes it once the request ends (flags 0).
    Close,
    /// It stays open for the next request (`FCGI_KEEP_CONN`).
    Keep,
}

/// Writes one request's records into the caller's buffer. The caller sends, in order,
/// [`begin`](Self::begin), [`params`](Self::params), then the body with
/// [`stdin`](Self::stdin) (or its own records, see
/// [`stdin_record_header`](Self::stdin_record_header)) and [`stdin_end`](Self::stdin_end).
#[derive(Clone, Copy, Debug)]
pub struct RequestEncoder {
    request_id: u16,
    keep_conn: KeepConn,
}

impl RequestEncoder {
    /// An encoder for `request_id` (nginx always uses 1). Id 0 belongs to management
    /// records (§3.3) and is refused.
    pub fn new(request_id: u16, keep_conn: KeepConn) -> RequestEncoder {
        assert_ne!(
            request_id, 0,
            "request id 0 is reserved for management records"
        );
        RequestEncoder {
            request_id,
            keep_conn,
        }
    }

    /// BEGIN_REQUEST: role RESPONDER, `FCGI_KEEP_CONN` as asked (§5.1).
    pub fn begin(&self, out: &mut Vec<u8>) {
        let [role_high, role_low] = ROLE_RESPONDER.to_be_bytes();
        let flags = match self.keep_conn {
            KeepConn::Close => 0,
            KeepConn::Keep => FLAG_KEEP_CONN,
        };
        let body = [role_high, role_low, flags, 0, 0, 0, 0, 0];
        put_record(out, RecordType::BeginRequest, self.request_id, &body);
    }

    /// The PARAMS stream: every pair, in order, then the empty record that ends it. Pairs
    /// are packed into records of at most 65535 bytes and never split between two, as
    /// PHP-FPM reads each record's pairs on their own. A pair too long for one record is
    /// refused and `out` is left as it was.
    pub fn params<I, N, V>(&self, out: &mut Vec<u8>, pairs: I) -> Result<(), RequestError>
    where
        I: IntoIterator<Item = (N, V)>,
        N: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let start = out.len();
        // Where the open record's header is, and how much content it has.
        let mut open: Option<(usize, usize)> = None;
        for (name, value) in pairs {
            let (name, value) = (name.as_ref(), value.as_ref());
            let len = pair_len(name, value);
            if len > CONTENT_LEN_MAX {
                out.truncate(start);
                return Err(RequestError::FastcgiRecordTooBig { len });
            }
            let (header_at, content_len) = match open {
                Some((header_at, content_len)) if content_len + len <= CONTENT_LEN_MAX => {
                    (header_at, content_len)
                }
                full => {
                    if let Some((header_at, content_len)) = full {
                        self.close_params_record(out, header_at, content_len);
                    }
                    out.extend_from_slice(&[0; HEADER_LEN]);
                    (out.len() - HEADER_LEN, 0)
                }
            };
            put_pair(out, name, value);
            open = Some((header_at, content_len + len));
        }
        if let Some((header_at, content_len)) = open {
            self.close_params_record(out, header_at, content_len);
        }
        put_record(out, RecordType::Params, self.request_id, &[]);
        Ok(())
    }

    /// Fills in the header written ahead of a PARAMS record's pairs and pads the record.
    fn close_params_record(&self, out: &mut Vec<u8>, header_at: usize, content_len: usize) {
        let content_len =
            u16::try_from(content_len).expect("records are closed before 65536 bytes");
        let header = RecordHeader::new(RecordType::Params, self.request_id, content_len);
        out[header_at..header_at + HEADER_LEN].copy_from_slice(&header.to_bytes());
        out.resize(out.len() + usize::from(header.padding_len), 0);
    }

    /// A piece of the body as STDIN records of at most [`STDIN_RECORD_CONTENT_MAX`] bytes,
    /// each padded to 8. The piece is copied once, into `out`. An empty piece writes
    /// nothing: an empty STDIN record would end the stream.
    pub fn stdin(&self, out: &mut Vec<u8>, piece: &[u8]) {
        let records = piece.len().div_ceil(STDIN_RECORD_CONTENT_MAX);
        out.reserve(piece.len() + records * (HEADER_LEN + 7));
        for content in piece.chunks(STDIN_RECORD_CONTENT_MAX) {
            put_record(out, RecordType::Stdin, self.request_id, content);
        }
    }

    /// The header of a STDIN record whose `content_len` bytes the caller places itself
    /// (read from a temp file straight into its send buffer), to be followed by
    /// `padding_len` zero bytes. `content_len` must not be 0, which would end the stream.
    pub fn stdin_record_header(&self, content_len: u16) -> RecordHeader {
        assert_ne!(content_len, 0, "an empty STDIN record ends the body");
        RecordHeader::new(RecordType::Stdin, self.request_id, content_len)
    }

    /// The empty STDIN record that ends the body (sent even when there is no body).
    pub fn stdin_end(&self, out: &mut Vec<u8>) {
        put_record(out, RecordType::Stdin, self.request_id, &[]);
    }

    /// ABORT_REQUEST (§5.4): the application should end the request; it still answers
    /// with END_REQUEST.
    pub fn abort(&self, out: &mut Vec<u8>) {
        put_record(out, RecordType::AbortRequest, self.request_id, &[]);
    }
}

#[cfg(test)]
mod tests;
