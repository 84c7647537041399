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

use crate::conf::StreamConf;

/// How often buffered access logs are looked at for their `flush=` time.
const FLUSH_CHECK_INTERVAL: Duration = Duration::from_millis(500);

/// What one worker keeps for the stream block of one generation.
pub struct StreamWorker {
    pub conf: Arc<StreamConf>,
    pub clock: Rc<Clock>,
    pub connection_ids: Arc<AtomicU64>,
    pub hostname: String,
    pub phase: watch::Receiver<Phase>,
    /// One buffer per `StreamConf::access_logs` entry.
    access_logs: RefCell<Vec<AccessLogBuffer>>,
}

impl StreamWorker {
    pub fn new(
        conf: Arc<StreamConf>,
        clock: Rc<Clock>,
        connection_ids: Arc<AtomicU64>,
        hostname: String,
        phase: watch::Receiver<Phase>,
    ) -> StreamWorker {
        let access_logs = conf
            .access_logs
            .iter()
            .map(|target| {
                let buffer =
                    AccessLogBuffer::new(Arc::clone(&target.file), target.buffer, target.flush);
                match target.gzip {
                    Some(level) => buffer.compressed(level),
                    None => buffer,
                }
            })
            .collect();
        StreamWorker {
            conf,
            clock,
            connection_ids,
            hostname,
            phase,
            access_logs: RefCell::new(access_logs),
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
        if let Some(buffer) = logs.get_mut(target)
            && let Err(error) = buffer.append(line, runtime::clock::monotonic())
        {
            let error_log = &self.conf.servers.first().map(|server| &server.settings.error_log);
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

    /// Writes every buffered line (the worker is stopping).
    pub fn flush_access_logs(&self) {
        for buffer in self.access_logs.borrow_mut().iter_mut() {
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
            for buffer in self.access_logs.borrow_mut().iter_mut() {
                if buffer.flush_due(now) {
                    let _ = buffer.flush();
                }
            }
        }
    }

    /// Whether the worker is draining or stopping (no new work is taken).
    pub fn stopping(&self) -> bool {
        *self.phase.borrow() != Phase::Running
    }
}
