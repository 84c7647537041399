//! Per-worker counter slots and their registry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::zones::{MAX_STATUS_ZONES, ZoneSnapshot, ZoneStats};

/// A count that only goes up, written by one thread (its worker), read by any.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `amount`. Only the slot's worker calls this, so a load and a store suffice:
    /// no locked instruction on the request path.
    #[inline]
    pub fn add(&self, amount: u64) {
        let value = self.0.load(Ordering::Relaxed);
        self.0.store(value.wrapping_add(amount), Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A level (connections in a state), written by one thread, read by any.
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    #[inline]
    pub fn increment(&self) {
        let value = self.0.load(Ordering::Relaxed);
        self.0.store(value + 1, Ordering::Relaxed);
    }

    #[inline]
    pub fn decrement(&self) {
        let value = self.0.load(Ordering::Relaxed);
        debug_assert!(value > 0, "a gauge goes down only after it went up");
        self.0.store(value.saturating_sub(1), Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds of the loop-lag histogram's buckets, in microseconds (the last bucket,
/// `+Inf`, is implied): how late the stall watcher's 10 ms tick fired.
pub const LAG_BUCKETS_MICROSECONDS: [u64; 12] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 250_000, 1_000_000, 5_000_000,
];

/// One worker's counters. nginx's meanings: `accepted` counts every connection taken from
/// a listener, `handled` those that got a slot within `worker_connections`; `requests`
/// counts requests whose first byte arrived; `active` connections are `reading` a request
/// head, `writing` (from the end of the head to the end of the response) or `waiting` for
/// a request, plus those closing.
///
/// Aligned to two cache lines, so that no other worker's slot (and no reference count)
/// shares a line with it: a worker's updates never invalidate another core's cache.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerStats {
    /// The worker's index in its generation (`worker_processes`), the metrics' label.
    pub index: usize,
    pub accepted: Counter,
    pub handled: Counter,
    pub requests: Counter,
    pub active: Gauge,
    pub reading: Gauge,
    pub writing: Gauge,
    pub waiting: Gauge,
    /// Loop stalls of at least 10, 100 and 1000 ms, as the stall watcher measures them.
    pub stalls_10ms: Counter,
    pub stalls_100ms: Counter,
    pub stalls_1000ms: Counter,
    /// The stall watcher's ticks by lateness (`LAG_BUCKETS_MICROSECONDS`, then `+Inf`),
    /// not cumulative; with their count and total lateness.
    pub lag_buckets: [Counter; 13],
    pub lag_count: Counter,
    pub lag_microseconds: Counter,
    /// File calls made on the worker's own thread that may block it (what the stall
    /// watcher is told of: opens, reads and `sendfile` pieces under `aio off`), and the
    /// time they took.
    pub blocking_calls: Counter,
    pub blocking_microseconds: Counter,
    /// CPU time (user and system) of the worker's thread, added by the stall watcher at
    /// each tick: its rate is the share of a core the worker uses.
    pub busy_microseconds: Counter,
    /// File body bytes by who moved them (read or `sendfile`): the worker from page cache
    /// under `aio threads` (`aio_nowait` reads and copies), a pool thread, or
    /// the worker under `aio off` (where a read may wait for the disk).
    pub file_bytes_cached_on_worker: Counter,
    pub file_bytes_on_pool: Counter,
    pub file_bytes_aio_off: Counter,
    /// Residency answers the worker got under `aio threads`: `mincore` hints that found a
    /// piece all cached or not, and reads that may not wait (`RWF_NOWAIT`) that got every
    /// byte asked for or came back short.
    pub hints_cached: Counter,
    pub hints_not_cached: Counter,
    pub nowait_reads_cached: Counter,
    pub nowait_reads_short: Counter,
    /// `status_zone` counters by zone number ([`Registry::zone`]); empty in a slot made
    /// outside a registry.
    pub zones: Vec<crate::zones::ZoneStats>,
}

impl WorkerStats {
    /// Counts one tick of the stall watcher that fired `late_microseconds` late.
    pub fn record_lag(&self, late_microseconds: u64) {
        let bucket = LAG_BUCKETS_MICROSECONDS
            .iter()
            .position(|bound| late_microseconds <= *bound)
            .unwrap_or(LAG_BUCKETS_MICROSECONDS.len());
        self.lag_buckets[bucket].add(1);
        self.lag_count.add(1);
        self.lag_microseconds.add(late_microseconds);
        self.stalls_10ms.add(u64::from(late_microseconds >= 10_000));
        self.stalls_100ms
            .add(u64::from(late_microseconds >= 100_000));
        self.stalls_1000ms
            .add(u64::from(late_microseconds >= 1_000_000));
    }

    /// A copy of the counters.
    pub fn snapshot(&self) -> WorkerSnapshot {
        WorkerSnapshot {
            accepted: self.accepted.get(),
            handled: self.handled.get(),
            requests: self.requests.get(),
            active: self.active.get(),
            reading: self.reading.get(),
            writing: self.writing.get(),
            waiting: self.waiting.get(),
            stalls_10ms: self.stalls_10ms.get(),
            stalls_100ms: self.stalls_100ms.get(),
            stalls_1000ms: self.stalls_1000ms.get(),
            lag_buckets: std::array::from_fn(|bucket| self.lag_buckets[bucket].get()),
            lag_count: self.lag_count.get(),
            lag_microseconds: self.lag_microseconds.get(),
            blocking_calls: self.blocking_calls.get(),
            blocking_microseconds: self.blocking_microseconds.get(),
            busy_microseconds: self.busy_microseconds.get(),
            file_bytes_cached_on_worker: self.file_bytes_cached_on_worker.get(),
            file_bytes_on_pool: self.file_bytes_on_pool.get(),
            file_bytes_aio_off: self.file_bytes_aio_off.get(),
            hints_cached: self.hints_cached.get(),
            hints_not_cached: self.hints_not_cached.get(),
            nowait_reads_cached: self.nowait_reads_cached.get(),
            nowait_reads_short: self.nowait_reads_short.get(),
        }
    }
}

/// A point-in-time copy of one or more [`WorkerStats`], summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerSnapshot {
    pub accepted: u64,
    pub handled: u64,
    pub requests: u64,
    pub active: u64,
    pub reading: u64,
    pub writing: u64,
    pub waiting: u64,
    pub stalls_10ms: u64,
    pub stalls_100ms: u64,
    pub stalls_1000ms: u64,
    pub lag_buckets: [u64; 13],
    pub lag_count: u64,
    pub lag_microseconds: u64,
    pub blocking_calls: u64,
    pub blocking_microseconds: u64,
    pub busy_microseconds: u64,
    pub file_bytes_cached_on_worker: u64,
    pub file_bytes_on_pool: u64,
    pub file_bytes_aio_off: u64,
    pub hints_cached: u64,
    pub hints_not_cached: u64,
    pub nowait_reads_cached: u64,
    pub nowait_reads_short: u64,
}

impl WorkerSnapshot {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &WorkerSnapshot) {
        self.accepted += other.accepted;
        self.handled += other.handled;
        self.requests += other.requests;
        self.active += other.active;
        self.reading += other.reading;
        self.writing += other.writing;
        self.waiting += other.waiting;
        self.stalls_10ms += other.stalls_10ms;
        self.stalls_100ms += other.stalls_100ms;
        self.stalls_1000ms += other.stalls_1000ms;
        for (mine, theirs) in self.lag_buckets.iter_mut().zip(other.lag_buckets) {
            *mine += theirs;
        }
        self.lag_count += other.lag_count;
        self.lag_microseconds += other.lag_microseconds;
        self.blocking_calls += other.blocking_calls;
        self.blocking_microseconds += other.blocking_microseconds;
        self.busy_microseconds += other.busy_microseconds;
        self.file_bytes_cached_on_worker += other.file_bytes_cached_on_worker;
        self.file_bytes_on_pool += other.file_bytes_on_pool;
        self.file_bytes_aio_off += other.file_bytes_aio_off;
        self.hints_cached += other.hints_cached;
        self.hints_not_cached += other.hints_not_cached;
        self.nowait_reads_cached += other.nowait_reads_cached;
        self.nowait_reads_short += other.nowait_reads_short;
    }

    /// The counts that only go up: what a retired worker leaves behind. Its levels
    /// (connections in a state) ended with it.
    fn cumulative(&self) -> WorkerSnapshot {
        WorkerSnapshot {
            active: 0,
            reading: 0,
            writing: 0,
            waiting: 0,
            ..*self
        }
    }
}

