//! What one worker keeps for HTTP: the generation it serves, its clock, its access-log
//! buffers and the cached `Date` header.

use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use logging::ErrorLog;
use runtime::{Clock, PeerAddress, Phase, Stream};
use threadpool::{TaskKind, ThreadPool, ThreadPools};
use tokio::sync::watch;

use crate::kernel::conf::{AddressConf, HttpConf};
use crate::kernel::log_buffers::LogBuffers;

/// A loaded configuration's HTTP side and the resources it owns, shared by the workers of
/// one generation.
#[derive(Debug)]
pub struct Generation {
    /// Counts up with each reload; thread names and logs carry it.
    pub number: u64,
    pub http: HttpConf,
    /// Each worker's own instance of every pool (nginx's pools are per worker process),
    /// by worker index.
    pub worker_pools: Vec<ThreadPools>,
    /// Connection serial numbers, shared by every worker of every generation.
    pub connection_ids: Arc<AtomicU64>,
    /// nginx's temporary number: the boundaries of `multipart/byteranges` responses count
    /// up from 1 with it.
    pub temp_numbers: AtomicU64,
    pub hostname: String,
    /// The main context's error log.
    pub error_log: Arc<ErrorLog>,
    /// `debug_connection`: the clients whose connections log at `debug` everywhere.
    pub debug_connections: Option<shared::access::Rules>,
    /// The `proxy_cache_path` zones, by `CacheZoneId`: shared with the generations before
    /// and after this one that declare the same zone.
    pub cache_zones: Vec<Arc<cache::Zone>>,
    /// The descriptors `open_log_file_cache` keeps, shared by the workers: one descriptor
    /// per path for the whole server (nginx keeps one per worker process).
    pub log_files: std::sync::Mutex<crate::kernel::log_buffers::PathFiles>,
    /// The buffers of `access_log ... buffer=`, shared by the workers.
    pub access_log_buffers: Arc<crate::kernel::log_buffers::SharedBuffers>,
}

/// A stopwatch for file operations that may block the worker, for the stall watcher. It
/// reads the coarse monotonic clock (a few milliseconds of resolution, no cycle counter to
/// read), which is plenty against the watcher's threshold and costs less than `Instant`
/// on the path of every static request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockingTimer(rustix::time::Timespec);

impl BlockingTimer {
    pub fn start() -> BlockingTimer {
        BlockingTimer(rustix::time::clock_gettime(
            rustix::time::ClockId::MonotonicCoarse,
        ))
    }

    pub fn elapsed(self) -> Duration {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
        let nanos = (i128::from(now.tv_sec) - i128::from(self.0.tv_sec)) * 1_000_000_000
            + (i128::from(now.tv_nsec) - i128::from(self.0.tv_nsec));
        Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
    }
}

/// Per-worker HTTP state.
pub struct HttpWorker {
    pub generation: Arc<Generation>,
    /// This worker's pools: `aio threads=POOL` and, for request-body temp files,
    /// `if (-f ...)` and `$realpath_root`, the `default` pool.
    pub pools: ThreadPools,
    pub clock: Rc<Clock>,
    pub phase: watch::Receiver<Phase>,
    pub log_buffers: RefCell<LogBuffers>,
    date: RefCell<DateCache>,
    /// Set once the worker stops taking requests.
    draining: Cell<bool>,
    /// Set once idle keep-alive connections have had their grace after `draining`.
    idle_grace_over: Cell<bool>,
    /// The master's stop flag, seen by the request path without waiting for this worker's
    /// phase task to run.
    stopping: Arc<AtomicBool>,
    /// Idle keep-alive connections, woken by a read shutdown when the worker drains.
    idle: RefCell<IdleSet>,
    /// This worker's `open_file_cache`s.
    pub open_files: RefCell<crate::kernel::file::open_cache::OpenFileCaches>,
    /// The longest blocking file operation made on this worker since the stall watcher
    /// last looked, and what it was.
    slowest_blocking: RefCell<Option<(Duration, String)>>,
    /// The loop stalls the stall watcher has measured, by length.
    stall_counts: Cell<StallCounts>,
    /// This worker's counters (`stub_status`, metrics); it is their only writer.
    pub stats: Arc<metrics::WorkerStats>,
    /// The end `worker_shutdown_timeout` puts to the requests still running.
    cut: Cut,
}

