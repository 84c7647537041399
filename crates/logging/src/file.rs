//! A log file shared by every worker and reopened by the master on `USR1`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::syslog::{Syslog, SyslogPeer};

/// An append-only log file, or a `syslog:` target. Writers take a shared lock for the length
/// of one `write(2)`; [`LogFile::reopen`] takes it exclusively for the moment it swaps the
/// descriptor, so a line is never split between the old file and the new one.
#[derive(Debug)]
pub struct LogFile {
    target: Target,
    health: Health,
}

/// What went wrong with a file's writes, for whoever can report it (the log writer thread
/// cannot: it knows no request and no error log). nginx reports a failed access-log write
/// at `alert` at most once a minute per file, and writes nothing to a log for the rest of
/// the second in which its disk was found full.
#[derive(Debug, Default)]
struct Health {
    /// The errno of the last failed write not yet taken, or 0.
    failed: AtomicI32,
    /// The second (Unix time) of the last write that found the disk full, or 0.
    full_at: AtomicI64,
    /// The second of the last failure reported.
    reported_at: AtomicI64,
}

/// A failed log write is reported at most once in this many seconds per file.
pub(crate) const FAILURE_REPORT_INTERVAL: i64 = 60;

fn unix_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64)
}

#[derive(Debug)]
enum Target {
    Path(PathBuf, RwLock<File>),
    Stderr(RwLock<File>),
    /// Each write is one message, sent as one datagram.
    Syslog(SyslogPeer),
}

impl LogFile {
    /// Opens (creating if needed) `path` for appending, with mode 0644 as nginx does.
    pub fn open(path: &Path) -> io::Result<LogFile> {
        let file = open_append(path)?;
        Ok(LogFile {
            target: Target::Path(path.to_owned(), RwLock::new(file)),
            health: Health::default(),
        })
    }

    /// The process's standard error (`error_log stderr`).
    pub fn stderr() -> io::Result<LogFile> {
        // A duplicate of fd 2, so dropping the `File` never closes the real stderr.
        let file = File::from(std::io::stderr().as_fd().try_clone_to_owned()?);
        Ok(LogFile {
            target: Target::Stderr(RwLock::new(file)),
            health: Health::default(),
        })
    }

    /// A `syslog:` target; its socket is connected when the first message is sent.
    pub fn syslog(syslog: Syslog) -> LogFile {
        LogFile {
            target: Target::Syslog(SyslogPeer::new(syslog)),
            health: Health::default(),
        }
    }

    /// The `syslog:` parameters, if this is a syslog target: a line for it is made a
    /// message with [`Syslog::frame`] before it is appended.
    pub fn as_syslog(&self) -> Option<&Syslog> {
        match &self.target {
            Target::Syslog(peer) => Some(&peer.syslog),
            _ => None,
        }
    }

    /// The log's name for messages about it: its path, `stderr`, or its syslog server.
    pub fn name(&self) -> String {
        match &self.target {
            Target::Path(path, _) => path.display().to_string(),
            Target::Stderr(_) => "stderr".to_owned(),
            Target::Syslog(peer) => peer.syslog.name(),
        }
    }

    /// The path this file was opened from, or `None` for stderr and syslog.
    pub fn path(&self) -> Option<&Path> {
        match &self.target {
            Target::Path(path, _) => Some(path),
            Target::Stderr(_) | Target::Syslog(_) => None,
        }
    }