/// Every live worker's slot, and the sums of the workers that exited, by worker index.
#[derive(Debug)]
pub struct Registry {
    live: Mutex<Vec<Arc<WorkerStats>>>,
    retired: Mutex<Vec<WorkerSnapshot>>,
    /// `status_zone` names by number, and what retired workers counted in each.
    zone_names: Mutex<Vec<String>>,
    retired_zones: Mutex<Vec<ZoneSnapshot>>,
    /// Bit N: zone N was named by a `status_zone` in a location (NGINX Plus's location
    /// zones); the others are server zones.
    location_zones: AtomicU64,
    /// Configuration reloads that started a new generation, and those that failed.
    pub reloads: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// When the running configuration was loaded (Unix seconds).
    pub loaded_unix_seconds: AtomicU64,
}

/// The process's registry.
pub static GLOBAL: Registry = Registry::new();

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

impl Registry {
    pub const fn new() -> Registry {
        Registry {
            live: Mutex::new(Vec::new()),
            retired: Mutex::new(Vec::new()),
            zone_names: Mutex::new(Vec::new()),
            retired_zones: Mutex::new(Vec::new()),
            location_zones: AtomicU64::new(0),
            reloads: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
            loaded_unix_seconds: AtomicU64::new(0),
        }
    }

    /// A new slot for worker `index` of a generation.
    pub fn register(&self, index: usize) -> Arc<WorkerStats> {
        let slot = Arc::new(WorkerStats {
            index,
            zones: (0..MAX_STATUS_ZONES)
                .map(|_| ZoneStats::default())
                .collect(),
            ..WorkerStats::default()
        });
        lock(&self.live).push(Arc::clone(&slot));
        slot
    }

