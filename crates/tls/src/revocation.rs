//! `ssl_crl`: revocation of client certificates, checked as OpenSSL does with nginx's flags
//! (every certificate of the chain, the root too): each needs a list from its issuer, signed
//! by that issuer; when several certificates fail, the last failure is the one reported.
//! Done here rather than by webpki, which reads only version 2 lists (`openssl ca -gencrl`
//! without a `crlnumber` writes version 1).

use rustls::pki_types::CertificateRevocationListDer;
use x509_parser::certificate::X509Certificate;
use x509_parser::revocation_list::CertificateRevocationList;

use crate::TlsError;

/// Revocation lists, checked to parse when the configuration loads.
#[derive(Debug, Default)]
pub(crate) struct Revocation {
    lists: Vec<Vec<u8>>,
}

impl Revocation {
    pub(crate) fn new(
        lists: &[CertificateRevocationListDer<'static>],
        name: &str,
    ) -> Result<Revocation, TlsError> {
        for list in lists {
            if x509_parser::parse_x509_crl(list.as_ref()).is_err() {
                return Err(TlsError(format!(
                    "X509_load_crl_file(\"{name}\") failed (SSL: error:0680007B:asn1 encoding \
                     routines::header too long)"
                )));
            }
        }
        Ok(Revocation {
            lists: lists.iter().map(|list| list.as_ref().to_vec()).collect(),
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }

    /// Checks every certificate of `path` (leaf first, up to the root).
    pub(crate) fn check(&self, path: &[Vec<u8>]) -> Result<(), &'static str> {
        let lists: Vec<CertificateRevocationList<'_>> = self
            .lists
            .iter()
            .filter_map(|der| x509_parser::parse_x509_crl(der).ok().map(|(_, list)| list))
            .collect();
        let parsed: Vec<X509Certificate<'_>> = path
            .iter()
            .filter_map(|der| {
                x509_parser::parse_x509_certificate(der)
                    .ok()
                    .map(|(_, c)| c)
            })
            .collect();
        let mut failure = None;
        for (index, certificate) in parsed.iter().enumerate() {
            let issuer = parsed.get(index + 1).unwrap_or(certificate);
            let list = lists.iter().find(|list| {
                list.issuer().as_raw() == certificate.issuer().as_raw() && signed_by(list, issuer)
            });
            match list {
                None => failure = Some("unable to get certificate CRL"),
                Some(list) => {
                    let serial = certificate.raw_serial();
                    if list
                        .iter_revoked_certificates()
                        .any(|revoked| revoked.raw_serial() == serial)
                    {
                        failure = Some("certificate revoked");
                    }
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

/// Whether `issuer`'s key signed `list`.
fn signed_by(list: &CertificateRevocationList<'_>, issuer: &X509Certificate<'_>) -> bool {
    crate::chain::signed(
        list.tbs_cert_list.as_ref(),
        &list.signature_value.data,
        issuer,
    )
}
