use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::*;
use crate::index::{FileInfo, ZoneParams};
use crate::key::{Layout, Levels};
use crate::test_dir::TestDir;

const SECOND: Duration = Duration::from_secs(1);

fn params(dir: &TestDir) -> ZoneParams {
    let layout = Layout {
        root: dir.path().to_path_buf(),
        levels: Levels::parse("1:2").expect("levels"),
    };
    ZoneParams::new("one", layout, 16 * 1024)
}

fn md5(n: u32) -> [u8; 16] {
    let mut md5 = [0u8; 16];
    md5[..4].copy_from_slice(&n.to_le_bytes());
    md5[8] = n as u8;
    md5
}

/// Writes a file for `key` and indexes it as the loader would.
fn add_file(zone: &Zone, key: u32, now: Instant) -> PathBuf {
    let path = zone.params().layout.entry_path_of(&md5(key));
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, [b'x'; 400]).expect("write");
    let metadata = std::fs::metadata(&path).expect("stat");
    let file = store::file_info(&metadata, zone.block_size());
    assert_eq!(zone.add_loaded(&md5(key), file, None, None, now), Ok(true));
    path
}

fn files_under(root: &Path) -> usize {
    let mut count = 0;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("list") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                dirs.push(entry.path());
            } else {
                count += 1;
            }
        }
    }
    count
}

#[derive(Default)]
struct Lines(Mutex<Vec<(Level, String)>>);

impl Lines {
    fn log(&self) -> impl Fn(Level, String) + '_ {
        |level, line| self.0.lock().expect("lines").push((level, line))
    }

    fn taken(&self) -> Vec<(Level, String)> {
        std::mem::take(&mut *self.0.lock().expect("lines"))
    }
}

/// nginx's proxy_cache_manager.t: `max_size=0 manager_files=2 manager_sleep=5`, five
/// entries added at 1 s: 3 left after the run at 10 s, 1 after the run at 15 s.
#[test]
fn the_worked_example_of_the_schedule() {
    let dir = TestDir::new("manager-example");
    let mut p = params(&dir);
    p.max_size = Some(0);
    p.manager_files = 2;
    p.manager_sleep = 5 * SECOND;
    let zone = Zone::with_block_size(p, 4096);
    let lines = Lines::default();
    let t0 = Instant::now();

    assert_eq!(run_once(&zone, &lines.log(), &|| t0), 10 * SECOND, "empty");
    for key in 0..5 {
        add_file(&zone, key, t0 + SECOND);
    }
    assert_eq!(zone.size(), 5 * 4096);

    let next = run_once(&zone, &lines.log(), &|| t0 + 10 * SECOND);
    assert_eq!(next, 5 * SECOND);
    assert_eq!(zone.count(), 3);
    assert_eq!(files_under(dir.path()), 3);

    let next = run_once(&zone, &lines.log(), &|| t0 + 15 * SECOND);
    assert_eq!(next, 5 * SECOND);
    assert_eq!(zone.count(), 1);
    assert_eq!(files_under(dir.path()), 1);
    assert_eq!(zone.size(), 4096);

    // The oldest went first: key 4 is the one left.
    assert!(zone.peek(&md5(4)).is_some_and(|s| s.exists));
    assert_eq!(
        run_once(&zone, &lines.log(), &|| t0 + 20 * SECOND),
        10 * SECOND
    );
    assert_eq!(zone.count(), 0);
    assert_eq!(files_under(dir.path()), 0);
    assert!(lines.taken().is_empty());
}

#[test]
fn inactive_entries_expire_in_batches() {
    let dir = TestDir::new("manager-inactive");
    let mut p = params(&dir);
    p.inactive = 10 * SECOND;
    p.manager_files = 2;
    p.manager_sleep = Duration::from_millis(50);
    let zone = Zone::with_block_size(p, 4096);
    let lines = Lines::default();
    let t0 = Instant::now();
    for key in 0..3 {
        add_file(&zone, key, t0);
    }
    add_file(&zone, 3, t0 + 4 * SECOND);

    // Nothing expired: the next expiry is 10 s away (capped).
    assert_eq!(run_once(&zone, &lines.log(), &|| t0 + SECOND), 9 * SECOND);
    assert_eq!(zone.count(), 4);
    // Two expired per batch, then the manager sleeps.
    let next = run_once(&zone, &lines.log(), &|| t0 + 11 * SECOND);
    assert_eq!(next, Duration::from_millis(50));
    assert_eq!(zone.count(), 2);
    let next = run_once(&zone, &lines.log(), &|| t0 + 11 * SECOND);
    assert_eq!(next, 3 * SECOND, "the last one expires at 14 s");
    assert_eq!(zone.count(), 1);
    assert_eq!(files_under(dir.path()), 1);
}