/// When `worker_shutdown_timeout` passes, the requests still running are told to stop and
/// log their line (nginx logs the requests of the connections it closes then), before the
/// worker's runtime drops what is left, where nothing could be logged.
#[derive(Default)]
struct Cut {
    /// Set once: the requests are to stop.
    done: Cell<bool>,
    /// Wakes the requests waiting in [`HttpWorker::requests_cut`].
    requested: tokio::sync::Notify,
    /// Requests that take part ([`HttpWorker::cuttable_request`]) and have not ended.
    open: Cell<usize>,
    /// Wakes [`HttpWorker::cut_requests`] when the last of them ended.
    ended: tokio::sync::Notify,
}

/// Counts a request in [`Cut::open`] until dropped (when it has logged, or was dropped).
pub(crate) struct CuttableRequest<'a> {
    worker: &'a HttpWorker,
}

impl Drop for CuttableRequest<'_> {
    fn drop(&mut self) {
        let cut = &self.worker.cut;
        cut.open.set(cut.open.get().saturating_sub(1));
        if cut.open.get() == 0 {
            cut.ended.notify_waiters();
        }
    }
}

impl Drop for HttpWorker {
    fn drop(&mut self) {
        metrics::GLOBAL.retire(&self.stats);
    }
}

/// How many times a worker's loop was kept from turning, by length: the stall watcher's
/// measurement, reported when the worker exits (and read by the benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StallCounts {
    pub at_least_10_ms: u64,
    pub at_least_100_ms: u64,
    pub at_least_1000_ms: u64,
}

impl StallCounts {
    /// Counts one stall of `stall` (shorter than 10 ms counts nowhere).
    pub fn add(&mut self, stall: Duration) {
        let millis = stall.as_millis();
        self.at_least_10_ms += u64::from(millis >= 10);
        self.at_least_100_ms += u64::from(millis >= 100);
        self.at_least_1000_ms += u64::from(millis >= 1000);
    }
}

#[derive(Default)]
struct DateCache {
    second: i64,
    value: Vec<u8>,
}

/// The sockets of idle keep-alive connections.
#[derive(Debug, Default)]
struct IdleSet {
    slots: Vec<Option<RawFd>>,
    free: Vec<usize>,
}

impl IdleSet {
    fn insert(&mut self, fd: RawFd) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(fd);
                slot
            }
            None => {
                self.slots.push(Some(fd));
                self.slots.len() - 1
            }
        }
    }

    fn remove(&mut self, slot: usize) {
        debug_assert!(self.slots[slot].is_some(), "an idle slot is removed once");
        self.slots[slot] = None;
        self.free.push(slot);
    }

    fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.slots.iter().flatten().copied()
    }
}

/// Keeps a connection in the idle set; dropped before the connection's socket closes.
pub(crate) struct IdleGuard<'a> {
    worker: &'a HttpWorker,
    slot: usize,
}

impl Drop for IdleGuard<'_> {
    fn drop(&mut self) {
        self.worker.idle.borrow_mut().remove(self.slot);
    }
}

/// When a worker starts draining (reload, `QUIT`), an idle keep-alive connection may still
/// send one more request during this time; it is answered with `Connection: close`. A busy
/// client's next request is then never lost to a close that raced it (nginx closes idle
/// keep-alive connections at once, and such a request fails). After the grace, idle
/// connections close.
pub(crate) const IDLE_GRACE_ON_DRAIN: Duration = Duration::from_secs(1);

/// How often the stall watcher's timer is due.
pub const LOOP_STALL_TICK: Duration = Duration::from_millis(10);

/// The worker's busy time (`busy_microseconds`) is added every this many ticks (100 ms).
const BUSY_SAMPLE_TICKS: u32 = 10;

/// After this many ticks in a row without a turn of any connection's task (100 ms), the
/// stall watcher stops its timer until the next turn: an idle worker is not woken 100
/// times a second, as an idle nginx worker is not woken at all.
const QUIET_TICKS_BEFORE_REST: u32 = 10;

/// A worker loop kept from turning this long is logged at `warn`.
pub const LOOP_STALL_WARN: Duration = Duration::from_millis(100);

/// Stall warnings are written at most this often per worker.
pub(crate) const LOOP_STALL_REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// How often buffered access logs are checked for their `flush=` interval.
pub(crate) const ACCESS_LOG_FLUSH_CHECK: Duration = Duration::from_secs(1);

impl Generation {
    /// Whether `debug_connection` names a client at `peer` (the socket's address).
    pub fn debug_connection(&self, peer: &PeerAddress) -> bool {
        self.debug_connections
            .as_ref()
            .is_some_and(|rules| rules.check(peer) == Some(shared::access::Action::Allow))
    }
}

