//! A virtual server's TLS configuration: its certificate pairs, protocols, suites, groups,
//! session resumption and client verification, built once per configuration load and
//! shared by every worker thread.

use std::sync::Arc;

use rustls::crypto::SupportedKxGroup;
use rustls::crypto::aws_lc_rs::kx_group;
use rustls::server::{ClientHello, NoServerSessionStorage, ResolvesServerCert, ServerConfig};
use rustls::sign::CertifiedKey;

use crate::ciphers::CipherList;
use crate::context::{ContextSessions, ContextTickets};
use crate::keys::CertificatePair;
use crate::peer::{AnyClientCertificate, ClientVerify};
use crate::tickets::{SessionCache, TicketKeys};
use crate::{TlsError, base_provider};

/// Which protocol versions are enabled (`ssl_protocols`); rustls has no TLS 1.0 or 1.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocols {
    pub tls12: bool,
    pub tls13: bool,
}

impl Default for Protocols {
    fn default() -> Protocols {
        Protocols {
            tls12: true,
            tls13: true,
        }
    }
}

impl Protocols {
    fn versions(self) -> Vec<&'static rustls::SupportedProtocolVersion> {
        let mut versions = Vec::new();
        if self.tls13 {
            versions.push(&rustls::version::TLS13);
        }
        if self.tls12 {
            versions.push(&rustls::version::TLS12);
        }
        versions
    }
}

/// Key exchange groups in order (`ssl_ecdh_curve`); `None` is `auto`.
#[derive(Clone, Debug, Default)]
pub struct Curves(Option<Vec<&'static dyn SupportedKxGroup>>);

/// Group names OpenSSL knows that rustls does not offer: skipped with a warning, so that
/// configurations written for OpenSSL (`ssl_ecdh_curve secp521r1:secp384r1`) load.
const OPENSSL_ONLY_CURVES: &[&str] = &[
    "secp521r1",
    "P-521",
    "X448",
    "x448",
    "secp224r1",
    "P-224",
    "secp256k1",
    "prime192v1",
    "P-192",
    "brainpoolP256r1",
    "brainpoolP384r1",
    "brainpoolP512r1",
    "brainpoolP256r1tls13",
    "brainpoolP384r1tls13",
    "brainpoolP512r1tls13",
    "ffdhe2048",
    "ffdhe3072",
    "ffdhe4096",
    "ffdhe6144",
    "ffdhe8192",
    "MLKEM512",
    "MLKEM768",
    "MLKEM1024",
    "X448MLKEM1024",
    "SecP384r1MLKEM1024",
];

impl Curves {
    /// Whether rustls's own list is used (`auto`, or no name of the list is offered).
    pub fn is_default(&self) -> bool {
        self.0.is_none()
    }
}

/// Parses `ssl_ecdh_curve`: `auto`, or names joined by `:` (OpenSSL's and the IANA names).
/// Names OpenSSL knows and rustls lacks are returned for a warning (with only those, the
/// default list is used); a name neither knows fails.
pub fn parse_curves(text: &str) -> Result<(Curves, Vec<String>), String> {
    if text == "auto" {
        return Ok((Curves(None), Vec::new()));
    }
    let mut groups: Vec<&'static dyn SupportedKxGroup> = Vec::new();
    let mut unknown = Vec::new();
    for name in text.split(':').filter(|name| !name.is_empty()) {
        let group: &'static dyn SupportedKxGroup = match name {
            "X25519" | "x25519" => kx_group::X25519,
            "prime256v1" | "P-256" | "secp256r1" => kx_group::SECP256R1,
            "secp384r1" | "P-384" => kx_group::SECP384R1,
            "X25519MLKEM768" => kx_group::X25519MLKEM768,
            "SecP256r1MLKEM768" => kx_group::SECP256R1MLKEM768,
            _ if OPENSSL_ONLY_CURVES.contains(&name) => {
                unknown.push(name.to_owned());
                continue;
            }
            _ => {
                return Err(format!(
                    "unknown curve \"{name}\" in \"ssl_ecdh_curve {text}\""
                ));
            }
        };
        groups.push(group);
    }
    if groups.is_empty() {
        return Ok((Curves(None), unknown));
    }
    Ok((Curves(Some(groups)), unknown))
}

/// What a virtual server's `ssl_*` directives say, loaded and checked.
#[derive(Debug)]
pub struct ServerSettings {
    pub pairs: Vec<CertificatePair>,
    /// The certificate names as written: with no pair (names with variables), they make the
    /// session context in place of the certificates.
    pub certificate_names: Vec<String>,
    pub protocols: Protocols,
    /// `None`: rustls's TLS 1.2 suites in its order.
    pub ciphers: Option<CipherList>,
    pub prefer_server_ciphers: bool,
    pub curves: Curves,
    /// `None`: `off` or `none`.
    pub session_cache: Option<Arc<SessionCache>>,
    /// `None`: `ssl_session_tickets off`.
    pub tickets: Option<Arc<TicketKeys>>,
    pub alpn: Vec<Vec<u8>>,
    pub verify: Option<Arc<ClientVerify>>,
    pub early_data: bool,
}

/// A virtual server's TLS configuration, ready for handshakes.
#[derive(Debug)]
pub struct ServerTls {
    pub(crate) config: Arc<ServerConfig>,
    /// The same configuration sending one TLS 1.3 ticket instead of two, for a hello that
    /// offers a ticket of this server's (`None` without tickets).
    pub(crate) resumed: Option<Arc<ServerConfig>>,
    pub(crate) verify: Option<Arc<ClientVerify>>,
}

