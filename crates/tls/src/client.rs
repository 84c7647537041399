//! TLS to upstreams (`proxy_pass https://...` and the `proxy_ssl_*` directives).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

use crate::ciphers::CipherList;
use crate::keys::CertificatePair;
use crate::server::Protocols;
use crate::session::Session;
use crate::{TlsError, base_provider};

/// What a location's `proxy_ssl_*` directives say, loaded.
#[derive(Debug, Default)]
pub struct ClientSettings {
    /// `proxy_ssl_verify on`, with the trusted certificates.
    pub verify: Option<Vec<CertificateDer<'static>>>,
    /// `proxy_ssl_crl`: revocation lists every certificate of the server's chain is
    /// checked against when it is verified, as OpenSSL checks with nginx's flags.
    pub crl: Option<crate::PemSource>,
    pub verify_depth: usize,
    /// `proxy_ssl_certificate` with its key.
    pub pair: Option<CertificatePair>,
    pub protocols: Protocols,
    pub ciphers: Option<CipherList>,
    /// `proxy_ssl_server_name`: send SNI.
    pub server_name: bool,
    /// `proxy_ssl_session_reuse`.
    pub session_reuse: bool,
    /// The protocols offered by ALPN (`h2` for `grpc_pass grpcs://`); none when empty.
    pub alpn: Vec<Vec<u8>>,
}

/// A location's TLS configuration for connections to its upstreams.
#[derive(Debug)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
    /// `proxy_ssl_session_reuse`, for the configurations made from this one.
    session_reuse: bool,
}

impl ClientTls {
    pub fn new(settings: ClientSettings) -> Result<ClientTls, TlsError> {
        let mut provider = base_provider();
        if let Some(list) = &settings.ciphers {
            provider.cipher_suites.retain(|suite| {
                suite.version() == &rustls::version::TLS13 || list.suites.contains(suite)
            });
        }
        let mut versions = Vec::new();
        if settings.protocols.tls13 {
            versions.push(&rustls::version::TLS13);
        }
        if settings.protocols.tls12 {
            versions.push(&rustls::version::TLS12);
        }
        let provider = Arc::new(provider);
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|error| TlsError(format!("SSL_CTX_new() failed ({error})")))?;
        let verifier: Arc<dyn ServerCertVerifier> = match &settings.verify {
            Some(trusted) => {
                let mut roots = RootCertStore::empty();
                for certificate in trusted {
                    roots.add(certificate.clone()).map_err(|error| {
                        TlsError(format!("X509_STORE_add_cert() failed ({error})"))
                    })?;
                }
                let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|error| {
                        TlsError(format!("SSL_CTX_load_verify_locations() ({error})"))
                    })?;
                let revocation = match &settings.crl {
                    Some(source) => crate::revocation::Revocation::new(
                        &crate::keys::load_crls(source)?,
                        &source.name,
                    )?,
                    None => crate::revocation::Revocation::default(),
                };
                Arc::new(CommonNameToo {
                    inner,
                    trusted: trusted.clone(),
                    depth: settings.verify_depth,
                    revocation,
                })
            }
            None => Arc::new(AnyServerCertificate),
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match &settings.pair {
            Some(pair) => builder.with_client_cert_resolver(Arc::new(OnePair(pair.key.clone()))),
            None => builder.with_no_client_auth(),
        };
        config.enable_sni = settings.server_name;
        config.resumption = resumption(settings.session_reuse);
        config.alpn_protocols = settings.alpn.clone();
        Ok(ClientTls {
            config: Arc::new(config),
            session_reuse: settings.session_reuse,
        })
    }

    /// This configuration presenting `pair` (a `proxy_ssl_certificate` named by variables,
    /// loaded for one request). Its sessions are its own: a session made with one client
    /// certificate is never resumed with another.
    pub fn with_pair(&self, pair: &CertificatePair) -> ClientTls {
        let mut config = ClientConfig::clone(&self.config);
        config.client_auth_cert_resolver = Arc::new(OnePair(pair.key.clone()));
        config.resumption = resumption(self.session_reuse);
        ClientTls {
            config: Arc::new(config),
            session_reuse: self.session_reuse,
        }
    }

    /// A new session towards `name` (an address gives no SNI, as in nginx).
    pub fn connect(&self, name: &str) -> Result<Session, TlsError> {
        self.connect_with_alpn(name, self.config.alpn_protocols.clone())
    }

    /// A new session towards `name` offering `alpn` (an empty list offers none) rather
    /// than the configuration's protocols: `proxy_ssl_alpn` with variables.
    pub fn connect_with_alpn(&self, name: &str, alpn: Vec<Vec<u8>>) -> Result<Session, TlsError> {
        let server_name = ServerName::try_from(name.to_owned())
            .map_err(|_| TlsError(format!("invalid server name \"{name}\"")))?;
        let connection =
            rustls::ClientConnection::new_with_alpn(self.config.clone(), server_name, alpn)
                .map_err(|error| TlsError(error.to_string()))?;
        Ok(Session::client(connection))
    }
}