/// What the stall watcher has not warned of yet.
#[derive(Debug, Default)]
struct StallReport {
    warned_at: Option<std::time::Instant>,
    unreported: u64,
    worst: Duration,
}

impl HttpWorker {
    pub fn new(
        generation: Arc<Generation>,
        pools: ThreadPools,
        clock: Rc<Clock>,
        phase: watch::Receiver<Phase>,
        stopping: Arc<AtomicBool>,
        index: usize,
    ) -> HttpWorker {
        let buffers = Arc::clone(&generation.access_log_buffers);
        HttpWorker {
            generation,
            pools,
            clock,
            phase,
            log_buffers: RefCell::new(LogBuffers::new(buffers)),
            date: RefCell::new(DateCache {
                second: i64::MIN,
                value: Vec::new(),
            }),
            draining: Cell::new(false),
            idle_grace_over: Cell::new(false),
            idle: RefCell::new(IdleSet::default()),
            open_files: RefCell::default(),
            slowest_blocking: RefCell::new(None),
            stall_counts: Cell::new(StallCounts::default()),
            stopping,
            stats: metrics::GLOBAL.register(index),
            cut: Cut::default(),
        }
    }

    pub fn conf(&self) -> &HttpConf {
        &self.generation.http
    }

    pub(crate) fn next_connection_id(&self) -> u64 {
        self.generation
            .connection_ids
            .fetch_add(1, Ordering::Relaxed)
    }

    /// Whether the worker is still taking new requests.
    pub fn is_running(&self) -> bool {
        !self.draining.get() && !self.stopping.load(Ordering::Acquire)
    }

    pub fn is_draining(&self) -> bool {
        self.draining.get()
    }

    /// Whether an idle keep-alive connection must close now (see [`IDLE_GRACE_ON_DRAIN`]).
    pub(crate) fn idle_grace_over(&self) -> bool {
        self.idle_grace_over.get()
    }