    /// Appends `bytes` in as few `write(2)` calls as the kernel allows. With `O_APPEND`, a
    /// line written in one call is never interleaved with another thread's line. A failure
    /// is also kept for [`LogFile::take_failure`].
    /// For a syslog target, `bytes` is one message.
    pub fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let file = match &self.target {
            Target::Path(_, file) | Target::Stderr(file) => file,
            Target::Syslog(peer) => {
                let result = peer.send(bytes);
                if let Err(error) = &result {
                    let errno = error.raw_os_error().unwrap_or(libc::EIO);
                    self.health.failed.store(errno, Ordering::Relaxed);
                }
                return result;
            }
        };
        let file = file.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let result = (&*file).write_all(bytes);
        if let Err(error) = &result {
            let errno = error.raw_os_error().unwrap_or(libc::EIO);
            if errno == libc::ENOSPC {
                self.health.full_at.store(unix_seconds(), Ordering::Relaxed);
            }
            self.health.failed.store(errno, Ordering::Relaxed);
        }
        result
    }

    /// Whether lines for this file are to be dropped now: its disk was found full during
    /// the current second (nginx's pause, which spares a full disk a write per request).
    pub fn paused(&self) -> bool {
        let full_at = self.health.full_at.load(Ordering::Relaxed);
        full_at != 0 && full_at == unix_seconds()
    }

    /// The last write failure not taken yet, if one is to be reported now (at `now`, Unix
    /// seconds): at most one a minute per file; failures in between
    /// are dropped, as nginx drops them. One atomic load when nothing failed.
    pub fn take_failure(&self, now: i64) -> Option<io::Error> {
        if self.health.failed.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let errno = self.health.failed.swap(0, Ordering::Relaxed);
        let reported_at = self.health.reported_at.load(Ordering::Relaxed);
        if errno == 0 || (reported_at != 0 && now - reported_at < FAILURE_REPORT_INTERVAL) {
            return None;
        }
        self.health.reported_at.store(now, Ordering::Relaxed);
        Some(io::Error::from_raw_os_error(errno))
    }

    /// Adds `bytes` to the file: queued for the log writer thread once it runs (in the
    /// order of the calls), else written at once ([`crate::writer`]).
    pub fn append(self: &std::sync::Arc<Self>, bytes: Vec<u8>) {
        crate::writer::append(self, bytes);
    }

    /// Appends an access-log line: for a syslog target, made a message of the target's
    /// severity at `time`.
    pub fn append_line(self: &std::sync::Arc<Self>, line: &[u8], time: &crate::time::Timestamp) {
        match self.as_syslog() {
            Some(syslog) => self.append(syslog.frame(syslog.severity, time, line)),
            None => self.append(line.to_vec()),
        }
    }

    /// As [`LogFile::append`], but handed to the log writer at once rather than at the end
    /// of the loop's turn (error-log lines).
    pub fn append_now(self: &std::sync::Arc<Self>, bytes: Vec<u8>) {
        crate::writer::append_now(self, bytes);
    }

    /// Opens the path again and swaps the new descriptor in; the old one is closed once the
    /// writers holding it are done. Stderr is left as it is. On failure the old file stays.
    pub fn reopen(&self) -> io::Result<()> {
        let Target::Path(path, file) = &self.target else {
            return Ok(());
        };
        let fresh = open_append(path)?;
        let mut file = file
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *file = fresh;
        Ok(())
    }

    /// Whether this writes to the process's standard error.
    pub fn is_stderr(&self) -> bool {
        matches!(self.target, Target::Stderr(_))
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("portico-logging-{}-{}", name, std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn appends_and_reopens_after_rotation() {
        let dir = temp_dir("reopen");
        let path = dir.join("access.log");
        let log = LogFile::open(&path).unwrap();
        log.write_all(b"one\n").unwrap();
        std::fs::rename(&path, dir.join("access.log.1")).unwrap();
        log.write_all(b"two\n").unwrap();
        log.reopen().unwrap();
        log.write_all(b"three\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("access.log.1")).unwrap(),
            "one\ntwo\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        assert_eq!(log.path(), Some(path.as_path()));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A write to a full disk (`/dev/full`) pauses the file for the second and is reported
    /// once, then not again within the interval.
    #[test]
    fn a_full_disk_pauses_the_file_and_is_reported_once_a_minute() {
        let log = LogFile::open(Path::new("/dev/full")).unwrap();
        assert!(!log.paused());
        assert!(log.take_failure(1_000).is_none());
        let error = log.write_all(b"line\n").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENOSPC));
        assert!(log.paused(), "lines are dropped for the rest of the second");
        let now = unix_seconds();
        let reported = log.take_failure(now).expect("the failure is reported");
        assert_eq!(reported.raw_os_error(), Some(libc::ENOSPC));
        assert!(log.take_failure(now).is_none(), "taken once");
        log.write_all(b"again\n").unwrap_err();
        assert!(
            log.take_failure(now + FAILURE_REPORT_INTERVAL - 1)
                .is_none()
        );
        log.write_all(b"later\n").unwrap_err();
        assert!(log.take_failure(now + FAILURE_REPORT_INTERVAL).is_some());
    }

    #[test]
    fn reopen_failure_keeps_the_old_file() {
        let dir = temp_dir("reopen-fail");
        let sub = dir.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let path = sub.join("error.log");
        let log = LogFile::open(&path).unwrap();
        std::fs::rename(&sub, dir.join("moved")).unwrap();
        assert!(log.reopen().is_err());
        log.write_all(b"still here\n").unwrap();
        let moved = dir.join("moved").join("error.log");
        assert_eq!(std::fs::read_to_string(moved).unwrap(), "still here\n");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
