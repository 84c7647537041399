//! One TLS connection, sans I/O: the runtime hands it bytes read from the socket and
//! writes out what it has to send. Client and server sessions look the same from outside.

use std::io::{self, Read, Write};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;

use crate::ciphers::{offered_name, openssl_name};
use crate::peer::{ClientCertificate, ClientVerify};

/// A TLS connection in progress or established.
pub struct Session {
    connection: rustls::Connection,
    /// What only the end of a server handshake needs ([`Session::info`] takes it): boxed,
    /// so that an established connection does not keep room for it.
    pending: Option<Box<Pending>>,
    /// Decrypted bytes not read yet, as the last processing left them.
    plaintext: usize,
    peer_closed: bool,
}

/// The facts a server session keeps from its start to the end of its handshake.
struct Pending {
    /// The client's offered suites and groups, kept from its hello.
    offered: Offered,
    verify: Option<Arc<ClientVerify>>,
    /// The id given to a new session, sealed into its tickets and cache entries (rustls's
    /// resumption data), so a resumed session shows its original id (`$ssl_session_id`).
    session_id: [u8; 32],
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("handshaking", &self.connection.is_handshaking())
            .finish()
    }
}

/// The client's suites and groups as it listed them, kept as their codes: the names
/// (`$ssl_ciphers`, `$ssl_curves`) are written only when a variable asks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Offered {
    pub(crate) suites: Box<[u16]>,
    pub(crate) groups: Box<[u16]>,
}

/// What a finished handshake agreed on, for `$ssl_*` variables and logs.
#[derive(Clone, Debug, Default)]
pub struct HandshakeInfo {
    /// `TLSv1.2`, `TLSv1.3`
    pub protocol: &'static str,
    /// OpenSSL's name of the suite.
    pub cipher: &'static str,
    /// The group of the key exchange (`X25519`, `prime256v1`...).
    pub curve: &'static str,
    /// The codes of the client's suites and groups (two bytes each, in its order), the
    /// session's id, the SNI name and the ALPN protocol, one after another in one
    /// allocation: an HTTPS connection keeps them for its life.
    facts: Box<[u8]>,
    /// Where the suites, the groups, the session id and the name end in `facts` (the
    /// protocol is the rest).
    ends: [u32; 4],
    has_server_name: bool,
    has_alpn: bool,
    pub resumed: bool,
    /// The client's certificate, when one was asked for (boxed: most connections have none,
    /// and this is kept for the connection's life).
    pub client_certificate: Option<Box<ClientCertificate>>,
}

/// The variable-length facts of a handshake, for [`HandshakeInfo::with_facts`].
#[derive(Default)]
pub(crate) struct Facts<'a> {
    pub(crate) suites: &'a [u16],
    pub(crate) groups: &'a [u16],
    pub(crate) session_id: &'a [u8],
    pub(crate) server_name: Option<&'a str>,
    pub(crate) alpn: Option<&'a [u8]>,
}

impl Session {
    pub(crate) fn server(
        mut connection: rustls::ServerConnection,
        offered: Offered,
        verify: Option<Arc<ClientVerify>>,
    ) -> Session {
        let mut session_id = [0u8; 32];
        let _ = aws_lc_rs::rand::fill(&mut session_id);
        connection.set_resumption_data(&session_id);
        Session {
            connection: connection.into(),
            pending: Some(Box::new(Pending {
                offered,
                verify,
                session_id,
            })),
            plaintext: 0,
            peer_closed: false,
        }
    }

    pub(crate) fn client(connection: rustls::ClientConnection) -> Session {
        Session {
            connection: connection.into(),
            pending: None,
            plaintext: 0,
            peer_closed: false,
        }
    }

    /// Reads TLS records from `socket` (one read); `Ok(0)` is the end of the stream.
    pub fn read_tls(&mut self, socket: &mut dyn Read) -> io::Result<usize> {
        self.connection.read_tls(socket)
    }

