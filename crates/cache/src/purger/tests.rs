use std::cell::Cell;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::*;
use crate::format::{self, EntryHeader};
use crate::index::ZoneParams;
use crate::key::{Key, Layout, Levels};
use crate::test_dir::TestDir;

/// The purge's time in these tests, seconds since the epoch.
const PURGED: u64 = 1_800_000_000;
const SECOND: u64 = NANOS;

fn new_zone(dir: &TestDir, files: usize) -> Arc<Zone> {
    let layout = Layout {
        root: dir.path().to_path_buf(),
        levels: Levels::parse("1:2").expect("levels"),
    };
    let mut params = ZoneParams::new("one", layout, 1024 * 1024);
    params.purger = true;
    params.purger_files = files;
    let zone = Zone::with_block_size(params, 4096);
    zone.set_cold(false);
    zone
}

/// Writes an entry file for `key_text` stored at `stored` (seconds since the epoch) and
/// indexes it as the loader would.
fn add_entry(zone: &Zone, key_text: &str, stored: u64) -> (Key, PathBuf) {
    let key = Key::new(&[key_text.as_bytes()]);
    let start = u16::try_from(format::header_start_for(key_text.len())).expect("short key");
    let header = EntryHeader {
        valid_sec: i64::MAX / 2,
        last_modified: -1,
        crc32: key.crc32,
        header_start: start,
        body_start: start,
        ..EntryHeader::default()
    };
    let mut bytes = Vec::new();
    format::encode(&header, key_text.as_bytes(), &mut bytes);
    bytes.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\nbody");
    let path = zone.params().layout.entry_path(&key);
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, &bytes).expect("write");
    let file = std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_modified(UNIX_EPOCH + Duration::from_secs(stored))
        .expect("mtime");
    let info = store::file_info(&file.metadata().expect("stat"), zone.block_size());
    assert_eq!(info.written, stored);
    let added = zone.add_loaded(&key.md5, info, None, None, Instant::now());
    assert_eq!(added, Ok(true));
    (key, path)
}

fn exists(zone: &Zone, key: &Key) -> bool {
    zone.peek(&key.md5).is_some_and(|entry| entry.exists)
}

/// Runs the purger at wall time `now` until its walk is done; the number of runs.
fn walk_through(purger: &mut Purger, zone: &Zone, now: u64) -> usize {
    let t0 = Instant::now();
    let mut runs = 1;
    purger.run(zone, now, &|| t0);
    while purger.walking() {
        purger.run(zone, now, &|| t0);
        runs += 1;
    }
    runs
}

#[test]
fn removes_only_older_entries_whose_key_matches() {
    let dir = TestDir::new("purger-match");
    let zone = new_zone(&dir, 100);
    let (old_a, old_a_path) = add_entry(&zone, "/a/1", PURGED - 100);
    let (old_a2, _) = add_entry(&zone, "/a/2/deep", PURGED - 1);
    let (old_b, old_b_path) = add_entry(&zone, "/b/1", PURGED - 100);
    let (new_a, _) = add_entry(&zone, "/a/3", PURGED + 5);
    let (short, _) = add_entry(&zone, "/a", PURGED - 100);
    zone.purges().add(b"/a/", true, PURGED * SECOND);

    let mut purger = Purger::default();
    walk_through(&mut purger, &zone, (PURGED + 10) * SECOND);
    assert_eq!(
        purger.files_read, 4,
        "the four files stored before the purge"
    );
    assert_eq!(purger.removed, 2);
    assert!(!exists(&zone, &old_a) && !exists(&zone, &old_a2));
    assert!(exists(&zone, &old_b) && exists(&zone, &new_a) && exists(&zone, &short));
    crate::manager::drain_unlinks(&zone, &|_, _| {});
    assert!(!old_a_path.exists(), "unlinked as an eviction is");
    assert!(old_b_path.exists());
}