    /// Registers an idle keep-alive connection until the guard drops, so that draining
    /// can wake it. Costs a slot in a vector: no waker, no lock.
    pub(crate) fn register_idle(&self, fd: RawFd) -> IdleGuard<'_> {
        let slot = self.idle.borrow_mut().insert(fd);
        IdleGuard { worker: self, slot }
    }

    /// Follows the master's commands: when the worker leaves `Running`, marks it draining
    /// and wakes every idle connection. Runs as a task for the worker's life; a per-worker
    /// flag keeps the per-request check to a `Cell` read.
    pub async fn watch_phase(self: Rc<Self>) {
        let mut phase = self.phase.clone();
        while *phase.borrow_and_update() == Phase::Running {
            if phase.changed().await.is_err() {
                break;
            }
        }
        self.draining.set(true);
        tokio::time::sleep(IDLE_GRACE_ON_DRAIN).await;
        self.idle_grace_over.set(true);
        for fd in self.idle.borrow().fds() {
            runtime::sys::linux::shutdown_read(fd);
        }
    }

    /// Tells the requests still running to stop and log (`worker_shutdown_timeout`
    /// passed) and waits, at most `grace`, until they have.
    pub async fn cut_requests(&self, grace: Duration) {
        let cut = &self.cut;
        cut.done.set(true);
        let ended = cut.ended.notified();
        cut.requested.notify_waiters();
        if cut.open.get() > 0 {
            let _ = tokio::time::timeout(grace, ended).await;
        }
    }

    /// Resolves once [`cut_requests`](Self::cut_requests) was called.
    pub(crate) async fn requests_cut(&self) {
        loop {
            let requested = self.cut.requested.notified();
            if self.cut.done.get() {
                return;
            }
            requested.await;
        }
    }

    /// Counts a request that stops when [`requests_cut`](Self::requests_cut) resolves,
    /// until the guard drops.
    pub(crate) fn cuttable_request(&self) -> CuttableRequest<'_> {
        self.cut.open.set(self.cut.open.get() + 1);
        CuttableRequest { worker: self }
    }

    /// Appends the `Date` header value for `unix_seconds`, formatted once per second.
    pub(crate) fn write_date(&self, unix_seconds: i64, out: &mut Vec<u8>) {
        let mut cache = self.date.borrow_mut();
        if cache.second != unix_seconds {
            cache.value.clear();
            http1::response::write_http_date(&mut cache.value, unix_seconds);
            cache.second = unix_seconds;
        }
        out.extend_from_slice(&cache.value);
    }

    /// The servers of the address a connection arrived on: for a wildcard socket with
    /// specific addresses behind it, chosen by the connection's local address.
    pub(crate) fn address_conf(&self, socket: usize, stream: &Stream) -> Option<&AddressConf> {
        let socket = self.conf().sockets.get(socket)?;
        if socket.addresses.len() == 1 {
            return socket.addresses.first();
        }
        let local = stream.local_address().map(|address| address.ip());
        socket
            .addresses
            .iter()
            .find(|address| address.ip.is_some() && address.ip == local)
            .or_else(|| socket.addresses.last())
    }

    /// Flushes buffered access logs whose interval passed, and lets go of hot-file pins no
    /// longer used; runs until the worker stops.
    pub async fn flush_access_logs_periodically(self: Rc<Self>) {
        let mut ticker = tokio::time::interval(ACCESS_LOG_FLUSH_CHECK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            self.log_buffers
                .borrow_mut()
                .flush_due(std::time::Instant::now());
            // `pin_hot_files`: pins unused for their `inactive` are let go.
            crate::kernel::file::pin::sweep(self.pools.default_pool());
        }
    }

    /// Runs `work` on this worker's `default` pool. A full queue or a lost task is a 500
    /// with the error-log line nginx writes when it cannot post a thread task.
    pub(crate) async fn offload<T: Send + 'static>(
        &self,
        kind: TaskKind,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, crate::kernel::file::io::FileError> {
        offload_to(self.pools.default_pool(), kind, work).await
    }

    /// Records a file operation that ran on this worker (`aio off`) and took `took`, for
    /// the stall watcher's warning. `what` is formatted only for a slow one.
    pub(crate) fn note_blocking(&self, took: Duration, what: impl FnOnce() -> String) {
        self.stats.blocking_calls.add(1);
        self.stats
            .blocking_microseconds
            .add(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
        if took < LOOP_STALL_WARN / 2 {
            return;
        }
        let mut slowest = self.slowest_blocking.borrow_mut();
        if slowest.as_ref().is_none_or(|(longest, _)| took > *longest) {
            *slowest = Some((took, what()));
        }
    }

    /// Measures this worker's loop: a timer due every [`LOOP_STALL_TICK`] fires late by as
    /// long as the loop was kept from turning (a `timerfd`, precise to microseconds:
    /// [`runtime::ticker`]). A lateness of [`LOOP_STALL_WARN`] or more is
    /// logged at `warn` (at most once a second, with the count of others), naming the
    /// slowest blocking file operation seen meanwhile.
    ///
    /// An idle loop cannot stall: after ten quiet ticks (100 ms) without a turn of
    /// a connection's task ([`runtime::clock::turns`]) the timer stops, and the next such
    /// turn wakes the watcher; how long after that turn's start the watcher ran is how
    /// long the turn held the loop, measured as a tick's lateness is.
    pub async fn watch_loop_stalls(self: Rc<Self>) {
        let mut ticker = runtime::ticker::Ticker::new(LOOP_STALL_TICK);
        let mut cpu_last = runtime::sys::linux::thread_cpu_time();
        let mut ticks = 0u32;
        let mut report = StallReport::default();
        let mut turns_seen = runtime::clock::turns();
        let mut quiet_ticks = 0u32;
        loop {
            let stall = ticker.tick().await;
            // The thread's CPU time is a system call (no vDSO for it): read every tenth tick.
            ticks = ticks.wrapping_add(1);
            if ticks.is_multiple_of(BUSY_SAMPLE_TICKS) {
                let cpu = runtime::sys::linux::thread_cpu_time();
                let busy = cpu.saturating_sub(cpu_last);
                cpu_last = cpu;
                self.stats
                    .busy_microseconds
                    .add(u64::try_from(busy.as_micros()).unwrap_or(u64::MAX));
            }
            self.note_lateness(stall, &mut report);
            let turns = runtime::clock::turns();
            if turns != turns_seen {
                turns_seen = turns;
                quiet_ticks = 0;
                continue;
            }
            quiet_ticks += 1;
            if quiet_ticks < QUIET_TICKS_BEFORE_REST {
                continue;
            }
            ticker.pause();
            let woken_at = runtime::clock::next_turn().await;
            ticker.resume();
            self.note_lateness(woken_at.elapsed(), &mut report);
            turns_seen = runtime::clock::turns();
            quiet_ticks = 0;
        }
    }

    /// Records one lateness of the loop, and warns of a stall.
    fn note_lateness(&self, stall: Duration, report: &mut StallReport) {
        let now = std::time::Instant::now();
        self.stats
            .record_lag(u64::try_from(stall.as_micros()).unwrap_or(u64::MAX));
        let mut counts = self.stall_counts.get();
        counts.add(stall);
        self.stall_counts.set(counts);
        if stall < LOOP_STALL_WARN {
            return;
        }
        report.unreported += 1;
        report.worst = report.worst.max(stall);
        if report
            .warned_at
            .is_some_and(|at| now.duration_since(at) < LOOP_STALL_REPORT_INTERVAL)
        {
            return;
        }
        report.warned_at = Some(now);
        let cause = match self.slowest_blocking.borrow_mut().take() {
            Some((took, what)) => format!("{what} took {} ms", took.as_millis()),
            None => "no blocking file operation was recorded".to_owned(),
        };
        let error_log = &self.generation.error_log;
        if error_log.enabled(logging::Level::Warn) {
            error_log.write(
                logging::Level::Warn,
                &self.clock.wall(),
                None,
                format_args!(
                    "worker loop stalled for {} ms ({} stalls of {} ms or more \
                     since the last report); {cause}",
                    report.worst.as_millis(),
                    report.unreported,
                    LOOP_STALL_WARN.as_millis()
                ),
                None,
            );
        }
        report.unreported = 0;
        report.worst = Duration::ZERO;
    }

    /// The loop stalls measured so far.
    pub(crate) fn stall_counts(&self) -> StallCounts {
        self.stall_counts.get()
    }

    /// Writes the stall counts at `notice`, when the worker exits: what a benchmark run
    /// reads to say whether any connection held a loop.
    pub fn report_stall_counts(&self) {
        let counts = self.stall_counts();
        let error_log = &self.generation.error_log;
        if error_log.enabled(logging::Level::Notice) {
            error_log.write(
                logging::Level::Notice,
                &self.clock.wall(),
                None,
                format_args!(
                    "worker loop stalls: {} of 10 ms or more, {} of 100 ms or more, \
                     {} of 1000 ms or more",
                    counts.at_least_10_ms, counts.at_least_100_ms, counts.at_least_1000_ms
                ),
                None,
            );
        }
    }

    pub fn flush_access_logs(&self) {
        self.log_buffers.borrow_mut().flush_all();
    }
}

