//! Each worker keeps its most used entries open, with their checked header and head, so a
//! HIT on one costs no system call before its body is sent (spec: the hot-entry cache).
//! An entry is used only while the index names the same file (its inode): a file replaced
//! or removed since is opened again. Workers are threads, so the map is thread-local and
//! never locked; pool threads never touch it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use cache::Zone;

use crate::proxy::cache::lookup::Entry;

/// Entries a worker keeps open at most.
const ENTRIES_MAX: usize = 1024;

type HotKey = (usize, [u8; 16]);

thread_local! {
    static HOT: RefCell<HashMap<HotKey, Entry>> = RefCell::new(HashMap::new());
}

fn key_of(zone: &Arc<Zone>, md5: &[u8; 16]) -> HotKey {
    (Arc::as_ptr(zone) as usize, *md5)
}

/// The kept entry of `md5` if it is still the file the index names (`uniq`).
pub(crate) fn get(zone: &Arc<Zone>, md5: &[u8; 16], uniq: u64) -> Option<Entry> {
    HOT.with(|hot| {
        let mut hot = hot.borrow_mut();
        let key = key_of(zone, md5);
        match hot.get(&key) {
            Some(entry) if entry.uniq == uniq => Some(entry.clone()),
            Some(_) => {
                hot.remove(&key);
                None
            }
            None => None,
        }
    })
}

/// Keeps an entry just opened; an arbitrary one makes room when the map is full.
pub(crate) fn put(zone: &Arc<Zone>, md5: &[u8; 16], entry: &Entry) {
    HOT.with(|hot| {
        let mut hot = hot.borrow_mut();
        if hot.len() >= ENTRIES_MAX
            && let Some(victim) = hot.keys().next().copied()
        {
            hot.remove(&victim);
        }
        hot.insert(key_of(zone, md5), entry.clone());
    });
}

/// Forgets the kept entry of `md5` (removed, purged, replaced).
pub(crate) fn forget(zone: &Arc<Zone>, md5: &[u8; 16]) {
    HOT.with(|hot| {
        hot.borrow_mut().remove(&key_of(zone, md5));
    });
}
