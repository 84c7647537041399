//! What a zone answered: responses and body bytes by cache status, counted once per
//! request when it is logged (relaxed atomics, summed by whoever reads them).

use std::sync::atomic::{AtomicU64, Ordering};

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

/// Responses and bytes per status, in the order of [`STATUSES`].
#[derive(Debug, Default)]
pub struct CacheStats {
    responses: [AtomicU64; 7],
    bytes: [AtomicU64; 7],
}

impl CacheStats {
    /// Counts one response of `status` that sent `bytes` of body.
    pub fn record(&self, status: &str, bytes: u64) {
        if let Some(index) = STATUSES.iter().position(|known| *known == status) {
            self.responses[index].fetch_add(1, Ordering::Relaxed);
            self.bytes[index].fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Responses and bytes of `status`.
    pub fn of(&self, status: &str) -> (u64, u64) {
        STATUSES
            .iter()
            .position(|known| *known == status)
            .map_or((0, 0), |index| {
                (
                    self.responses[index].load(Ordering::Relaxed),
                    self.bytes[index].load(Ordering::Relaxed),
                )
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
}
