//! A wall clock the test moves: the server runs with Debian's `libfaketime` preloaded,
//! which adds the seconds a file says to every wall-clock read (`time`, `gettimeofday`,
//! `clock_gettime(CLOCK_REALTIME)`) of the master and its workers. The monotonic clock
//! and file times stay real, so timers and the files on disk are untouched: an entry
//! stored now looks, after `advance(2s)`, exactly as it would two seconds from now.
//! Cache expiry is tested this way without waiting for it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// Where Debian installs the thread-safe library (package `libfaketime`).
const LIBRARY_PATTERN: &str = "/usr/lib/{arch}/faketime/libfaketimeMT.so.1";
const ARCHES: &[&str] = &["x86_64-linux-gnu", "aarch64-linux-gnu"];

/// The library, or a panic that says what to install.
fn library() -> PathBuf {
    ARCHES
        .iter()
        .map(|arch| PathBuf::from(LIBRARY_PATTERN.replace("{arch}", arch)))
        .find(|path| path.exists())
        .expect("a movable clock needs libfaketime (apt-get install libfaketime)")
}

/// The variables [`MovableClock::apply`] sets, for the config's `env` directives.
pub const VARIABLES: &[&str] = &[
    "LD_PRELOAD",
    "FAKETIME_TIMESTAMP_FILE",
    "FAKETIME_NO_CACHE",
    "FAKETIME_DONT_FAKE_MONOTONIC",
    "DONT_FAKE_MONOTONIC",
    "NO_FAKE_STAT",
];

/// The offset file of one server, and the offset it holds.
#[derive(Debug)]
pub struct MovableClock {
    file: PathBuf,
    ahead: Mutex<Duration>,
}

impl MovableClock {
    /// A clock at the real time, its offset in `file`.
    pub fn new(file: &Path) -> MovableClock {
        let clock = MovableClock {
            file: file.to_owned(),
            ahead: Mutex::new(Duration::ZERO),
        };
        write(file, Duration::ZERO);
        clock
    }

    /// The environment that makes a process read this clock. The config must keep these
    /// variables (`env NAME;`, see [`VARIABLES`]): Portico, as nginx, clears the rest.
    pub fn apply(&self, command: &mut Command) {
        command
            .env("LD_PRELOAD", library())
            .env("FAKETIME_TIMESTAMP_FILE", &self.file)
            // Read the file at every call, so that a move is seen at once.
            .env("FAKETIME_NO_CACHE", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .env("DONT_FAKE_MONOTONIC", "1")
            .env("NO_FAKE_STAT", "1");
    }

    /// Moves the clock forward by `by` (whole seconds; a part of a second counts as one).
    pub fn advance(&self, by: Duration) {
        let seconds = by.as_secs() + u64::from(by.subsec_nanos() > 0);
        let mut ahead = self.ahead.lock().expect("the clock's offset");
        *ahead += Duration::from_secs(seconds);
        write(&self.file, *ahead);
    }
}

/// Writes the offset whole (a rename), so that a read never sees half a file.
fn write(file: &Path, ahead: Duration) {
    let partial = file.with_extension("partial");
    std::fs::write(&partial, format!("+{}\n", ahead.as_secs())).expect("write the clock's offset");
    std::fs::rename(&partial, file).expect("install the clock's offset");
}
