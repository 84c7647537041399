//! Certificate chains as OpenSSL builds and checks them, for what webpki refuses and OpenSSL
//! (so nginx) accepts: a CA certificate used as a client certificate, X.509 v1 issuers.
//! Used only after webpki has refused a chain: the issuers are found by name among the
//! presented and trusted certificates, each signature and validity period is checked, every
//! issuer must be a CA (or a v1 certificate), and the chain must end at a trusted
//! self-issued certificate.

use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer};
use x509_parser::certificate::X509Certificate;

/// Whether `issuer`'s key made `signature` over `signed`.
pub(crate) fn signed(signed: &[u8], signature: &[u8], issuer: &X509Certificate<'_>) -> bool {
    let spki = SubjectPublicKeyInfoDer::from(issuer.tbs_certificate.subject_pki.raw);
    let Ok(key) = webpki::RawPublicKeyEntity::try_from(&spki) else {
        return false;
    };
    crate::shared_provider()
        .signature_verification_algorithms
        .all
        .iter()
        .any(|algorithm| key.verify_signature(*algorithm, signed, signature).is_ok())
}

/// Checks `path` (from [`path`]) against the trusted certificates; OpenSSL's reason on
/// failure.
pub(crate) fn verify(path: &[Vec<u8>], trusted: &[CertificateDer<'_>]) -> Result<(), &'static str> {
    let parsed: Vec<X509Certificate<'_>> = path
        .iter()
        .filter_map(|der| {
            x509_parser::parse_x509_certificate(der)
                .ok()
                .map(|(_, c)| c)
        })
        .collect();
    if parsed.len() != path.len() || parsed.is_empty() {
        return Err("unable to decode issuer public key");
    }
    let top = &parsed[parsed.len() - 1];
    let top_trusted = trusted
        .iter()
        .any(|certificate| certificate.as_ref() == path[path.len() - 1].as_slice());
    if top.issuer().as_raw() != top.subject().as_raw() || !top_trusted {
        return Err("unable to get local issuer certificate");
    }
    let now = x509_parser::time::ASN1Time::now();
    for (index, certificate) in parsed.iter().enumerate() {
        if now < certificate.validity().not_before {
            return Err("certificate is not yet valid");
        }
        if now > certificate.validity().not_after {
            return Err("certificate has expired");
        }
        let issuer = parsed.get(index + 1).unwrap_or(certificate);
        let is_ca = issuer.version() == x509_parser::x509::X509Version::V1
            || issuer
                .basic_constraints()
                .ok()
                .flatten()
                .is_some_and(|constraints| constraints.value.ca);
        if !is_ca {
            return Err("invalid CA certificate");
        }
        let raw_tbs = certificate.tbs_certificate.as_ref();
        if !signed(raw_tbs, &certificate.signature_value.data, issuer) {
            return Err("certificate signature failure");
        }
    }
    Ok(())
}

/// The chain from `leaf` up: each certificate's issuer found by name among the presented
/// intermediates and the trusted certificates, until a self-issued one or none is found.
pub(crate) fn path(
    leaf: &CertificateDer<'_>,
    presented: &[CertificateDer<'_>],
    trusted: &[CertificateDer<'_>],
) -> Vec<Vec<u8>> {
    let mut path = vec![leaf.as_ref().to_vec()];
    let candidates: Vec<&[u8]> = presented
        .iter()
        .chain(trusted)
        .map(|certificate| certificate.as_ref())
        .collect();
    while path.len() < 16 {
        let Some(last) = path.last() else { break };
        let Ok((_, current)) = x509_parser::parse_x509_certificate(last) else {
            break;
        };
        if current.issuer().as_raw() == current.subject().as_raw() {
            break;
        }
        let issuer = candidates.iter().find(|candidate| {
            x509_parser::parse_x509_certificate(candidate)
                .is_ok_and(|(_, parsed)| parsed.subject().as_raw() == current.issuer().as_raw())
        });
        match issuer {
            Some(issuer) => path.push(issuer.to_vec()),
            None => break,
        }
    }
    path
}
