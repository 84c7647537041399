//! `ssl_certificate_cache` and `proxy_ssl_certificate_cache` (http and stream): the
//! directive, and the cache of pairs loaded from certificate names with variables, by the
//! file names they were loaded from.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use conf::{ConfError, Directive};

/// `ssl_certificate_cache max=N [inactive=time] [valid=time]`: how the pairs of certificate
/// names with variables are kept once loaded (`off` is `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertificateCacheConf {
    /// Files held (a pair is two), the least recently used dropped beyond it.
    pub max: usize,
    /// A pair not used for this long is dropped.
    pub inactive: Duration,
    /// A pair loaded this long ago is loaded again.
    pub valid: Duration,
}

impl CertificateCacheConf {
    /// nginx's `inactive` and `valid` when only `max` is given.
    pub const INACTIVE: Duration = Duration::from_secs(10);
    pub const VALID: Duration = Duration::from_secs(60);

    /// Portico's cache when the directive is absent (nginx's default is `off`).
    pub const DEFAULT: CertificateCacheConf = CertificateCacheConf {
        max: 1000,
        inactive: CertificateCacheConf::INACTIVE,
        valid: CertificateCacheConf::VALID,
    };
}

/// `ssl_certificate_cache off | max=N [inactive=time] [valid=time]` (and
/// `proxy_ssl_certificate_cache`, which reads the same way).
pub fn parse(directive: &Directive) -> Result<Option<CertificateCacheConf>, ConfError> {
    let mut max = 0;
    let mut inactive = CertificateCacheConf::INACTIVE;
    let mut valid = CertificateCacheConf::VALID;
    let mut off = false;
    for argument in &directive.args {
        let text = argument.as_str();
        let parsed = if let Some(value) = text.strip_prefix("max=") {
            conf::value::parse_number(value)
                .filter(|&max| max > 0)
                .map(|value| max = usize::try_from(value).unwrap_or(usize::MAX))
        } else if let Some(value) = text.strip_prefix("inactive=") {
            conf::value::parse_time_seconds(value).map(|value| inactive = value)
        } else if let Some(value) = text.strip_prefix("valid=") {
            conf::value::parse_time_seconds(value).map(|value| valid = value)
        } else if text == "off" {
            off = true;
            Some(())
        } else {
            None
        };
        if parsed.is_none() {
            return Err(ConfError::message(
                format!("invalid \"{}\" parameter \"{text}\"", directive.name),
                &directive.span,
            ));
        }
    }
    if off {
        return Ok(None);
    }
    if max == 0 {
        return Err(ConfError::message(
            format!("\"{}\" must have the \"max\" parameter", directive.name),
            &directive.span,
        ));
    }
    Ok(Some(CertificateCacheConf {
        max,
        inactive,
        valid,
    }))
}
/// The resolved names of every pair, certificate then key: the cache's key.
pub type FileNames = Vec<String>;

/// Loaded configurations by the file names they were loaded from, bounded as
/// `ssl_certificate_cache` says: `max` counts files (a pair is two, as nginx caches
/// certificates and keys apart), the least recently used goes first, and an entry unused
/// for `inactive` or loaded longer than `valid` ago is not served again.
#[derive(Debug)]
pub struct LoadedPairs<T> {
    pub settings: CertificateCacheConf,
    pub entries: HashMap<FileNames, Entry<T>>,
    /// Keys by last use, least recent first (the value of `Entry::used_order`).
    pub by_use: BTreeMap<u64, FileNames>,
    next_order: u64,
    /// Files held: the sum of the keys' lengths.
    pub files: usize,
}

#[derive(Debug)]
pub struct Entry<T> {
    pub value: T,
    pub loaded: Instant,
    used: Instant,
    pub used_order: u64,
}

impl<T: Clone> LoadedPairs<T> {
    pub fn new(settings: CertificateCacheConf) -> LoadedPairs<T> {
        LoadedPairs {
            settings,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
            next_order: 0,
            files: 0,
        }
    }

    /// The value loaded from `files`, unless it is missing, unused too long, or too old.
    pub fn get(&mut self, files: &FileNames, now: Instant) -> Option<T> {
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

    pub fn insert(&mut self, files: FileNames, value: T, now: Instant) {
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

    pub fn expired(&self, entry: &Entry<T>, now: Instant) -> bool {
        now.saturating_duration_since(entry.used) >= self.settings.inactive
            || now.saturating_duration_since(entry.loaded) >= self.settings.valid
    }

    pub fn remove(&mut self, files: &FileNames) {
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
