//! The TLS side of a QUIC endpoint (`listen ... quic`): TLS 1.3 only (QUIC has no other,
//! RFC 9001 §4.2), the ALPN names HTTP/3 speaks, and a certificate chosen per handshake
//! by the virtual server the client's SNI name selects, as over TCP.

use std::cell::RefCell;
use std::sync::Arc;

use rustls::server::{ClientHello, ProducesTickets, ResolvesServerCert, StoresServerSessions};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, SupportedCipherSuite};

use crate::TlsError;
use crate::server::ServerTls;
use crate::session::{Facts, HandshakeInfo};

/// Chooses the virtual server's TLS for a QUIC handshake from its SNI name (`None` when
/// the client sent none): the caller knows the server names, this crate does not.
pub trait ChooseServer: Send + Sync + std::fmt::Debug {
    fn choose(&self, server_name: Option<&str>) -> Option<Arc<ServerTls>>;
}

/// A QUIC server configuration whose certificates `choose` picks, offering `alpn` (`h3`,
/// and `hq-interop` with `http3_hq on`), resuming sessions with the cache and ticket keys
/// of `sessions` (the default server's TLS). 0-RTT is not offered
/// (`max_early_data_size` 0, as quinn asks of a server that does not take early data).
pub fn quic_server_config(
    choose: Arc<dyn ChooseServer>,
    alpn: Vec<Vec<u8>>,
    sessions: Option<&ServerTls>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let suites = provider.cipher_suites.clone();
    let builder = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|error| TlsError(format!("SSL_CTX_new() failed ({error})")))?;
    let mut config = builder
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(BySni { choose, suites }));
    config.alpn_protocols = alpn;
    config.max_early_data_size = 0;
    if let Some(sessions) = sessions {
        // The default server's session cache and ticket keys, as over TCP.
        config.session_storage =
            Arc::new(NotingSessions(Arc::clone(&sessions.config.session_storage)));
        config.ticketer = Arc::new(NotingTickets(Arc::clone(&sessions.config.ticketer)));
        config.send_tls13_tickets = sessions.config.send_tls13_tickets;
    }
    Ok(Arc::new(config))
}

/// Resolves a certificate through the chosen server's own resolver (which picks among its
/// pairs by the client's signature schemes).
#[derive(Debug)]
struct BySni {
    choose: Arc<dyn ChooseServer>,
    /// The configuration's TLS 1.3 suites, in its order.
    suites: Vec<SupportedCipherSuite>,
}

impl ResolvesServerCert for BySni {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        note_hello(&client_hello, &self.suites);
        let tls = self.choose.choose(client_hello.server_name())?;
        tls.config.cert_resolver.resolve(client_hello)
    }
}

/// What a QUIC client's hello offered, and the suite its handshake takes. The QUIC
/// transport reports neither, so the certificate resolver notes them on the thread that
/// feeds the connection its packets, and the endpoint takes them ([`take_quic_hello`])
/// as soon as the call that read the hello returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuicHello {
    suites: Vec<u16>,
    groups: Vec<u16>,
    cipher: &'static str,
    /// A stored session was found for the hello's ticket (`$ssl_session_reused`).
    resumed: bool,
}

thread_local! {
    static LAST_HELLO: RefCell<Option<QuicHello>> = const { RefCell::new(None) };
}

/// The hello the last handshake on this thread read, once.
pub fn take_quic_hello() -> Option<QuicHello> {
    LAST_HELLO.with(|last| last.borrow_mut().take())
}

/// rustls looks a hello's ticket up after it resolved the certificate, in the same call:
/// a session found marks the hello noted just before as resumed.
fn note_resumed() {
    LAST_HELLO.with(|last| {
        if let Some(hello) = last.borrow_mut().as_mut() {
            hello.resumed = true;
        }
    });
}

/// The default server's session cache, noting the sessions it gives back.
#[derive(Debug)]
struct NotingSessions(Arc<dyn StoresServerSessions>);

impl StoresServerSessions for NotingSessions {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.0.put(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let found = self.0.get(key);
        if found.is_some() {
            note_resumed();
        }
        found
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let found = self.0.take(key);
        if found.is_some() {
            note_resumed();
        }
        found
    }

    fn can_cache(&self) -> bool {
        self.0.can_cache()
    }
}

/// The default server's ticket keys, noting the tickets they open.
#[derive(Debug)]
struct NotingTickets(Arc<dyn ProducesTickets>);

impl ProducesTickets for NotingTickets {
    fn enabled(&self) -> bool {
        self.0.enabled()
    }

    fn lifetime(&self) -> u32 {
        self.0.lifetime()
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.0.encrypt(plain)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let opened = self.0.decrypt(cipher);
        if opened.is_some() {
            note_resumed();
        }
        opened
    }
}

/// Notes `hello` with the suite the handshake takes: rustls takes the first suite in the
/// client's order that the configuration has (its `ignore_client_order` is off).
fn note_hello(hello: &ClientHello<'_>, suites: &[SupportedCipherSuite]) {
    let chosen = hello
        .cipher_suites()
        .iter()
        .find_map(|offered| suites.iter().find(|known| known.suite() == *offered));
    let noted = QuicHello {
        suites: hello
            .cipher_suites()
            .iter()
            .map(|suite| u16::from(*suite))
            .collect(),
        groups: hello
            .named_groups()
            .unwrap_or_default()
            .iter()
            .map(|group| u16::from(*group))
            .collect(),
        cipher: chosen.map_or("", |suite| crate::ciphers::openssl_name(*suite)),
        resumed: false,
    };
    LAST_HELLO.with(|last| *last.borrow_mut() = Some(noted));
}

impl HandshakeInfo {
    /// The TLS facts of a QUIC connection: TLS 1.3, the suite and the client's offers
    /// from its hello (when noted), the SNI name and the ALPN protocol.
    pub fn for_quic(
        hello: Option<&QuicHello>,
        server_name: Option<&str>,
        alpn: Option<&[u8]>,
    ) -> HandshakeInfo {
        let mut info = HandshakeInfo::with_facts(&Facts {
            suites: hello.map_or(&[], |hello| &hello.suites),
            groups: hello.map_or(&[], |hello| &hello.groups),
            server_name,
            alpn,
            ..Facts::default()
        });
        info.protocol = "TLSv1.3";
        info.cipher = hello.map_or("", |hello| hello.cipher);
        info.resumed = hello.is_some_and(|hello| hello.resumed);
        info
    }
}
