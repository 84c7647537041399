//! The worker's buffers for log files written with `buffer=` (`access_log`), one per
//! slot the configuration numbered, and the scratch space log lines are made in.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use logging::{AccessLogBuffer, LogFile};

use crate::modules::log::settings::{Buffering, OpenLogFileCache};

/// The buffers of `access_log ... buffer=`, one per slot the configuration numbered,
/// shared by the workers of a configuration: lines keep the order in which they were
/// logged, whichever worker logged them (nginx's buffers are per worker process).
#[derive(Debug, Default)]
pub struct SharedBuffers(std::sync::Mutex<Vec<Option<AccessLogBuffer>>>);

impl SharedBuffers {
    /// Room for the `slots` buffered logs a configuration numbered.
    pub fn with_slots(slots: usize) -> SharedBuffers {
        SharedBuffers(std::sync::Mutex::new((0..slots).map(|_| None).collect()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<AccessLogBuffer>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One worker's side of the log buffers, and its scratch space.
#[derive(Debug, Default)]
pub struct LogBuffers {
    buffers: Arc<SharedBuffers>,
    /// Reused for each line, so that logging allocates only while lines grow.
    pub line: Vec<u8>,
    pub scratch: Vec<u8>,
    /// Lines for logs whose paths have variables are written on a pool one at a time, in
    /// the order the worker logged them (this is held while one is written).
    pub path_lines: std::rc::Rc<tokio::sync::Mutex<()>>,
    /// How many of those lines are not written yet: a connection that closes waits for
    /// them, as nginx has written its line before it closes.
    pub path_pending: std::rc::Rc<PathPending>,
}

/// A count of lines waiting to be written, and their writers' signal.
#[derive(Debug, Default)]
pub struct PathPending {
    pub count: std::cell::Cell<usize>,
    pub done: tokio::sync::Notify,
}

impl PathPending {
    /// Until every line counted so far is written.
    pub async fn written(&self) {
        while self.count.get() > 0 {
            self.done.notified().await;
        }
    }
}

impl LogBuffers {
    pub fn new(buffers: Arc<SharedBuffers>) -> LogBuffers {
        LogBuffers {
            buffers,
            line: Vec::new(),
            scratch: Vec::new(),
            path_lines: std::rc::Rc::default(),
            path_pending: std::rc::Rc::default(),
        }
    }

    /// Writes a line to `file`: at once without `buffering`, else into its slot's buffer,
    /// which writes when full or when its `flush=` interval has passed.
    pub fn write(
        &mut self,
        file: &Arc<LogFile>,
        buffering: Option<Buffering>,
        line: &[u8],
        now: Instant,
    ) {
        let Some(buffering) = buffering else {
            file.append(line.to_vec());
            return;
        };
        let mut slots = self.buffers.lock();
        let Some(slot) = slots.get_mut(buffering.slot) else {
            // A slot the configuration did not number: written as it comes.
            file.append(line.to_vec());
            return;
        };
        let buffer = slot.get_or_insert_with(|| {
            let buffer = AccessLogBuffer::new(Arc::clone(file), buffering.size, buffering.flush);
            match buffering.gzip {
                Some(level) => buffer.compressed(level),
                None => buffer,
            }
        });
        let _ = buffer.append(line, now);
    }

    /// Flushes the buffers whose `flush=` interval has passed.
    pub(crate) fn flush_due(&mut self, now: Instant) {
        for buffer in self.buffers.lock().iter_mut().flatten() {
            if buffer.flush_due(now) {
                let _ = buffer.flush();
            }
        }
    }

    /// Flushes everything (the worker is exiting or the logs are being reopened).
    pub(crate) fn flush_all(&mut self) {
        for buffer in self.buffers.lock().iter_mut().flatten() {
            let _ = buffer.flush();
        }
    }
}

/// The `open_log_file_cache`s of a configuration: the descriptors of logs whose paths
/// have variables, by the directive that set the cache (its address) and the path.
#[derive(Debug, Default)]
pub struct PathFiles {
    nodes: HashMap<(usize, PathBuf), PathFile>,
    /// Least recently used first, by use number.
    order: BTreeMap<u64, (usize, PathBuf)>,
    /// Nodes per cache, against its `max`.
    counts: HashMap<usize, usize>,
    uses: u64,
}

#[derive(Debug)]
struct PathFile {
    file: Option<(Arc<File>, Instant)>,
    uses: u32,
    last_used: Instant,
    inactive: std::time::Duration,
    order: u64,
}

/// How a line for a cached path is written.
#[derive(Debug)]
pub enum PathUse {
    /// Through the kept descriptor.
    Kept(Arc<File>),
    /// Open the path; keep the descriptor afterwards if `keep`.
    Open { keep: bool },
}

impl PathFiles {
    /// A line is about to be written to `path` under `cache`: counts the use of a known
    /// path and forgets paths idle longer than their `inactive`. A path the cache does not
    /// know yet is counted once it opened ([`PathFiles::opened`]), as nginx counts only
    /// files it could open.
    pub fn use_path(
        &mut self,
        cache: &Arc<OpenLogFileCache>,
        path: &Path,
        now: Instant,
    ) -> PathUse {
        self.expire(now);
        let key = (Arc::as_ptr(cache) as usize, path.to_path_buf());
        let Some(node) = self.nodes.get_mut(&key) else {
            return PathUse::Open {
                keep: cache.min_uses <= 1,
            };
        };
        self.uses += 1;
        self.order.remove(&node.order);
        node.order = self.uses;
        node.uses = node.uses.saturating_add(1);
        node.last_used = now;
        self.order.insert(self.uses, key);
        if let Some((file, opened)) = &node.file {
            if now.duration_since(*opened) < cache.valid {
                return PathUse::Kept(Arc::clone(file));
            }
            node.file = None;
        }
        PathUse::Open {
            keep: node.uses >= cache.min_uses,
        }
    }

    /// `path` opened and its line is written: a path new to the cache is counted (making
    /// room within `max` by forgetting the least recently used path), and the descriptor
    /// is kept when its path had reached `min_uses`.
    pub fn opened(
        &mut self,
        cache: &Arc<OpenLogFileCache>,
        path: &Path,
        file: Option<Arc<File>>,
        now: Instant,
    ) {
        let id = Arc::as_ptr(cache) as usize;
        let key = (id, path.to_path_buf());
        if let Some(node) = self.nodes.get_mut(&key) {
            if let Some(file) = file {
                node.file = Some((file, now));
            }
            return;
        }
        while self.counts.get(&id).copied().unwrap_or(0) >= cache.max {
            let Some(oldest) = self.order.values().find(|(owner, _)| *owner == id).cloned() else {
                break;
            };
            self.forget(&oldest);
        }
        self.uses += 1;
        self.nodes.insert(
            key.clone(),
            PathFile {
                file: file.map(|file| (file, now)),
                uses: 1,
                last_used: now,
                inactive: cache.inactive,
                order: self.uses,
            },
        );
        self.order.insert(self.uses, key);
        *self.counts.entry(id).or_default() += 1;
    }

    fn expire(&mut self, now: Instant) {
        while let Some((_, key)) = self.order.first_key_value() {
            let idle = self
                .nodes
                .get(key)
                .is_none_or(|node| now.duration_since(node.last_used) > node.inactive);
            if !idle {
                break;
            }
            let key = key.clone();
            self.forget(&key);
        }
    }

    fn forget(&mut self, key: &(usize, PathBuf)) {
        if let Some(node) = self.nodes.remove(key) {
            self.order.remove(&node.order);
            if let Some(count) = self.counts.get_mut(&key.0) {
                *count = count.saturating_sub(1);
            }
        }
    }
}

/// How long a closing connection waits for its log lines at most. The log writer takes
/// microseconds when its disk answers; when the disk does not (a log file whose last block
/// is read back through a saturated disk, a pipe nobody reads), connections closed
/// meanwhile would each keep their descriptor and their `worker_connections` slot for as
/// long, and a client opening thousands of connections a second would find the worker
/// full. So the wait is bounded, and skipped while the writer is stalled.
const LOG_WAIT_MAX: std::time::Duration = std::time::Duration::from_millis(50);

/// Until the lines this worker logged so far are written: those the log writer thread has
/// queued ([`logging::writer`]) and those to paths with variables. nginx has written a
/// request's log line before it closes the connection; so has Portico, unless the log's
/// disk keeps the line longer than [`LOG_WAIT_MAX`] or the writer is stalled
/// ([`logging::writer::stalled`]).
pub(crate) async fn log_lines_written(worker: &crate::kernel::worker::HttpWorker) {
    let queued = logging::writer::written();
    let pending = std::rc::Rc::clone(&worker.log_buffers.borrow().path_pending);
    let wait_queued = !queued.is_done() && !logging::writer::stalled();
    if !wait_queued && pending.count.get() == 0 {
        return;
    }
    let both = async {
        if wait_queued {
            queued.await;
        }
        pending.written().await;
    };
    let _ = tokio::time::timeout(LOG_WAIT_MAX, both).await;
}

/// Until `lines` are written, as [`log_lines_written`] waits: at most [`LOG_WAIT_MAX`], and
/// not at all while the writer is stalled (a response must not wait on a log's disk).
pub(crate) async fn log_written(lines: logging::writer::Written) {
    if lines.is_done() || logging::writer::stalled() {
        return;
    }
    let _ = tokio::time::timeout(LOG_WAIT_MAX, lines).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cache(max: usize, min_uses: u32) -> Arc<OpenLogFileCache> {
        Arc::new(OpenLogFileCache {
            max,
            inactive: Duration::from_secs(10),
            min_uses,
            valid: Duration::from_secs(60),
        })
    }

    fn kept(
        files: &mut PathFiles,
        cache: &Arc<OpenLogFileCache>,
        path: &str,
        now: Instant,
    ) -> bool {
        match files.use_path(cache, Path::new(path), now) {
            PathUse::Kept(_) => true,
            PathUse::Open { keep } => {
                let file = keep.then(|| Arc::new(File::open("/dev/null").unwrap()));
                files.opened(cache, Path::new(path), file, now);
                false
            }
        }
    }

    /// access_log.t's sequence: with `max=3 min_uses=2`, the paths used twice are kept,
    /// and a fourth path pushes out the least recently used one.
    #[test]
    fn min_uses_and_max_as_nginx() {
        let cache = cache(3, 2);
        let mut files = PathFiles::default();
        let now = Instant::now();
        for path in ["lru", "lru", "once", "first", "first", "second", "second"] {
            kept(&mut files, &cache, path, now);
        }
        assert!(!kept(&mut files, &cache, "lru", now), "lru was pushed out");
        // A path that fails to open is not counted: nothing else is pushed out.
        assert!(matches!(
            files.use_path(&cache, Path::new("missing"), now),
            PathUse::Open { keep: false }
        ));
        assert!(kept(&mut files, &cache, "first", now));
        assert!(kept(&mut files, &cache, "second", now));
    }

    #[test]
    fn idle_paths_are_forgotten_and_valid_ends_a_descriptor() {
        let cache = Arc::new(OpenLogFileCache {
            max: 10,
            inactive: Duration::from_secs(10),
            min_uses: 1,
            valid: Duration::from_secs(30),
        });
        let mut files = PathFiles::default();
        let start = Instant::now();
        assert!(!kept(&mut files, &cache, "a", start));
        assert!(kept(
            &mut files,
            &cache,
            "a",
            start + Duration::from_secs(5)
        ));
        assert!(!kept(
            &mut files,
            &cache,
            "b",
            start + Duration::from_secs(20)
        ));
        assert!(files.nodes.len() == 1, "a was idle for 15 s");
        for seconds in [25, 34, 43] {
            kept(
                &mut files,
                &cache,
                "b",
                start + Duration::from_secs(seconds),
            );
        }
        assert!(
            !kept(&mut files, &cache, "b", start + Duration::from_secs(51)),
            "opened again after valid"
        );
    }
}
