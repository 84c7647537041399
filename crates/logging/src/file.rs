//! A log file shared by every worker and reopened by the master on `USR1`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// An append-only log file. Writers take a shared lock for the length of one `write(2)`;
/// [`LogFile::reopen`] takes it exclusively for the moment it swaps the descriptor, so a line
/// is never split between the old file and the new one.
#[derive(Debug)]
pub struct LogFile {
    target: Target,
    file: RwLock<File>,
}

#[derive(Debug, Clone)]
enum Target {
    Path(PathBuf),
    Stderr,
}

impl LogFile {
    /// Opens (creating if needed) `path` for appending, with mode 0644 as nginx does.
    pub fn open(path: &Path) -> io::Result<LogFile> {
        let file = open_append(path)?;
        Ok(LogFile {
            target: Target::Path(path.to_owned()),
            file: RwLock::new(file),
        })
    }

    /// The process's standard error (`error_log stderr`).
    pub fn stderr() -> io::Result<LogFile> {
        // A duplicate of fd 2, so dropping the `File` never closes the real stderr.
        let file = File::from(std::io::stderr().as_fd().try_clone_to_owned()?);
        Ok(LogFile {
            target: Target::Stderr,
            file: RwLock::new(file),
        })
    }

    /// The path this file was opened from, or `None` for stderr.
    pub fn path(&self) -> Option<&Path> {
        match &self.target {
            Target::Path(path) => Some(path),
            Target::Stderr => None,
        }
    }

    /// Appends `bytes` in as few `write(2)` calls as the kernel allows. With `O_APPEND`, a
    /// line written in one call is never interleaved with another thread's line.
    pub fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let file = self
            .file
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (&*file).write_all(bytes)
    }

    /// Adds `bytes` to the file: queued for the log writer thread once it runs (in the
    /// order of the calls), else written at once ([`crate::writer`]).
    pub fn append(self: &std::sync::Arc<Self>, bytes: Vec<u8>) {
        crate::writer::append(self, bytes);
    }

    /// As [`LogFile::append`], but handed to the log writer at once rather than at the end
    /// of the loop's turn (error-log lines).
    pub fn append_now(self: &std::sync::Arc<Self>, bytes: Vec<u8>) {
        crate::writer::append_now(self, bytes);
    }

    /// Opens the path again and swaps the new descriptor in; the old one is closed once the
    /// writers holding it are done. Stderr is left as it is. On failure the old file stays.
    pub fn reopen(&self) -> io::Result<()> {
        let Target::Path(path) = &self.target else {
            return Ok(());
        };
        let fresh = open_append(path)?;
        let mut file = self
            .file
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *file = fresh;
        Ok(())
    }

    /// Whether this writes to the process's standard error.
    pub fn is_stderr(&self) -> bool {
        matches!(self.target, Target::Stderr)
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
