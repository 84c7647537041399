//! TLS for Portico: certificates and keys, server and client configurations, the session
//! cache and tickets, and a sans-I/O session that the runtime drives over its sockets.
//!
//! Every rustls call of the project is in this crate, so a change of rustls's API touches
//! one crate. It knows nothing of HTTP: the HTTP layer gives it plain settings (loaded
//! PEM bytes, protocol flags, cipher lists) and gets back configurations to hand to new
//! connections, and facts about a finished handshake to turn into variables.
//!
//! The crypto provider is aws-lc-rs: the fastest of rustls's providers and the one with
//! post-quantum key exchange (`X25519MLKEM768`); its TLS 1.3 suites get the HKDF of
//! `hkdf.rs`, which keeps one HMAC key per secret.

mod accept;
mod chain;
mod ciphers;
mod client;
mod context;
mod hello;
mod hkdf;
mod keys;
mod ocsp;
mod peer;
mod quic;
mod revocation;
mod server;
mod session;
mod signature;
mod tickets;

pub use accept::{AcceptError, Acceptor, Hello, INTERNAL_ERROR_ALERT, REJECT_ALERT};
pub use ciphers::{CipherList, parse_cipher_list};
pub use client::{ClientSettings, ClientTls};
pub use keys::{
    CertificatePair, LoadFiles, PemSource, absolute_name, load_ocsp_response, load_pair,
    load_trusted,
};
pub use ocsp::{GoodResponse, OcspQuery, StapleSlot, check as check_ocsp, query as ocsp_query};
pub use peer::{ClientCertificate, ClientVerify};
pub use quic::{ChooseServer, QuicHello, quic_server_config, take_quic_hello};
pub use server::{Curves, Protocols, ServerSettings, ServerTls, parse_curves};
pub use session::{HandshakeInfo, Session};
pub use tickets::{SessionCache, TicketKeys};

/// A TLS failure, with its message in nginx's wording where nginx has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsError(pub String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

/// The crypto provider every configuration starts from (a copy, to be changed): aws-lc-rs's,
/// its TLS 1.3 suites with the HKDF of [`hkdf`].
fn base_provider() -> rustls::crypto::CryptoProvider {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    for suite in &mut provider.cipher_suites {
        *suite = hkdf::faster_hkdf(*suite);
    }
    provider
}

/// The same provider, made once: for what runs per handshake (names of the suites a client
/// offers, signature checks), which must not build a provider each time.
fn shared_provider() -> &'static rustls::crypto::CryptoProvider {
    static PROVIDER: std::sync::LazyLock<rustls::crypto::CryptoProvider> =
        std::sync::LazyLock::new(base_provider);
    &PROVIDER
}
