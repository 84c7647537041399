//! Purge rules (`proxy_cache_purge`): a purged key, or every key starting with a prefix,
//! no longer answers for entries stored before the purge. Rules are checked when an entry
//! is read (lazily, as NGINX Plus applies them with its purger off), so a purge costs no
//! walk of the cache; the entries themselves go when they are next read or by
//! inactivity.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rules a zone keeps at most.
const RULES_MAX: usize = 4096;

/// One purge: a key (or a key prefix) and when it was purged (nanoseconds since the
/// epoch, compared with the entry file's modification time).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    key: Vec<u8>,
    prefix: bool,
    at: u64,
}

/// A zone's purge rules.
#[derive(Debug, Default)]
pub struct PurgeRules {
    any: AtomicBool,
    rules: Mutex<Vec<Rule>>,
}

impl PurgeRules {
    /// Purges `key` (a prefix when `prefix`) as of `now` (nanoseconds since the epoch):
    /// entries written before it are gone. A later purge of the same key replaces the
    /// earlier one.
    pub fn add(&self, key: &[u8], prefix: bool, now: u64) {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        rules.retain(|rule| !(rule.key == key && rule.prefix == prefix));
        // Invalidations add a rule per key changed; the oldest go first past the limit
        // (their main entries are removed at once anyway).
        if rules.len() >= RULES_MAX {
            rules.remove(0);
        }
        rules.push(Rule {
            key: key.to_vec(),
            prefix,
            at: now,
        });
        self.any.store(true, Ordering::Release);
    }

    /// Whether an entry of `key` written at `stored` (nanoseconds since the epoch) was
    /// purged since.
    pub fn covers(&self, key: &[u8], stored: u64) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        rules.iter().any(|rule| {
            stored < rule.at
                && if rule.prefix {
                    key.starts_with(&rule.key)
                } else {
                    key == rule.key.as_slice()
                }
        })
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
}
