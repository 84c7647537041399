//! `pin_hot_files`: the pages of the most requested files locked in memory, so that a hot
//! file never waits behind cold reads for a page that memory pressure took away.
//!
//! Under a page cache smaller than the data set, the kernel evicts a few pages of even the
//! hottest file now and then; each is read back through the disk's queue, behind every
//! cold read, and every request for the file waits for it (the seed's hot file's tail).
//! A file that one worker served `uses` times within `inactive` is mapped and locked
//! (`mlock`, off the worker: locking reads in what is missing) while the pinned bytes of
//! the process stay within the budget; a pin unused for `inactive` is let go, and a file
//! changed on disk (another inode, size or modification time) is a new file. Serving does
//! not change: the locked pages are the page cache the send path already reads, so the
//! residency checks find them and the pool's `sendfile` never waits for the disk.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use runtime::sys::linux::LockedMapping;
use threadpool::ThreadPool;

/// `pin_hot_files size [uses=N] [inactive=time]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinHotFiles {
    /// The most bytes pinned at once in the process.
    pub budget: u64,
    /// Requests one worker serves within `inactive` before the file is pinned.
    pub uses: u32,
    /// How long a file stays pinned, or counted, without a request.
    pub inactive: Duration,
}

impl PinHotFiles {
    pub const DEFAULT_USES: u32 = 8;
    pub const DEFAULT_INACTIVE: Duration = Duration::from_secs(10);
}

/// A file as it is on disk now: device and inode, size, modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    uniq: (u64, u64),
    len: u64,
    modified: i64,
}

/// One pinned (or being pinned) file.
#[derive(Debug)]
struct Pin {
    /// `None` while a pool thread locks it.
    mapping: Option<LockedMapping>,
    len: u64,
    last_use: Instant,
    inactive: Duration,
}

/// The process's pins.
#[derive(Debug, Default)]
struct Pins {
    files: HashMap<Key, Pin>,
    /// Bytes of `files`, locked or being locked.
    bytes: u64,
    /// Set when a lock failed: no more are tried until the pins are let go.
    refused: bool,
    /// Whether a refused lock was logged: once per process.
    logged: bool,
}

static PINS: Mutex<Option<Pins>> = Mutex::new(None);

/// Work for the locking thread.
type Job = Box<dyn FnOnce() + Send>;

/// The thread that locks and unmaps pins ([`start_locker`]); without it, the pool does.
static LOCKER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);

/// Starts the thread that locks hot files' pages, with the calling thread's credentials:
/// the master calls it, so that locking is not bound by the `RLIMIT_MEMLOCK` of the
/// workers' `user` (Linux credentials are per thread). The thread waits for work and does
/// nothing else; a second call keeps the first thread.
pub fn start_locker() -> std::io::Result<()> {
    let mut locker = LOCKER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if locker.is_some() {
        return Ok(());
    }
    let (sender, receiver) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("pin locker".to_owned())
        .spawn(move || {
            for job in receiver {
                job();
            }
        })?;
    *locker = Some(sender);
    Ok(())
}

/// Runs `job` on the locking thread, or on `pool` when there is none. `false` when neither
/// took it.
fn run(pool: &ThreadPool, job: impl FnOnce() + Send + 'static) -> bool {
    let locker = LOCKER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    match locker {
        Some(sender) => sender.send(Box::new(job)).is_ok(),
        None => pool.submit(job).is_ok(),
    }
}

fn table() -> MutexGuard<'static, Option<Pins>> {
    PINS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How many files one worker counts at most; past it the counts start over.
const COUNTED_MAX: usize = 4096;

thread_local! {
    /// This worker's requests per file since the first of the window.
    static COUNTS: RefCell<HashMap<Key, (u32, Instant)>> = RefCell::new(HashMap::new());
}

/// What the pins hold now: files and bytes (locked or being locked).
pub fn pinned() -> (usize, u64) {
    table()
        .as_ref()
        .map_or((0, 0), |pins| (pins.files.len(), pins.bytes))
}

