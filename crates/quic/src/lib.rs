//! QUIC for HTTP/3, without I/O: `quinn-proto`'s endpoint and connections, each
//! connection carrying an [`http3::Connection`]. The caller owns the UDP socket and the
//! clock: it hands over datagrams with [`Endpoint::receive`], sends what
//! [`Endpoint::poll_transmit`] gives, calls [`Endpoint::handle_timeout`] when
//! [`Endpoint::poll_timeout`] says, and answers the requests [`Endpoint::poll_event`]
//! reports; [`driver`] does all that from a task of the worker's loop. This crate moves
//! QUIC stream data between the two state machines, opens the server's HTTP/3 streams once
//! the handshake is done, keeps what QUIC's flow control does not take yet, and closes a
//! connection with the HTTP/3 error its codec raises.

pub mod driver;
mod endpoint;
pub mod router;
mod tokens;

pub use endpoint::{Config, ConnectionId, Datagram, Endpoint, Event, SendError, TlsError};
