//! The log writer: one thread that makes every log write of a running server, so that no
//! worker loop waits on a log file's disk.
//!
//! A `write(2)` to a log file can wait for the disk: the file's last block, evicted under
//! memory pressure, is read back before the line is added (`ext4_block_write_begin`), and a
//! second thread writing the same file waits for the first one's position lock. Buffered
//! writes cannot be asked not to wait (`pwritev2(RWF_NOWAIT)` answers `EOPNOTSUPP` on ext4).
//! So once [`start`] has run, [`LogFile::append`] queues the bytes and this thread writes
//! them, in the order they were queued, whichever thread queued them: a file's lines keep
//! the order in which they were logged.
//!
//! A worker thread batches its lines ([`batch_here`]): they are handed to the writer once
//! per turn of its event loop ([`hand_over_here`]), with one lock and at most one wake-up
//! of the writer, instead of one of each per line (with an unbuffered access log, a wake-up
//! per request doubled the CPU time of a `return 200`).
//!
//! A thread that must know its lines are on disk waits for them: [`written`] (a future, for
//! a connection about to close, as nginx has written a request's line before it closes the
//! connection) or [`drain`] (blocking, before the process exits or the logs are reopened).
//! Before [`start`] (`-t`, `-s`, the tests of other crates) every write is made at once by
//! the caller.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};

use crate::file::LogFile;

/// How many bytes may wait for the writer. Past this a thread that logs waits until the
/// writer has caught up: a log disk slower than the lines coming in holds the loggers, as
/// a direct write would, rather than growing memory without bound.
pub const QUEUED_BYTES_MAX: usize = 16 << 20;

static WRITER: OnceLock<Writer> = OnceLock::new();
static STARTED: AtomicBool = AtomicBool::new(false);

/// A batch this large is handed over at once, whatever the loop does.
const BATCH_BYTES_MAX: usize = 256 << 10;

thread_local! {
    /// The ticket of the last line this thread queued.
    static LAST_TICKET: Cell<u64> = const { Cell::new(0) };
    /// The ticket of the last line this thread queued with [`append_now`].
    static LAST_URGENT_TICKET: Cell<u64> = const { Cell::new(0) };
    /// The lines of a batching thread not handed over yet.
    static BATCH: RefCell<Option<Batch>> = const { RefCell::new(None) };
}

/// A thread's lines waiting for the end of its loop's turn; consecutive lines for one file
/// share one buffer.
struct Batch {
    lines: Vec<(Arc<LogFile>, Vec<u8>)>,
    bytes: usize,
    /// Called when the batch gets its first line, so that the thread hands it over soon.
    first_line: Box<dyn Fn()>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        // A thread that ends with lines not handed over: they still go.
        queue(std::mem::take(&mut self.lines));
    }
}

/// From now on this thread's lines wait in a batch until [`hand_over_here`]; `first_line`
/// is called when a batch gets its first line. Does nothing before [`start`].
pub fn batch_here(first_line: impl Fn() + 'static) {
    if !started() {
        return;
    }
    BATCH.with(|batch| {
        *batch.borrow_mut() = Some(Batch {
            lines: Vec::new(),
            bytes: 0,
            first_line: Box::new(first_line),
        });
    });
}

/// Hands this thread's batch to the writer (one lock, at most one wake-up).
pub fn hand_over_here() {
    let lines = BATCH.with(|batch| match batch.borrow_mut().as_mut() {
        Some(batch) => {
            batch.bytes = 0;
            std::mem::take(&mut batch.lines)
        }
        None => Vec::new(),
    });
    queue(lines);
}

struct Writer {
    state: Mutex<State>,
    /// The writer thread waits here for work.
    work: Condvar,
    /// Loggers over [`QUEUED_BYTES_MAX`] and [`drain`] wait here for progress.
    progress: Condvar,
    /// Every ticket up to this one is written.
    written: AtomicU64,
    /// When the writer started the writes it is making now, in microseconds since
    /// [`Writer::epoch`] plus one; 0 while it waits for work.
    busy_since: AtomicU64,
    epoch: std::time::Instant,
}

/// A writer busy with one batch for this long is stalled: its disk does not answer.
pub const STALLED_AFTER: std::time::Duration = std::time::Duration::from_millis(10);

#[derive(Default)]
struct State {
    queue: VecDeque<(Arc<LogFile>, Vec<u8>)>,
    /// The last ticket handed out.
    queued: u64,
    bytes: usize,
    /// Futures waiting for a ticket to be written.
    waiting: Vec<(u64, Waker)>,
}