    /// Processes the records read so far. A protocol error leaves an alert to send.
    pub fn process(&mut self) -> io::Result<()> {
        match self.connection.process_new_packets() {
            Ok(state) => {
                self.plaintext = state.plaintext_bytes_to_read();
                self.peer_closed = state.peer_has_closed();
                Ok(())
            }
            Err(error) => Err(io::Error::new(io::ErrorKind::InvalidData, error)),
        }
    }

    /// Decrypted bytes: `WouldBlock` when none are there yet, `Ok(0)` after the peer's
    /// `close_notify`.
    pub fn read_plaintext(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.connection.reader().read(buf)?;
        self.plaintext = self.plaintext.saturating_sub(read);
        Ok(read)
    }

    /// Whether decrypted bytes wait to be read, or the peer closed cleanly.
    pub fn plaintext_ready(&self) -> bool {
        self.plaintext > 0 || self.peer_closed
    }

    /// Encrypts `buf` for sending; returns how much was taken.
    pub fn write_plaintext(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.connection.writer().write(buf)
    }

    /// Whether records wait to be written to the socket.
    pub fn wants_write(&self) -> bool {
        self.connection.wants_write()
    }

    /// Writes pending records to `socket` (one write).
    pub fn write_tls(&mut self, socket: &mut dyn Write) -> io::Result<usize> {
        self.connection.write_tls(socket)
    }

    pub fn is_handshaking(&self) -> bool {
        self.connection.is_handshaking()
    }

    /// Queues a `close_notify` alert.
    pub fn send_close_notify(&mut self) {
        self.connection.send_close_notify();
    }

    /// Bounds how much plaintext is buffered before records are written
    /// (`ssl_buffer_size` sets the record size nginx writes).
    pub fn set_buffer_limit(&mut self, limit: usize) {
        self.connection.set_buffer_limit(Some(limit));
    }

    /// The facts of the finished handshake. What the session kept for them (the client's
    /// offered lists, the session id) moves into them: a second call finds those empty.
    pub fn info(&mut self) -> HandshakeInfo {
        let pending = self.pending.take();
        let connection = &self.connection;
        let protocol = match connection.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
            _ => "",
        };
        let (server_name, client_certificate, session_id) = match (connection, &pending) {
            (rustls::Connection::Server(server), Some(pending)) => (
                server.server_name(),
                client_certificate(pending.verify.as_deref(), server.peer_certificates()),
                server
                    .received_resumption_data()
                    .unwrap_or(&pending.session_id),
            ),
            _ => (None, None, &[][..]),
        };
        let offered = pending.as_ref().map(|pending| &pending.offered);
        let facts = Facts {
            suites: offered.map_or(&[][..], |offered| &offered.suites),
            groups: offered.map_or(&[][..], |offered| &offered.groups),
            session_id,
            server_name,
            alpn: connection.alpn_protocol(),
        };
        HandshakeInfo {
            protocol,
            cipher: connection
                .negotiated_cipher_suite()
                .map_or("", openssl_name),
            curve: connection
                .negotiated_key_exchange_group()
                .map_or("", |group| group_name(group.name())),
            resumed: matches!(
                connection.handshake_kind(),
                Some(rustls::HandshakeKind::Resumed)
            ),
            client_certificate,
            ..HandshakeInfo::with_facts(&facts)
        }
    }
}

/// The client's certificate as the variables show it, when one was asked for (`verify`).
fn client_certificate(
    verify: Option<&ClientVerify>,
    chain: Option<&[CertificateDer<'static>]>,
) -> Option<Box<ClientCertificate>> {
    let verify = verify?;
    let Some(chain) = chain.filter(|chain| !chain.is_empty()) else {
        return Some(Box::new(ClientCertificate {
            verify: "NONE".to_owned(),
            ..ClientCertificate::default()
        }));
    };
    let verdict = match verify.check(chain) {
        Ok(()) => "SUCCESS".to_owned(),
        Err(reason) => format!("FAILED:{reason}"),
    };
    Some(Box::new(ClientCertificate::describe(chain, verdict)))
}

/// OpenSSL's name of a key exchange group.
pub(crate) fn group_name(group: rustls::NamedGroup) -> &'static str {
    use rustls::NamedGroup as Group;
    match group {
        Group::X25519 => "X25519",
        Group::secp256r1 => "prime256v1",
        Group::secp384r1 => "secp384r1",
        Group::secp521r1 => "secp521r1",
        Group::X448 => "X448",
        Group::X25519MLKEM768 => "X25519MLKEM768",
        Group::secp256r1MLKEM768 => "SecP256r1MLKEM768",
        Group::MLKEM768 => "MLKEM768",
        _ => "",
    }
}