/// Runs `work` on `pool` and waits for its result on this worker.
pub(crate) async fn offload_to<T: Send + 'static>(
    pool: &ThreadPool,
    kind: TaskKind,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, crate::kernel::file::io::FileError> {
    finish_offload(pool, pool.submit_as(kind, work)).await
}

/// [`offload_to`] on the pool's urgent lane ([`ThreadPool::submit_urgent_as`]): for work
/// on data judged in page cache, which must not wait behind the disk reads of the queue.
pub(crate) async fn offload_urgent_to<T: Send + 'static>(
    pool: &ThreadPool,
    kind: TaskKind,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, crate::kernel::file::io::FileError> {
    finish_offload(pool, pool.submit_urgent_as(kind, work)).await
}

/// Awaits a submitted task, or turns a refusal into nginx's overflow error.
async fn finish_offload<T: Send + 'static>(
    pool: &ThreadPool,
    submitted: Result<threadpool::Completion<T>, threadpool::QueueOverflow>,
) -> Result<T, crate::kernel::file::io::FileError> {
    match submitted {
        Ok(completion) => completion
            .await
            .map_err(|_| crate::kernel::file::io::FileError {
                status: 500,
                level: logging::Level::Alert,
                message: format!("thread pool \"{}\" task was lost", pool.name()),
            }),
        Err(overflow) => Err(crate::kernel::file::io::FileError {
            status: 500,
            level: logging::Level::Error,
            message: format!(
                "thread pool \"{}\" queue overflow: {} tasks waiting",
                pool.name(),
                overflow.waiting
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker on an empty configuration whose error log (at `warn`) is `error.log` in
    /// a new directory named after `name`.
    fn worker_logging_to(name: &str) -> (Rc<HttpWorker>, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("portico-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("error.log");
        let file = Arc::new(logging::LogFile::open(&path).unwrap());
        let error_log = Arc::new(ErrorLog::new(vec![logging::ErrorSink {
            file,
            level: logging::Level::Warn,
        }]));
        let env = crate::kernel::conf::MergeEnv {
            prefix: dir.clone(),
            main_error_log: Arc::clone(&error_log),
        };
        let generation = Arc::new(Generation {
            number: 1,
            http: HttpConf::empty(&env),
            worker_pools: Vec::new(),
            connection_ids: Arc::new(AtomicU64::new(0)),
            temp_numbers: AtomicU64::new(0),
            hostname: "test".to_owned(),
            error_log,
            debug_connections: None,
            cache_zones: Vec::new(),
            log_files: Default::default(),
            access_log_buffers: Default::default(),
        });
        let (_phase_sender, phase) = watch::channel(Phase::Running);
        let worker = Rc::new(HttpWorker::new(
            generation,
            ThreadPools::default(),
            Rc::new(Clock::new()),
            phase,
            Arc::new(AtomicBool::new(false)),
            0,
        ));
        (worker, dir)
    }

    #[test]
    fn a_held_loop_is_logged_with_the_slowest_file_operation() {
        let (worker, dir) = worker_logging_to("stall");
        let path = dir.join("error.log");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&runtime, async {
            let watcher = tokio::task::spawn_local(Rc::clone(&worker).watch_loop_stalls());
            tokio::time::sleep(Duration::from_millis(30)).await;
            // A blocking read on the worker holds the loop for 250 ms.
            std::thread::sleep(Duration::from_millis(250));
            worker.note_blocking(Duration::from_millis(250), || "read() of \"/x\"".to_owned());
            // A short operation is not a suspect.
            worker.note_blocking(Duration::from_millis(1), || "open() of \"/y\"".to_owned());
            tokio::time::sleep(Duration::from_millis(50)).await;
            watcher.abort();
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("[warn]"), "{text}");
        let stalled_ms: u64 = text
            .split("worker loop stalled for ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|number| number.parse().ok())
            .unwrap_or_else(|| panic!("no stall length in {text}"));
        assert!(stalled_ms >= 200, "{text}");
        assert!(text.contains("read() of \"/x\" took 250 ms"), "{text}");
        // The 250 ms stall is counted once in the two lower classes; the ticks around it
        // on an idle loop are not stalls of 10 ms.
        let counts = worker.stall_counts();
        assert_eq!(counts.at_least_100_ms, 1, "{counts:?}");
        assert!(counts.at_least_10_ms >= 1, "{counts:?}");
        assert_eq!(counts.at_least_1000_ms, 0, "{counts:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// An idle loop's watcher stops ticking; the first turn of a connection's task wakes
    /// it, and that turn's hold of the loop is measured and logged all the same.
    #[test]
    fn a_resting_watcher_still_sees_the_turn_that_wakes_it() {
        let (worker, dir) = worker_logging_to("stall-rest");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&runtime, async {
            let watcher = tokio::task::spawn_local(Rc::clone(&worker).watch_loop_stalls());
            // Ten quiet ticks, and then some: the watcher rests.
            tokio::time::sleep(LOOP_STALL_TICK * (QUIET_TICKS_BEFORE_REST + 5)).await;
            let resting = worker.stats.lag_count.get();
            tokio::time::sleep(LOOP_STALL_TICK * 10).await;
            assert_eq!(worker.stats.lag_count.get(), resting, "no tick while idle");
            // A connection's turn holds the loop for 250 ms.
            tokio::task::spawn_local(runtime::clock::turn_clocked(async {
                std::thread::sleep(Duration::from_millis(250));
            }))
            .await
            .unwrap();
            tokio::time::sleep(LOOP_STALL_TICK * 3).await;
            assert!(worker.stats.lag_count.get() > resting, "ticking again");
            watcher.abort();
        });
        let text = std::fs::read_to_string(dir.join("error.log")).unwrap();
        let stalled_ms: u64 = text
            .split("worker loop stalled for ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|number| number.parse().ok())
            .unwrap_or_else(|| panic!("no stall in {text:?}"));
        assert!(stalled_ms >= 250, "{text}");
        assert_eq!(worker.stall_counts().at_least_100_ms, 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn stalls_are_counted_by_length_at_each_boundary() {
        let mut counts = StallCounts::default();
        for millis in [0, 9, 10, 99, 100, 999, 1000, 5000] {
            counts.add(Duration::from_millis(millis));
        }
        assert_eq!(
            counts,
            StallCounts {
                at_least_10_ms: 6,
                at_least_100_ms: 4,
                at_least_1000_ms: 2,
            }
        );
    }
}
