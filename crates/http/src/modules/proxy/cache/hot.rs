//! Each worker keeps its most used entries open, with their checked header and head, so a
//! HIT on one costs one `fstat` before its body is sent (spec: the hot-entry cache). An
//! entry is used only while the index names the same file (its inode) and the file has
//! the size and modification time it had when it was checked ([`unchanged`]), looked at
//! on every HIT: a file replaced or removed since is opened again, one written in place
//! is damaged. Workers are threads, so the map is thread-local and never locked; pool
//! threads never touch it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use cache::Zone;
use cache::key::Md5Hasher;

use crate::modules::proxy::cache::lookup::Entry;

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

/// What a worker has of an entry.
pub(crate) enum Hot {
    /// Kept, and its file as it was checked.
    Unchanged(Entry),
    /// Kept, but its file was changed since it was checked (no longer kept).
    Changed(Entry),
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

/// The kept entry of `md5` if it is still the file the index names (`uniq`), checked
/// against its file ([`unchanged`]).
pub(crate) fn get(zone: &Arc<Zone>, md5: &[u8; 16], uniq: u64) -> Option<Hot> {
    HOT.with(|hot| {
        let mut hot = hot.borrow_mut();
        let key = key_of(zone, md5);
        let entry = hot.get(&key)?;
        if entry.uniq != uniq {
            hot.remove(&key);
            return None;
        }
        if unchanged(entry) {
            return Some(Hot::Unchanged(entry.clone()));
        }
        hot.remove(&key).map(Hot::Changed)
    })
}

/// Whether an entry opened now would be kept: then its open takes the file's size and
/// modification time (a `fstat`), which every HIT from the kept copy compares.
pub(crate) fn would_keep() -> bool {
    HOT.with(|hot| hot.borrow().len() < ENTRIES_MAX) || SKIPPED.get() + 1 >= ADMIT_WHEN_FULL
}

/// Whether the kept entry's file is the one that was checked: the same size and
/// modification time (to the nanosecond). Every write to a file changes its modification
/// time, a truncation its size too; Portico's own rewrite of a header in place
/// (`cache::store::rewrite_header`) puts the time back. One `fstat` of the open file,
/// which the kernel answers from the inode it holds, without the disk.
pub(crate) fn unchanged(entry: &Entry) -> bool {
    entry.written != 0
        && rustix::fs::fstat(&*entry.file).is_ok_and(|stat| {
            u64::try_from(stat.st_size) == Ok(entry.size)
                && cache::store::modified_nanos(stat.st_mtime, stat.st_mtime_nsec) == entry.written
        })
}

/// Keeps an entry just opened; when the map is full, one in [`ADMIT_WHEN_FULL`] is kept
/// and an arbitrary one makes room for it. An entry opened without its modification time
/// ([`would_keep`] said no) is not kept: its HITs could not be checked.
pub(crate) fn put(zone: &Arc<Zone>, md5: &[u8; 16], entry: &Entry) {
    HOT.with(|hot| {
        let mut hot = hot.borrow_mut();
        if entry.written == 0 {
            if hot.len() >= ENTRIES_MAX {
                SKIPPED.set(SKIPPED.get().saturating_add(1).min(ADMIT_WHEN_FULL - 1));
            }
            return;
        }
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
        let parsed = match crate::modules::proxy::response::parse(&head) {
            Ok(Some(parsed)) => parsed,
            _ => panic!("the head parses"),
        };
        // An empty file nobody writes, its time as checked: every check finds it
        // unchanged.
        let path = std::env::temp_dir().join(format!("portico-hot-empty-{}", std::process::id()));
        if !path.exists() {
            std::fs::write(&path, b"").expect("an empty file");
        }
        let file = std::fs::File::open(&path).expect("the empty file");
        let stat = rustix::fs::fstat(&file).expect("fstat");
        Entry {
            file: Arc::new(file),
            path: Arc::from(path.as_path()),
            header: Arc::new(EntryHeader::default()),
            head,
            parsed: Arc::new(parsed),
            size: 0,
            uniq,
            written: cache::store::modified_nanos(stat.st_mtime, stat.st_mtime_nsec),
            body: None,
            stat: None,
        }
    }

    /// A kept entry whose file changes is reported changed at the next HIT, and kept no
    /// more.
    #[test]
    fn a_change_is_seen_by_the_next_hit() {
        use std::os::unix::fs::FileExt;
        let zone = zone();
        let dir = std::env::temp_dir().join(format!("portico-hot-tick-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("entry");
        std::fs::write(&path, b"0123456789").expect("write");
        put(&zone, &md5(40), &entry_of(&path));
        assert!(matches!(get(&zone, &md5(40), 1), Some(Hot::Unchanged(_))));
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.write_all_at(b"X", 3).expect("write in place");
        assert!(matches!(get(&zone, &md5(40), 1), Some(Hot::Changed(_))));
        assert!(get(&zone, &md5(40), 1).is_none(), "no longer kept");
        std::fs::remove_dir_all(dir).expect("clean up");
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
    fn an_entry_opened_without_its_time_is_not_kept() {
        let zone = zone();
        put(
            &zone,
            &md5(3),
            &Entry {
                written: 0,
                ..entry(5)
            },
        );
        assert!(get(&zone, &md5(3), 5).is_none());
    }

    /// A kept entry of a real file: its size and time as checked.
    fn entry_of(path: &Path) -> Entry {
        let file = std::fs::File::open(path).expect("open");
        let stat = rustix::fs::fstat(&file).expect("fstat");
        Entry {
            file: Arc::new(file),
            size: stat.st_size as u64,
            written: cache::store::modified_nanos(stat.st_mtime, stat.st_mtime_nsec),
            ..entry(1)
        }
    }

    #[test]
    fn a_file_written_in_place_is_changed() {
        use std::os::unix::fs::FileExt;
        let dir = std::env::temp_dir().join(format!("portico-hot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("entry");
        let stored = std::time::UNIX_EPOCH + std::time::Duration::new(1_000, 1);
        let write_stored = |bytes: &[u8]| {
            std::fs::write(&path, bytes).expect("write");
            let file = std::fs::File::options()
                .write(true)
                .open(&path)
                .expect("open");
            file.set_modified(stored).expect("set the time");
        };
        write_stored(b"0123456789");
        let kept = entry_of(&path);
        assert!(unchanged(&kept), "as checked");
        // The same bytes at the same place: the time changes all the same.
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.write_all_at(b"5", 5).expect("write in place");
        assert!(!unchanged(&kept), "written in place");
        write_stored(b"0123456789");
        let kept = entry_of(&path);
        file.set_len(4).expect("truncate");
        file.set_modified(stored).expect("the old time back");
        assert!(!unchanged(&kept), "shorter, whatever its time says");
        let unknown = Entry {
            written: 0,
            ..entry_of(&path)
        };
        assert!(!unchanged(&unknown), "a time never taken matches nothing");
        std::fs::remove_dir_all(dir).expect("clean up");
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
