//! What the `proxy_ssl_*` directives set, per location.

use std::path::PathBuf;
use std::sync::Arc;

use crate::kernel::ssl::pairs::LoadedPairs;
use crate::kernel::ssl::settings::CertificateCacheConf;
use crate::kernel::variables::HttpTemplate;
use crate::settings;

settings! {
    /// What the `proxy_ssl_*` directives set, per location.
    pub struct ProxySslConf => ProxySsl (env) {
        /// `proxy_ssl_server_name`: send SNI.
        server_name: bool = false,
        /// `proxy_ssl_name`; `None` is `$proxy_host` without its port.
        name: Option<HttpTemplate> = None,
        /// `proxy_ssl_verify`
        verify: bool = false,
        /// `proxy_ssl_trusted_certificate`
        trusted_certificate: Option<String> = None,
        /// `proxy_ssl_crl`
        crl: Option<String> = None,
        /// `proxy_ssl_verify_depth`
        verify_depth: u64 = 1,
        /// `proxy_ssl_certificate`
        certificate: Option<CertificateName> = None,
        /// `proxy_ssl_certificate_key`
        certificate_key: Option<CertificateName> = None,
        /// `proxy_ssl_password_file`
        passwords: Vec<Vec<u8>> = Vec::new(),
        /// `proxy_ssl_certificate_cache`: how pairs named by variables are kept between
        /// requests; `None` (`off`, the default) loads them per request.
        certificate_cache: Option<CertificateCacheConf> = None,
        /// `proxy_ssl_protocols`
        protocols: tls::Protocols = tls::Protocols::default(),
        /// `proxy_ssl_ciphers`
        ciphers: String = "DEFAULT".to_owned(),
        /// `proxy_ssl_session_reuse`
        session_reuse: bool = true,
        /// `proxy_ssl_conf_command Certificate` and `PrivateKey`: a client certificate
        /// pair that replaces `proxy_ssl_certificate`'s, as OpenSSL applies them last.
        conf_pair: (Option<String>, Option<String>) = (None, None),
        /// The configuration built from the above when the location proxies over TLS
        /// (without a client certificate when its name has variables).
        client: Option<Arc<tls::ClientTls>> = None,
        /// The certificate and key names when either has variables: evaluated per request.
        variable_pair: Option<Arc<VariablePair>> = None,
    }
}

/// A `proxy_ssl_certificate` or `proxy_ssl_certificate_key` value.
#[derive(Clone, Debug)]
pub struct CertificateName {
    /// As written: a file name, or `data:` and PEM text.
    pub text: String,
    /// The value compiled, when it has variables.
    pub variables: Option<HttpTemplate>,
}

/// A location's certificate and key names when either has variables: evaluated, and the
/// pair loaded, per request.
#[derive(Debug)]
pub struct VariablePair {
    pub(crate) certificate: HttpTemplate,
    pub(crate) key: HttpTemplate,
    /// `proxy_ssl_password_file`, read when the configuration loaded.
    pub(crate) passwords: Arc<Vec<Vec<u8>>>,
    /// Relative names are files under the prefix, as for names without variables.
    pub(crate) prefix: PathBuf,
    /// `proxy_ssl_certificate_cache`: the pairs loaded, by file names, for every request
    /// of the location (a pair whose key needed a password is never kept, as in nginx).
    pub(crate) cache: Option<Arc<PairCache>>,
}

/// Loaded client certificate pairs, shared by the workers.
pub(crate) type PairCache = std::sync::Mutex<LoadedPairs<Arc<tls::CertificatePair>>>;
