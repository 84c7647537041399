//! A periodic tick on the worker's own poller, precise to microseconds, that says how late
//! the loop got to it.
//!
//! tokio's timers round to whole milliseconds, so a loop kept busy for 0.3 ms and one kept
//! for 1.2 ms looked the same to a watcher built on them (the loop-lag histogram's first
//! bucket was 1 ms, and an idle loop already showed up to 2.5 ms). A `timerfd` is a
//! high-resolution kernel timer: it becomes readable at its due time, and the worker sees
//! that when its loop next asks the poller, so the lateness is what the loop (and the CPU
//! the thread waited for) cost, without rounding.

use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use tokio::io::unix::AsyncFd;

/// A tick every `period` on a fixed grid: the timerfd is armed once, as an interval timer,
/// so a tick costs the wake-up and one `read` (a one-shot timer re-armed after each tick
/// cost a `timerfd_settime` too, 100 times a second in every idle worker).
#[derive(Debug)]
pub struct Ticker {
    period: Duration,
    /// The due time of the next expiry not consumed yet.
    due: Instant,
    /// `None` when no timerfd could be made (no descriptors left): tokio's timer then.
    timer: Option<AsyncFd<OwnedFd>>,
}

impl Ticker {
    /// A ticker whose first tick is due `period` from now. Must be called inside a tokio
    /// runtime with I/O and time enabled (a worker's); panics otherwise, as tokio does.
    pub fn new(period: Duration) -> Ticker {
        let timer = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .ok()
        .and_then(|fd| crate::sys::linux::register_readable(fd).ok());
        let mut ticker = Ticker {
            period,
            due: Instant::now() + period,
            timer,
        };
        ticker.arm();
        ticker
    }

    /// Whether ticks come from a timerfd (microseconds), not tokio's timer (milliseconds).
    pub fn is_precise(&self) -> bool {
        self.timer.is_some()
    }

    /// Stops the ticks: the timer no longer wakes the loop. [`Ticker::resume`] starts
    /// them again.
    pub fn pause(&mut self) {
        self.set(Duration::ZERO);
    }

    /// Ticks again, the first one `period` from now.
    pub fn resume(&mut self) {
        self.due = Instant::now() + self.period;
        self.arm();
    }

    /// Arms the timerfd as an interval timer whose first expiry is `due`.
    fn arm(&mut self) {
        self.set(self.period);
    }

    /// Sets the timerfd to expire every `period` from now; zero disarms it.
    fn set(&mut self, period: Duration) {
        let Some(timer) = &self.timer else {
            return;
        };
        let period = Timespec {
            tv_sec: i64::try_from(period.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(period.subsec_nanos()),
        };
        let value = Itimerspec {
            it_interval: period,
            it_value: period,
        };
        if timerfd_settime(timer.get_ref(), TimerfdTimerFlags::empty(), &value).is_err() {
            // Cannot happen with a valid descriptor and value; tokio's timer takes over.
            self.timer = None;
        }
    }

    /// Waits for the next tick and returns how late the loop got to it: from the due time
    /// of the first expiry it had not seen (a loop held for several periods sees the whole
    /// hold once, and the ticks it missed are not reported again).
    pub async fn tick(&mut self) -> Duration {
        let expiries = match &self.timer {
            Some(timer) => match wait_expired(timer).await {
                Ok(expiries) => expiries,
                Err(_) => {
                    self.timer = None;
                    tokio::time::sleep_until(self.due.into()).await;
                    0
                }
            },
            None => {
                tokio::time::sleep_until(self.due.into()).await;
                0
            }
        };
        let now = Instant::now();
        let late = now.saturating_duration_since(self.due);
        self.due = if self.timer.is_some() {
            let passed = u32::try_from(expiries.max(1)).unwrap_or(u32::MAX);
            self.due + self.period.saturating_mul(passed)
        } else {
            now + self.period
        };
        late
    }
}

/// Waits until the timer has expired and consumes the expiries: how many periods ended.
async fn wait_expired(timer: &AsyncFd<OwnedFd>) -> io::Result<u64> {
    loop {
        let mut guard = timer.readable().await?;
        let mut expirations = [0u8; 8];
        match rustix::io::read(timer.get_ref(), &mut expirations) {
            Ok(_) => {
                // Consumed: the next expiry is a new edge, so the readiness seen here is
                // cleared now rather than by a read that would only fail (tokio keeps a
                // readiness that arrived after this guard was taken).
                guard.clear_ready();
                return Ok(u64::from_ne_bytes(expirations));
            }
            Err(rustix::io::Errno::AGAIN) => guard.clear_ready(),
            Err(error) => return Err(error.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paused ticker does not wake the loop; resumed, it ticks a period later.
    #[test]
    fn a_paused_ticker_is_silent_until_resumed() {
        block_on(async {
            let mut ticker = Ticker::new(Duration::from_millis(5));
            ticker.tick().await;
            ticker.pause();
            let waited = tokio::time::timeout(Duration::from_millis(40), ticker.tick()).await;
            assert!(waited.is_err(), "no tick while paused");
            ticker.resume();
            let started = Instant::now();
            let late = ticker.tick().await;
            assert!(started.elapsed() >= Duration::from_millis(4));
            assert!(late < Duration::from_secs(5), "saw {late:?}");
        });
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    /// A tick comes no sooner than its period, and a loop held past the due time sees the
    /// hold in the next tick's lateness.
    #[test]
    fn a_tick_reports_how_long_the_loop_was_held() {
        block_on(async {
            let mut ticker = Ticker::new(Duration::from_millis(5));
            assert!(ticker.is_precise(), "a timerfd on Linux");
            let started = Instant::now();
            ticker.tick().await;
            assert!(
                started.elapsed() >= Duration::from_millis(5),
                "not before its period"
            );
            // The loop is held (a blocking sleep) for 30 ms past the next due time.
            std::thread::sleep(Duration::from_millis(35));
            let late = ticker.tick().await;
            assert!(
                late >= Duration::from_millis(30),
                "held 30 ms past due, saw {late:?}"
            );
            assert!(late < Duration::from_secs(5), "saw {late:?}");
            // The hold covered several periods: the next tick is on time again, and the
            // ticks keep to the period.
            let started = Instant::now();
            for _ in 0..4 {
                let late = ticker.tick().await;
                assert!(
                    late < Duration::from_millis(30),
                    "saw {late:?} after the hold"
                );
            }
            assert!(
                started.elapsed() >= Duration::from_millis(14),
                "four ticks in {:?}",
                started.elapsed()
            );
        });
    }
}