#[test]
fn paces_by_count_then_by_time() {
    let dir = TestDir::new("purger-pace");
    let zone = new_zone(&dir, 2);
    for n in 0..5 {
        add_entry(&zone, &format!("/a/{n}"), PURGED - 100);
    }
    zone.purges().add(b"/a/", true, PURGED * SECOND);
    let now = (PURGED + 1) * SECOND;
    let t0 = Instant::now();
    let mut purger = Purger::default();
    let mut reads = Vec::new();
    for _ in 0..3 {
        let wait = purger.run(&zone, now, &|| t0);
        assert_eq!(wait, zone.params().purger_sleep);
        reads.push(purger.files_read);
    }
    assert_eq!(reads, [2, 4, 5], "purger_files=2 per run");

    // purger_threshold: the clock passes it after each file.
    let dir = TestDir::new("purger-threshold");
    let zone = new_zone(&dir, 100);
    for n in 0..3 {
        add_entry(&zone, &format!("/a/{n}"), PURGED - 100);
    }
    zone.purges().add(b"/a/", true, PURGED * SECOND);
    let ticks = Cell::new(0u32);
    let clock = || {
        ticks.set(ticks.get() + 1);
        t0 + zone.params().purger_threshold * ticks.get()
    };
    let mut purger = Purger::default();
    let mut runs = 0;
    loop {
        let before = purger.files_read;
        purger.run(&zone, now, &clock);
        runs += 1;
        assert!(
            purger.files_read - before <= 1,
            "one file, then the time is up"
        );
        if !purger.walking() {
            break;
        }
    }
    assert_eq!(purger.files_read, 3);
    assert!(runs >= 3);
    assert_eq!(zone.count(), 0);
}

#[test]
fn retires_the_rule_once_walked_past_its_margin() {
    let dir = TestDir::new("purger-retire");
    let zone = new_zone(&dir, 100);
    add_entry(&zone, "/b/old", PURGED - 1_000);
    add_entry(&zone, "/b/recent", PURGED - 30);
    let (a, _) = add_entry(&zone, "/a/1", PURGED - 1_000);
    zone.purges().add(b"/a/", true, PURGED * SECOND);

    // Walked at once: the entry goes, the rule stays until the margin has passed.
    let mut purger = Purger::default();
    walk_through(&mut purger, &zone, (PURGED + 1) * SECOND);
    assert_eq!(purger.files_read, 3);
    assert!(!exists(&zone, &a));
    assert!(zone.purges().covers(b"/a/x", (PURGED - 1) * SECOND));
    let early = purger.run(&zone, (PURGED + 2) * SECOND, &Instant::now);
    assert!(!purger.walking(), "not due yet");
    assert!(early <= IDLE_WAIT);

    // Walked again after the margin, over the files of the minute before the purge only.
    let later = (PURGED + 61) * SECOND;
    walk_through(&mut purger, &zone, later);
    assert_eq!(purger.files_read, 4, "only /b/recent again");
    assert!(!zone.purges().covers(b"/a/x", (PURGED - 1) * SECOND));
    assert!(zone.purges().export().is_empty());

    // A rule older than its margin (restored at a start) goes after one walk.
    zone.purges().add(b"/b/", true, PURGED * SECOND);
    walk_through(&mut purger, &zone, later);
    assert_eq!(purger.removed, 3);
    assert!(zone.purges().export().is_empty());
    assert_eq!(zone.count(), 0);
}

#[test]
fn a_cold_zone_and_exact_rules_are_not_walked() {
    let dir = TestDir::new("purger-cold");
    let zone = new_zone(&dir, 100);
    let (a, _) = add_entry(&zone, "/a/1", PURGED - 100);
    zone.purges().add(b"/a/1", false, PURGED * SECOND);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let mut purger = Purger::default();
    walk_through(&mut purger, &zone, now * SECOND);
    assert_eq!(purger.files_read, 0, "an exact rule is the readers'");
    zone.purges().add(b"/a/", true, PURGED * SECOND);
    zone.set_cold(true);
    assert_eq!(purger.run(&zone, now * SECOND, &Instant::now), IDLE_WAIT);
    assert!(!purger.walking());
    assert!(exists(&zone, &a));
    zone.set_cold(false);
    walk_through(&mut purger, &zone, now * SECOND);
    assert!(!exists(&zone, &a));
}
