//! The HTTP/1.x codec: bytes in, typed heads and body events out. It never touches a socket,
//! never reads the clock and never logs.
//!
//! On the request path, `http::connection` reads bytes into its buffer and hands them here:
//! [`request::parse_head`] finds a complete request head (common lines through a one-pass
//! fast path, exact nginx-equivalent scanners otherwise) and enforces the buffer
//! limits nginx enforces (`client_header_buffer_size`, `large_client_header_buffers`,
//! `max_headers`) in the order nginx meets them; [`request::analyze`] validates it as nginx
//! does (method, version, Host, `Content-Length` / `Transfer-Encoding` framing per RFC 9112,
//! `Expect`, `Connection`);
//! [`uri::normalize`] turns the request target into nginx's `$uri` (percent-decoding, dot
//! segments, `merge_slashes`); [`chunked::ChunkedDecoder`] decodes a chunked body;
//! [`response`] writes status lines, header lines and chunk framing; [`range`] reads what a
//! `Range` field asks of a body and [`conditional`] the fields of conditional requests.
//!
//! In the client role (the proxy talking to an upstream), [`response_head::parse`] reads a
//! response head and [`response_head::framing`] says how its body is delimited.
//!
//! Errors are typed ([`error::RequestError`]) and say which nginx status and log message
//! they map to; the caller decides what to log and what to answer.

pub mod ascii;
pub mod chunked;
pub mod conditional;
pub mod error;
pub mod host;
pub mod method;
pub mod range;
pub mod request;
pub mod response;
pub mod response_head;
pub mod status;
pub mod uri;

pub use error::RequestError;
pub use method::Method;
pub use request::{
    BodyFraming, ConnectionOption, HeadLimits, HeaderField, Progress, RequestHead, RequestInfo,
    Version,
};

#[cfg(test)]
mod test_rng;