#[test]
fn the_count_is_trimmed_to_the_watermark() {
    let dir = TestDir::new("manager-watermark");
    let zone = Zone::with_block_size(params(&dir), 4096);
    let lines = Lines::default();
    let t0 = Instant::now();
    for key in 0..65 {
        zone.touch(&md5(key), t0).expect("room");
    }
    assert_eq!(zone.watermark(), 56);
    assert_eq!(zone.count(), 64);
    run_once(&zone, &lines.log(), &|| t0);
    assert_eq!(zone.count(), 55);
}

#[test]
fn min_free_evicts_while_space_is_short() {
    let dir = TestDir::new("manager-min-free");
    let mut p = params(&dir);
    p.min_free = Some(u64::MAX);
    let zone = Zone::with_block_size(p, 4096);
    let lines = Lines::default();
    let t0 = Instant::now();
    for key in 0..3 {
        add_file(&zone, key, t0);
    }
    assert_eq!(run_once(&zone, &lines.log(), &|| t0), 10 * SECOND);
    assert_eq!(zone.count(), 0);
    assert_eq!(files_under(dir.path()), 0);
}

#[test]
fn a_failed_unlink_is_logged_at_crit() {
    let dir = TestDir::new("manager-unlink");
    let zone = Zone::with_block_size(params(&dir), 4096);
    let lines = Lines::default();
    let t0 = Instant::now();
    let path = add_file(&zone, 1, t0);
    // A directory under the entry's name cannot be unlinked.
    std::fs::remove_file(&path).expect("rm");
    std::fs::create_dir(&path).expect("mkdir");
    assert!(zone.remove(&md5(1), zone.peek(&md5(1)).expect("indexed").uniq));
    drain_unlinks(&zone, &lines.log());
    let lines = lines.taken();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].0, Level::Crit);
    assert_eq!(
        lines[0].1,
        format!(
            "unlink() \"{}\" failed (21: Is a directory)",
            path.display()
        )
    );
    assert_eq!(zone.size(), 0, "the tombstone is gone either way");

    // A file already gone is not an error.
    let path = add_file(&zone, 2, t0);
    std::fs::remove_file(&path).expect("rm");
    let quiet = Lines::default();
    assert!(zone.remove(&md5(2), zone.peek(&md5(2)).expect("indexed").uniq));
    drain_unlinks(&zone, &quiet.log());
    assert!(quiet.taken().is_empty());
}

