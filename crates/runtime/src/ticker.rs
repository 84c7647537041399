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

/// A tick every `period`, measured from the end of the previous one.
#[derive(Debug)]
pub struct Ticker {
    period: Duration,
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
            due: Instant::now(),
            timer,
        };
        ticker.arm();
        ticker
    }

    /// Whether ticks come from a timerfd (microseconds), not tokio's timer (milliseconds).
    pub fn is_precise(&self) -> bool {
        self.timer.is_some()
    }

    fn arm(&mut self) {
        self.due = Instant::now() + self.period;
        let Some(timer) = &self.timer else {
            return;
        };
        let value = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: i64::try_from(self.period.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(self.period.subsec_nanos()),
            },
        };
        if timerfd_settime(timer.get_ref(), TimerfdTimerFlags::empty(), &value).is_err() {
            // Cannot happen with a valid descriptor and value; tokio's timer takes over.
            self.timer = None;
        }
    }

    /// Waits for the next tick and returns how late the loop got to it.
    pub async fn tick(&mut self) -> Duration {
        match &self.timer {
            Some(timer) => {
                if wait_expired(timer).await.is_err() {
                    self.timer = None;
                    tokio::time::sleep_until(self.due.into()).await;
                }
            }
            None => tokio::time::sleep_until(self.due.into()).await,
        }
        let late = Instant::now().saturating_duration_since(self.due);
        self.arm();
        late
    }
}

/// Waits until the timer has expired and consumes the expiry.
async fn wait_expired(timer: &AsyncFd<OwnedFd>) -> io::Result<()> {
    loop {
        let mut guard = timer.readable().await?;
        let mut expirations = [0u8; 8];
        match rustix::io::read(timer.get_ref(), &mut expirations) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::AGAIN) => guard.clear_ready(),
            Err(error) => return Err(error.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        });
    }
}
