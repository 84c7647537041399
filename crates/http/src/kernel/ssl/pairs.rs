//! What a server with variables in its certificate names keeps: the names, the base
//! configuration, and the loaded pairs cached by file names (`ssl_certificate_cache`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub(crate) use shared::certificate_cache::{FileNames, LoadedPairs};

use crate::kernel::variables::HttpTemplate;

/// A virtual server's `ssl_certificate` / `ssl_certificate_key` pairs when some name has
/// variables.
#[derive(Debug)]
pub struct VariableCertificates {
    /// Certificate and key names, by pair.
    pub(crate) names: Vec<(HttpTemplate, HttpTemplate)>,
    pub(crate) passwords: Arc<Vec<Vec<u8>>>,
    /// `ssl_stapling_file`'s response, stapled to every pair loaded.
    pub(crate) ocsp: Option<Vec<u8>>,
    pub(crate) prefix: PathBuf,
    /// The server's configuration without certificates: each loaded pair gets a copy.
    pub(crate) base: Arc<tls::ServerTls>,
    /// `ssl_certificate_cache`; `None` loads the pairs on every handshake.
    pub(crate) cache: Option<Mutex<LoadedPairs<Arc<tls::ServerTls>>>>,
}