    /// Takes an exited worker's slot out, keeping what it counted.
    pub fn retire(&self, slot: &Arc<WorkerStats>) {
        let mut live = lock(&self.live);
        let Some(position) = live.iter().position(|other| Arc::ptr_eq(other, slot)) else {
            return;
        };
        live.swap_remove(position);
        let mut retired = lock(&self.retired);
        if retired.len() <= slot.index {
            retired.resize(slot.index + 1, WorkerSnapshot::default());
        }
        retired[slot.index].add(&slot.snapshot().cumulative());
        let mut zones = lock(&self.retired_zones);
        zones.resize(MAX_STATUS_ZONES, ZoneSnapshot::default());
        for (sum, zone) in zones.iter_mut().zip(&slot.zones) {
            sum.add(&zone.snapshot());
        }
    }

    /// The number of the zone called `name`, given at its first mention; `None` once
    /// [`MAX_STATUS_ZONES`] names are taken.
    pub fn zone(&self, name: &str) -> Option<usize> {
        let mut names = lock(&self.zone_names);
        if let Some(number) = names.iter().position(|known| known == name) {
            return Some(number);
        }
        if names.len() >= MAX_STATUS_ZONES {
            return None;
        }
        names.push(name.to_owned());
        Some(names.len() - 1)
    }

