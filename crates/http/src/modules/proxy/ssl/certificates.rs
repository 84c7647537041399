//! Client certificates named by variables (`proxy_ssl_certificate $arg_cert.crt`, and
//! `uwsgi_ssl_certificate`): the names are evaluated per request, and the pair is loaded on
//! the default thread pool when the request first opens a new connection to its upstream.
//! nginx loads it for every new connection; a request here loads it at most once, and a
//! kept connection made with the same files needs no load. With
//! `proxy_ssl_certificate_cache` the pairs loaded are kept between requests, by file
//! names, as long as the cache says; a pair whose key needed a password is not kept.

use std::cell::OnceCell;
use std::path::Path;
use std::sync::Arc;

use crate::kernel::file::io::FileError;
use crate::kernel::variables::HttpTemplate;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::ssl::settings::{CertificateName, PairCache, VariablePair};

/// The pair one request names: absolute file names (`data:` values as they are), and the
/// configuration presenting it once loaded.
#[derive(Debug)]
pub(crate) struct RequestPair {
    files: [String; 2],
    passwords: Arc<Vec<Vec<u8>>>,
    loaded: OnceCell<tls::ClientTls>,
    cache: Option<Arc<PairCache>>,
}

impl VariablePair {
    pub(crate) fn new(
        certificate: &CertificateName,
        key: &CertificateName,
        passwords: &[Vec<u8>],
        prefix: &Path,
    ) -> VariablePair {
        let template = |name: &CertificateName| {
            name.variables
                .clone()
                .unwrap_or_else(|| HttpTemplate::from_literal(name.text.as_bytes()))
        };
        VariablePair {
            certificate: template(certificate),
            key: template(key),
            passwords: Arc::new(passwords.to_vec()),
            prefix: prefix.to_owned(),
            cache: None,
        }
    }

    /// The files a request names, each template's value given by `render`. An empty
    /// certificate name means no client certificate, as in nginx: `None`.
    pub(crate) fn for_request(
        &self,
        mut render: impl FnMut(&HttpTemplate) -> Vec<u8>,
    ) -> Option<RequestPair> {
        let certificate = render(&self.certificate);
        if certificate.is_empty() {
            return None;
        }
        let key = render(&self.key);
        Some(RequestPair {
            files: [self.absolute(&certificate), self.absolute(&key)],
            passwords: self.passwords.clone(),
            loaded: OnceCell::new(),
            cache: self.cache.clone(),
        })
    }

    fn absolute(&self, name: &[u8]) -> String {
        tls::absolute_name(&self.prefix, &String::from_utf8_lossy(name))
    }
}

impl RequestPair {
    /// The certificate and key files, for the keep-alive purpose of connections made
    /// with them.
    pub(crate) fn files(&self) -> &[String; 2] {
        &self.files
    }

    /// `base` presenting this pair, loaded on the default pool the first time it is
    /// asked for. A pair that does not load is nginx's error-log line and a 500.
    pub(crate) async fn configuration(
        &self,
        worker: &HttpWorker,
        base: &tls::ClientTls,
    ) -> Result<&tls::ClientTls, FileError> {
        if let Some(loaded) = self.loaded.get() {
            return Ok(loaded);
        }
        let files = self.files.to_vec();
        if let Some(cache) = &self.cache
            && let Some(pair) = lock(cache).get(&files, runtime::clock::monotonic())
        {
            return Ok(self.loaded.get_or_init(|| base.with_pair(&pair)));
        }
        let [certificate, key] = self.files.clone();
        let passwords = self.passwords.clone();
        let (pair, encrypted) = worker
            .offload(threadpool::TaskKind::Other, move || {
                load_pair(&certificate, &key, &passwords)
            })
            .await?
            .map_err(|error| FileError {
                status: 500,
                level: logging::Level::Error,
                message: error.0,
            })?;
        let pair = Arc::new(pair);
        if let Some(cache) = &self.cache
            && encrypted == KeyEncryption::Plain
        {
            lock(cache).insert(files, Arc::clone(&pair), runtime::clock::monotonic());
        }
        Ok(self.loaded.get_or_init(|| base.with_pair(&pair)))
    }
}

/// Whether a key was read with a password: such a pair is not cached, as nginx does not
/// cache an encrypted key (another location may not have its password).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyEncryption {
    Plain,
    Encrypted,
}

/// Reads and checks a pair; runs on a pool thread.
fn load_pair(
    certificate: &str,
    key: &str,
    passwords: &[Vec<u8>],
) -> Result<(tls::CertificatePair, KeyEncryption), tls::TlsError> {
    let certificate = tls::PemSource::read(certificate, Path::new(certificate), "certificate")?;
    let key = tls::PemSource::read(key, Path::new(key), "certificate key")?;
    let encryption = if memchr::memmem::find(&key.bytes, b"ENCRYPTED").is_some() {
        KeyEncryption::Encrypted
    } else {
        KeyEncryption::Plain
    };
    Ok((tls::load_pair(&certificate, &key, passwords)?, encryption))
}

/// The cache, whatever a thread that panicked while holding it left (a plain map).
fn lock(
    cache: &PairCache,
) -> std::sync::MutexGuard<'_, crate::kernel::ssl::pairs::LoadedPairs<Arc<tls::CertificatePair>>> {
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::kernel::variables::HttpTemplate;
    use crate::modules::proxy::ssl::settings::{CertificateName, VariablePair};

    fn name(text: &str, variables: bool) -> CertificateName {
        CertificateName {
            text: text.to_owned(),
            variables: variables.then(|| HttpTemplate::from_literal(text.as_bytes())),
        }
    }

    /// Renders every template as `value` for `$cert` in its text (the literal templates
    /// of these tests stand for the compiled ones).
    fn files(pair: &VariablePair, value: &str) -> Option<[String; 2]> {
        let request = pair.for_request(|template| {
            let text = String::from_utf8_lossy(template.as_literal().unwrap_or_default());
            text.replace("$cert", value).into_bytes()
        })?;
        Some(request.files().clone())
    }

    #[test]
    fn names_become_files_under_the_prefix() {
        let pair = VariablePair::new(
            &name("$cert.crt", true),
            &name("/keys/$cert.key", true),
            &[],
            Path::new("/prefix"),
        );
        assert_eq!(
            files(&pair, "one"),
            Some(["/prefix/one.crt".to_owned(), "/keys/one.key".to_owned()])
        );
    }

    #[test]
    fn data_values_are_kept_as_they_are() {
        let pair = VariablePair::new(
            &name("data:$cert", true),
            &name("data:$cert", true),
            &[],
            Path::new("/prefix"),
        );
        let [certificate, key] = files(&pair, "PEM").expect("a pair");
        assert_eq!(
            (certificate.as_str(), key.as_str()),
            ("data:PEM", "data:PEM")
        );
    }

    #[test]
    fn an_empty_certificate_name_sends_no_certificate() {
        let pair = VariablePair::new(
            &name("$cert", true),
            &name("$cert", true),
            &[],
            Path::new("/prefix"),
        );
        assert_eq!(files(&pair, ""), None);
    }

    #[test]
    fn a_name_without_variables_is_used_as_written() {
        let pair = VariablePair::new(
            &name("fixed.crt", false),
            &name("$cert.key", true),
            &[],
            Path::new("/prefix"),
        );
        assert_eq!(
            files(&pair, "two"),
            Some(["/prefix/fixed.crt".to_owned(), "/prefix/two.key".to_owned()])
        );
    }
}
