//! The protocols Portico speaks to CGI-family application servers, without I/O: FastCGI
//! (PHP-FPM), uwsgi (uWSGI) and SCGI. Requests are encoded into the caller's buffer;
//! answers are decoded from bytes as they arrive, in any split, into events. It never
//! touches a socket, never reads the clock and never logs: errors are typed values whose
//! `Display` is the text nginx writes to its error log, and the caller decides what to log,
//! what to answer the client (nginx answers 502 to every one of them) and whether to try
//! the next peer.
//!
//! The name: all three carry a request as CGI variables (RFC 3875 §4.1: `REQUEST_METHOD`,
//! `SCRIPT_FILENAME`, `HTTP_*`) and answer with a CGI response head (`Status:`,
//! `Location:`, header lines, an empty line), so one crate holds the three framings and
//! the head they share; `fastcgi` alone would leave uwsgi and SCGI without a home.
//!
//! On the request path it sits where `http1` sits for `proxy_pass`: the `http` crate's
//! upstream engine evaluates the `fastcgi_param` / `uwsgi_param` / `scgi_param` values,
//! hands them here with the request body, writes the bytes to the peer, and feeds what
//! the peer answers to [`fastcgi::ResponseReader`] (FastCGI) or [`head::HeadParser`]
//! (uwsgi and SCGI, whose body is then the rest of the stream until the peer closes).
//!
//! - [`fastcgi`]: records (FastCGI 1.0 §3), name-value pairs (§3.4), the request a
//!   responder is sent ([`fastcgi::RequestEncoder`]), the records it answers with
//!   ([`fastcgi::Decoder`]) and the response read as nginx reads it
//!   ([`fastcgi::ResponseReader`]).
//! - [`head`]: the CGI response head (RFC 3875 §6), or an HTTP status line and header
//!   lines (uwsgi and SCGI applications may send either), read as nginx reads them.
//! - [`uwsgi`]: the request packet (modifier1, 16-bit little-endian size, modifier2, vars).
//! - [`scgi`]: the request netstring (`CONTENT_LENGTH` first).

pub mod error;
pub mod fastcgi;
pub mod head;
pub mod scgi;
pub mod uwsgi;

pub use error::{FastcgiError, HeadError, RecordError, RequestError};
