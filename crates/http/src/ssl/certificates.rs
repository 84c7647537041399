//! Certificates whose names have variables (`ssl_certificate $ssl_server_name.crt`): the
//! names evaluated per handshake, the pair loaded on the default thread pool, and the
//! configuration made from it cached by file names (`ssl_certificate_cache`) for the life
//! of the generation.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::conf::ServerId;
use crate::request::{ConnectionInfo, Request};
use crate::ssl::settings::{CertificateCacheConf, SslServer};
use crate::variables::{HttpTemplate, RequestVariables};
use crate::worker::HttpWorker;

/// A virtual server's `ssl_certificate` / `ssl_certificate_key` pairs when some name has
/// variables.
#[derive(Debug)]
pub struct VariableCertificates {
    /// Certificate and key names, by pair.
    names: Vec<(HttpTemplate, HttpTemplate)>,
    passwords: Arc<Vec<Vec<u8>>>,
    /// `ssl_stapling_file`'s response, stapled to every pair loaded.
    ocsp: Option<Vec<u8>>,
    prefix: PathBuf,
    /// The server's configuration without certificates: each loaded pair gets a copy.
    base: Arc<tls::ServerTls>,
    /// `ssl_certificate_cache`; `None` loads the pairs on every handshake.
    cache: Option<Mutex<LoadedPairs<Arc<tls::ServerTls>>>>,
}

/// The resolved names of every pair, certificate then key: the cache's key.
type FileNames = Vec<String>;

/// Loaded configurations by the file names they were loaded from, bounded as
/// `ssl_certificate_cache` says: `max` counts files (a pair is two, as nginx caches
/// certificates and keys apart), the least recently used goes first, and an entry unused
/// for `inactive` or loaded longer than `valid` ago is not served again.
#[derive(Debug)]
struct LoadedPairs<T> {
    settings: CertificateCacheConf,
    entries: HashMap<FileNames, Entry<T>>,
    /// Keys by last use, least recent first (the value of `Entry::used_order`).
    by_use: BTreeMap<u64, FileNames>,
    next_order: u64,
    /// Files held: the sum of the keys' lengths.
    files: usize,
}

#[derive(Debug)]
struct Entry<T> {
    value: T,
    loaded: Instant,
    used: Instant,
    used_order: u64,
}

impl<T: Clone> LoadedPairs<T> {
    fn new(settings: CertificateCacheConf) -> LoadedPairs<T> {
        LoadedPairs {
            settings,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
            next_order: 0,
            files: 0,
        }
    }

    /// The value loaded from `files`, unless it is missing, unused too long, or too old.
    fn get(&mut self, files: &FileNames, now: Instant) -> Option<T> {
        let entry = self.entries.get(files)?;
        if self.expired(entry, now) {
            self.remove(files);
            return None;
        }
        let order = self.next_order;
        self.next_order += 1;
        let entry = self.entries.get_mut(files)?;
        entry.used = now;
        let previous = std::mem::replace(&mut entry.used_order, order);
        let value = entry.value.clone();
        if let Some(key) = self.by_use.remove(&previous) {
            self.by_use.insert(order, key);
        }
        Some(value)
    }

    fn insert(&mut self, files: FileNames, value: T, now: Instant) {
        self.remove(&files);
        if files.len() > self.settings.max {
            return;
        }
        while let Some((_, oldest)) = self.by_use.first_key_value() {
            let full = self.files + files.len() > self.settings.max;
            let stale = self
                .entries
                .get(oldest)
                .is_some_and(|entry| self.expired(entry, now));
            if !full && !stale {
                break;
            }
            let oldest = oldest.clone();
            self.remove(&oldest);
        }
        let order = self.next_order;
        self.next_order += 1;
        self.files += files.len();
        self.by_use.insert(order, files.clone());
        let entry = Entry {
            value,
            loaded: now,
            used: now,
            used_order: order,
        };
        self.entries.insert(files, entry);
    }

    fn expired(&self, entry: &Entry<T>, now: Instant) -> bool {
        now.saturating_duration_since(entry.used) >= self.settings.inactive
            || now.saturating_duration_since(entry.loaded) >= self.settings.valid
    }

    fn remove(&mut self, files: &FileNames) {
        if let Some(entry) = self.entries.remove(files) {
            self.by_use.remove(&entry.used_order);
            self.files -= files.len();
        }
        debug_assert_eq!(self.entries.len(), self.by_use.len());
    }
}

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

    /// Every name evaluated, made absolute against the prefix (`data:` values kept).
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
        if name.starts_with("data:") || Path::new(&name).is_absolute() {
            return name;
        }
        self.prefix.join(name).display().to_string()
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{CertificateCacheConf, LoadedPairs};

    fn pair(name: &str) -> Vec<String> {
        vec![format!("{name}.crt"), format!("{name}.key")]
    }

    fn cache(max: usize) -> LoadedPairs<&'static str> {
        LoadedPairs::new(CertificateCacheConf {
            max,
            inactive: Duration::from_secs(10),
            valid: Duration::from_secs(60),
        })
    }

    #[test]
    fn max_counts_files_and_drops_the_least_recently_used() {
        let start = Instant::now();
        let mut loaded = cache(4);
        loaded.insert(pair("one"), "one", start);
        loaded.insert(pair("two"), "two", start);
        assert_eq!(loaded.get(&pair("one"), start), Some("one"));
        loaded.insert(pair("three"), "three", start);
        assert_eq!(
            loaded.get(&pair("two"), start),
            None,
            "two was used least recently"
        );
        assert_eq!(loaded.get(&pair("one"), start), Some("one"));
        assert_eq!(loaded.get(&pair("three"), start), Some("three"));
        assert_eq!(loaded.files, 4);
        assert_eq!(loaded.entries.len(), loaded.by_use.len());
    }

    #[test]
    fn a_key_larger_than_max_is_not_kept() {
        let start = Instant::now();
        let mut loaded = cache(1);
        loaded.insert(pair("one"), "one", start);
        assert_eq!(loaded.get(&pair("one"), start), None);
        assert_eq!(loaded.files, 0);
    }

    #[test]
    fn inactive_and_valid_end_an_entry() {
        let start = Instant::now();
        let mut loaded = cache(10);
        loaded.insert(pair("one"), "one", start);
        let used = start + Duration::from_secs(9);
        assert_eq!(loaded.get(&pair("one"), used), Some("one"));
        let later = used + Duration::from_secs(9);
        assert_eq!(loaded.get(&pair("one"), later), Some("one"), "used 9s ago");
        let idle = later + Duration::from_secs(10);
        assert_eq!(loaded.get(&pair("one"), idle), None, "unused for 10s");

        loaded.insert(pair("two"), "two", start);
        for seconds in (5..60).step_by(5) {
            let now = start + Duration::from_secs(seconds);
            assert_eq!(loaded.get(&pair("two"), now), Some("two"), "at {seconds}s");
        }
        assert_eq!(
            loaded.get(&pair("two"), start + Duration::from_secs(60)),
            None,
            "loaded 60s ago"
        );
        assert_eq!(loaded.files, 0);
    }

    #[test]
    fn an_insert_drops_idle_entries_first() {
        let start = Instant::now();
        let mut loaded = cache(10);
        loaded.insert(pair("one"), "one", start);
        loaded.insert(pair("two"), "two", start + Duration::from_secs(11));
        assert_eq!(loaded.files, 2, "one was idle for 11s");
        assert_eq!(loaded.entries.len(), 1);
    }
}
