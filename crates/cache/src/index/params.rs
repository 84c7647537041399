//! A cache path's parameters, and the sizes derived from them.

use std::time::Duration;

use crate::key::Layout;

/// Bytes nginx's shared zone keeps for itself before its slab pages.
const ZONE_OVERHEAD: u64 = 8192;
/// Bytes per key in nginx's slab (its node is 120 bytes, slab class 128).
const BYTES_PER_KEY: u64 = 128;
/// The least slack above `max_size`.
const MIN_SLACK: u64 = 64 * 1024 * 1024;

/// A cache path's parameters (`proxy_cache_path`), already parsed and defaulted.
#[derive(Clone, Debug)]
pub struct ZoneParams {
    pub name: String,
    pub layout: Layout,
    pub keys_zone_size: u64,
    pub inactive: Duration,
    /// Bytes; `None` is unlimited.
    pub max_size: Option<u64>,
    /// Portico's `max_size_slack=`; `None` is max(1% of `max_size`, 64 MiB).
    pub max_size_slack: Option<u64>,
    /// Bytes of free space the manager keeps; `None` when not set.
    pub min_free: Option<u64>,
    pub manager_files: usize,
    pub manager_sleep: Duration,
    pub manager_threshold: Duration,
    pub loader_files: usize,
    pub loader_sleep: Duration,
    pub loader_threshold: Duration,
    pub use_temp_path: bool,
    /// `purger=on`: prefix purge rules are applied by a paced walk ([`crate::purger`]),
    /// not only when an entry is read.
    pub purger: bool,
    pub purger_files: usize,
    pub purger_sleep: Duration,
    pub purger_threshold: Duration,
}

impl ZoneParams {
    /// nginx's defaults: `inactive=10m`, no size limits, batches of 100 files,
    /// 50 ms sleeps, 200 ms thresholds, `use_temp_path=on`; the purger off (when on,
    /// batches of 10 files, 50 ms sleeps and thresholds, as NGINX Plus).
    pub fn new(name: &str, layout: Layout, keys_zone_size: u64) -> ZoneParams {
        ZoneParams {
            name: name.to_owned(),
            layout,
            keys_zone_size,
            inactive: Duration::from_secs(600),
            max_size: None,
            max_size_slack: None,
            min_free: None,
            manager_files: 100,
            manager_sleep: Duration::from_millis(50),
            manager_threshold: Duration::from_millis(200),
            loader_files: 100,
            loader_sleep: Duration::from_millis(50),
            loader_threshold: Duration::from_millis(200),
            use_temp_path: true,
            purger: false,
            purger_files: 10,
            purger_sleep: Duration::from_millis(50),
            purger_threshold: Duration::from_millis(50),
        }
    }

    /// How many keys the zone holds.
    pub fn capacity(&self) -> usize {
        let keys = self.keys_zone_size.saturating_sub(ZONE_OVERHEAD) / BYTES_PER_KEY;
        usize::try_from(keys.max(1)).unwrap_or(usize::MAX)
    }

    /// The hard ceiling on committed and reserved bytes: `max_size + slack`.
    pub fn ceiling(&self) -> Option<u64> {
        let max_size = self.max_size?;
        let slack = self
            .max_size_slack
            .unwrap_or_else(|| (max_size / 100).max(MIN_SLACK));
        Some(max_size.saturating_add(slack))
    }
}