/// Counts a request for a regular file about to be served from `file`, and pins the file
/// once it is hot. The table is looked at once per `uses` requests of a file, not per
/// request. `failed` is called (on the pool thread) with `mlock`'s error the first time in
/// the process a lock fails; after a failure no lock is tried until every pin is gone.
pub(crate) fn note_use(
    settings: &PinHotFiles,
    file: &Arc<File>,
    uniq: (u64, u64),
    len: u64,
    modified: i64,
    pool: &ThreadPool,
    failed: impl FnOnce(std::io::Error) + Send + 'static,
) {
    if len == 0 || len > settings.budget {
        return;
    }
    let key = Key {
        uniq,
        len,
        modified,
    };
    let now = runtime::clock::monotonic();
    let hot = COUNTS.with(|counts| {
        let mut counts = counts.borrow_mut();
        if counts.len() >= COUNTED_MAX && !counts.contains_key(&key) {
            counts.clear();
        }
        let (count, since) = counts.entry(key).or_insert((0, now));
        if now.saturating_duration_since(*since) > settings.inactive {
            (*count, *since) = (0, now);
        }
        *count += 1;
        if *count < settings.uses {
            return false;
        }
        (*count, *since) = (0, now);
        true
    });
    if !hot {
        return;
    }
    let mut guard = table();
    let pins = guard.get_or_insert_with(Pins::default);
    if let Some(pin) = pins.files.get_mut(&key) {
        pin.last_use = now;
        return;
    }
    if pins.refused {
        return;
    }
    let released = release_for(pins, len, settings.budget, now);
    if pins.bytes + len > settings.budget {
        drop(guard);
        drop_on(pool, released);
        return;
    }
    pins.bytes += len;
    pins.files.insert(
        key,
        Pin {
            mapping: None,
            len,
            last_use: now,
            inactive: settings.inactive,
        },
    );
    drop(guard);
    let file = Arc::clone(file);
    let submitted = run(pool, move || {
        drop(released);
        let locked = LockedMapping::lock(&file, len);
        let mut guard = table();
        let Some(pins) = guard.as_mut() else {
            return;
        };
        match locked {
            Ok(mapping) => {
                if let Some(pin) = pins.files.get_mut(&key) {
                    pin.mapping = Some(mapping);
                }
            }
            Err(error) => {
                if pins.files.remove(&key).is_some() {
                    pins.bytes -= len;
                }
                pins.refused = true;
                let first = !std::mem::replace(&mut pins.logged, true);
                drop(guard);
                if first {
                    failed(error);
                }
            }
        }
    });
    if !submitted {
        // A full queue: the file is counted again and tried later.
        let mut guard = table();
        if let Some(pins) = guard.as_mut()
            && pins.files.remove(&key).is_some()
        {
            pins.bytes -= len;
        }
    }
}

/// Takes out of `pins` the ones unused for their `inactive`, and then, oldest use first,
/// as many locked ones as `len` more bytes need under `budget`. Returns them, to be
/// unmapped off the worker.
fn release_for(pins: &mut Pins, len: u64, budget: u64, now: Instant) -> Vec<LockedMapping> {
    let mut released = Vec::new();
    let stale: Vec<Key> = pins
        .files
        .iter()
        .filter(|(_, pin)| {
            pin.mapping.is_some() && now.saturating_duration_since(pin.last_use) > pin.inactive
        })
        .map(|(key, _)| *key)
        .collect();
    for key in stale {
        release(pins, &key, &mut released);
    }
    while pins.bytes + len > budget {
        let oldest = pins
            .files
            .iter()
            .filter(|(_, pin)| pin.mapping.is_some())
            .min_by_key(|(_, pin)| pin.last_use)
            .map(|(key, _)| *key);
        let Some(key) = oldest else {
            break;
        };
        release(pins, &key, &mut released);
    }
    released
}

fn release(pins: &mut Pins, key: &Key, released: &mut Vec<LockedMapping>) {
    if let Some(pin) = pins.files.remove(key) {
        pins.bytes -= pin.len;
        released.extend(pin.mapping);
    }
}