impl ServerTls {
    pub fn new(settings: ServerSettings) -> Result<ServerTls, TlsError> {
        let mut provider = base_provider();
        if let Some(list) = &settings.ciphers {
            provider.cipher_suites.retain(|suite| {
                suite.version() == &rustls::version::TLS13 || list.suites.contains(suite)
            });
            let tls12: Vec<_> = list.suites.clone();
            // The list's order, after the TLS 1.3 suites.
            provider.cipher_suites.sort_by_key(|suite| {
                tls12
                    .iter()
                    .position(|wanted| wanted == suite)
                    .map_or(0, |position| position + 1)
            });
        }
        if let Curves(Some(groups)) = &settings.curves {
            provider.kx_groups = groups.clone();
        }
        let mut protocols = settings.protocols;
        if !provider
            .cipher_suites
            .iter()
            .any(|suite| suite.version() == &rustls::version::TLS12)
        {
            protocols.tls12 = false;
        }
        let versions = protocols.versions();
        if versions.is_empty() {
            return Err(TlsError(
                "no protocols left to enable (ssl_protocols and ssl_ciphers)".to_owned(),
            ));
        }
        let builder = ServerConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&versions)
            .map_err(|error| TlsError(format!("SSL_CTX_new() failed ({error})")))?;
        let builder = match &settings.verify {
            Some(verify) => builder.with_client_cert_verifier(Arc::new(AnyClientCertificate {
                hints: verify.hints(),
                mandatory: false,
            })),
            None => builder.with_no_client_auth(),
        };
        let resolver = PairResolver {
            pairs: settings.pairs.clone(),
        };
        let mut config = builder.with_cert_resolver(Arc::new(resolver));
        config.ignore_client_order = settings.prefer_server_ciphers;
        config.alpn_protocols = settings.alpn;
        let context = crate::context::context(
            settings.pairs.iter().map(CertificatePair::leaf),
            &settings.certificate_names,
            &settings
                .verify
                .as_ref()
                .map(|verify| verify.hints())
                .unwrap_or_default(),
        );
        let storage: Arc<dyn rustls::server::StoresServerSessions> = match settings.session_cache {
            Some(cache) => cache,
            None => Arc::new(NoServerSessionStorage {}),
        };
        config.session_storage = Arc::new(ContextSessions {
            inner: storage,
            context,
        });
        if let Some(tickets) = settings.tickets {
            config.ticketer = Arc::new(ContextTickets {
                inner: tickets,
                context,
            });
        } else if config.session_storage.can_cache() {
            config.send_tls13_tickets = 1;
        } else {
            config.send_tls13_tickets = 0;
        }
        // `ssl_early_data` is accepted, but 0-RTT data is not taken: rustls hands it to
        // the application apart from the stream, and replay protection would be needed.
        let _ = settings.early_data;
        Ok(ServerTls {
            resumed: resumed_config(&config),
            config: Arc::new(config),
            verify: settings.verify,
        })
    }
}

impl ServerTls {
    /// The same configuration serving `pairs` instead of its own: for certificates whose
    /// names have variables, loaded per handshake. Session caches and ticket keys stay
    /// shared with `self`.
    pub fn with_pairs(&self, pairs: &[CertificatePair]) -> ServerTls {
        let mut config = ServerConfig::clone(&self.config);
        config.cert_resolver = Arc::new(PairResolver {
            pairs: pairs.to_vec(),
        });
        ServerTls {
            resumed: self.resumed.as_ref().and_then(|_| resumed_config(&config)),
            config: Arc::new(config),
            verify: self.verify.clone(),
        }
    }
}

/// OpenSSL sends two TLS 1.3 tickets after a full handshake and one after a resumed one;
/// rustls sends `send_tls13_tickets` after both. With tickets, a copy of `config` that
/// sends one is kept for hellos that offer a ticket.
fn resumed_config(config: &ServerConfig) -> Option<Arc<ServerConfig>> {
    if !config.ticketer.enabled() || config.send_tls13_tickets < 2 {
        return None;
    }
    let mut resumed = config.clone();
    resumed.send_tls13_tickets = 1;
    Some(Arc::new(resumed))
}

/// Chooses among a server's certificate pairs the first whose key can sign with a scheme
/// the client offers: an ECDSA certificate for a client that takes ECDSA, else RSA.
#[derive(Debug)]
struct PairResolver {
    pairs: Vec<CertificatePair>,
}

impl ResolvesServerCert for PairResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // The client's most preferred scheme that some pair can sign with decides.
        for scheme in client_hello.signature_schemes() {
            let wanted = std::slice::from_ref(scheme);
            if let Some(pair) = self
                .pairs
                .iter()
                .find(|pair| pair.key.key.choose_scheme(wanted).is_some())
            {
                return Some(pair.current());
            }
        }
        self.pairs.first().map(CertificatePair::current)
    }
}

#[cfg(test)]
mod curve_tests {
    use super::*;

    #[test]
    fn curves_rustls_offers_openssl_only_ones_and_unknown_ones() {
        let (curves, skipped) = parse_curves("secp521r1:X25519:P-384").unwrap();
        assert_eq!(skipped, ["secp521r1"]);
        assert_eq!(curves.0.as_ref().map(Vec::len), Some(2));
        let (curves, skipped) = parse_curves("secp521r1:X448").unwrap();
        assert!(curves.is_default());
        assert_eq!(skipped, ["secp521r1", "X448"]);
        assert!(parse_curves("auto").unwrap().0.is_default());
        assert_eq!(
            parse_curves("X25519:nosuchcurve").unwrap_err(),
            "unknown curve \"nosuchcurve\" in \"ssl_ecdh_curve X25519:nosuchcurve\""
        );
    }
}
