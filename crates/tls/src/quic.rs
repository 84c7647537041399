//! The TLS side of a QUIC endpoint (`listen ... quic`): TLS 1.3 only (QUIC has no other,
//! RFC 9001 §4.2), the ALPN names HTTP/3 speaks, and a certificate chosen per handshake
//! by the virtual server the client's SNI name selects, as over TCP.

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::TlsError;
use crate::server::ServerTls;

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
    let builder = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|error| TlsError(format!("SSL_CTX_new() failed ({error})")))?;
    let mut config = builder
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(BySni { choose }));
    config.alpn_protocols = alpn;
    config.max_early_data_size = 0;
    if let Some(sessions) = sessions {
        // The default server's session cache and ticket keys, as over TCP.
        config.session_storage = Arc::clone(&sessions.config.session_storage);
        config.ticketer = Arc::clone(&sessions.config.ticketer);
        config.send_tls13_tickets = sessions.config.send_tls13_tickets;
    }
    Ok(Arc::new(config))
}

/// Resolves a certificate through the chosen server's own resolver (which picks among its
/// pairs by the client's signature schemes).
#[derive(Debug)]
struct BySni {
    choose: Arc<dyn ChooseServer>,
}

impl ResolvesServerCert for BySni {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let tls = self.choose.choose(client_hello.server_name())?;
        tls.config.cert_resolver.resolve(client_hello)
    }
}
