//! `limit_rate` arithmetic, as nginx's write filter does it. Pure: times and byte counts are
//! parameters; the body writer reads the clock and waits on tokio timers.
//!
//! nginx counts every byte written for the response (head, chunk framing and body) and
//! whole wall-clock seconds since the request started. Before a write it allows
//! `rate * (seconds since start + 1) - (sent - limit_rate_after)` bytes (so the first second's
//! share goes out at once); after a write it pauses for the time the bytes written beyond
//! `limit_rate_after` take at `rate`. The pause after the last write is dropped.

use std::time::Duration;

/// The limit of one response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Bytes per second; never 0 (0 means no limit and no `RateLimit`).
    pub rate: u64,
    /// `limit_rate_after`: bytes that do not count against the rate.
    pub after: u64,
    /// The wall-clock second in which the request started (nginx's `r->start_sec`).
    pub start_second: i64,
}

impl RateLimit {
    /// How many bytes may be written now, after `sent` bytes of the response; zero or less
    /// means none until [`RateLimit::wait`] has passed.
    pub(crate) fn allowance(&self, now_second: i64, sent: u64) -> i64 {
        debug_assert!(self.rate > 0, "a rate limit of 0 is no limit");
        let seconds = i128::from(now_second.saturating_sub(self.start_second)) + 1;
        let budget = i128::from(self.rate) * seconds;
        let counted = i128::from(sent) - i128::from(self.after);
        clamp_to_i64(budget - counted)
    }

    /// How long to wait when the allowance is `allowance` (zero or less): until the missing
    /// bytes are earned, plus a millisecond.
    pub fn wait(&self, allowance: i64) -> Duration {
        debug_assert!(allowance <= 0, "there is nothing to wait for");
        let missing = u128::from(allowance.unsigned_abs());
        millis(missing * 1000 / u128::from(self.rate) + 1)
    }

    /// The pause after a write took the response from `sent_before` to `sent_after` bytes:
    /// the time its bytes beyond `limit_rate_after` take at the rate (whole milliseconds,
    /// rounded down).
    pub(crate) fn pause_after(&self, sent_before: u64, sent_after: u64) -> Duration {
        let counted_before = sent_before.saturating_sub(self.after);
        let counted_after = sent_after.saturating_sub(self.after);
        let bytes = u128::from(counted_after.saturating_sub(counted_before));
        millis(bytes * 1000 / u128::from(self.rate))
    }
}

/// The wall-clock second a request started in, from the time now and how long ago it
/// started (the request keeps a monotonic start).
pub(crate) fn start_second(now_unix_millis: i64, elapsed: Duration) -> i64 {
    let elapsed_millis = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
    now_unix_millis
        .saturating_sub(elapsed_millis)
        .div_euclid(1000)
}

fn clamp_to_i64(value: i128) -> i64 {
    value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn millis(value: u128) -> Duration {
    Duration::from_millis(u64::try_from(value).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: i64 = 1_795_303_753;

    fn limit(rate: u64, after: u64) -> RateLimit {
        RateLimit {
            rate,
            after,
            start_second: START,
        }
    }

    #[test]
    fn the_first_second_is_allowed_at_once() {
        let limit = limit(4096, 0);
        assert_eq!(limit.allowance(START, 0), 4096);
        assert_eq!(limit.allowance(START, 4096), 0);
        assert_eq!(limit.allowance(START + 1, 4096), 4096);
        assert_eq!(limit.allowance(START + 2, 4096), 8192);
    }

    #[test]
    fn limit_rate_after_bytes_are_free() {
        let limit = limit(1000, 256);
        assert_eq!(limit.allowance(START, 0), 1256);
        assert_eq!(limit.allowance(START, 1256), 0);
        assert_eq!(limit.allowance(START, 1300), -44);
        // Before `after` is reached, nothing pauses.
        assert_eq!(limit.pause_after(0, 256), Duration::ZERO);
        assert_eq!(limit.pause_after(0, 756), Duration::from_millis(500));
        assert_eq!(limit.pause_after(756, 1256), Duration::from_millis(500));
    }

    #[test]
    fn waits_for_the_missing_bytes_plus_a_millisecond() {
        let limit = limit(4096, 0);
        assert_eq!(limit.wait(0), Duration::from_millis(1));
        assert_eq!(limit.wait(-2048), Duration::from_millis(501));
        assert_eq!(limit.wait(-4096), Duration::from_millis(1001));
    }

    #[test]
    fn pauses_round_down_to_milliseconds() {
        let limit = limit(3000, 0);
        assert_eq!(limit.pause_after(0, 1), Duration::ZERO);
        assert_eq!(limit.pause_after(0, 3), Duration::from_millis(1));
        assert_eq!(limit.pause_after(100, 3100), Duration::from_secs(1));
    }

    /// 12 KiB plus a 200-byte head at 4 KiB/s in 4 KiB writes, as nginx would write it: the
    /// first second's share at once, then one share per second, so the last byte leaves
    /// after three seconds.
    #[test]
    fn a_whole_transfer_takes_the_expected_time() {
        let limit = limit(4096, 0);
        let total = 12 * 1024 + 200;
        let (mut sent, mut now_millis, mut delayed_until) = (0u64, 0u64, 0u64);
        while sent < total {
            now_millis = now_millis.max(delayed_until);
            let second = START + (now_millis / 1000) as i64;
            let allowance = limit.allowance(second, sent);
            if allowance <= 0 {
                delayed_until = now_millis + limit.wait(allowance).as_millis() as u64;
                continue;
            }
            let written = (allowance as u64).min(total - sent).min(4096);
            let before = sent;
            sent += written;
            delayed_until = now_millis + limit.pause_after(before, sent).as_millis() as u64;
        }
        assert_eq!(now_millis, 3000);
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let limit = limit(u64::MAX / 2, 0);
        assert_eq!(limit.allowance(i64::MAX, 0), i64::MAX);
        assert!(limit.pause_after(0, u64::MAX) > Duration::ZERO);
        let slow = self::limit(1, 0);
        assert_eq!(slow.allowance(START, u64::MAX), i64::MIN);
    }

    #[test]
    fn start_second_counts_back_from_now() {
        assert_eq!(start_second(10_500, Duration::from_millis(400)), 10);
        assert_eq!(start_second(10_500, Duration::from_millis(600)), 9);
        assert_eq!(start_second(10_000, Duration::ZERO), 10);
    }
}