/// Unmaps `released` off the worker ([`run`]: unmapping a large locked range is not
/// free), or here when nothing takes it.
fn drop_on(pool: &ThreadPool, released: Vec<LockedMapping>) {
    if !released.is_empty() {
        run(pool, move || drop(released));
    }
}

/// Lets go of the pins unused for their `inactive`; a worker calls it about once a second.
/// After a refused lock, trying again waits until every pin is gone.
pub fn sweep(pool: &ThreadPool) {
    let now = runtime::clock::monotonic();
    let mut guard = table();
    let Some(pins) = guard.as_mut() else {
        return;
    };
    if pins.files.is_empty() {
        pins.refused = false;
        return;
    }
    let released = release_for(pins, 0, u64::MAX, now);
    drop(guard);
    drop_on(pool, released);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(budget: u64) -> PinHotFiles {
        PinHotFiles {
            budget,
            uses: 3,
            inactive: Duration::from_secs(60),
        }
    }

    fn temp_file(name: &str, len: usize) -> (std::path::PathBuf, Arc<File>, (u64, u64)) {
        use std::os::unix::fs::MetadataExt;
        let path = std::env::temp_dir().join(format!("portico-pin-{name}-{}", std::process::id()));
        std::fs::write(&path, vec![1u8; len]).unwrap();
        let file = File::open(&path).unwrap();
        let meta = file.metadata().unwrap();
        (path, Arc::new(file), (meta.dev(), meta.ino()))
    }

    fn wait_for(what: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !what() {
            assert!(Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn locked(uniq: (u64, u64)) -> bool {
        table().as_ref().is_some_and(|pins| {
            pins.files
                .iter()
                .any(|(key, pin)| key.uniq == uniq && pin.mapping.is_some())
        })
    }

    /// One test for the process-wide table: a file is pinned on its `uses`-th request, a
    /// second one that does not fit the budget takes the place of the older, and a sweep
    /// lets go of what is unused.
    #[test]
    fn hot_files_are_pinned_within_the_budget() {
        let pool = ThreadPool::start(&threadpool::PoolSettings::default_pool(), None).unwrap();
        let (first_path, first, first_uniq) = temp_file("a", 64 * 1024);
        let (second_path, second, second_uniq) = temp_file("b", 48 * 1024);
        let budget = settings(100 * 1024);
        let note = |file: &Arc<File>, uniq, len| {
            note_use(&budget, file, uniq, len, 7, &pool, |error| {
                panic!("mlock failed: {error}")
            });
        };
        note(&first, first_uniq, 64 * 1024);
        note(&first, first_uniq, 64 * 1024);
        assert!(!locked(first_uniq), "two requests are not hot");
        note(&first, first_uniq, 64 * 1024);
        wait_for(|| locked(first_uniq));
        assert_eq!(pinned(), (1, 64 * 1024));
        // A file larger than the budget is never counted.
        for _ in 0..5 {
            note_use(&settings(1024), &first, (0, 1), 64 * 1024, 7, &pool, |_| {});
        }
        assert_eq!(pinned().0, 1);
        // The second does not fit beside the first: the first, used longer ago, goes.
        for _ in 0..3 {
            note(&second, second_uniq, 48 * 1024);
        }
        wait_for(|| locked(second_uniq));
        assert!(!locked(first_uniq));
        assert_eq!(pinned(), (1, 48 * 1024));
        // Unused pins go at a sweep once `inactive` passed; here the pin is forced old.
        if let Some(pins) = table().as_mut() {
            for pin in pins.files.values_mut() {
                pin.inactive = Duration::ZERO;
                pin.last_use = Instant::now() - Duration::from_millis(10);
            }
        }
        sweep(&pool);
        assert_eq!(pinned(), (0, 0));
        pool.shutdown();
        std::fs::remove_file(first_path).unwrap();
        std::fs::remove_file(second_path).unwrap();
    }
}
