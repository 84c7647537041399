use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::*;
use crate::index::ZoneParams;
use crate::key::{Layout, Levels};
use crate::test_dir::TestDir;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/nginx-1.22.1");
const ETAG_ENTRY: &str = "8/4e/c076a9c9e1065be6b8c7d3475c11c4e8";
const VARY_ENTRY: &str = "3/c7/23b453b56c92556887f864795ceecc73";

fn params(dir: &TestDir, keys_zone_size: u64) -> ZoneParams {
    let layout = Layout {
        root: dir.path().to_path_buf(),
        levels: Levels::parse("1:2").expect("levels"),
    };
    let mut params = ZoneParams::new("load", layout, keys_zone_size);
    params.loader_threshold = Duration::from_secs(3600);
    params
}

fn put(root: &Path, relative: &str, bytes: &[u8]) -> PathBuf {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, bytes).expect("write");
    path
}

fn copy_golden(root: &Path) {
    for entry in [ETAG_ENTRY, VARY_ENTRY] {
        let bytes = std::fs::read(Path::new(GOLDEN).join(entry)).expect("golden");
        put(root, entry, &bytes);
    }
}

fn set_mtime(path: &Path, time: SystemTime) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(time).expect("utimes");
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

fn never_sleeps(_: Duration) -> bool {
    panic!("the walk paused")
}

#[test]
fn loads_nginx_files_and_deletes_junk() {
    let dir = TestDir::new("loader");
    let root = dir.path();
    copy_golden(root);
    let small = put(root, "0/00/000000000000000000000000000000aa", &[0; 100]);
    let junk = put(root, "junk.txt", &[0; 1000]);
    let old_temp = put(
        root,
        "c/29/b7f54b2df7773722d382f4809d65029c.0000000001",
        b"t",
    );
    set_mtime(
        &old_temp,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1000),
    );
    let zone = Zone::with_block_size(params(&dir, 1 << 20), 4096);
    let new_temp = put(
        root,
        "c/29/b7f54b2df7773722d382f4809d65029c.0000000002",
        b"t",
    );
    set_mtime(&new_temp, SystemTime::now() + Duration::from_secs(3600));
    let sidecar = put(root, ".portico/index.snap", &[0; 500]);
    let temp_dir_file = put(root, "temp/00000000000000000000000000000000", &[0; 500]);

    let lines = Lines::default();
    assert!(zone.cold());
    let report = load(&zone, &lines.log(), &mut Pace::new(&zone, never_sleeps));
    assert_eq!(
        report,
        LoadReport {
            added: 2,
            known: 0,
            deleted: 3,
            sleeps: 0,
            complete: true,
            from_snapshot: false,
        }
    );
    assert!(!zone.cold());
    for gone in [&small, &junk, &old_temp] {
        assert!(!gone.exists(), "{}", gone.display());
    }
    for kept in [&new_temp, &sidecar, &temp_dir_file] {
        assert!(kept.exists(), "{}", kept.display());
    }

    let etag =
        parse_entry_name(std::ffi::OsStr::new("c076a9c9e1065be6b8c7d3475c11c4e8")).expect("hex");
    let snapshot = zone.peek(&etag).expect("indexed");
    assert!(snapshot.exists);
    assert_eq!(snapshot.uses, 1);
    let metadata = std::fs::metadata(root.join(ETAG_ENTRY)).expect("stat");
    assert_eq!(
        snapshot.uniq,
        std::os::unix::fs::MetadataExt::ino(&metadata)
    );
    assert_eq!(zone.count(), 2);
    assert_eq!(zone.size(), 2 * 4096);

    let lines = lines.taken();
    assert_eq!(
        lines,
        vec![
            (
                Level::Crit,
                format!("cache file \"{}\" is too small", small.display())
            ),
            (
                Level::Notice,
                format!("http file cache: {} 0.008M, bsize: 4096", root.display())
            ),
        ]
    );
}

#[test]
fn the_walk_is_paced() {
    let dir = TestDir::new("loader-pace");
    for n in 0..5u8 {
        put(
            dir.path(),
            &format!("{n}/00/{:032x}", u128::from(n) << 64),
            &[0; 400],
        );
    }
    let mut p = params(&dir, 1 << 20);
    p.loader_files = 2;
    p.loader_sleep = Duration::from_millis(7);
    let zone = Zone::with_block_size(p, 4096);
    let slept = Mutex::new(Vec::new());
    let mut pace = Pace::new(&zone, |duration| {
        slept.lock().expect("slept").push(duration);
        true
    });
    let report = load(&zone, &|_, _| {}, &mut pace);
    drop(pace);
    assert_eq!(report.added, 5);
    assert_eq!(report.sleeps, 2);
    assert_eq!(
        *slept.lock().expect("slept"),
        vec![Duration::from_millis(7); 2]
    );
}

