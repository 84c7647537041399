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

/// A gate a mock upstream waits at until the test opens it, so that an answer is held
/// exactly as long as the test needs (a refresh still in flight while another request
/// is answered), not for a guessed time. Waiting gives up after [`PATIENCE`].
#[derive(Clone, Debug, Default)]
pub struct Gate(std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets every waiter, present and future, through.
    pub fn open(&self) {
        let (open, opened) = &*self.0;
        *open.lock().expect("the gate's lock") = true;
        opened.notify_all();
    }

    /// Waits until the gate is open, at most [`PATIENCE`].
    pub fn wait(&self) {
        let (open, opened) = &*self.0;
        let guard = open.lock().expect("the gate's lock");
        let _ = opened
            .wait_timeout_while(guard, PATIENCE, |open| !*open)
            .expect("the gate's lock");
    }
}
