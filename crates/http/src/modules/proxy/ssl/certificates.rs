//! Client certificates named by variables (`proxy_ssl_certificate $arg_cert.crt`, and
//! `uwsgi_ssl_certificate`): the names are evaluated per request, and the pair is loaded on
//! the default thread pool when the request first opens a new connection to its upstream.
//! nginx loads it for every new connection; a request here loads it at most once, and a
//! kept connection made with the same files needs no load. Nothing is kept between
//! requests (nginx's `proxy_ssl_certificate_cache` is not implemented).

use std::cell::OnceCell;
use std::path::Path;
use std::sync::Arc;

use crate::kernel::file::io::FileError;
use crate::kernel::variables::HttpTemplate;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::ssl::settings::{CertificateName, VariablePair};

/// The pair one request names: absolute file names (`data:` values as they are), and the
/// configuration presenting it once loaded.
#[derive(Debug)]
pub(crate) struct RequestPair {
    files: [String; 2],
    passwords: Arc<Vec<Vec<u8>>>,
    loaded: OnceCell<tls::ClientTls>,
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
        let [certificate, key] = self.files.clone();
        let passwords = self.passwords.clone();
        let pair = worker
            .offload(threadpool::TaskKind::Other, move || {
                load_pair(&certificate, &key, &passwords)
            })
            .await?
            .map_err(|error| FileError {
                status: 500,
                level: logging::Level::Error,
                message: error.0,
            })?;
        Ok(self.loaded.get_or_init(|| base.with_pair(&pair)))
    }
}

/// Reads and checks a pair; runs on a pool thread.
fn load_pair(
    certificate: &str,
    key: &str,
    passwords: &[Vec<u8>],
) -> Result<tls::CertificatePair, tls::TlsError> {
    let certificate = tls::PemSource::read(certificate, Path::new(certificate), "certificate")?;
    let key = tls::PemSource::read(key, Path::new(key), "certificate key")?;
    tls::load_pair(&certificate, &key, passwords)
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
