//! Purge rules (`proxy_cache_purge`): a purged key, or every key starting with a prefix,
//! no longer answers for entries stored before the purge. Rules are checked when an entry
//! is read (lazily, as NGINX Plus applies them with its purger off), so a purge costs no
//! walk of the cache; the entries themselves go when they are next read or by
//! inactivity.
//!
//! Rules are kept across restarts: in the index snapshot and checkpoints, and as records
//! of the journal ([`crate::journal`]), which the manager writes at most a second after
//! [`PurgeRules::add`]. A rule goes once every file the index has was stored after it (the
//! manager checks at each checkpoint, see [`crate::manager`]); at most [`RULES_MAX`] are
//! kept meanwhile, the oldest going first. With `purger=on`, the purger
//! ([`crate::purger`]) also walks the entries older than a prefix rule and removes those
//! it covers, then retires the rule.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Rules a zone keeps at most.
pub const RULES_MAX: usize = 4096;

/// One purge: a key (or a key prefix) and when it was purged (nanoseconds since the
/// epoch, compared with the entry file's modification time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub key: Vec<u8>,
    pub prefix: bool,
    pub at: u64,
}

/// A zone's purge rules.
#[derive(Debug, Default)]
pub struct PurgeRules {
    any: AtomicBool,
    /// Counts every change of the list (the purger re-reads it when this moves).
    version: AtomicU64,
    rules: Mutex<Rules>,
}

#[derive(Debug, Default)]
struct Rules {
    /// With the sequence number of their addition (0: restored, already saved).
    list: Vec<(u64, Rule)>,
    last: u64,
}

impl PurgeRules {
    /// Purges `key` (a prefix when `prefix`) as of `now` (nanoseconds since the epoch):
    /// entries written before it are gone. A later purge of the same key replaces the
    /// earlier one.
    pub fn add(&self, key: &[u8], prefix: bool, now: u64) {
        let rule = Rule {
            key: key.to_vec(),
            prefix,
            at: now,
        };
        let mut rules = self.lock();
        rules.last += 1;
        let seq = rules.last;
        rules.insert(seq, rule);
        self.any.store(true, Ordering::Release);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Puts back a rule saved by an earlier run (not journaled again).
    pub fn restore(&self, rule: Rule) {
        self.lock().insert(0, rule);
        self.any.store(true, Ordering::Release);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// A number that changes whenever a rule is added or goes.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Drops `rule` (the purger has removed every entry it covers), unless a later purge
    /// of the same key replaced it. Returns whether it went.
    pub fn retire(&self, rule: &Rule) -> bool {
        let mut rules = self.lock();
        let Some(at) = rules.list.iter().position(|(_, old)| old == rule) else {
            return false;
        };
        rules.list.remove(at);
        if rules.list.is_empty() {
            self.any.store(false, Ordering::Release);
        }
        self.version.fetch_add(1, Ordering::Release);
        true
    }

    /// The rules added after sequence number `after`, and the last number.
    pub fn added_since(&self, after: u64) -> (Vec<Rule>, u64) {
        let rules = self.lock();
        let added = rules
            .list
            .iter()
            .filter(|(seq, _)| *seq > after)
            .map(|(_, rule)| rule.clone())
            .collect();
        (added, rules.last)
    }

    /// Every rule, oldest first.
    pub fn export(&self) -> Vec<Rule> {
        self.lock()
            .list
            .iter()
            .map(|(_, rule)| rule.clone())
            .collect()
    }

    /// Drops the rules taken before `horizon` (nanoseconds since the epoch): no entry they
    /// could cover is left. Returns how many went.
    pub fn retire_before(&self, horizon: u64) -> usize {
        let mut rules = self.lock();
        let before = rules.list.len();
        rules.list.retain(|(_, rule)| rule.at >= horizon);
        if rules.list.is_empty() {
            self.any.store(false, Ordering::Release);
        }
        let gone = before - rules.list.len();
        if gone > 0 {
            self.version.fetch_add(1, Ordering::Release);
        }
        gone
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether no rule was ever added: no entry can be covered, whatever its time.
    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// Whether an entry of `key` written at `stored` (nanoseconds since the epoch) was
    /// purged since.
    pub fn covers(&self, key: &[u8], stored: u64) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let rules = self.lock();
        rules.list.iter().any(|(_, rule)| {
            stored < rule.at
                && if rule.prefix {
                    key.starts_with(&rule.key)
                } else {
                    key == rule.key.as_slice()
                }
        })
    }
}

impl Rules {
    /// A later purge of the same key replaces an earlier one; past [`RULES_MAX`] the
    /// oldest goes (invalidations add a rule per key changed, and their main entries are
    /// removed at once anyway).
    fn insert(&mut self, seq: u64, rule: Rule) {
        self.list
            .retain(|(_, old)| !(old.key == rule.key && old.prefix == rule.prefix));
        if self.list.len() >= RULES_MAX {
            self.list.remove(0);
        }
        self.list.push((seq, rule));
    }
}

#[cfg(test)]
mod tests {
    use super::PurgeRules;

    #[test]
    fn exact_and_prefix_rules_cover_older_entries_only() {
        let rules = PurgeRules::default();
        assert!(!rules.covers(b"http://a/x", 10));
        rules.add(b"http://a/x", false, 100);
        assert!(rules.covers(b"http://a/x", 99));
        assert!(!rules.covers(b"http://a/x", 100), "stored after the purge");
        assert!(
            !rules.covers(b"http://a/xy", 50),
            "an exact rule is no prefix"
        );
        rules.add(b"http://a/img/", true, 200);
        assert!(rules.covers(b"http://a/img/1.png", 150));
        assert!(!rules.covers(b"http://a/css/1.css", 150));
    }

    #[test]
    fn a_retired_rule_goes_unless_replaced() {
        let rules = PurgeRules::default();
        rules.add(b"/a/", true, 100);
        let old = rules.export()[0].clone();
        let version = rules.version();
        rules.add(b"/a/", true, 200);
        assert_ne!(rules.version(), version);
        assert!(!rules.retire(&old), "replaced by a later purge");
        assert!(rules.covers(b"/a/x", 150));
        let new = rules.export()[0].clone();
        assert!(rules.retire(&new));
        assert!(!rules.covers(b"/a/x", 150));
        assert!(rules.export().is_empty());
    }
}