    /// Marks zone `number` as a location zone.
    pub fn mark_location_zone(&self, number: usize) {
        if let Some(bit) = 1u64.checked_shl(number as u32) {
            self.location_zones.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Whether zone `number` was named in a location.
    pub fn is_location_zone(&self, number: usize) -> bool {
        1u64.checked_shl(number as u32)
            .is_some_and(|bit| self.location_zones.load(Ordering::Relaxed) & bit != 0)
    }

    /// Every zone named so far with its counts over all workers, live and retired.
    pub fn zones(&self) -> Vec<(String, ZoneSnapshot)> {
        let names = lock(&self.zone_names).clone();
        let mut sums = lock(&self.retired_zones).clone();
        sums.resize(names.len().max(sums.len()), ZoneSnapshot::default());
        for slot in lock(&self.live).iter() {
            for (sum, zone) in sums.iter_mut().zip(&slot.zones) {
                sum.add(&zone.snapshot());
            }
        }
        names.into_iter().zip(sums).collect()
    }

    /// Every worker's counts summed, live and retired.
    pub fn totals(&self) -> WorkerSnapshot {
        let mut total = WorkerSnapshot::default();
        for worker in self.by_index() {
            total.add(&worker);
        }
        total
    }

    /// The counts by worker index: live workers of that index (an old and a new
    /// generation's during a reload) and retired ones summed, so each index's counters
    /// only go up.
    pub fn by_index(&self) -> Vec<WorkerSnapshot> {
        let mut sums = lock(&self.retired).clone();
        for slot in lock(&self.live).iter() {
            if sums.len() <= slot.index {
                sums.resize(slot.index + 1, WorkerSnapshot::default());
            }
            sums[slot.index].add(&slot.snapshot());
        }
        sums
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Only this module's short sections hold these locks; the data stays consistent.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_summed_and_retired_counts_stay() {
        let registry = Registry::new();
        let first = registry.register(0);
        let second = registry.register(1);
        first.accepted.add(2);
        first.active.increment();
        second.accepted.add(3);
        second.requests.add(5);
        let totals = registry.totals();
        assert_eq!((totals.accepted, totals.requests, totals.active), (5, 5, 1));
        first.active.decrement();
        registry.retire(&first);
        let replacement = registry.register(0);
        replacement.accepted.add(1);
        let by_index = registry.by_index();
        assert_eq!(by_index[0].accepted, 3);
        assert_eq!(by_index[1].accepted, 3);
        assert_eq!(registry.totals().accepted, 6);
        assert_eq!(registry.totals().active, 0);
    }

    #[test]
    fn zones_keep_their_number_and_counts() {
        let registry = Registry::new();
        assert_eq!(registry.zone("a"), Some(0));
        assert_eq!(registry.zone("b"), Some(1));
        assert_eq!(registry.zone("a"), Some(0));
        let slot = registry.register(0);
        let finished = crate::zones::Finished {
            status: 200,
            responded: true,
            received_bytes: 1,
            sent_bytes: 2,
            duration_microseconds: 3,
        };
        slot.zones[1].record(&finished);
        registry.retire(&slot);
        registry.register(0).zones[1].record(&finished);
        let zones = registry.zones();
        assert_eq!(zones[1].0, "b");
        assert_eq!(zones[1].1.requests, 2);
        assert_eq!(zones[0].1.requests, 0);
        for number in 2..MAX_STATUS_ZONES {
            assert!(registry.zone(&number.to_string()).is_some());
        }
        assert_eq!(registry.zone("one too many"), None);
    }

    #[test]
    fn lag_lands_in_its_bucket() {
        let stats = WorkerStats::default();
        stats.record_lag(300);
        stats.record_lag(10_000);
        stats.record_lag(150_000);
        stats.record_lag(9_000_000);
        let snapshot = stats.snapshot();
        assert_eq!(snapshot.lag_buckets[2], 1, "300 µs: at most 500 µs");
        assert_eq!(snapshot.lag_buckets[6], 1, "10 ms: at most 10 ms");
        assert_eq!(snapshot.lag_buckets[9], 1, "150 ms: at most 250 ms");
        assert_eq!(snapshot.lag_buckets[12], 1, "9 s: past the last bound");
        assert_eq!(snapshot.lag_count, 4);
        assert_eq!(
            (
                snapshot.stalls_10ms,
                snapshot.stalls_100ms,
                snapshot.stalls_1000ms
            ),
            (3, 2, 1)
        );
    }
}
