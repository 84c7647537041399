//! The worker's clock: wall time with the local UTC offset, looked up once per second; and
//! the monotonic time of a task's turn.

use std::cell::Cell;
use std::future::Future;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

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
        let (seconds, nanoseconds) = crate::sys::linux::realtime();
        let unix_seconds = seconds as i64;
        if unix_seconds != self.offset_second.get() {
            self.offset_second.set(unix_seconds);
            self.offset.set(utc_offset_seconds(unix_seconds));
        }
        Timestamp {
            unix_seconds,
            milliseconds: nanoseconds / 1_000_000,
            utc_offset_seconds: self.offset.get(),
        }
    }
}

thread_local! {
    /// The monotonic time at the start of the current turn of a [`turn_clocked`] task.
    static TURN_NOW: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Turns of [`turn_clocked`] tasks started on this thread.
    static TURNS: Cell<u64> = const { Cell::new(0) };
    /// A task waiting in [`next_turn`] for the next turn.
    static WAITING: Cell<Option<Waker>> = const { Cell::new(None) };
    /// When the turn that woke [`next_turn`]'s task started.
    static WOKEN_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The monotonic time, read once per turn of a connection's task (as nginx reads its time
/// once per turn of the event loop) and otherwise at each call.
///
/// A proxied request asked for the time about fifteen times (timestamps of the tries,
/// deadlines, idle times of kept connections), and a read of the clock is not free: under
/// KVM `clock_gettime` took 2% of a proxying worker's CPU (`perf record -e cpu-clock`)
/// where nginx spent 0.05%. Within one turn the time does not move, so this is for
/// timestamps and deadlines across waits, never for timing work done inside one turn.
pub fn monotonic() -> Instant {
    TURN_NOW.with(Cell::get).unwrap_or_else(Instant::now)
}

/// The time since `start`, by [`monotonic`]; zero if `start` is later.
pub fn since(start: Instant) -> Duration {
    monotonic().saturating_duration_since(start)
}

/// Runs `future` with [`monotonic`] read once at the start of each of its turns (polls).
pub async fn turn_clocked<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|context| {
        let now = Instant::now();
        let outer = TURN_NOW.replace(Some(now));
        TURNS.set(TURNS.get().wrapping_add(1));
        if let Some(waiting) = WAITING.take() {
            WOKEN_AT.set(Some(now));
            waiting.wake();
        }
        let poll = future.as_mut().poll(context);
        TURN_NOW.set(outer);
        poll
    })
    .await
}

/// How many turns of [`turn_clocked`] tasks this thread has started: a count that did not
/// move between two looks means the loop ran none of them meanwhile.
pub fn turns() -> u64 {
    TURNS.get()
}

/// Waits for the next turn of a [`turn_clocked`] task on this thread and returns when that
/// turn started. The waiting task runs once the turn is over, so the time from the
/// returned instant to its own is how long that turn (and any before it) held the loop.
/// One task waits at a time; a second one replaces the first.
pub async fn next_turn() -> Instant {
    WOKEN_AT.set(None);
    std::future::poll_fn(|context| match WOKEN_AT.take() {
        Some(at) => Poll::Ready(at),
        None => {
            WAITING.set(Some(context.waker().clone()));
            Poll::Pending
        }
    })
    .await
}

/// The wall time for code that has no worker clock (the master).
pub fn wall_now() -> Timestamp {
    Clock::new().wall()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_sees_one_time_and_the_next_turn_a_later_one() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let outside = monotonic();
        let (first, second, after_wait) = runtime.block_on(turn_clocked(async {
            let first = monotonic();
            std::thread::sleep(Duration::from_millis(5));
            let second = monotonic();
            tokio::time::sleep(Duration::from_millis(5)).await;
            (first, second, monotonic())
        }));
        assert!(first >= outside);
        assert_eq!(first, second, "the time does not move within a turn");
        assert!(after_wait >= second + Duration::from_millis(5));
        assert_eq!(since(after_wait + Duration::from_secs(1)), Duration::ZERO);
        // Outside a turn, each call reads the clock.
        let before = monotonic();
        std::thread::sleep(Duration::from_millis(2));
        assert!(monotonic() >= before + Duration::from_millis(2));
    }

    /// A task waiting for the next turn runs after it, and learns when it started: the
    /// turn that held the loop for 20 ms shows as 20 ms before the waiter ran.
    #[test]
    fn a_waiter_learns_when_the_next_turn_started() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&runtime, async {
            let before = turns();
            let waiter = tokio::task::spawn_local(async {
                let at = next_turn().await;
                (at, Instant::now())
            });
            // Unclocked work does not wake it.
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert!(!waiter.is_finished());
            assert_eq!(turns(), before);
            tokio::task::spawn_local(turn_clocked(async {
                std::thread::sleep(Duration::from_millis(20));
            }))
            .await
            .unwrap();
            let (at, ran) = waiter.await.unwrap();
            assert!(ran.duration_since(at) >= Duration::from_millis(20));
            assert_eq!(turns(), before + 1);
        });
    }

    #[test]
    fn wall_time_is_close_to_system_time() {
        let clock = Clock::new();
        let expected = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let now = clock.now();
        assert!((now.wall.unix_seconds - expected).abs() <= 1);
        assert!(now.wall.milliseconds < 1000);
    }
}
