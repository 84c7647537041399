//! HTTP/2 without I/O (RFC 9113, RFC 7541, and RFC 7540's priorities): bytes in, events out,
//! frames queued to write out. It never touches a socket, never reads the clock and never
//! logs; the caller decides what to log and when to write.

pub mod error;
pub mod frame;
pub mod hpack;

pub use error::{Error, ErrorCode, Reason};
