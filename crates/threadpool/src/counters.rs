//! Per-pool counters: how many tasks wait, run and finished, and how long they waited and ran.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the wait and run histograms' buckets, in microseconds (the last
/// bucket, beyond them, is implied).
pub const TASK_BUCKETS_MICROSECONDS: [u64; 10] = [
    100, 500, 1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000,
];

/// Counts by bucket of [`TASK_BUCKETS_MICROSECONDS`] (not cumulative), then beyond.
pub type TaskBuckets = [u64; 11];

/// What a task does, for the count of tasks by kind: which of a worker's blocking calls
/// a pool is busy with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// Opening or examining files and directories: `open`, `stat`, `realpath`, listings.
    Open,
    /// Reading file data into memory.
    Read,
    /// `sendfile` from a file to a client's socket.
    Sendfile,
    /// Writing files: request and response bodies to temporary files, cache entries, logs
    /// whose paths have variables.
    Write,
    /// Everything else: renames and unlinks, renders of the metrics, password hashes,
    /// certificate loads.
    Other,
}

impl TaskKind {
    pub const ALL: [TaskKind; 5] = [
        TaskKind::Open,
        TaskKind::Read,
        TaskKind::Sendfile,
        TaskKind::Write,
        TaskKind::Other,
    ];

    /// The kind's label in the metrics.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Open => "open",
            TaskKind::Read => "read",
            TaskKind::Sendfile => "sendfile",
            TaskKind::Write => "write",
            TaskKind::Other => "other",
        }
    }
}

/// Counters updated by submitters and pool threads. Relaxed atomics: statistics for status
/// pages, and a hint of how busy the pool is ([`crate::ThreadPool::keeps_up`]).
#[derive(Debug, Default)]
pub struct Counters {
    queued: AtomicU64,
    queued_max: AtomicU64,
    running: AtomicU64,
    completed: AtomicU64,
    overflowed: AtomicU64,
    wait_microseconds: AtomicU64,
    run_microseconds: AtomicU64,
    wait_buckets: [AtomicU64; 11],
    run_buckets: [AtomicU64; 11],
    by_kind: [AtomicU64; 5],
}

/// A point-in-time copy of [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountersSnapshot {
    /// Tasks in the queue now.
    pub queued: u64,
    /// The most tasks the queue has held at once.
    pub queued_max: u64,
    /// Tasks running on a pool thread now.
    pub running: u64,
    /// Tasks that finished since the pool started.
    pub completed: u64,
    /// Submissions refused because the queue was full.
    pub overflowed: u64,
    /// Total time finished tasks spent in the queue.
    pub wait_time: Duration,
    /// Total time finished tasks spent running.
    pub run_time: Duration,
    /// Started tasks by time spent in the queue, and finished ones by time spent running.
    pub wait_buckets: TaskBuckets,
    pub run_buckets: TaskBuckets,
    /// Finished tasks by [`TaskKind`], in the order of [`TaskKind::ALL`].
    pub by_kind: [u64; 5],
}

impl Counters {
    pub(crate) fn task_queued(&self) {
        let queued = self.queued.fetch_add(1, Ordering::Relaxed) + 1;
        self.queued_max.fetch_max(queued, Ordering::Relaxed);
    }

    pub(crate) fn task_overflowed(&self) {
        self.overflowed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn task_started(&self, waited: Duration) {
        self.queued.fetch_sub(1, Ordering::Relaxed);
        self.running.fetch_add(1, Ordering::Relaxed);
        self.wait_microseconds
            .fetch_add(micros(waited), Ordering::Relaxed);
        self.wait_buckets[bucket(micros(waited))].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn task_finished(&self, kind: TaskKind, ran: Duration) {
        self.running.fetch_sub(1, Ordering::Relaxed);
        self.completed.fetch_add(1, Ordering::Relaxed);
        self.by_kind[kind as usize].fetch_add(1, Ordering::Relaxed);
        self.run_microseconds
            .fetch_add(micros(ran), Ordering::Relaxed);
        self.run_buckets[bucket(micros(ran))].fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CountersSnapshot {
        CountersSnapshot {
            queued: self.queued.load(Ordering::Relaxed),
            queued_max: self.queued_max.load(Ordering::Relaxed),
            running: self.running.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            overflowed: self.overflowed.load(Ordering::Relaxed),
            wait_time: Duration::from_micros(self.wait_microseconds.load(Ordering::Relaxed)),
            run_time: Duration::from_micros(self.run_microseconds.load(Ordering::Relaxed)),
            wait_buckets: std::array::from_fn(|index| {
                self.wait_buckets[index].load(Ordering::Relaxed)
            }),
            run_buckets: std::array::from_fn(|index| {
                self.run_buckets[index].load(Ordering::Relaxed)
            }),
            by_kind: std::array::from_fn(|index| self.by_kind[index].load(Ordering::Relaxed)),
        }
    }
}

fn bucket(microseconds: u64) -> usize {
    TASK_BUCKETS_MICROSECONDS
        .iter()
        .position(|bound| microseconds <= *bound)
        .unwrap_or(TASK_BUCKETS_MICROSECONDS.len())
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