#[test]
fn a_stopped_walk_leaves_the_zone_cold() {
    let dir = TestDir::new("loader-stop");
    for n in 0..3u8 {
        put(
            dir.path(),
            &format!("{n}/00/{:032x}", u128::from(n) << 64),
            &[0; 400],
        );
    }
    let mut p = params(&dir, 1 << 20);
    p.loader_files = 1;
    let zone = Zone::with_block_size(p, 4096);
    let report = load(&zone, &|_, _| {}, &mut Pace::new(&zone, |_| false));
    assert!(!report.complete);
    assert_eq!(report.added, 1);
    assert!(zone.cold());
    // A partial index is not saved as if it were whole.
    assert_eq!(
        crate::persist::write_snapshot(&zone, Instant::now()).expect("io"),
        crate::persist::Saved::Incomplete
    );
    assert!(!crate::persist::snapshot_path(&zone.params().layout).exists());
}

#[test]
fn workers_and_a_full_zone_come_first() {
    let dir = TestDir::new("loader-full");
    copy_golden(dir.path());
    // Room for one key, which a worker already took.
    let zone = Zone::with_block_size(params(&dir, 8192 + 128), 4096);
    let etag =
        parse_entry_name(std::ffi::OsStr::new("c076a9c9e1065be6b8c7d3475c11c4e8")).expect("hex");
    zone.touch(&etag, Instant::now()).expect("room");
    let report = load(&zone, &|_, _| {}, &mut Pace::new(&zone, never_sleeps));
    assert_eq!((report.added, report.known, report.deleted), (0, 1, 1));
    assert!(!dir.path().join(VARY_ENTRY).exists(), "no room: deleted");
    assert!(dir.path().join(ETAG_ENTRY).exists());
    // The worker's request only touched the key (the zone was cold): its node takes the
    // file the walk found, or the key would go upstream once the zone is warm.
    let node = zone.peek(&etag).expect("kept");
    assert!(node.exists, "the file is given to the worker's node");
    assert_eq!(node.uses, 1, "the worker's use, not a second one");
}

#[test]
fn the_thread_loads_and_ends() {
    let dir = TestDir::new("loader-thread");
    copy_golden(dir.path());
    let zone = Zone::with_block_size(params(&dir, 1 << 20), 4096);
    let handle = Loader::spawn(Arc::clone(&zone), |_, _| {}).expect("spawn");
    let report = handle.join().expect("no panic");
    assert!(report.complete);
    assert_eq!(report.added, 2);
    assert!(!zone.cold());
}

#[test]
fn summary_prints_mebibytes_with_three_decimals() {
    assert_eq!(
        summary(
            Path::new("/var/cache/p"),
            3 * 1024 * 1024 + 512 * 1024,
            4096
        ),
        "http file cache: /var/cache/p 3.500M, bsize: 4096"
    );
    assert_eq!(
        summary(Path::new("/c"), 12_940_000, 512),
        "http file cache: /c 12.341M, bsize: 512"
    );
}

#[test]
fn a_clean_snapshot_replaces_the_walk() {
    let dir = TestDir::new("loader-snapshot");
    copy_golden(dir.path());
    let zone = Zone::with_block_size(params(&dir, 1 << 20), 4096);
    let report = load(&zone, &|_, _| {}, &mut Pace::new(&zone, never_sleeps));
    assert_eq!(report.added, 2);
    crate::persist::write_snapshot(&zone, Instant::now()).expect("written");
    drop(zone);
    // A file the walk would delete shows that no walk ran.
    let junk = put(dir.path(), "junk.txt", b"x");

    let zone = Zone::with_block_size(params(&dir, 1 << 20), 4096);
    let lines = Lines::default();
    let report = load_or_walk(&zone, &lines.log(), &mut Pace::new(&zone, never_sleeps));
    assert!(report.from_snapshot);
    assert_eq!(report.added, 2);
    assert!(!zone.cold());
    assert!(junk.exists());
    let snapshot = crate::persist::snapshot_path(&zone.params().layout);
    assert_eq!(
        lines.taken(),
        vec![
            (
                Level::Notice,
                format!("cache \"load\": 2 entries from \"{}\"", snapshot.display())
            ),
            (
                Level::Notice,
                format!(
                    "http file cache: {} 0.008M, bsize: 4096",
                    dir.path().display()
                )
            ),
        ]
    );

    // Next start (as after a crash): the snapshot was used up (it is the checkpoint now),
    // so the tree is walked, and finds the entries the checkpoint gave back.
    let zone = Zone::with_block_size(params(&dir, 1 << 20), 4096);
    let report = load_or_walk(&zone, &|_, _| {}, &mut Pace::new(&zone, never_sleeps));
    assert!(!report.from_snapshot);
    assert_eq!((report.added, report.known, report.deleted), (0, 2, 1));
}

#[test]
fn a_damaged_snapshot_is_reported_and_walked_past() {
    let dir = TestDir::new("loader-bad-snapshot");
    copy_golden(dir.path());
    let zone = Zone::with_block_size(params(&dir, 1 << 20), 4096);
    let snapshot = crate::persist::snapshot_path(&zone.params().layout);
    put(
        dir.path(),
        ".portico/index.snap",
        b"garbage, not a snapshot",
    );
    let lines = Lines::default();
    let report = load_or_walk(&zone, &lines.log(), &mut Pace::new(&zone, never_sleeps));
    assert!(!report.from_snapshot);
    assert_eq!(report.added, 2);
    let lines = lines.taken();
    assert_eq!(
        lines[0],
        (
            Level::Warn,
            format!(
                "cache index snapshot \"{}\" not used: too short",
                snapshot.display()
            )
        )
    );
    assert!(!snapshot.exists());
}
