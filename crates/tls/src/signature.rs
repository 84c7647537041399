//! Handshake signatures made with a peer's certificate key. rustls parses the certificate
//! with webpki, which refuses X.509 v1 certificates; OpenSSL accepts them, and `openssl
//! req -x509` without extensions makes them, so for those the key is taken from the
//! certificate here and the signature checked against it directly.

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer};
use rustls::{DigitallySignedStruct, Error, PeerMisbehaved};

/// The certificate's public key, as DER, parsed leniently.
fn public_key(cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    Some(parsed.tbs_certificate.subject_pki.raw.to_vec())
}

pub(crate) fn verify(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    let algorithms = crate::shared_provider().signature_verification_algorithms;
    let checked = if tls13 {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &algorithms)
    } else {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &algorithms)
    };
    let Err(Error::InvalidCertificate(_)) = checked else {
        return checked;
    };
    let Some(spki) = public_key(cert) else {
        return checked;
    };
    if tls13 {
        return rustls::crypto::verify_tls13_signature_with_raw_key(
            message,
            &SubjectPublicKeyInfoDer::from(spki.as_slice()),
            dss,
            &algorithms,
        );
    }
    let spki = SubjectPublicKeyInfoDer::from(spki.as_slice());
    let key = webpki::RawPublicKeyEntity::try_from(&spki)
        .map_err(|_| Error::General("bad public key".to_owned()))?;
    let candidates = algorithms
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map(|(_, candidates)| *candidates)
        .ok_or(Error::PeerMisbehaved(
            PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
        ))?;
    for algorithm in candidates {
        if key
            .verify_signature(*algorithm, message, dss.signature())
            .is_ok()
        {
            return Ok(HandshakeSignatureValid::assertion());
        }
    }
    checked
}