impl Writer {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Starts the writer thread; from now on [`LogFile::append`] queues. Call it once the
/// process will not fork any more, with the signal mask its threads should inherit.
pub fn start() -> std::io::Result<()> {
    let writer = WRITER.get_or_init(|| Writer {
        state: Mutex::new(State::default()),
        work: Condvar::new(),
        progress: Condvar::new(),
        written: AtomicU64::new(0),
        busy_since: AtomicU64::new(0),
        epoch: std::time::Instant::now(),
    });
    if STARTED.load(Ordering::Acquire) {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("log writer".into())
        .spawn(move || run(writer))?;
    STARTED.store(true, Ordering::Release);
    Ok(())
}

/// Whether the writer thread runs.
pub fn started() -> bool {
    STARTED.load(Ordering::Acquire)
}

/// Adds `bytes` for `file` to this thread's batch, or queues them, or writes them at once
/// when the writer is not running.
pub(crate) fn append(file: &Arc<LogFile>, bytes: Vec<u8>) {
    if !started() {
        let _ = file.write_all(&bytes);
        return;
    }
    let mut bytes = Some(bytes);
    let full = BATCH.with(|batch| {
        let mut batch = batch.borrow_mut();
        let batch = batch.as_mut()?;
        let line = bytes.take()?;
        let first = batch.lines.is_empty();
        batch.bytes += line.len();
        match batch.lines.last_mut() {
            // A syslog message is one datagram: never joined to the one before.
            Some((last, buffer)) if Arc::ptr_eq(last, file) && file.as_syslog().is_none() => {
                buffer.extend_from_slice(&line);
            }
            _ => batch.lines.push((Arc::clone(file), line)),
        }
        if first {
            (batch.first_line)();
        }
        Some(batch.bytes > BATCH_BYTES_MAX)
    });
    match (bytes, full) {
        (Some(bytes), _) => queue(vec![(Arc::clone(file), bytes)]),
        (None, Some(true)) => hand_over_here(),
        _ => {}
    }
}

/// Queues `bytes` for `file` at once, behind this thread's batch (the thread's lines keep
/// their order): for error-log lines, which a client that got its response may look for
/// at once, as nginx has written them before it responds.
pub(crate) fn append_now(file: &Arc<LogFile>, bytes: Vec<u8>) {
    if !started() {
        let _ = file.write_all(&bytes);
        return;
    }
    hand_over_here();
    queue(vec![(Arc::clone(file), bytes)]);
    LAST_URGENT_TICKET.with(|urgent| urgent.set(LAST_TICKET.with(Cell::get)));
}

/// Resolves once the lines this thread queued with [`LogFile::append_now`] (error-log lines) are
/// written; at once, without a lock, when they are.
pub fn urgent_written() -> Written {
    Written {
        ticket: LAST_URGENT_TICKET.with(Cell::get),
    }
}

/// Queues `lines` in order, with one lock and at most one wake-up of the writer.
fn queue(lines: Vec<(Arc<LogFile>, Vec<u8>)>) {
    if lines.is_empty() {
        return;
    }
    let Some(writer) = WRITER.get().filter(|_| started()) else {
        for (file, bytes) in lines {
            let _ = file.write_all(&bytes);
        }
        return;
    };
    let mut state = writer.lock();
    while state.bytes > QUEUED_BYTES_MAX {
        state = writer
            .progress
            .wait(state)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    let was_empty = state.queue.is_empty();
    for (file, bytes) in lines {
        state.bytes += bytes.len();
        state.queued += 1;
        state.queue.push_back((file, bytes));
    }
    let ticket = state.queued;
    drop(state);
    if was_empty {
        writer.work.notify_one();
    }
    LAST_TICKET.with(|last| last.set(ticket));
}

fn run(writer: &'static Writer) {
    let mut batch: Vec<(Arc<LogFile>, Vec<u8>)> = Vec::new();
    let mut joined: Vec<u8> = Vec::new();
    loop {
        let mut state = writer.lock();
        while state.queue.is_empty() {
            state = writer
                .work
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        batch.extend(state.queue.drain(..));
        let last = state.queued;
        drop(state);
        let started = writer.epoch.elapsed().as_micros();
        writer.busy_since.store(
            u64::try_from(started).unwrap_or(u64::MAX - 1) + 1,
            Ordering::Relaxed,
        );
        let mut bytes = 0;
        let mut lines = batch.drain(..).peekable();
        while let Some((file, first)) = lines.next() {
            bytes += first.len();
            // Consecutive lines for one file go out in one write (O_APPEND keeps it whole).
            if file.as_syslog().is_none()
                && lines
                    .peek()
                    .is_some_and(|(next, _)| Arc::ptr_eq(next, &file))
            {
                joined.clear();
                joined.extend_from_slice(&first);
                while let Some((_, more)) = lines.next_if(|(next, _)| Arc::ptr_eq(next, &file)) {
                    bytes += more.len();
                    joined.extend_from_slice(&more);
                }
                let _ = file.write_all(&joined);
            } else {
                let _ = file.write_all(&first);
            }
        }
        drop(lines);
        if joined.capacity() > QUEUED_BYTES_MAX {
            joined = Vec::new();
        }
        writer.busy_since.store(0, Ordering::Relaxed);
        writer.written.store(last, Ordering::Release);
        let mut state = writer.lock();
        state.bytes -= bytes;
        let (ready, still): (Vec<_>, Vec<_>) = std::mem::take(&mut state.waiting)
            .into_iter()
            .partition(|(ticket, _)| *ticket <= last);
        state.waiting = still;
        drop(state);
        writer.progress.notify_all();
        for (_, waker) in ready {
            waker.wake();
        }
    }
}

/// Whether the writer has been making one batch of writes for [`STALLED_AFTER`] or more (a
/// log file whose disk does not answer, a pipe nobody reads): then waiting for a line to
/// be written may take any time.
pub fn stalled() -> bool {
    let Some(writer) = WRITER.get().filter(|_| started()) else {
        return false;
    };
    let since = writer.busy_since.load(Ordering::Relaxed);
    if since == 0 {
        return false;
    }
    let now = u64::try_from(writer.epoch.elapsed().as_micros()).unwrap_or(u64::MAX);
    now.saturating_sub(since - 1) >= STALLED_AFTER.as_micros() as u64
}

/// Blocks until everything queued so far, by any thread, is written.
pub fn drain() {
    let Some(writer) = WRITER.get().filter(|_| started()) else {
        return;
    };
    let mut state = writer.lock();
    let target = state.queued;
    while writer.written.load(Ordering::Acquire) < target {
        state = writer
            .progress
            .wait(state)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

/// Resolves once every line this thread has logged so far is written (its batch is
/// handed over first).
pub fn written() -> Written {
    hand_over_here();
    Written {
        ticket: LAST_TICKET.with(Cell::get),
    }
}

/// The future of [`written`].
#[derive(Debug)]
pub struct Written {
    ticket: u64,
}

impl Written {
    /// Whether the lines are written already (no need to wait).
    pub fn is_done(&self) -> bool {
        WRITER
            .get()
            .is_none_or(|writer| writer.written.load(Ordering::Acquire) >= self.ticket)
    }
}

impl Future for Written {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        let Some(writer) = WRITER.get() else {
            return Poll::Ready(());
        };
        if writer.written.load(Ordering::Acquire) >= self.ticket {
            return Poll::Ready(());
        }
        let mut state = writer.lock();
        // Checked again under the lock: the writer updates `written` before taking it.
        if writer.written.load(Ordering::Acquire) >= self.ticket {
            return Poll::Ready(());
        }
        state
            .waiting
            .retain(|(_, waker)| !waker.will_wake(context.waker()));
        state.waiting.push((self.ticket, context.waker().clone()));
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::Release);
        }
    }

    /// Lines from several threads arrive whole and each thread's in its order; a thread's
    /// `written` future resolves once its lines are in the file.
    #[test]
    fn queued_lines_keep_their_order_and_are_waited_for() {
        let dir = std::env::temp_dir().join(format!("portico-writer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("queued.log");
        let file = Arc::new(LogFile::open(&path).unwrap());
        start().unwrap();
        start().unwrap();
        assert!(started());
        let threads: Vec<_> = (0..4)
            .map(|thread| {
                let file = Arc::clone(&file);
                std::thread::spawn(move || {
                    for line in 0..500 {
                        file.append(format!("{thread} {line}\n").into_bytes());
                    }
                    let flag = Arc::new(Flag(AtomicBool::new(false)));
                    let waker = Waker::from(Arc::clone(&flag));
                    let mut future = written();
                    let mut context = Context::from_waker(&waker);
                    while Pin::new(&mut future).poll(&mut context).is_pending() {
                        while !flag.0.swap(false, Ordering::AcqRel) {
                            std::thread::yield_now();
                        }
                    }
                    // Resolved: this thread's last line is in the file.
                    let text = std::fs::read_to_string(dir_file(&file)).unwrap();
                    assert!(text.contains(&format!("\n{thread} 499\n")), "{thread}");
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        drain();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2000);
        for thread in 0..4 {
            let seen: Vec<u32> = text
                .lines()
                .filter_map(|line| line.strip_prefix(&format!("{thread} ")))
                .map(|number| number.parse().unwrap())
                .collect();
            assert_eq!(seen, (0..500).collect::<Vec<_>>(), "thread {thread}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn dir_file(file: &LogFile) -> std::path::PathBuf {
        file.path().unwrap().to_path_buf()
    }
}