impl HandshakeInfo {
    /// Facts with these variable-length parts and nothing else.
    pub(crate) fn with_facts(facts: &Facts<'_>) -> HandshakeInfo {
        let mut bytes = Vec::with_capacity(
            2 * (facts.suites.len() + facts.groups.len())
                + facts.session_id.len()
                + facts.server_name.map_or(0, str::len)
                + facts.alpn.map_or(0, <[u8]>::len),
        );
        let mut ends = [0u32; 4];
        let end = |bytes: &Vec<u8>| u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        bytes.extend(facts.suites.iter().flat_map(|code| code.to_be_bytes()));
        ends[0] = end(&bytes);
        bytes.extend(facts.groups.iter().flat_map(|code| code.to_be_bytes()));
        ends[1] = end(&bytes);
        bytes.extend_from_slice(facts.session_id);
        ends[2] = end(&bytes);
        bytes.extend_from_slice(facts.server_name.unwrap_or_default().as_bytes());
        ends[3] = end(&bytes);
        bytes.extend_from_slice(facts.alpn.unwrap_or_default());
        HandshakeInfo {
            facts: bytes.into_boxed_slice(),
            ends,
            has_server_name: facts.server_name.is_some(),
            has_alpn: facts.alpn.is_some(),
            ..HandshakeInfo::default()
        }
    }

    /// Facts with only an SNI name: what the names of certificates see during a handshake.
    pub fn with_server_name(server_name: Option<&str>) -> HandshakeInfo {
        HandshakeInfo::with_facts(&Facts {
            server_name,
            ..Facts::default()
        })
    }

    /// Part `index` of `facts` (0 suites, 1 groups, 2 session id, 3 name, 4 protocol).
    fn part(&self, index: usize) -> &[u8] {
        let start = match index {
            0 => 0,
            _ => self.ends.get(index - 1).copied().unwrap_or(0) as usize,
        };
        let end = self
            .ends
            .get(index)
            .map_or(self.facts.len(), |&end| end as usize);
        self.facts.get(start..end).unwrap_or_default()
    }

    /// The SNI name the client sent.
    pub fn server_name(&self) -> Option<&str> {
        let name = self.part(3);
        self.has_server_name
            .then(|| std::str::from_utf8(name).unwrap_or_default())
    }

    /// The protocol ALPN agreed on.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.has_alpn.then(|| self.part(4))
    }

    /// The session's id; empty on a client session.
    pub fn session_id(&self) -> &[u8] {
        self.part(2)
    }

    fn codes(&self, index: usize) -> impl Iterator<Item = u16> + '_ {
        self.part(index)
            .chunks_exact(2)
            .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
    }

    /// Appends the client's suites, OpenSSL names joined by `:` (`$ssl_ciphers`), unknown
    /// ones as `0x` and four hex digits, the renegotiation SCSV left out.
    pub fn write_ciphers(&self, out: &mut Vec<u8>) {
        let mut first = true;
        for code in self.codes(0).filter(|&code| code != 0x00ff) {
            if !std::mem::take(&mut first) {
                out.push(b':');
            }
            match offered_name(rustls::CipherSuite::from(code)) {
                Some(name) => out.extend_from_slice(name.as_bytes()),
                None => push_code(out, code),
            }
        }
    }

    /// Appends the client's groups joined by `:` (`$ssl_curves`), unknown ones as `0x` and
    /// hex.
    pub fn write_curves(&self, out: &mut Vec<u8>) {
        for (index, code) in self.codes(1).enumerate() {
            if index > 0 {
                out.push(b':');
            }
            match group_name(rustls::NamedGroup::from(code)) {
                "" => push_code(out, code),
                name => out.extend_from_slice(name.as_bytes()),
            }
        }
    }

    /// Appends the session's id in lower-case hex (`$ssl_session_id`).
    pub fn write_session_id(&self, out: &mut Vec<u8>) {
        push_hex(out, self.session_id());
    }
}

