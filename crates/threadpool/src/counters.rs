//! Per-pool counters: how many tasks wait, run and finished, and how long they waited and ran.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Counters updated by submitters and pool threads. Relaxed atomics: they are statistics,
/// read for status pages, never used to make decisions.
#[derive(Debug, Default)]
pub struct Counters {
    queued: AtomicU64,
    queued_max: AtomicU64,
    running: AtomicU64,
    completed: AtomicU64,
    overflowed: AtomicU64,
    wait_microseconds: AtomicU64,
    run_microseconds: AtomicU64,
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
    }

    pub(crate) fn task_finished(&self, ran: Duration) {
        self.running.fetch_sub(1, Ordering::Relaxed);
        self.completed.fetch_add(1, Ordering::Relaxed);
        self.run_microseconds
            .fetch_add(micros(ran), Ordering::Relaxed);
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
        }
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
