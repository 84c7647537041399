//! HTTP/2 without I/O (RFC 9113, RFC 7541, and RFC 7540's priorities): bytes in, events out,
//! frames queued to write out. [`connection`] plays the server (Portico's clients),
//! [`client`] the client (an HTTP/2 upstream); both share the frames, HPACK and windows.
//! It never touches a socket, never reads the clock and never logs; the caller decides
//! what to log and when to write.

pub mod client;
pub mod connection;
pub mod error;
pub mod flow;
pub mod frame;
pub mod hpack;
pub mod limits;
mod output;
pub mod priority;
mod queue;
pub mod request;
pub mod stream;

pub use error::{Error, ErrorCode, Reason};
