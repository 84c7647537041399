//! The state of a worker's `open_file_cache`s: entries by path, each an open file and its
//! `fstat()` (or the failure), ranked by last use; `file::cache` fills and consults it.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::kernel::file::open::{FileInfo, OpenFailure, SymlinkCheck};
use crate::modules::static_files::settings::OpenFileCacheConf;

/// How many inactive entries a lookup removes at most, as nginx does (it removes two).
pub(crate) const EXPIRE_PER_LOOKUP: usize = 2;

/// An open file (none for a directory) and what `fstat()` said, or why opening failed.
pub(crate) type OpenResult = Result<(Option<Arc<File>>, FileInfo), OpenFailure>;

/// Every `open_file_cache` of one worker, by the address of its directive's settings.
#[derive(Debug, Default)]
pub struct OpenFileCaches {
    pub(crate) caches: HashMap<usize, Cache>,
}

impl OpenFileCaches {
    pub(crate) fn cache(&mut self, key: usize) -> &mut Cache {
        self.caches.entry(key).or_default()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Cache {
    pub(crate) entries: HashMap<Vec<u8>, Entry>,
    /// Entries by last use, oldest first.
    pub(crate) order: BTreeMap<u64, Vec<u8>>,
    pub(crate) next_sequence: u64,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) result: OpenResult,
    pub(crate) check: SymlinkCheck,
    pub(crate) created: Instant,
    pub(crate) accessed: Instant,
    pub(crate) sequence: u64,
    pub(crate) uses: u64,
}

impl Cache {
    pub(crate) fn lookup(&mut self, path: &[u8], now: Instant) -> Option<&mut Entry> {
        let sequence = self.next_sequence;
        let entry = self.entries.get_mut(path)?;
        self.order.remove(&entry.sequence);
        entry.sequence = sequence;
        entry.accessed = now;
        self.order.insert(sequence, path.to_vec());
        self.next_sequence += 1;
        Some(entry)
    }

    pub(crate) fn remove(&mut self, path: &[u8]) {
        if let Some(entry) = self.entries.remove(path) {
            self.order.remove(&entry.sequence);
        }
    }

    pub(crate) fn store(
        &mut self,
        path: &[u8],
        result: OpenResult,
        check: SymlinkCheck,
        uses: u64,
        now: Instant,
        conf: &OpenFileCacheConf,
    ) {
        self.remove(path);
        while self.entries.len() >= conf.max {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.order.insert(sequence, path.to_vec());
        self.entries.insert(
            path.to_vec(),
            Entry {
                result,
                check,
                created: now,
                accessed: now,
                sequence,
                uses,
            },
        );
    }

    /// Drops up to `limit` entries not used for `inactive`, oldest first.
    pub(crate) fn expire_inactive(&mut self, now: Instant, inactive: Duration, limit: usize) {
        for _ in 0..limit {
            let Some((&sequence, path)) = self.order.first_key_value() else {
                return;
            };
            let expired = self
                .entries
                .get(path)
                .is_none_or(|entry| now.duration_since(entry.accessed) >= inactive);
            if !expired {
                return;
            }
            if let Some(path) = self.order.remove(&sequence) {
                self.entries.remove(&path);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        debug_assert_eq!(self.entries.len(), self.order.len());
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> FileInfo {
        FileInfo {
            len: 1,
            modified: 0,
            is_dir: false,
            is_file: true,
            is_exec: false,
            uniq: (1, 1),
        }
    }

    #[test]
    fn evicts_the_least_recently_used_at_max() {
        let conf = OpenFileCacheConf {
            max: 2,
            inactive: Duration::from_secs(60),
        };
        let now = Instant::now();
        let mut cache = Cache::default();
        cache.store(b"/a", Ok((None, info())), SymlinkCheck::OFF, 1, now, &conf);
        cache.store(b"/b", Ok((None, info())), SymlinkCheck::OFF, 1, now, &conf);
        assert!(cache.lookup(b"/a", now).is_some());
        cache.store(b"/c", Ok((None, info())), SymlinkCheck::OFF, 1, now, &conf);
        assert_eq!(cache.len(), 2);
        assert!(cache.lookup(b"/b", now).is_none(), "b was the oldest");
        assert!(cache.lookup(b"/a", now).is_some());
        assert!(cache.lookup(b"/c", now).is_some());
    }

    #[test]
    fn inactive_entries_expire_a_few_per_lookup() {
        let conf = OpenFileCacheConf {
            max: 10,
            inactive: Duration::from_secs(5),
        };
        let start = Instant::now();
        let mut cache = Cache::default();
        for name in [&b"/a"[..], b"/b", b"/c"] {
            cache.store(name, Ok((None, info())), SymlinkCheck::OFF, 1, start, &conf);
        }
        let later = start + Duration::from_secs(6);
        cache.expire_inactive(later, conf.inactive, EXPIRE_PER_LOOKUP);
        assert_eq!(cache.len(), 1);
        cache.expire_inactive(start + Duration::from_secs(1), conf.inactive, 2);
        assert_eq!(cache.len(), 1, "a young entry stays");
        cache.expire_inactive(later, conf.inactive, EXPIRE_PER_LOOKUP);
        assert_eq!(cache.len(), 0);
    }
}
