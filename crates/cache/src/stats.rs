//! What a zone answered: responses and body bytes by cache status, counted once per
//! request when it is logged (relaxed atomics, summed by whoever reads them). Each thread
//! counts in a slot of its own, a cache line apart from the others', so workers counting
//! at once do not pass one line between their cores on every request.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The cache statuses a request ends with (`$upstream_cache_status`).
pub const STATUSES: [&str; 7] = [
    "HIT",
    "STALE",
    "UPDATING",
    "REVALIDATED",
    "MISS",
    "EXPIRED",
    "BYPASS",
];

/// Slots per zone: threads beyond this many share theirs (still correct, only slower).
const SLOTS: usize = 16;

/// One thread's counts: responses and bytes per status, in the order of [`STATUSES`].
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot {
    responses: [AtomicU64; 7],
    bytes: [AtomicU64; 7],
}

/// Responses and bytes per status.
#[derive(Debug, Default)]
pub struct CacheStats {
    slots: [Slot; SLOTS],
}

/// The slot number of the calling thread, given out in the order threads first count.
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    }
    SLOT.with(|slot| *slot)
}

impl CacheStats {
    /// Counts one response of `status` that sent `bytes` of body.
    pub fn record(&self, status: &str, bytes: u64) {
        if let Some(index) = STATUSES.iter().position(|known| *known == status) {
            let slot = &self.slots[thread_slot()];
            slot.responses[index].fetch_add(1, Ordering::Relaxed);
            slot.bytes[index].fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Responses and bytes of `status`, over every thread.
    pub fn of(&self, status: &str) -> (u64, u64) {
        STATUSES
            .iter()
            .position(|known| *known == status)
            .map_or((0, 0), |index| {
                self.slots.iter().fold((0, 0), |(responses, bytes), slot| {
                    (
                        responses + slot.responses[index].load(Ordering::Relaxed),
                        bytes + slot.bytes[index].load(Ordering::Relaxed),
                    )
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::CacheStats;

    #[test]
    fn counts_by_status() {
        let stats = CacheStats::default();
        stats.record("HIT", 10);
        stats.record("HIT", 5);
        stats.record("MISS", 7);
        stats.record("NOPE", 1);
        assert_eq!(stats.of("HIT"), (2, 15));
        assert_eq!(stats.of("MISS"), (1, 7));
        assert_eq!(stats.of("BYPASS"), (0, 0));
    }

    #[test]
    fn counts_of_threads_are_summed() {
        let stats = std::sync::Arc::new(CacheStats::default());
        let threads: Vec<_> = (0..20)
            .map(|n| {
                let stats = std::sync::Arc::clone(&stats);
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        stats.record("HIT", n);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a counting thread");
        }
        // 20 threads (more than the slots, so some share one), 100 HITs each.
        assert_eq!(stats.of("HIT"), (2000, 100 * (0..20).sum::<u64>()));
    }
}
