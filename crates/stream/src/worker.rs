//! A worker's stream state: the configuration it serves, its clock, and its own buffers
//! in front of the access log files (written through the log writer thread, so the
//! worker's loop never waits on a disk).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use logging::{AccessLogBuffer, Level};
use runtime::{Clock, Phase};
use tokio::sync::watch;

use crate::conf::{LogPath, StreamConf};

/// How often buffered access logs are looked at for their `flush=` time.
const FLUSH_CHECK_INTERVAL: Duration = Duration::from_millis(500);

/// Hands a connection that `pass` sends to an address the stream block does not listen on
/// to whatever serves it (the http block); gives it back when nothing listens there.
pub type PassHook = Box<
    dyn Fn(
        &runtime::ListenAddress,
        runtime::Stream,
        runtime::PeerAddress,
        runtime::ConnectionGuard,
    ) -> Result<(), (runtime::Stream, runtime::ConnectionGuard)>,
>;

/// What one worker keeps for the stream block of one generation.
pub struct StreamWorker {
    pub conf: Arc<StreamConf>,
    pub clock: Rc<Clock>,
    pub connection_ids: Arc<AtomicU64>,
    pub hostname: String,
    pub phase: watch::Receiver<Phase>,
    /// One buffer per `StreamConf::access_logs` entry (`None` for a path with variables).
    access_logs: RefCell<Vec<Option<AccessLogBuffer>>>,
    /// The worker's `default` pool, which writes the logs whose paths have variables.
    pool: Option<threadpool::ThreadPool>,
    /// Set by the server: where `pass` sends connections to non-stream sockets.
    pass_hook: RefCell<Option<PassHook>>,
}

impl StreamWorker {
    pub fn new(
        conf: Arc<StreamConf>,
        clock: Rc<Clock>,
        connection_ids: Arc<AtomicU64>,
        hostname: String,
        phase: watch::Receiver<Phase>,
        pool: Option<threadpool::ThreadPool>,
    ) -> StreamWorker {
        let access_logs = conf
            .access_logs
            .iter()
            .map(|target| {
                let LogPath::File(file) = &target.path else {
                    return None;
                };
                let buffer = AccessLogBuffer::new(Arc::clone(file), target.buffer, target.flush);
                Some(match target.gzip {
                    Some(level) => buffer.compressed(level),
                    None => buffer,
                })
            })
            .collect();
        StreamWorker {
            conf,
            clock,
            connection_ids,
            hostname,
            phase,
            access_logs: RefCell::new(access_logs),
            pool,
            pass_hook: RefCell::new(None),
        }
    }

    /// Sets where `pass` sends connections to addresses the stream block does not serve.
    pub fn set_pass_hook(&self, hook: PassHook) {
        *self.pass_hook.borrow_mut() = Some(hook);
    }

    /// Hands a connection to the socket at `address` outside the stream block.
    pub fn pass_elsewhere(
        &self,
        address: &runtime::ListenAddress,
        stream: runtime::Stream,
        peer: runtime::PeerAddress,
        guard: runtime::ConnectionGuard,
    ) -> Result<(), (runtime::Stream, runtime::ConnectionGuard)> {
        match &*self.pass_hook.borrow() {
            Some(hook) => hook(address, stream, peer, guard),
            None => Err((stream, guard)),
        }
    }

