//! HTTP/3 without I/O (RFC 9114, and QPACK of RFC 9204): QUIC stream data in, events out,
//! stream data queued to write out. [`connection`] plays the server. The QUIC transport is
//! the caller's: this crate sees stream ids and the bytes and ends of streams, never a
//! packet. It never touches a socket, never reads the clock and never logs.

pub mod connection;
pub mod error;
pub mod frame;
pub mod qpack;
pub mod varint;

pub use connection::{Config, Connection, Event, Output, SendError};
pub use error::{Code, Error, Reason};
pub use http2::hpack::{FieldList, HeaderField};