/// The codes of the suites a client offers.
pub(crate) fn offered_suites(suites: &[rustls::CipherSuite]) -> Box<[u16]> {
    suites.iter().map(|&suite| u16::from(suite)).collect()
}

/// The codes of the groups a client offers.
pub(crate) fn offered_groups(groups: Option<&[rustls::NamedGroup]>) -> Box<[u16]> {
    let groups = groups.unwrap_or_default();
    groups.iter().map(|&group| u16::from(group)).collect()
}

/// Appends `0x` and `code` as four lower-case hex digits.
fn push_code(out: &mut Vec<u8>, code: u16) {
    out.extend_from_slice(b"0x");
    push_hex(out, &code.to_be_bytes());
}

/// Appends `bytes` as lower-case hex digits.
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 0x0f)]);
    }
}

#[cfg(test)]
mod tests {
    use rustls::{CipherSuite, NamedGroup};

    use super::{Facts, HandshakeInfo, offered_groups, offered_suites};

    fn written(write: impl Fn(&HandshakeInfo, &mut Vec<u8>), info: &HandshakeInfo) -> String {
        let mut out = b"x=".to_vec();
        write(info, &mut out);
        String::from_utf8(out).expect("names and hex digits are ASCII")
    }

    #[test]
    fn offered_lists_use_openssl_names_and_hex_for_the_rest() {
        let suites = [
            CipherSuite::TLS_EMPTY_RENEGOTIATION_INFO_SCSV,
            CipherSuite::TLS13_AES_256_GCM_SHA384,
            CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            CipherSuite::from(0x0033),
        ];
        let groups = [
            NamedGroup::X25519,
            NamedGroup::from(0x0100),
            NamedGroup::secp256r1,
        ];
        let info = HandshakeInfo::with_facts(&Facts {
            suites: &offered_suites(&suites),
            groups: &offered_groups(Some(&groups)),
            session_id: &[0x00, 0x9f, 0xa0, 0xff],
            server_name: Some("example.org"),
            alpn: Some(b"h2"),
        });
        assert_eq!(
            written(HandshakeInfo::write_ciphers, &info),
            "x=TLS_AES_256_GCM_SHA384:ECDHE-ECDSA-AES128-GCM-SHA256:0x0033"
        );
        assert_eq!(
            written(HandshakeInfo::write_curves, &info),
            "x=X25519:0x0100:prime256v1"
        );
        assert_eq!(
            written(HandshakeInfo::write_session_id, &info),
            "x=009fa0ff"
        );
        assert_eq!(info.server_name(), Some("example.org"));
        assert_eq!(info.alpn(), Some(&b"h2"[..]));
        let empty = HandshakeInfo::with_facts(&Facts {
            groups: &offered_groups(None),
            ..Facts::default()
        });
        assert_eq!(written(HandshakeInfo::write_ciphers, &empty), "x=");
        assert_eq!(written(HandshakeInfo::write_curves, &empty), "x=");
        assert_eq!(written(HandshakeInfo::write_session_id, &empty), "x=");
        assert_eq!((empty.server_name(), empty.alpn()), (None, None));
        let named = HandshakeInfo::with_server_name(Some("a.example"));
        assert_eq!(named.server_name(), Some("a.example"));
        assert_eq!(named.alpn(), None);
        assert_eq!(HandshakeInfo::default().server_name(), None);
    }
}