    /// The next connection number (`$connection`, the `*N` of error-log lines), shared
    /// with the http block's connections.
    pub fn next_connection(&self) -> u64 {
        self.connection_ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Appends one access-log line to its buffer (or hands it to the log writer).
    pub fn write_access_log(&self, target: usize, line: &[u8]) {
        let mut logs = self.access_logs.borrow_mut();
        if let Some(Some(buffer)) = logs.get_mut(target)
            && let Err(error) = buffer.append(line, runtime::clock::monotonic())
        {
            let error_log = &self
                .conf
                .servers
                .first()
                .map(|server| &server.settings.error_log);
            if let Some(error_log) = error_log
                && error_log.enabled(Level::Alert)
            {
                error_log.write(
                    Level::Alert,
                    &self.clock.wall(),
                    None,
                    format_args!("access log buffer could not be written ({error})"),
                    None,
                );
            }
        }
    }

    /// Appends `line` to the file at `path` on the worker's pool (opened, written and
    /// closed there, never on the loop); a failure is logged at `crit` as nginx logs it.
    pub fn write_path_line(
        &self,
        path: std::path::PathBuf,
        line: Vec<u8>,
        error_log: Arc<logging::ErrorLog>,
    ) {
        let Some(pool) = self.pool.clone() else {
            return;
        };
        let clock = Rc::clone(&self.clock);
        tokio::task::spawn_local(runtime::clock::turn_clocked(async move {
            let shown = path.display().to_string();
            let written = pool.submit(move || {
                use std::io::Write as _;
                use std::os::unix::fs::OpenOptionsExt as _;
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o644)
                    .open(&path)
                    .and_then(|mut file| file.write_all(&line))
            });
            let result = match written {
                Ok(completion) => completion.await,
                Err(_) => return,
            };
            if let Ok(Err(error)) = result
                && error_log.enabled(Level::Crit)
            {
                error_log.write(
                    Level::Crit,
                    &clock.wall(),
                    None,
                    format_args!(
                        "open() \"{shown}\" failed ({})",
                        runtime::sys::linux::error_text(&error)
                    ),
                    None,
                );
            }
        }));
    }

    /// Runs blocking `work` (file reads) on the worker's `default` pool; `None` when the
    /// pool refused it (queue full) or has none.
    pub async fn on_pool<T, F>(&self, work: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let pool = self.pool.as_ref()?;
        pool.submit(work).ok()?.await.ok()
    }

    /// Writes every buffered line (the worker is stopping).
    pub fn flush_access_logs(&self) {
        for buffer in self.access_logs.borrow_mut().iter_mut().flatten() {
            let _ = buffer.flush();
        }
    }

    /// Writes the buffers whose `flush=` time has passed, until the task is aborted.
    pub async fn flush_access_logs_periodically(self: Rc<Self>) {
        if self
            .conf
            .access_logs
            .iter()
            .all(|target| target.flush.is_none())
        {
            return;
        }
        loop {
            tokio::time::sleep(FLUSH_CHECK_INTERVAL).await;
            let now = std::time::Instant::now();
            for buffer in self.access_logs.borrow_mut().iter_mut().flatten() {
                if buffer.flush_due(now) {
                    let _ = buffer.flush();
                }
            }
        }
    }

    /// Follows the `resolve` servers of the block's upstream groups until the task is
    /// dropped (the worker stops).
    pub async fn follow_resolvable_servers(self: Rc<Self>) {
        upstream::discovery::follow_resolvable_servers(self).await;
    }

    /// Follows the servers' OCSP stapling ([`shared::stapling`]) until the task is dropped,
    /// failures in the main error log.
    pub async fn follow_staplings(self: Rc<Self>) {
        let staplings = self.conf.staplings.clone();
        if staplings.is_empty() {
            return;
        }
        let worker = Rc::clone(&self);
        let report: shared::stapling::Report = Rc::new(move |message| {
            upstream::discovery::BlockGroups::log(&*worker, Level::Error, message);
        });
        shared::stapling::follow(staplings, report).await;
    }

    /// Whether the worker is draining or stopping (no new work is taken).
    pub fn stopping(&self) -> bool {
        *self.phase.borrow() != Phase::Running
    }
}

impl upstream::discovery::BlockGroups for StreamWorker {
    type Key = crate::variables::StreamTemplate;

    fn groups(&self) -> &[upstream::Group<Self::Key>] {
        &self.conf.groups
    }

    fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
        let error_log = &self.conf.error_log;
        if error_log.enabled(level) {
            error_log.write(level, &self.clock.wall(), None, message, None);
        }
    }
}
