//! The purger (`proxy_cache_path ... purger=on`, NGINX Plus's name): a paced walk that
//! applies prefix purge rules ([`crate::purge`]) to entries nobody reads, so their files
//! go without waiting for `inactive` or the LRU, and the rule goes after them.
//!
//! It runs on the cache manager thread, between its other duties ([`crate::manager`]).
//! When the zone is warm and a prefix rule is due, a walk starts: shard by shard, it
//! lists the indexed entries whose file was stored no later than a rule it applies
//! (whole seconds of the file's time, which the index keeps), opens each file, reads its
//! `KEY:` line and its time to the nanosecond, and removes the entry (index, then unlink
//! by the manager, as an eviction) when a rule covers it. Each run reads at most
//! `purger_files` files or lasts at most `purger_threshold`, then the walk rests for
//! `purger_sleep`.
//!
//! When the walk is done, each of its rules goes if the walk started at least
//! [`RULE_MARGIN`] after the rule: every entry it could cover was indexed by then (a file
//! renamed into place is indexed within that margin of its last write, the assumption
//! [`crate::manager::retire_rules`] makes too). A rule walked sooner stays and is walked
//! again once the margin has passed, over the entries stored in the margin before it
//! only: the older ones were all indexed, and checked, by the first walk. Meanwhile, and
//! with `purger=off`, rules keep applying when an entry is read.

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use crate::index::Zone;
use crate::purge::Rule;
use crate::store;

/// How long a rule waits, after the purge, before a walk may retire it.
pub const RULE_MARGIN: Duration = Duration::from_secs(60);
/// The wait when nothing is to be walked: a new rule is seen within it.
pub const IDLE_WAIT: Duration = Duration::from_secs(1);
/// How much of an entry file is read first for its key line (a longer key reads more).
const HEAD_READ: usize = 4096;
const NANOS: u64 = 1_000_000_000;

/// The purger's state, kept by the manager thread.
#[derive(Debug, Default)]
pub struct Purger {
    /// The zone's prefix rules, as of `version`, with what is left to walk for each.
    rules: Vec<Tracked>,
    version: Option<u64>,
    walk: Option<Walk>,
    /// Files read and entries removed since the start (for tests and logs).
    pub files_read: u64,
    pub removed: u64,
}

#[derive(Clone, Debug)]
struct Tracked {
    rule: Rule,
    /// The walk looks at entries stored from this second on (0: all of them).
    floor: u64,
    /// When (nanoseconds since the epoch) the rule may be walked.
    due: u64,
}

#[derive(Debug)]
struct Walk {
    /// When the walk started (nanoseconds since the epoch).
    started: u64,
    rules: Vec<Tracked>,
    /// The next shard to list.
    shard: usize,
    /// Keys listed and not yet read.
    pending: Vec<[u8; 16]>,
}

impl Purger {
    /// One run: starts a walk if a rule is due, then reads up to `purger_files` files or
    /// until `purger_threshold` by `clock`; `now` is the wall time (nanoseconds since the
    /// epoch). Returns the delay to the next run.
    pub fn run(&mut self, zone: &Zone, now: u64, clock: &dyn Fn() -> Instant) -> Duration {
        let params = zone.params();
        if zone.cold() {
            // Files the index does not know yet would escape the walk.
            return IDLE_WAIT;
        }
        if self.walk.is_none() {
            self.sync(zone);
            let due: Vec<Tracked> = self
                .rules
                .iter()
                .filter(|tracked| tracked.due <= now)
                .cloned()
                .collect();
            if due.is_empty() {
                let next = self.rules.iter().map(|tracked| tracked.due).min();
                let wait = next.map_or(IDLE_WAIT, |due| Duration::from_nanos(due - now));
                return wait.min(IDLE_WAIT);
            }
            self.walk = Some(Walk {
                started: now,
                rules: due,
                shard: 0,
                pending: Vec::new(),
            });
        }
        let start = clock();
        let mut files = 0;
        while let Some(walk) = self.walk.as_mut() {
            let Some(md5) = walk.pending.pop() else {
                if walk.shard == zone.shard_count() {
                    self.finish(zone);
                    return params.purger_sleep;
                }
                let rules = &walk.rules;
                walk.pending = zone.files_written_in(walk.shard, |written| {
                    rules.iter().any(|tracked| {
                        tracked.floor <= written && written <= tracked.rule.at / NANOS
                    })
                });
                walk.shard += 1;
                if clock().saturating_duration_since(start) >= params.purger_threshold {
                    break;
                }
                continue;
            };
            self.files_read += 1;
            if check(zone, &md5) {
                self.removed += 1;
            }
            files += 1;
            if files >= params.purger_files
                || clock().saturating_duration_since(start) >= params.purger_threshold
            {
                break;
            }
        }
        params.purger_sleep
    }

