//! The worker's clock: wall time with the local UTC offset, looked up once per second.

use std::cell::Cell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use logging::time::Timestamp;

use crate::sys::linux::utc_offset_seconds;

/// Reads the time for one worker. `clock_gettime` is a vDSO call (tens of nanoseconds), so
/// the time itself is read on demand; what is cached is the local time zone's offset, which
/// needs `localtime_r` and changes at most at an hour boundary.
#[derive(Debug, Default)]
pub struct Clock {
    offset_second: Cell<i64>,
    offset: Cell<i32>,
}

/// One reading of both clocks.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    pub wall: Timestamp,
    pub monotonic: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            offset_second: Cell::new(i64::MIN),
            offset: Cell::new(0),
        }
    }

    pub fn now(&self) -> Now {
        let monotonic = Instant::now();
        Now {
            wall: self.wall(),
            monotonic,
        }
    }

    /// The wall clock with the local offset.
    pub fn wall(&self) -> Timestamp {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let unix_seconds = since_epoch.as_secs() as i64;
        if unix_seconds != self.offset_second.get() {
            self.offset_second.set(unix_seconds);
            self.offset.set(utc_offset_seconds(unix_seconds));
        }
        Timestamp {
            unix_seconds,
            milliseconds: since_epoch.subsec_millis(),
            utc_offset_seconds: self.offset.get(),
        }
    }
}

/// The wall time for code that has no worker clock (the master).
pub fn wall_now() -> Timestamp {
    Clock::new().wall()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_time_is_close_to_system_time() {
        let clock = Clock::new();
        let expected = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let now = clock.now();
        assert!((now.wall.unix_seconds - expected).abs() <= 1);
        assert!(now.wall.milliseconds < 1000);
    }
}
