//! OCSP stapling from a responder (`ssl_stapling on` without `ssl_stapling_file`): the
//! request for a certificate (RFC 6960 §4.1, a SHA-1 CertID as OpenSSL makes it), the
//! checks of a response (its status for our certificate, its times, and with
//! `ssl_stapling_verify` its signer), and the slot a pair's handshakes read the stapled
//! response from. The fetching is the caller's: this crate does no I/O.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::CertificateDer;
use rustls::sign::CertifiedKey;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};

use crate::keys::CertificatePair;

/// `id-ad-ocsp` (RFC 5280 §4.2.2.1), the access method of an OCSP responder in AIA.
const OID_AD_OCSP: &str = "1.3.6.1.5.5.7.48.1";
/// `id-kp-OCSPSigning`: a delegated responder's extended key usage.
const OID_KP_OCSP_SIGNING: &str = "1.3.6.1.5.5.7.3.9";
/// `id-pkix-ocsp-basic`, the only response type there is.
const OID_OCSP_BASIC: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];
/// `sha1` with NULL parameters, the CertID hash OpenSSL (and so nginx) asks with.
const SHA1_ALGORITHM: &[u8] = &[
    0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00,
];
/// A response may be this far in the future (clocks differ), as OpenSSL allows.
const CLOCK_SKEW: Duration = Duration::from_secs(300);

/// What is asked for one certificate, and where.
#[derive(Debug)]
pub struct OcspQuery {
    /// The DER OCSPRequest.
    pub request: Vec<u8>,
    /// The responder URL: `ssl_stapling_responder`, else the certificate's.
    pub responder: String,
    /// The CertID's contents: the issuer's name hash, its key hash, the serial number.
    name_hash: Vec<u8>,
    key_hash: Vec<u8>,
    serial: Vec<u8>,
    /// The issuer's certificate (a response is signed by it or by a responder it made).
    issuer: Vec<u8>,
}

impl OcspQuery {
    /// The request as the path of a GET asks for it: base64 with `+`, `/` and `=`
    /// escaped (RFC 6960 appendix A.1), as nginx sends it.
    pub fn path_segment(&self) -> String {
        escape_base64(&crate::peer::base64(&self.request))
    }
}

/// Base64's `+`, `/` and `=` escaped for a URI path.
fn escape_base64(text: &str) -> String {
    text.replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
}

/// A good response for our certificate, and until when it may be stapled.
#[derive(Debug, PartialEq, Eq)]
pub struct GoodResponse {
    pub next_update: Option<SystemTime>,
}

/// Finds the issuer of `pair`'s certificate (the next one of its chain, else among
/// `trusted`) and the responder (`responder`, else the certificate's AIA), and makes the
/// request. An error is nginx's reason for ignoring `ssl_stapling` for the certificate.
pub fn query(
    pair: &CertificatePair,
    trusted: &[impl AsRef<[u8]>],
    responder: Option<&str>,
) -> Result<OcspQuery, String> {
    let chain = &pair.key.cert;
    let leaf_der = chain.first().ok_or("no certificate")?;
    let (_, leaf) = x509_parser::parse_x509_certificate(leaf_der)
        .map_err(|_| "the certificate cannot be parsed".to_owned())?;
    let issued_by = |candidate: &CertificateDer<'_>| {
        x509_parser::parse_x509_certificate(candidate)
            .is_ok_and(|(_, parsed)| parsed.subject().as_raw() == leaf.issuer().as_raw())
    };
    let issuer_der = chain
        .iter()
        .skip(1)
        .map(|der| der.as_ref().to_vec())
        .chain(trusted.iter().map(|der| der.as_ref().to_vec()))
        .find(|der| issued_by(&CertificateDer::from(der.as_slice())))
        .ok_or("issuer certificate not found")?;
    let (_, issuer) = x509_parser::parse_x509_certificate(&issuer_der)
        .map_err(|_| "the issuer certificate cannot be parsed".to_owned())?;
    let responder = match responder {
        Some(url) => url.to_owned(),
        None => responder_of(&leaf).ok_or("no OCSP responder URL in the certificate")?,
    };
    let name_hash = sha1(issuer.subject().as_raw());
    let key_hash = sha1(&issuer.tbs_certificate.subject_pki.subject_public_key.data);
    let serial = leaf.tbs_certificate.raw_serial().to_vec();
    let cert_id = der(
        0x30,
        &[
            SHA1_ALGORITHM.to_vec(),
            der(0x04, std::slice::from_ref(&name_hash)),
            der(0x04, std::slice::from_ref(&key_hash)),
            der(0x02, std::slice::from_ref(&serial)),
        ],
    );
    // OCSPRequest { tbsRequest { requestList { Request { reqCert } } } }
    let request = der(0x30, &[der(0x30, &[der(0x30, &[der(0x30, &[cert_id])])])]);
    Ok(OcspQuery {
        request,
        responder,
        name_hash,
        key_hash,
        serial,
        issuer: issuer_der,
    })
}