    /// Whether a walk is under way.
    pub fn walking(&self) -> bool {
        self.walk.is_some()
    }

    /// Follows the zone's prefix rules: new ones are due at once, those gone are dropped.
    fn sync(&mut self, zone: &Zone) {
        let version = zone.purges().version();
        if self.version == Some(version) {
            return;
        }
        self.version = Some(version);
        let old = std::mem::take(&mut self.rules);
        self.rules = zone
            .purges()
            .export()
            .into_iter()
            .filter(|rule| rule.prefix)
            .map(|rule| {
                old.iter()
                    .find(|tracked| tracked.rule == rule)
                    .cloned()
                    .unwrap_or(Tracked {
                        rule,
                        floor: 0,
                        due: 0,
                    })
            })
            .collect();
    }

    /// The walk is done: its rules go, or are walked again over their margin.
    fn finish(&mut self, zone: &Zone) {
        let Some(walk) = self.walk.take() else {
            return;
        };
        let margin = u64::try_from(RULE_MARGIN.as_nanos()).unwrap_or(u64::MAX);
        for done in walk.rules {
            let Some(at) = self.rules.iter().position(|t| t.rule == done.rule) else {
                continue;
            };
            if walk.started >= done.rule.at.saturating_add(margin) {
                self.rules.remove(at);
                zone.purges().retire(&done.rule);
            } else {
                let tracked = &mut self.rules[at];
                tracked.floor = (done.rule.at.saturating_sub(margin) / NANOS).saturating_sub(1);
                tracked.due = done.rule.at.saturating_add(margin);
            }
        }
        // Retiring changed the version: what is left is already known.
        self.version = Some(zone.purges().version());
    }
}

/// The wall time in the unit of purge rules: nanoseconds since the epoch.
pub fn wall_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
}

/// Reads the entry file of `md5` and removes the entry if a rule covers it; true when it
/// was removed. A file gone, replaced or unreadable is left to the readers.
fn check(zone: &Zone, md5: &[u8; 16]) -> bool {
    let path = zone.params().layout.entry_path_of(md5);
    let Ok((file, metadata)) = store::open_entry(&path) else {
        return false;
    };
    let Ok(mut head) = store::read_head(&file, HEAD_READ) else {
        return false;
    };
    if let Ok(header) = crate::format::decode(&head)
        && usize::from(header.header_start) > head.len()
    {
        let Ok(longer) = store::read_head(&file, usize::from(header.header_start)) else {
            return false;
        };
        head = longer;
    }
    let Some(key) = crate::format::key_text_of(&head) else {
        return false;
    };
    let seconds = u64::try_from(metadata.mtime()).unwrap_or(0);
    let nanos = u64::try_from(metadata.mtime_nsec()).unwrap_or(0);
    let stored = seconds.saturating_mul(NANOS).saturating_add(nanos);
    zone.purges().covers(key, stored) && zone.remove(md5, metadata.ino())
}

#[cfg(test)]
mod tests;
