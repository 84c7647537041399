//! The start of a server handshake: read the client's hello, let the caller choose the
//! virtual server by its SNI name, then go on with that server's configuration.

use std::io::{self, Read};

use crate::server::ServerTls;
use crate::session::{Offered, Session, offered_groups, offered_suites};

/// A fatal `unrecognized_name` alert, as a TLS 1.2 record: what nginx sends for
/// `ssl_reject_handshake on`.
pub const REJECT_ALERT: &[u8] = &[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x70];

/// A fatal `internal_error` alert, as a TLS 1.2 record: what a server that cannot make its
/// configuration for a hello (a certificate that failed to load) sends.
pub const INTERNAL_ERROR_ALERT: &[u8] = &[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50];

/// The most of a client's first bytes kept to look into its hello: one record of the
/// largest size.
const RECORDED_MAX: usize = 5 + 16 * 1024;

/// Reads a ClientHello.
#[derive(Default)]
pub struct Acceptor {
    inner: rustls::server::Acceptor,
    /// The bytes read, for the tickets the hello offers ([`crate::hello`]).
    recorded: Vec<u8>,
}

/// A reader that keeps a copy of the first bytes it reads.
struct Recording<'a> {
    socket: &'a mut dyn Read,
    recorded: &'a mut Vec<u8>,
}

impl Read for Recording<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.socket.read(buf)?;
        let room = RECORDED_MAX.saturating_sub(self.recorded.len());
        self.recorded.extend_from_slice(&buf[..read.min(room)]);
        Ok(read)
    }
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Acceptor")
    }
}

/// A handshake that failed before a session existed: the reason, and an alert to send.
#[derive(Debug)]
pub struct AcceptError {
    pub message: String,
    pub alert: Vec<u8>,
}

/// A client's hello, read in full.
pub struct Hello {
    accepted: rustls::server::Accepted,
    /// The client's first bytes, its hello among them.
    recorded: Vec<u8>,
}

impl std::fmt::Debug for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hello")
            .field("server_name", &self.server_name())
            .finish()
    }
}

impl Acceptor {
    /// Reads bytes of the hello from `socket` (one read); `Ok(0)` at end of stream.
    pub fn read_tls(&mut self, socket: &mut dyn Read) -> io::Result<usize> {
        self.inner.read_tls(&mut Recording {
            socket,
            recorded: &mut self.recorded,
        })
    }

    /// The hello, once complete (`Ok(None)`: more bytes are needed).
    pub fn accept(&mut self) -> Result<Option<Hello>, AcceptError> {
        match self.inner.accept() {
            Ok(Some(accepted)) => Ok(Some(Hello {
                accepted,
                recorded: std::mem::take(&mut self.recorded),
            })),
            Ok(None) => Ok(None),
            Err((error, mut alert)) => {
                let mut bytes = Vec::new();
                let _ = alert.write_all(&mut bytes);
                Err(AcceptError {
                    message: error.to_string(),
                    alert: bytes,
                })
            }
        }
    }
}

impl Hello {
    /// The SNI name, as the client sent it.
    pub fn server_name(&self) -> Option<String> {
        self.accepted
            .client_hello()
            .server_name()
            .map(str::to_owned)
    }

    /// Goes on with the chosen server's configuration: the one that sends a single TLS 1.3
    /// ticket when the hello offers a ticket of the server's, as OpenSSL after a resumed
    /// handshake.
    pub fn into_session(self, tls: &ServerTls) -> Result<Session, AcceptError> {
        let hello = self.accepted.client_hello();
        let offered = Offered {
            suites: offered_suites(hello.cipher_suites()),
            groups: offered_groups(hello.named_groups()),
        };
        let config = match &tls.resumed {
            Some(resumed) if offers_own_ticket(tls, &self.recorded) => resumed.clone(),
            _ => tls.config.clone(),
        };
        match self.accepted.into_connection(config) {
            Ok(connection) => Ok(Session::server(connection, offered, tls.verify.clone())),
            Err((error, mut alert)) => {
                let mut bytes = Vec::new();
                let _ = alert.write_all(&mut bytes);
                Err(AcceptError {
                    message: error.to_string(),
                    alert: bytes,
                })
            }
        }
    }
}

/// Whether the hello in `recorded` offers a ticket that the server's keys open: the
/// handshake will most likely resume (rustls still checks the ticket's suite, name and age).
fn offers_own_ticket(tls: &ServerTls, recorded: &[u8]) -> bool {
    crate::hello::offered_tickets(recorded)
        .iter()
        .any(|ticket| tls.config.ticketer.decrypt(ticket).is_some())
}
