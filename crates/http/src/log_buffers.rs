//! The worker's buffers for log files written with `buffer=` (`access_log`), one per
//! slot the configuration numbered, and the scratch space log lines are made in.

use std::sync::Arc;
use std::time::Instant;

use logging::{AccessLogBuffer, LogFile};

use crate::log::settings::Buffering;

/// One worker's log buffers.
#[derive(Debug, Default)]
pub struct LogBuffers {
    buffers: Vec<Option<AccessLogBuffer>>,
    /// Reused for each line, so that logging allocates only while lines grow.
    pub line: Vec<u8>,
    pub scratch: Vec<u8>,
    /// Lines for logs whose paths have variables are written on a pool one at a time, in
    /// the order the worker logged them (this is held while one is written).
    pub path_lines: std::rc::Rc<tokio::sync::Mutex<()>>,
}

impl LogBuffers {
    pub fn new(slots: usize) -> LogBuffers {
        LogBuffers {
            buffers: (0..slots).map(|_| None).collect(),
            line: Vec::new(),
            scratch: Vec::new(),
            path_lines: std::rc::Rc::default(),
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
        let slot = buffering
            .and_then(|buffering| Some((buffering, self.buffers.get_mut(buffering.slot)?)));
        match slot {
            None => {
                let _ = file.write_all(line);
            }
            Some((buffering, slot)) => {
                let buffer = slot.get_or_insert_with(|| {
                    let buffer =
                        AccessLogBuffer::new(Arc::clone(file), buffering.size, buffering.flush);
                    match buffering.gzip {
                        Some(level) => buffer.compressed(level),
                        None => buffer,
                    }
                });
                let _ = buffer.append(line, now);
            }
        }
    }

    /// Flushes the buffers whose `flush=` interval has passed.
    pub(crate) fn flush_due(&mut self, now: Instant) {
        for buffer in self.buffers.iter_mut().flatten() {
            if buffer.flush_due(now) {
                let _ = buffer.flush();
            }
        }
    }

    /// Flushes everything (the worker is exiting or the logs are being reopened).
    pub(crate) fn flush_all(&mut self) {
        for buffer in self.buffers.iter_mut().flatten() {
            let _ = buffer.flush();
        }
    }
}