/// The OCSP responder URL of a certificate's Authority Information Access.
fn responder_of(certificate: &X509Certificate<'_>) -> Option<String> {
    certificate.extensions().iter().find_map(|extension| {
        let ParsedExtension::AuthorityInfoAccess(access) = extension.parsed_extension() else {
            return None;
        };
        access.accessdescs.iter().find_map(|description| {
            match (&description.access_method, &description.access_location) {
                (method, GeneralName::URI(uri)) if method.to_id_string() == OID_AD_OCSP => {
                    Some((*uri).to_owned())
                }
                _ => None,
            }
        })
    })
}

/// Checks `response` (DER) for `query`'s certificate at `now`: a successful basic
/// response whose entry for the certificate says `good`, current; with `verify`, signed
/// by the issuer or by a responder the issuer certified for OCSP signing. The error is
/// what nginx logs.
pub fn check(
    query: &OcspQuery,
    response: &[u8],
    verify: bool,
    now: SystemTime,
) -> Result<GoodResponse, String> {
    let invalid = || "invalid OCSP response".to_owned();
    let outer = Reader::new(response).sequence().ok_or_else(invalid)?;
    let mut outer = Reader::new(outer);
    let status = outer.expect(0x0a).ok_or_else(invalid)?;
    if status != [0] {
        return Err(format!(
            "OCSP response not successful ({}: {})",
            status.first().copied().unwrap_or(0),
            response_status_text(status.first().copied().unwrap_or(0))
        ));
    }
    let bytes = outer.expect(0xa0).ok_or_else(invalid)?;
    let mut bytes = Reader::new(Reader::new(bytes).sequence().ok_or_else(invalid)?);
    if bytes.expect(0x06).ok_or_else(invalid)? != OID_OCSP_BASIC {
        return Err("OCSP response of another type than basic".to_owned());
    }
    let basic = bytes.expect(0x04).ok_or_else(invalid)?;
    let mut basic = Reader::new(Reader::new(basic).sequence().ok_or_else(invalid)?);
    let tbs_whole = basic.whole(0x30).ok_or_else(invalid)?;
    let _algorithm = basic.expect(0x30).ok_or_else(invalid)?;
    let signature = basic.expect(0x03).ok_or_else(invalid)?;
    let signature = signature.get(1..).ok_or_else(invalid)?;
    let certs: Vec<&[u8]> = match basic.expect(0xa0) {
        Some(certs) => {
            let mut list = Reader::new(Reader::new(certs).sequence().ok_or_else(invalid)?);
            std::iter::from_fn(|| list.whole(0x30)).collect()
        }
        None => Vec::new(),
    };
    let tbs = Reader::new(tbs_whole).sequence().ok_or_else(invalid)?;
    let mut tbs = Reader::new(tbs);
    let _version = tbs.expect(0xa0);
    let _responder = tbs.any().ok_or_else(invalid)?;
    let _produced = tbs.expect(0x18).ok_or_else(invalid)?;
    let responses = tbs.expect(0x30).ok_or_else(invalid)?;
    let single =
        find_single(query, responses).ok_or("certificate status not found in the OCSP response")?;
    if verify {
        verify_signer(query, tbs_whole, signature, &certs)?;
    }
    let mut single = Reader::new(single);
    let _cert_id = single.expect(0x30).ok_or_else(invalid)?;
    let (tag, _) = single.any().ok_or_else(invalid)?;
    match tag {
        0x80 => {}
        0xa1 => return Err("certificate status \"revoked\" in the OCSP response".to_owned()),
        _ => return Err("certificate status \"unknown\" in the OCSP response".to_owned()),
    }
    let this_update = time(single.expect(0x18).ok_or_else(invalid)?).ok_or_else(invalid)?;
    let next_update = match single.expect(0xa0) {
        Some(wrapped) => {
            Some(time(Reader::new(wrapped).expect(0x18).ok_or_else(invalid)?).ok_or_else(invalid)?)
        }
        None => None,
    };
    if this_update > now + CLOCK_SKEW {
        return Err("OCSP response not yet valid".to_owned());
    }
    if next_update.is_some_and(|next| next < now) {
        return Err("OCSP response has expired".to_owned());
    }
    Ok(GoodResponse { next_update })
}

