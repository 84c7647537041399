//! Certificates whose names have variables (`ssl_certificate $ssl_server_name.crt`): the
//! names evaluated per handshake, the pair loaded on the default thread pool, and the
//! configuration made from it cached by file names (`ssl_certificate_cache`) for the life
//! of the generation.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::kernel::conf::ServerId;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::ssl::pairs::{FileNames, LoadedPairs, VariableCertificates};
use crate::kernel::ssl::settings::SslServer;
use crate::kernel::variables::{HttpTemplate, RequestVariables};
use crate::kernel::worker::HttpWorker;

impl VariableCertificates {
    pub(crate) fn new(
        names: Vec<(HttpTemplate, HttpTemplate)>,
        settings: &SslServer,
        ocsp: Option<Vec<u8>>,
        prefix: &Path,
        base: Arc<tls::ServerTls>,
    ) -> VariableCertificates {
        VariableCertificates {
            names,
            passwords: Arc::new(settings.passwords.clone()),
            ocsp,
            prefix: prefix.to_owned(),
            base,
            cache: settings
                .certificate_cache
                .map(|cache| Mutex::new(LoadedPairs::new(cache))),
        }
    }

    /// The configuration for one handshake: the names evaluated with the connection's
    /// variables (`$ssl_server_name` is the hello's SNI name), from the cache or loaded
    /// on the default pool. `Err` is nginx's error-log line and its level.
    pub(crate) async fn configuration(
        &self,
        worker: &HttpWorker,
        info: &ConnectionInfo,
        server: ServerId,
        server_name: Option<&str>,
    ) -> Result<Arc<tls::ServerTls>, (logging::Level, String)> {
        let files = self.file_names(worker, info, server, server_name);
        let now = worker.clock.now().monotonic;
        if let Some(found) = self.lock().and_then(|mut cache| cache.get(&files, now)) {
            return Ok(found);
        }
        let passwords = self.passwords.clone();
        let ocsp = self.ocsp.clone();
        let wanted = files.clone();
        let loaded = worker
            .offload(threadpool::TaskKind::Other, move || {
                load_pairs(&wanted, &passwords, ocsp)
            })
            .await
            .map_err(|error| (error.level, error.message))?;
        let pairs = loaded.map_err(|error| (logging::Level::Error, error.0))?;
        let configuration = Arc::new(self.base.with_pairs(&pairs));
        if let Some(mut cache) = self.lock() {
            cache.insert(files, configuration.clone(), worker.clock.now().monotonic);
        }
        Ok(configuration)
    }

    /// The cache, when there is one.
    fn lock(&self) -> Option<MutexGuard<'_, LoadedPairs<Arc<tls::ServerTls>>>> {
        // A panic while holding the lock leaves the maps consistent enough: at worst an
        // entry is missing from one of them, and a lookup then loads the pair again.
        let cache = self.cache.as_ref()?;
        Some(
            cache
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Every name evaluated, made absolute against the prefix (`data:` and `store:` values
    /// kept).
    fn file_names(
        &self,
        worker: &HttpWorker,
        info: &ConnectionInfo,
        server: ServerId,
        server_name: Option<&str>,
    ) -> FileNames {
        // As nginx, the names see the connection's variables through an empty request.
        let handshake = tls::HandshakeInfo::with_server_name(server_name);
        let connection = ConnectionInfo {
            id: info.id,
            peer: std::cell::Cell::new(info.peer.get()),
            socket_peer: info.socket_peer,
            proxy_protocol: info.proxy_protocol.clone(),
            local: info.local,
            accepted: info.accepted,
            requests: 0,
            tls: Some(std::rc::Rc::new(handshake)),
            debug: info.debug,
        };
        let request = Request {
            server: Some(server),
            ..Request::default()
        };
        let conf = worker.conf();
        let mut variables = RequestVariables::new(
            &request,
            &connection,
            conf,
            worker.clock.now(),
            &worker.generation.hostname,
        );
        let mut files = Vec::with_capacity(self.names.len() * 2);
        for (certificate, key) in &self.names {
            for template in [certificate, key] {
                let value = String::from_utf8_lossy(&template.render(&mut variables)).into_owned();
                files.push(self.absolute(value));
            }
        }
        files
    }

    fn absolute(&self, name: String) -> String {
        tls::absolute_name(&self.prefix, &name)
    }
}

/// Reads and checks every pair; runs on a pool thread.
fn load_pairs(
    files: &[String],
    passwords: &[Vec<u8>],
    ocsp: Option<Vec<u8>>,
) -> Result<Vec<tls::CertificatePair>, tls::TlsError> {
    let mut pairs = Vec::with_capacity(files.len() / 2);
    for names in files.chunks(2) {
        let [certificate, key] = names else {
            continue;
        };
        let certificate = tls::PemSource::read(certificate, Path::new(certificate), "certificate")?;
        let key = tls::PemSource::read(key, Path::new(key), "certificate key")?;
        let pair = tls::load_pair(&certificate, &key, passwords)?;
        pairs.push(match &ocsp {
            Some(response) => pair.with_ocsp(response.clone()),
            None => pair,
        });
    }
    Ok(pairs)
}
