//! Client certificates (`ssl_verify_client`): the handshake asks for one and checks only
//! its signature; the chain is verified after the handshake, so that a bad certificate
//! gets nginx's HTTP 400 page instead of a TLS alert. Also the facts the `$ssl_client_*`
//! variables show.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore};
use rustls::{Error, SignatureScheme};

use crate::keys::{PemSource, load_crls};
use crate::{TlsError, base_provider};

/// How a server checks client certificates.
#[derive(Debug)]
pub struct ClientVerify {
    /// `on`: a client without a certificate is refused (by the HTTP layer).
    pub required: bool,
    /// Not `optional_no_ca`, where any certificate is accepted (the verdict is still given).
    pub verify_chain: bool,
    pub depth: usize,
    roots: Arc<RootCertStore>,
    /// Subjects of `ssl_client_certificate`, sent to the client as acceptable issuers.
    hints: Vec<DistinguishedName>,
    revocation: crate::revocation::Revocation,
    /// Every trusted certificate as given, for those webpki cannot parse (X.509 v1).
    trusted: Vec<CertificateDer<'static>>,
}

impl ClientVerify {
    /// `sent` are the certificates of `ssl_client_certificate` (announced to clients),
    /// `trusted` those of `ssl_trusted_certificate` (trusted, not announced).
    pub fn new(
        required: bool,
        verify_chain: bool,
        depth: usize,
        sent: &[CertificateDer<'static>],
        trusted: &[CertificateDer<'static>],
        crl: Option<&PemSource>,
    ) -> Result<ClientVerify, TlsError> {
        let mut roots = RootCertStore::empty();
        let mut hints = Vec::new();
        for certificate in sent {
            let before = roots.roots.len();
            roots
                .add(certificate.clone())
                .map_err(|error| TlsError(format!("X509_STORE_add_cert() failed ({error})")))?;
            if let Some(anchor) = roots.roots.get(before) {
                let hint = DistinguishedName::in_sequence(&anchor.subject);
                if !hints
                    .iter()
                    .any(|known: &DistinguishedName| known.as_ref() == hint.as_ref())
                {
                    hints.push(hint);
                }
            }
        }
        for certificate in trusted {
            roots
                .add(certificate.clone())
                .map_err(|error| TlsError(format!("X509_STORE_add_cert() failed ({error})")))?;
        }
        let revocation = match crl {
            Some(source) => crate::revocation::Revocation::new(&load_crls(source)?, &source.name)?,
            None => crate::revocation::Revocation::default(),
        };
        Ok(ClientVerify {
            required,
            verify_chain,
            depth,
            roots: Arc::new(roots),
            hints,
            revocation,
            trusted: sent.iter().chain(trusted).cloned().collect(),
        })
    }

    pub(crate) fn hints(&self) -> Vec<DistinguishedName> {
        self.hints.clone()
    }

    /// Verifies a presented chain: `Ok` or OpenSSL's reason for the failure.
    pub(crate) fn check(&self, chain: &[CertificateDer<'static>]) -> Result<(), &'static str> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Err("no certificate");
        };
        if self.roots.is_empty() {
            return Err("unable to get local issuer certificate");
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(
            self.roots.clone(),
            Arc::new(base_provider()),
        )
        .build()
        .map_err(|_| "certificate verify failed")?;
        let path = crate::chain::path(leaf, intermediates, &self.trusted);
        match verifier.verify_client_cert(leaf, intermediates, UnixTime::now()) {
            Ok(_) => {}
            Err(Error::InvalidCertificate(
                CertificateError::BadEncoding | CertificateError::Other(_),
            )) if path.len() == 1 => return self.check_directly_trusted(leaf),
            // What webpki refuses and OpenSSL accepts (a CA certificate as the client's, a
            // v1 issuer) gets OpenSSL's checks; a genuine failure fails them too.
            Err(error) => {
                if crate::chain::verify(&path, &self.trusted).is_err() {
                    return Err(reason(error));
                }
            }
        }
        if path.len().max(2) - 1 > self.depth {
            return Err("certificate chain too long");
        }
        if !self.revocation.is_empty() {
            self.revocation.check(&path)?;
        }
        Ok(())
    }
}

impl ClientVerify {
    /// A certificate webpki cannot parse is accepted when it is itself trusted and within
    /// its validity period (OpenSSL accepts a self-signed certificate found in the store).
    fn check_directly_trusted(&self, leaf: &CertificateDer<'static>) -> Result<(), &'static str> {
        if !self.trusted.iter().any(|trusted| trusted == leaf) {
            return Err("unable to get local issuer certificate");
        }
        let Ok((_, parsed)) = x509_parser::parse_x509_certificate(leaf.as_ref()) else {
            return Err("unable to decode issuer public key");
        };
        let now = x509_parser::time::ASN1Time::now();
        if now < parsed.validity().not_before {
            return Err("certificate is not yet valid");
        }
        if now > parsed.validity().not_after {
            return Err("certificate has expired");
        }
        Ok(())
    }
}

/// OpenSSL's text for a verification failure (`$ssl_client_verify` is `FAILED:` this).
fn reason(error: Error) -> &'static str {
    match error {
        Error::InvalidCertificate(kind) => match kind {
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "certificate has expired"
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "certificate is not yet valid"
            }
            CertificateError::Revoked => "certificate revoked",
            CertificateError::UnknownIssuer => "unable to get local issuer certificate",
            CertificateError::UnknownRevocationStatus => "unable to get certificate CRL",
            CertificateError::BadSignature => "certificate signature failure",
            _ => "unsupported certificate purpose",
        },
        _ => "certificate verify failed",
    }
}

/// Asks for a client certificate and accepts any whose handshake signature is good.
#[derive(Debug)]
pub(crate) struct AnyClientCertificate {
    pub(crate) hints: Vec<DistinguishedName>,
    pub(crate) mandatory: bool,
}

impl ClientCertVerifier for AnyClientCertificate {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        Ok(ClientCertVerified::assertion())
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

/// A client's certificate as the `$ssl_client_*` variables show it.
#[derive(Clone, Debug, Default)]
pub struct ClientCertificate {
    /// `SUCCESS`, `FAILED:reason` or `NONE` (`$ssl_client_verify`).
    pub verify: String,
    pub subject: String,
    pub issuer: String,
    /// The names in OpenSSL's old one-line form, `/CN=a/O=b`.
    pub subject_legacy: String,
    pub issuer_legacy: String,
    /// Upper-case hex.
    pub serial: String,
    /// SHA-1 of the DER, lower-case hex.
    pub fingerprint: String,
    /// PEM of the leaf.
    pub pem: String,
    /// `Nov 25 19:00:00 2026 GMT`
    pub not_before: String,
    pub not_after: String,
    /// Seconds since the epoch, for `$ssl_client_v_remain`.
    pub not_after_unix: i64,
}

impl ClientCertificate {
    pub(crate) fn describe(chain: &[CertificateDer<'static>], verify: String) -> ClientCertificate {
        let Some(leaf) = chain.first() else {
            return ClientCertificate {
                verify,
                ..ClientCertificate::default()
            };
        };
        let mut described = ClientCertificate {
            verify,
            pem: pem_of(leaf.as_ref()),
            fingerprint: hex_lower(
                aws_lc_rs::digest::digest(
                    &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
                    leaf.as_ref(),
                )
                .as_ref(),
            ),
            ..ClientCertificate::default()
        };
        if let Ok((_, parsed)) = x509_parser::parse_x509_certificate(leaf.as_ref()) {
            described.subject = rfc2253(parsed.subject());
            described.issuer = rfc2253(parsed.issuer());
            described.subject_legacy = one_line(parsed.subject());
            described.issuer_legacy = one_line(parsed.issuer());
            described.serial = hex_upper(parsed.raw_serial());
            described.not_before = openssl_time(parsed.validity().not_before);
            described.not_after = openssl_time(parsed.validity().not_after);
            described.not_after_unix = parsed.validity().not_after.timestamp();
        }
        described
    }
}

/// The name as OpenSSL prints it with `XN_FLAG_RFC2253`: the last attribute first.
fn rfc2253(name: &x509_parser::x509::X509Name<'_>) -> String {
    let mut parts = attributes(name, |value| value.replace(',', "\\,"));
    parts.reverse();
    parts.join(",")
}

/// The name in OpenSSL's `X509_NAME_oneline` form.
fn one_line(name: &x509_parser::x509::X509Name<'_>) -> String {
    attributes(name, str::to_owned)
        .iter()
        .map(|part| format!("/{part}"))
        .collect()
}

fn attributes(
    name: &x509_parser::x509::X509Name<'_>,
    escape: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    for rdn in name.iter() {
        for attribute in rdn.iter() {
            let oid = attribute.attr_type();
            let key = x509_parser::objects::oid2abbrev(oid, x509_parser::objects::oid_registry())
                .map(str::to_owned)
                .unwrap_or_else(|_| oid.to_id_string());
            parts.push(format!(
                "{key}={}",
                escape(attribute.as_str().unwrap_or(""))
            ));
        }
    }
    parts
}

fn openssl_time(time: x509_parser::time::ASN1Time) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let moment = time.to_datetime();
    format!(
        "{} {:2} {:02}:{:02}:{:02} {} GMT",
        MONTHS[usize::from(u8::from(moment.month())) - 1],
        moment.day(),
        moment.hour(),
        moment.minute(),
        moment.second(),
        moment.year()
    )
}

pub(crate) fn pem_of(der: &[u8]) -> String {
    let encoded = base64(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or(""));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(ALPHABET[(word >> (18 - 6 * index) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02X}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_pads_as_pem_does() {
        assert_eq!(super::base64(b"ab"), "YWI=");
        assert_eq!(super::base64(b"abc"), "YWJj");
        assert_eq!(super::base64(b"a"), "YQ==");
    }
}
