//! Certificates and private keys from PEM: files or `data:` values, chains, keys encrypted
//! with a password (PKCS#8, as `openssl genrsa -aes128` writes them), and the check that a
//! key belongs to its certificate. Runs when a configuration loads, never on a worker.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use crate::TlsError;

/// PEM text and the name it is known by in messages (a path, or `data:...`).
#[derive(Clone, Debug)]
pub struct PemSource {
    pub name: String,
    pub bytes: Vec<u8>,
}

thread_local! {
    /// The files read so far by the configuration load under way on this thread, by
    /// path; `None` outside a load.
    static LOAD_FILES: RefCell<Option<HashMap<PathBuf, Vec<u8>>>> = const { RefCell::new(None) };
}

/// While it lives, every file [`PemSource::read`] reads on this thread is read once: a
/// certificate, CA list or CRL that several `server`s, proxies and `stream` servers name
/// is read from disk (or from a named pipe, which gives its content once) a single time
/// per configuration load. The next load reads the files again.
pub struct LoadFiles {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl LoadFiles {
    pub fn begin() -> LoadFiles {
        LOAD_FILES.with(|files| *files.borrow_mut() = Some(HashMap::new()));
        LoadFiles {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for LoadFiles {
    fn drop(&mut self) {
        LOAD_FILES.with(|files| *files.borrow_mut() = None);
    }
}

/// The bytes of `path`, from this thread's load when it read them already.
fn read_once(path: &Path) -> std::io::Result<Vec<u8>> {
    let known = LOAD_FILES.with(|files| {
        files
            .borrow()
            .as_ref()
            .and_then(|files| files.get(path).cloned())
    });
    if let Some(bytes) = known {
        return Ok(bytes);
    }
    let bytes = std::fs::read(path)?;
    LOAD_FILES.with(|files| {
        if let Some(files) = files.borrow_mut().as_mut() {
            files.insert(path.to_path_buf(), bytes.clone());
        }
    });
    Ok(bytes)
}

/// A certificate or key name as [`PemSource::read`] takes it: a relative file name made
/// absolute against `prefix`; `data:` and `store:` values and absolute paths as they are.
pub fn absolute_name(prefix: &Path, name: &str) -> String {
    if name.starts_with("data:") || name.starts_with("store:") || Path::new(name).is_absolute() {
        return name.to_owned();
    }
    prefix.join(name).display().to_string()
}

impl PemSource {
    /// Reads `value`: the text after `data:`, or the file at `path` (the value resolved
    /// against the prefix by the caller). A file that cannot be read fails as nginx does.
    ///
    /// `store:file:PATH` (an OpenSSL store URI, `file://PATH` too) is the file at `PATH`
    /// as written; a store of another scheme fails to load.
    pub fn read(value: &str, path: &std::path::Path, what: &str) -> Result<PemSource, TlsError> {
        if let Some(data) = value.strip_prefix("data:") {
            return Ok(PemSource {
                name: value.to_owned(),
                bytes: data.as_bytes().to_vec(),
            });
        }
        let path = match value.strip_prefix("store:") {
            Some(uri) => match uri
                .strip_prefix("file://")
                .or_else(|| uri.strip_prefix("file:"))
            {
                Some(file) => Path::new(file),
                None => {
                    return Err(TlsError(format!(
                        "cannot load {what} \"{value}\": OSSL_STORE_open(\"{uri}\") failed \
                         (SSL: error:16000069:STORE routines::unregistered scheme)"
                    )));
                }
            },
            None => path,
        };
        match read_once(path) {
            Ok(bytes) => Ok(PemSource {
                name: path.display().to_string(),
                bytes,
            }),
            Err(error) => Err(TlsError(format!(
                "cannot load {what} \"{}\": BIO_new_file() failed (SSL: error:80000002:system \
                 library::{}:calling fopen({}, r))",
                path.display(),
                io_reason(&error),
                path.display()
            ))),
        }
    }
}

fn io_reason(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory",
        std::io::ErrorKind::PermissionDenied => "Permission denied",
        _ => "Input/output error",
    }
}

/// A certificate chain with its key, checked to belong together.
#[derive(Clone, Debug)]
pub struct CertificatePair {
    pub(crate) key: Arc<CertifiedKey>,
    /// With OCSP stapling from a responder: where the fetched response is put.
    pub(crate) staple: Option<Arc<crate::ocsp::StapleSlot>>,
}

impl CertificatePair {
    /// The leaf certificate, DER.
    pub fn leaf(&self) -> &[u8] {
        self.key
            .cert
            .first()
            .map(|cert| cert.as_ref())
            .unwrap_or(&[])
    }

    /// The pair with `response` (a DER OCSP response, `ssl_stapling_file`) stapled to its
    /// handshakes.
    #[must_use]
    pub fn with_ocsp(&self, response: Vec<u8>) -> CertificatePair {
        let mut key = CertifiedKey::clone(&self.key);
        key.ocsp = Some(response);
        CertificatePair {
            key: Arc::new(key),
            staple: None,
        }
    }

    /// The pair with a slot for OCSP responses fetched later (`ssl_stapling on` without
    /// `ssl_stapling_file`): its handshakes staple what the slot holds at the time.
    #[must_use]
    pub fn with_staple_slot(&self) -> (CertificatePair, Arc<crate::ocsp::StapleSlot>) {
        let slot = Arc::new(crate::ocsp::StapleSlot::new(Arc::clone(&self.key)));
        let pair = CertificatePair {
            key: Arc::clone(&self.key),
            staple: Some(Arc::clone(&slot)),
        };
        (pair, slot)
    }

    /// What a handshake serves now: the pair, with the stapled response if any.
    pub(crate) fn current(&self) -> Arc<CertifiedKey> {
        match &self.staple {
            Some(slot) => slot.current(),
            None => Arc::clone(&self.key),
        }
    }
}

/// A DER OCSP response from `path` (`ssl_stapling_file`), checked to be one DER value.
pub fn load_ocsp_response(path: &std::path::Path) -> Result<Vec<u8>, TlsError> {
    let bytes = std::fs::read(path).map_err(|error| {
        TlsError(format!(
            "BIO_new_file(\"{}\") failed (SSL: error:80000002:system library::{})",
            path.display(),
            io_reason(&error)
        ))
    })?;
    if !is_one_der_sequence(&bytes) {
        return Err(TlsError(format!(
            "d2i_OCSP_RESPONSE_bio(\"{}\") failed (SSL: error:068000A8:asn1 encoding \
             routines::wrong tag)",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Whether `bytes` is exactly one DER SEQUENCE (an OCSPResponse's outer shape).
fn is_one_der_sequence(bytes: &[u8]) -> bool {
    let [0x30, first, rest @ ..] = bytes else {
        return false;
    };
    let (length, body) = match *first {
        short @ 0..=0x7f => (usize::from(short), rest),
        0x81..=0x84 => {
            let count = usize::from(first & 0x7f);
            if rest.len() < count {
                return false;
            }
            let (digits, body) = rest.split_at(count);
            let length = digits
                .iter()
                .fold(0usize, |length, digit| (length << 8) | usize::from(*digit));
            (length, body)
        }
        _ => return false,
    };
    body.len() == length
}

/// Every certificate in `source`, leaf first. `TRUSTED CERTIFICATE` blocks (OpenSSL's
/// certificate with trust settings after it, `openssl x509 -trustout`) are read as the
/// certificate they start with; the trust settings are not used.
pub fn load_chain(source: &PemSource) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let text = plain_certificate_labels(&source.bytes);
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&text)
        .map(|der| der.map(|der| CertificateDer::from(first_der_value(der.as_ref()).to_vec())))
        .collect::<Result<_, _>>()
        .map_err(|_| no_start_line(source, "certificate", "PEM_read_bio_X509_AUX"))?;
    if chain.is_empty() {
        return Err(no_start_line(
            source,
            "certificate",
            "PEM_read_bio_X509_AUX",
        ));
    }
    Ok(chain)
}

/// `bytes` with `TRUSTED CERTIFICATE` PEM labels written as `CERTIFICATE`.
fn plain_certificate_labels(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const TRUSTED: &[u8] = b"TRUSTED CERTIFICATE-----";
    if !bytes.windows(TRUSTED.len()).any(|window| window == TRUSTED) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let text = String::from_utf8_lossy(bytes)
        .replace(
            "-----BEGIN TRUSTED CERTIFICATE-----",
            "-----BEGIN CERTIFICATE-----",
        )
        .replace(
            "-----END TRUSTED CERTIFICATE-----",
            "-----END CERTIFICATE-----",
        );
    std::borrow::Cow::Owned(text.into_bytes())
}

/// The first DER value of `der` (a certificate followed by its trust settings gives the
/// certificate); all of `der` when its length cannot be read.
fn first_der_value(der: &[u8]) -> &[u8] {
    let [_, first, rest @ ..] = der else {
        return der;
    };
    let (length, header) = match *first {
        short @ 0..=0x7f => (usize::from(short), 2),
        0x81..=0x84 => {
            let count = usize::from(first & 0x7f);
            let Some(digits) = rest.get(..count) else {
                return der;
            };
            let length = digits
                .iter()
                .fold(0usize, |length, digit| (length << 8) | usize::from(*digit));
            (length, 2 + count)
        }
        _ => return der,
    };
    der.get(..header + length).unwrap_or(der)
}

fn no_start_line(source: &PemSource, what: &str, call: &str) -> TlsError {
    TlsError(format!(
        "cannot load {what} \"{}\": {call}() failed (SSL: error:0480006C:PEM routines::no \
         start line)",
        source.name
    ))
}

/// The private key in `source`; an encrypted one is tried with each password in turn.
pub fn load_key(
    source: &PemSource,
    passwords: &[Vec<u8>],
) -> Result<PrivateKeyDer<'static>, TlsError> {
    if let Some(der) = encrypted_section(&source.bytes) {
        return decrypt_key(source, &der, passwords);
    }
    let mut sections = <(SectionKind, Vec<u8>)>::pem_slice_iter(&source.bytes);
    for section in sections.by_ref() {
        let Ok((kind, der)) = section else { break };
        let key = match kind {
            SectionKind::PrivateKey => PrivateKeyDer::Pkcs8(der.into()),
            SectionKind::RsaPrivateKey => PrivateKeyDer::Pkcs1(der.into()),
            SectionKind::EcPrivateKey => PrivateKeyDer::Sec1(der.into()),
            _ => continue,
        };
        return Ok(key);
    }
    Err(no_start_line(
        source,
        "certificate key",
        "PEM_read_bio_PrivateKey",
    ))
}

/// The DER of a `BEGIN ENCRYPTED PRIVATE KEY` section, if there is one.
fn encrypted_section(bytes: &[u8]) -> Option<Vec<u8>> {
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    let text = std::str::from_utf8(bytes).ok()?;
    let start = text.find(BEGIN)?;
    let end = text[start..].find(END)? + start + END.len();
    let (_, der) = pkcs8::der::pem::decode_vec(&text.as_bytes()[start..end]).ok()?;
    Some(der)
}

fn decrypt_key(
    source: &PemSource,
    der: &[u8],
    passwords: &[Vec<u8>],
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der)
        .map_err(|_| no_start_line(source, "certificate key", "PEM_read_bio_PrivateKey"))?;
    for password in passwords {
        if let Ok(document) = info.decrypt(password) {
            return Ok(PrivateKeyDer::Pkcs8(document.as_bytes().to_vec().into()));
        }
    }
    let reason = if passwords.is_empty() {
        "error:1400006B:UI routines::processing error:while reading strings"
    } else {
        "error:1C800064:Provider routines::bad decrypt"
    };
    Err(TlsError(format!(
        "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: {reason})",
        source.name
    )))
}

/// Loads a certificate chain and its key, and checks that the key is the certificate's.
pub fn load_pair(
    certificate: &PemSource,
    key: &PemSource,
    passwords: &[Vec<u8>],
) -> Result<CertificatePair, TlsError> {
    let chain = load_chain(certificate)?;
    let key_der = load_key(key, passwords)?;
    let provider = crate::base_provider();
    let signing_key = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|_| {
            TlsError(format!(
                "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: \
                 error:1E08010C:DECODER routines::unsupported)",
                key.name
            ))
        })?;
    let certified = CertifiedKey::new(chain, signing_key);
    if !keys_match(&certified) {
        return Err(TlsError(format!(
            "SSL_CTX_use_PrivateKey(\"{}\") failed (SSL: error:05800074:x509 certificate \
             routines::key values mismatch)",
            key.name
        )));
    }
    Ok(CertificatePair {
        key: Arc::new(certified),
        staple: None,
    })
}

/// Trusted certificates (`ssl_client_certificate`, `ssl_trusted_certificate`,
/// `proxy_ssl_trusted_certificate`) and revocation lists (`ssl_crl`).
pub fn load_trusted(source: &PemSource) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    load_chain(source)
}

/// The revocation lists in `source`.
pub(crate) fn load_crls(
    source: &PemSource,
) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    let crls: Vec<_> = CertificateRevocationListDer::pem_slice_iter(&source.bytes)
        .collect::<Result<_, _>>()
        .map_err(|_| no_start_line(source, "CRL", "X509_load_crl_file"))?;
    if crls.is_empty() {
        return Err(TlsError(format!(
            "X509_LOOKUP_load_file(\"{}\") failed (SSL: error:0480006C:PEM routines::no start \
             line)",
            source.name
        )));
    }
    Ok(crls)
}

/// Whether the key's public half is the leaf certificate's. Compared here rather than by
/// rustls, whose check parses the certificate with webpki, which refuses X.509 v1
/// certificates (`openssl req -x509` without extensions makes them) that OpenSSL serves.
fn keys_match(certified: &CertifiedKey) -> bool {
    let Some(key_spki) = certified.key.public_key() else {
        return true;
    };
    let Some(leaf) = certified.cert.first() else {
        return false;
    };
    match x509_parser::parse_x509_certificate(leaf.as_ref()) {
        Ok((_, parsed)) => parsed.tbs_certificate.subject_pki.raw == key_spki.as_ref(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_certificate_block_gives_the_certificate_before_its_trust_settings() {
        // Stand-ins for a certificate and OpenSSL's trust settings: two DER sequences.
        let certificate = [0x30, 0x03, 0x02, 0x01, 0x05];
        let trust = [0x30, 0x02, 0x05, 0x00];
        let trusted = crate::peer::pem_of(&[&certificate[..], &trust[..]].concat())
            .replace("BEGIN CERTIFICATE", "BEGIN TRUSTED CERTIFICATE")
            .replace("END CERTIFICATE", "END TRUSTED CERTIFICATE");
        let plain = crate::peer::pem_of(&[0x30, 0x00]);
        let source = PemSource {
            name: "aux.pem".to_owned(),
            bytes: format!("{trusted}{plain}").into_bytes(),
        };
        let chain = load_chain(&source).expect("loaded");
        let chain: Vec<&[u8]> = chain.iter().map(|der| der.as_ref()).collect();
        assert_eq!(chain, [&certificate[..], &[0x30, 0x00][..]]);
    }

    #[test]
    fn a_file_store_uri_reads_its_file_and_other_stores_fail() {
        let dir = std::env::temp_dir().join(format!("portico-tls-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("key.pem");
        std::fs::write(&file, "key").expect("write");
        for value in [
            format!("store:file:{}", file.display()),
            format!("store:file://{}", file.display()),
        ] {
            let prefixed = absolute_name(Path::new("/etc/portico"), &value);
            assert_eq!(
                prefixed, value,
                "a store URI is not a file name under the prefix"
            );
            let read = PemSource::read(&value, Path::new(&prefixed), "certificate key");
            assert_eq!(read.expect("read").bytes, b"key");
        }
        let error = PemSource::read("store:pkcs11:token", Path::new("/x"), "certificate key")
            .expect_err("no such store");
        assert!(
            error.0.contains("OSSL_STORE_open(\"pkcs11:token\") failed"),
            "{}",
            error.0
        );
        assert_eq!(
            absolute_name(Path::new("/etc/portico"), "cert.pem"),
            "/etc/portico/cert.pem"
        );
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_file_is_read_once_per_load_and_again_by_the_next() {
        let dir = std::env::temp_dir().join(format!("portico-tls-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("ca.pem");
        let read = || {
            PemSource::read("ca.pem", &path, "certificate")
                .expect("read")
                .bytes
        };
        std::fs::write(&path, "first").expect("write");
        {
            let _load = LoadFiles::begin();
            assert_eq!(read(), b"first");
            std::fs::write(&path, "second").expect("write");
            // A second server naming the file during the same load gets what the first got.
            assert_eq!(read(), b"first");
        }
        // The next load reads the file again, and so does anything outside a load.
        assert_eq!(read(), b"second");
        {
            let _load = LoadFiles::begin();
            assert_eq!(read(), b"second");
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
