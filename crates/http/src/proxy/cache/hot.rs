//! Each worker keeps its most used entries open, with their checked header and head, so a
//! HIT on one costs no system call before its body is sent (spec: the hot-entry cache).
//! An entry is used only while the index names the same file (its inode): a file replaced
//! or removed since is opened again. Workers are threads, so the map is thread-local and
//! never locked; pool threads never touch it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use cache::Zone;
use cache::key::Md5Hasher;

use crate::proxy::cache::lookup::Entry;

/// Entries a worker keeps open at most.
const ENTRIES_MAX: usize = 1024;

/// Once the map is full, one entry opened in this many is kept (in place of an arbitrary
/// one): an entry asked for often gets in after a few opens, while a spread of keys
/// wider than the map (each asked for once in a long while) does not pay for a swap
/// it never uses per HIT.
const ADMIT_WHEN_FULL: u32 = 8;

/// A kept entry's key: its zone (by address) and MD5.
#[derive(Clone, Copy, PartialEq, Eq)]
struct HotKey {
    zone: usize,
    md5: [u8; 16],
}

impl Hash for HotKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(cache::key::md5_bits(&self.md5) ^ self.zone as u64);
    }
}

thread_local! {
    static HOT: RefCell<HashMap<HotKey, Entry, BuildHasherDefault<Md5Hasher>>> =
        RefCell::new(HashMap::default());
    /// Opens since the last entry a full map admitted.
    static SKIPPED: Cell<u32> = const { Cell::new(0) };
}

fn key_of(zone: &Arc<Zone>, md5: &[u8; 16]) -> HotKey {
    HotKey {
        zone: Arc::as_ptr(zone) as usize,
        md5: *md5,
    }
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

/// Keeps an entry just opened; when the map is full, one in [`ADMIT_WHEN_FULL`] is kept
/// and an arbitrary one makes room for it.
pub(crate) fn put(zone: &Arc<Zone>, md5: &[u8; 16], entry: &Entry) {
    HOT.with(|hot| {
        let mut hot = hot.borrow_mut();
        if hot.len() >= ENTRIES_MAX {
            let skipped = SKIPPED.get() + 1;
            if skipped < ADMIT_WHEN_FULL {
                SKIPPED.set(skipped);
                return;
            }
            SKIPPED.set(0);
            if let Some(victim) = hot.keys().next().copied() {
                hot.remove(&victim);
            }
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

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use cache::format::EntryHeader;
    use cache::index::ZoneParams;
    use cache::key::{Layout, Levels};

    use super::*;

    fn zone() -> Arc<Zone> {
        let layout = Layout {
            root: PathBuf::from("/nonexistent/portico-hot-test"),
            levels: Levels::parse("1:2").expect("levels"),
        };
        Zone::with_block_size(ZoneParams::new("hot", layout, 1 << 20), 4096)
    }

    fn md5(n: usize) -> [u8; 16] {
        let mut md5 = [0u8; 16];
        md5[..8].copy_from_slice(&(n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
        md5
    }

    fn entry(uniq: u64) -> Entry {
        let head: Arc<[u8]> = Arc::from(&b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"[..]);
        let parsed = match crate::proxy::response::parse(&head) {
            Ok(Some(parsed)) => parsed,
            _ => panic!("the head parses"),
        };
        Entry {
            file: Arc::new(std::fs::File::open("/dev/null").expect("/dev/null")),
            path: Arc::from(Path::new("/dev/null")),
            header: Arc::new(EntryHeader::default()),
            head,
            parsed: Arc::new(parsed),
            size: 0,
            uniq,
            written: 0,
            body: None,
            stat: None,
        }
    }

    #[test]
    fn a_full_map_keeps_one_entry_opened_in_eight() {
        let zone = zone();
        let shared = entry(0);
        // Entry `n`: key `md5(n)`, file (inode) `n`.
        let put_nth = |n: usize| {
            let uniq = n as u64;
            put(
                &zone,
                &md5(n),
                &Entry {
                    uniq,
                    ..shared.clone()
                },
            );
        };
        (0..ENTRIES_MAX).for_each(put_nth);
        assert!(
            (0..ENTRIES_MAX).all(|n| get(&zone, &md5(n), n as u64).is_some()),
            "every entry is kept until the map is full"
        );
        let admitted: Vec<usize> = (ENTRIES_MAX..ENTRIES_MAX + 80)
            .filter(|&n| {
                put_nth(n);
                get(&zone, &md5(n), n as u64).is_some()
            })
            .collect();
        let expected: Vec<usize> = (ENTRIES_MAX..ENTRIES_MAX + 80)
            .filter(|n| (n - ENTRIES_MAX) % 8 == 7)
            .collect();
        assert_eq!(admitted, expected, "the eighth open of a full map is kept");
        assert_eq!(
            HOT.with(|hot| hot.borrow().len()),
            ENTRIES_MAX,
            "one made room for each"
        );
    }

    #[test]
    fn an_entry_the_index_no_longer_names_is_forgotten() {
        let zone = zone();
        put(&zone, &md5(1), &entry(7));
        assert!(get(&zone, &md5(1), 8).is_none(), "another file (inode) now");
        assert!(
            get(&zone, &md5(1), 7).is_none(),
            "and the kept one was dropped"
        );
        put(&zone, &md5(2), &entry(9));
        forget(&zone, &md5(2));
        assert!(get(&zone, &md5(2), 9).is_none());
    }
}