/// The SingleResponse (its contents) whose CertID is the query's.
fn find_single<'a>(query: &OcspQuery, responses: &'a [u8]) -> Option<&'a [u8]> {
    let mut list = Reader::new(responses);
    while let Some(single) = list.expect(0x30) {
        let mut fields = Reader::new(single);
        let Some(cert_id) = fields.expect(0x30) else {
            continue;
        };
        let mut id = Reader::new(cert_id);
        let algorithm = id.whole(0x30);
        let same = algorithm == Some(SHA1_ALGORITHM)
            && id.expect(0x04) == Some(query.name_hash.as_slice())
            && id.expect(0x04) == Some(query.key_hash.as_slice())
            && id.expect(0x02) == Some(query.serial.as_slice());
        if same {
            return Some(single);
        }
    }
    None
}

/// The response was signed by the issuer, or by a certificate of `certs` that the issuer
/// signed and allowed to sign OCSP responses.
fn verify_signer(
    query: &OcspQuery,
    signed: &[u8],
    signature: &[u8],
    certs: &[&[u8]],
) -> Result<(), String> {
    let failed = || "OCSP response signer verification failed".to_owned();
    let (_, issuer) = x509_parser::parse_x509_certificate(&query.issuer).map_err(|_| failed())?;
    if crate::chain::signed(signed, signature, &issuer) {
        return Ok(());
    }
    for der in certs {
        let Ok((_, responder)) = x509_parser::parse_x509_certificate(der) else {
            continue;
        };
        let delegated = responder.issuer().as_raw() == issuer.subject().as_raw()
            && crate::chain::signed(
                responder.tbs_certificate.as_ref(),
                &responder.signature_value.data,
                &issuer,
            )
            && responder.extensions().iter().any(|extension| {
                matches!(extension.parsed_extension(), ParsedExtension::ExtendedKeyUsage(usage)
                    if usage.ocsp_signing || usage.other.iter().any(|oid| oid.to_id_string() == OID_KP_OCSP_SIGNING))
            });
        if delegated && crate::chain::signed(signed, signature, &responder) {
            return Ok(());
        }
    }
    Err(failed())
}

fn response_status_text(status: u8) -> &'static str {
    match status {
        1 => "malformedrequest",
        2 => "internalerror",
        3 => "trylater",
        5 => "sigrequired",
        6 => "unauthorized",
        _ => "unknown",
    }
}

fn sha1(bytes: &[u8]) -> Vec<u8> {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, bytes)
        .as_ref()
        .to_vec()
}