/// `proxy_ssl_session_reuse`: sessions kept in memory for resumption, or none.
fn resumption(session_reuse: bool) -> Resumption {
    if session_reuse {
        Resumption::in_memory_sessions(256)
    } else {
        Resumption::disabled()
    }
}

/// webpki's verification, and OpenSSL's fallback for a certificate without a subject
/// alternative name: the name is then compared with the subject's common name.
#[derive(Debug)]
struct CommonNameToo {
    inner: Arc<WebPkiServerVerifier>,
    /// The trusted certificates as given: one webpki cannot parse (X.509 v1) is accepted
    /// when the server presents exactly it, as OpenSSL accepts a trusted self-signed one.
    trusted: Vec<CertificateDer<'static>>,
    /// `proxy_ssl_verify_depth`: certificates above the server's own, the trusted one
    /// included, as OpenSSL counts them.
    depth: usize,
    /// `proxy_ssl_crl`.
    revocation: crate::revocation::Revocation,
}

impl ServerCertVerifier for CommonNameToo {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verified = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        let verified = match verified {
            Err(Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) if common_name_matches(end_entity, server_name) => {
                Ok(ServerCertVerified::assertion())
            }
            Err(Error::InvalidCertificate(
                rustls::CertificateError::BadEncoding | rustls::CertificateError::Other(_),
            )) if self
                .trusted
                .iter()
                .any(|trusted| trusted.as_ref() == end_entity.as_ref())
                && within_validity(end_entity)
                && common_name_matches(end_entity, server_name) =>
            {
                Ok(ServerCertVerified::assertion())
            }
            // What webpki refuses and OpenSSL accepts (a CA certificate as the server's
            // own, as nginx-tests' chains have): OpenSSL's checks of the chain and name.
            Err(Error::InvalidCertificate(rustls::CertificateError::Other(_)))
                if self.openssl_accepts(end_entity, intermediates, server_name) =>
            {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }?;
        let path = crate::chain::path(end_entity, intermediates, &self.trusted);
        if path.len().max(2) - 1 > self.depth {
            return Err(Error::General(
                "certificate chain too long (proxy_ssl_verify_depth)".to_owned(),
            ));
        }
        if !self.revocation.is_empty() {
            self.revocation
                .check(&path)
                .map_err(|reason| Error::General(reason.to_owned()))?;
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crate::signature::verify(message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crate::signature::verify(message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

fn within_validity(cert: &CertificateDer<'_>) -> bool {
    x509_parser::parse_x509_certificate(cert.as_ref())
        .is_ok_and(|(_, parsed)| parsed.validity().is_valid())
}

impl CommonNameToo {
    /// The chain up to a trusted certificate verifies as OpenSSL verifies it (signatures,
    /// validity, issuers that are CAs) and the certificate names `name`.
    fn openssl_accepts(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
    ) -> bool {
        let path = crate::chain::path(end_entity, intermediates, &self.trusted);
        crate::chain::verify(&path, &self.trusted).is_ok()
            && (common_name_matches(end_entity, name) || alternative_name_matches(end_entity, name))
    }
}

/// A DNS subject alternative name of `cert` is `name` (a `*.` name covers one label).
fn alternative_name_matches(cert: &CertificateDer<'_>, name: &ServerName<'_>) -> bool {
    let ServerName::DnsName(name) = name else {
        return false;
    };
    let name = name.as_ref();
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return false;
    };
    let Ok(Some(names)) = parsed.subject_alternative_name() else {
        return false;
    };
    names.value.general_names.iter().any(|general| {
        let x509_parser::extensions::GeneralName::DNSName(dns) = general else {
            return false;
        };
        match dns.strip_prefix("*.") {
            Some(suffix) => name.split_once('.').is_some_and(|(label, rest)| {
                !label.is_empty() && rest.eq_ignore_ascii_case(suffix)
            }),
            None => dns.eq_ignore_ascii_case(name),
        }
    })
}

/// A certificate with no subject alternative names whose common name is `name`.
fn common_name_matches(cert: &CertificateDer<'_>, name: &ServerName<'_>) -> bool {
    let ServerName::DnsName(name) = name else {
        return false;
    };
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return false;
    };
    if parsed.subject_alternative_name().ok().flatten().is_some() {
        return false;
    }
    parsed
        .subject()
        .iter_common_name()
        .filter_map(|common_name| common_name.as_str().ok())
        .any(|common_name| common_name.eq_ignore_ascii_case(name.as_ref()))
}

/// Sends the one configured client certificate whatever the server asks.
#[derive(Debug)]
struct OnePair(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for OnePair {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// `proxy_ssl_verify off`: any certificate, its handshake signature still checked.
#[derive(Debug)]
struct AnyServerCertificate;

impl ServerCertVerifier for AnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crate::signature::verify(message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crate::signature::verify(message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        crate::shared_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
