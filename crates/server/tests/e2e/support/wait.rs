//! Deadline-based polling: the only way the harness waits for the server.

use std::time::{Duration, Instant};

/// How long the harness waits for anything the server should do "soon" (start, stop,
/// answer, write a log line) before it declares a failure. Generous, because tests run in
/// parallel on shared cores.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// How often a condition is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Polls `condition` until it returns `Some` or `timeout` passes.
pub fn poll<T>(timeout: Duration, mut condition: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = condition() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Polls `condition` until it holds; panics with `what` when `timeout` passes first.
pub fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    if poll(timeout, || condition().then_some(())).is_none() {
        panic!("timed out after {timeout:?} waiting for {what}");
    }
}
