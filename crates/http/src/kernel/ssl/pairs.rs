//! What a server with variables in its certificate names keeps: the names, the base
//! configuration, and the loaded pairs cached by file names (`ssl_certificate_cache`).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::kernel::ssl::settings::CertificateCacheConf;
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

/// The resolved names of every pair, certificate then key: the cache's key.
pub(crate) type FileNames = Vec<String>;

/// Loaded configurations by the file names they were loaded from, bounded as
/// `ssl_certificate_cache` says: `max` counts files (a pair is two, as nginx caches
/// certificates and keys apart), the least recently used goes first, and an entry unused
/// for `inactive` or loaded longer than `valid` ago is not served again.
#[derive(Debug)]
pub(crate) struct LoadedPairs<T> {
    pub(crate) settings: CertificateCacheConf,
    pub(crate) entries: HashMap<FileNames, Entry<T>>,
    /// Keys by last use, least recent first (the value of `Entry::used_order`).
    pub(crate) by_use: BTreeMap<u64, FileNames>,
    next_order: u64,
    /// Files held: the sum of the keys' lengths.
    pub(crate) files: usize,
}

#[derive(Debug)]
pub(crate) struct Entry<T> {
    pub(crate) value: T,
    pub(crate) loaded: Instant,
    used: Instant,
    pub(crate) used_order: u64,
}

impl<T: Clone> LoadedPairs<T> {
    pub(crate) fn new(settings: CertificateCacheConf) -> LoadedPairs<T> {
        LoadedPairs {
            settings,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
            next_order: 0,
            files: 0,
        }
    }

    /// The value loaded from `files`, unless it is missing, unused too long, or too old.
    pub(crate) fn get(&mut self, files: &FileNames, now: Instant) -> Option<T> {
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

    pub(crate) fn insert(&mut self, files: FileNames, value: T, now: Instant) {
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

    pub(crate) fn expired(&self, entry: &Entry<T>, now: Instant) -> bool {
        now.saturating_duration_since(entry.used) >= self.settings.inactive
            || now.saturating_duration_since(entry.loaded) >= self.settings.valid
    }

    pub(crate) fn remove(&mut self, files: &FileNames) {
        if let Some(entry) = self.entries.remove(files) {
            self.by_use.remove(&entry.used_order);
            self.files -= files.len();
        }
        debug_assert_eq!(self.entries.len(), self.by_use.len());
    }
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