/// A DER value of `tag` holding `parts` one after another.
fn der(tag: u8, parts: &[Vec<u8>]) -> Vec<u8> {
    let length: usize = parts.iter().map(Vec::len).sum();
    let mut out = vec![tag];
    if length < 0x80 {
        out.push(u8::try_from(length).unwrap_or(0));
    } else {
        let digits: Vec<u8> = length
            .to_be_bytes()
            .into_iter()
            .skip_while(|digit| *digit == 0)
            .collect();
        out.push(0x80 | u8::try_from(digits.len()).unwrap_or(0));
        out.extend_from_slice(&digits);
    }
    for part in parts {
        out.extend_from_slice(part);
    }
    out
}

/// A GeneralizedTime (`YYYYMMDDHHMMSS[.fff]Z`) as a time.
fn time(text: &[u8]) -> Option<SystemTime> {
    let text = std::str::from_utf8(text).ok()?;
    let digits = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (hour, minute, second) = (digits(8..10)?, digits(10..12)?, digits(12..14)?);
    if !text.ends_with('Z') || !(1..=12).contains(&month) {
        return None;
    }
    // Days from 1970-01-01 to the date (the proleptic Gregorian calendar).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).ok()?))
}

/// Reads DER values one after another.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    /// The next value's tag and contents.
    fn any(&mut self) -> Option<(u8, &'a [u8])> {
        let (tag, contents, whole) = self.peek()?;
        self.rest = &self.rest[whole..];
        Some((tag, contents))
    }

    /// The next value's contents when its tag is `tag` (nothing is read otherwise).
    fn expect(&mut self, tag: u8) -> Option<&'a [u8]> {
        let (found, contents, whole) = self.peek()?;
        if found != tag {
            return None;
        }
        self.rest = &self.rest[whole..];
        Some(contents)
    }

    /// The next value whole (tag and length included) when its tag is `tag`.
    fn whole(&mut self, tag: u8) -> Option<&'a [u8]> {
        let (found, _, whole) = self.peek()?;
        if found != tag {
            return None;
        }
        let (value, rest) = self.rest.split_at(whole);
        self.rest = rest;
        Some(value)
    }

    /// The contents of the one SEQUENCE the bytes hold.
    fn sequence(mut self) -> Option<&'a [u8]> {
        self.expect(0x30)
    }

    fn peek(&self) -> Option<(u8, &'a [u8], usize)> {
        let [tag, first, rest @ ..] = self.rest else {
            return None;
        };
        let (length, header) = match *first {
            short @ 0..=0x7f => (usize::from(short), 2),
            0x81..=0x84 => {
                let count = usize::from(first & 0x7f);
                let digits = rest.get(..count)?;
                let length = digits
                    .iter()
                    .fold(0usize, |length, digit| (length << 8) | usize::from(*digit));
                (length, 2 + count)
            }
            _ => return None,
        };
        let end = header.checked_add(length)?;
        let contents = self.rest.get(header..end)?;
        Some((*tag, contents, end))
    }
}

/// The response a pair's handshakes staple, replaced as new ones are fetched.
#[derive(Debug)]
pub struct StapleSlot {
    /// The pair without a response, and with the last good one.
    plain: Arc<CertifiedKey>,
    stapled: RwLock<Option<Arc<CertifiedKey>>>,
}

impl StapleSlot {
    pub(crate) fn new(plain: Arc<CertifiedKey>) -> StapleSlot {
        StapleSlot {
            plain,
            stapled: RwLock::new(None),
        }
    }

    /// Staples `response` (checked) from now on.
    pub fn staple(&self, response: Vec<u8>) {
        let mut key = CertifiedKey::clone(&self.plain);
        key.ocsp = Some(response);
        *self
            .stapled
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(Arc::new(key));
    }

    /// Staples nothing from now on (the response expired, or the status is not good).
    pub fn clear(&self) {
        *self
            .stapled
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = None;
    }

    /// What a handshake serves: the pair with the current response, if any.
    pub(crate) fn current(&self) -> Arc<CertifiedKey> {
        self.stapled
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.plain))
    }

    /// Whether a response is stapled now.
    pub fn is_stapled(&self) -> bool {
        self.stapled
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .is_some()
    }
}

#[cfg(test)]
mod tests;