/// Polls `done` for up to ten seconds.
fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..1000 {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

#[test]
fn the_thread_unlinks_promptly_and_stops() {
    let dir = TestDir::new("manager-thread");
    let zone = Zone::with_block_size(params(&dir), 4096);
    let t0 = Instant::now();
    let path = add_file(&zone, 1, t0);
    let handle = Manager::spawn(Arc::clone(&zone), |_, _| {}).expect("spawn");
    assert!(zone.remove(&md5(1), zone.peek(&md5(1)).expect("indexed").uniq));
    assert!(eventually(|| !path.exists()), "unlinked by the manager");
    assert!(eventually(|| zone.size() == 0));
    handle.stop();
    assert_eq!(Arc::strong_count(&zone), 1, "the thread let go of the zone");
}

#[test]
fn the_thread_runs_the_schedule_from_the_start() {
    let dir = TestDir::new("manager-thread-schedule");
    let mut p = params(&dir);
    p.max_size = Some(0);
    p.manager_files = 2;
    p.manager_sleep = Duration::from_millis(20);
    let zone = Zone::with_block_size(p, 4096);
    for key in 0..5 {
        add_file(&zone, key, Instant::now());
    }
    let handle = Manager::spawn(Arc::clone(&zone), |_, _| {}).expect("spawn");
    assert!(eventually(|| zone.count() == 0));
    assert_eq!(files_under(dir.path()), 0);
    handle.stop();
}

#[test]
fn errno_text_is_nginx_shaped() {
    let error = io::Error::from_raw_os_error(13);
    assert_eq!(errno_text(&error), "13: Permission denied");
}

/// The unlink invariant with real files: whatever the order, version N+1 stays on disk.
#[test]
fn a_queued_unlink_never_removes_a_newer_file() {
    use crate::index::{CommitInfo, FillStart};
    use std::io::Write;

    let dir = TestDir::new("manager-invariant");
    let mut p = params(&dir);
    p.keys_zone_size = 8192 + 128;
    let zone = Zone::with_block_size(p, 4096);
    let lines = Lines::default();
    let t0 = Instant::now();
    let key = md5(1);
    let path = zone.params().layout.entry_path_of(&key);

    let fill = |content: &[u8], drain_before_commit: bool| {
        zone.touch(&key, t0).expect("room");
        let Ok(FillStart::Filler(mut guard)) = zone.start_fill(&key, None, t0) else {
            panic!("expected a filler");
        };
        let temp_name = format!("{}.0000000001", path.display());
        let (mut file, temp) = store::create_temp(Path::new(&temp_name)).expect("temp");
        file.write_all(content).expect("write");
        assert!(guard.try_begin_rename());
        if drain_before_commit {
            // The manager runs between the claim and the rename.
            drain_unlinks(&zone, &lines.log());
        }
        let file = store::commit(&file, &temp, &path, 4096).expect("commit");
        guard.commit(CommitInfo {
            file,
            valid_sec: 0,
            body_start: 0,
        });
    };

    fill(b"version 1", false);
    zone.touch(&md5(2), t0).expect("room"); // evicts version 1: unlink queued
    fill(b"version 2", true);
    drain_unlinks(&zone, &lines.log());
    assert_eq!(std::fs::read(&path).expect("kept"), b"version 2");

    zone.touch(&md5(3), t0).expect("room"); // evicts version 2
    fill(b"version 3", false);
    drain_unlinks(&zone, &lines.log());
    assert_eq!(std::fs::read(&path).expect("kept"), b"version 3");
    assert!(zone.peek(&key).expect("indexed").exists);
    assert_eq!(zone.size(), 4096);
    assert!(lines.taken().is_empty());
}

/// A clock that moves `step` forward at every reading.
fn ticking(start: Instant, step: Duration) -> impl Fn() -> Instant {
    let readings = std::cell::Cell::new(0u32);
    move || {
        let n = readings.get();
        readings.set(n + 1);
        start + step * n
    }
}

#[test]
fn manager_threshold_ends_a_run() {
    let dir = TestDir::new("manager-threshold");
    let mut p = params(&dir);
    p.max_size = Some(0);
    p.manager_threshold = Duration::from_millis(200);
    p.manager_sleep = Duration::from_millis(50);
    let zone = Zone::with_block_size(p, 4096);
    let lines = Lines::default();
    let t0 = Instant::now();
    for key in 0..10 {
        add_file(&zone, key, t0);
    }
    // Each reading of the clock is 60 ms later. Readings: the start (0), the expiry walk
    // (60), then one after each eviction: 120, 180, 240 (past 200 ms): three evictions.
    let clock = ticking(t0, Duration::from_millis(60));
    let next = run_once(&zone, &lines.log(), &clock);
    assert_eq!(next, Duration::from_millis(50));
    assert_eq!(zone.count(), 7);
}

#[test]
fn busy_entries_are_passed_over() {
    use crate::index::FillStart;

    let dir = TestDir::new("manager-busy");
    let mut p = params(&dir);
    p.inactive = SECOND;
    p.max_size = Some(0);
    let zone = Zone::with_block_size(p, 4096);
    let lines = Lines::default();
    let t0 = Instant::now();
    zone.touch(&md5(1), t0).expect("room");
    let Ok(FillStart::Filler(guard)) = zone.start_fill(&md5(1), None, t0) else {
        panic!("expected a filler");
    };
    // Expired, but being filled: the walk and the trimming leave it alone.
    assert_eq!(
        run_once(&zone, &lines.log(), &|| t0 + 5 * SECOND),
        10 * SECOND
    );
    assert_eq!(zone.count(), 1);
    assert_eq!(zone.expire_step(t0 + 5 * SECOND), Expired::Busy);
    drop(guard);
    run_once(&zone, &lines.log(), &|| t0 + 5 * SECOND);
    assert_eq!(zone.count(), 0);
}

#[test]
fn the_thread_records_free_space() {
    let dir = TestDir::new("manager-free");
    let zone = Zone::with_block_size(params(&dir), 4096);
    assert_eq!(zone.free_space(), None);
    let handle = Manager::spawn(Arc::clone(&zone), |_, _| {}).expect("spawn");
    assert!(eventually(|| zone.free_space().is_some()));
    handle.stop();
}

/// The journal's records, read back as the next start would.
fn journal_records(zone: &Zone) -> Vec<crate::journal::Record> {
    match crate::journal::read(&zone.params().layout, 0) {
        Ok((_, replay)) => replay.records,
        Err(_) => Vec::new(),
    }
}

/// The manager commits the journal once the loader has restored the index (not before:
/// the old journal is still being read), at most a second after a change, with one block
/// reserved under the ceiling; a stop commits what is left.
#[test]
fn the_thread_commits_the_journal_once_the_index_is_restored() {
    let dir = TestDir::new("manager-journal");
    let zone = Zone::with_block_size(params(&dir), 4096);
    let handle = Manager::spawn(Arc::clone(&zone), |_, _| {}).expect("spawn");
    zone.touch(&md5(1), Instant::now()).expect("room");
    std::thread::sleep(Duration::from_millis(1200));
    let path = crate::journal::journal_path(&zone.params().layout);
    assert!(!path.exists(), "the loader has not restored the index yet");
    zone.set_journal_base(0);
    assert!(eventually(|| journal_records(&zone).len() == 1));
    assert_eq!(zone.reserved(), 4096, "the journal's block");
    zone.touch(&md5(2), Instant::now()).expect("room");
    handle.stop();
    assert_eq!(journal_records(&zone).len(), 2, "committed at the stop");
}

/// With no room under the ceiling for the journal's block, journaling pauses: nothing is
/// written past the header and nothing stays reserved.
#[test]
fn the_journal_pauses_without_room_under_the_ceiling() {
    let dir = TestDir::new("manager-journal-full");
    let mut p = params(&dir);
    p.max_size = Some(0);
    p.max_size_slack = Some(0);
    let zone = Zone::with_block_size(p, 4096);
    zone.set_journal_base(0);
    let handle = Manager::spawn(Arc::clone(&zone), |_, _| {}).expect("spawn");
    let path = crate::journal::journal_path(&zone.params().layout);
    assert!(eventually(|| path.exists()));
    zone.touch(&md5(1), Instant::now()).expect("room");
    std::thread::sleep(Duration::from_millis(1500));
    handle.stop();
    assert!(journal_records(&zone).is_empty());
    assert_eq!(
        std::fs::metadata(&path).expect("journal").len(),
        crate::journal::HEADER_LEN as u64
    );
    assert_eq!(zone.reserved(), 0);
}

/// A purge rule goes once every file of a warm zone was stored after it and a minute has
/// passed; not while the zone is cold, nor while an older file (or one of unknown age) is
/// left.
#[test]
fn purge_rules_retire_once_no_older_file_is_left() {
    let dir = TestDir::new("manager-retire");
    let zone = Zone::with_block_size(params(&dir), 4096);
    let now = std::time::UNIX_EPOCH + Duration::from_secs(10_000);
    let nanos = |secs: u64| secs * 1_000_000_000;
    let file = |written: u64| FileInfo {
        uniq: written,
        fs_size: 4096,
        written,
    };
    zone.add_loaded(&md5(1), file(5_000), None, None, Instant::now())
        .expect("room");
    zone.purges().add(b"/a", true, nanos(4_000));
    zone.purges().add(b"/b", true, nanos(6_000));
    zone.purges().add(b"/c", true, nanos(9_990));
    assert_eq!(retire_rules(&zone, now), 0, "cold");
    zone.set_cold(false);
    assert_eq!(retire_rules(&zone, now), 1, "/a is older than every file");
    assert!(zone.purges().covers(b"/b/x", nanos(5_500)));
    assert!(zone.remove(&md5(1), 5_000));
    assert_eq!(
        retire_rules(&zone, now),
        1,
        "no file: /b goes, /c is too new"
    );
    assert!(zone.purges().covers(b"/c/x", nanos(9_000)));
    zone.add_loaded(&md5(2), file(0), None, None, Instant::now())
        .expect("room");
    let later = now + Duration::from_secs(3_600);
    assert_eq!(retire_rules(&zone, later), 0, "a file of unknown age");
}
