//! A worker's buffer in front of an access log file.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::file::LogFile;

/// Collects access-log lines and writes them in one `write(2)` when the buffer would
/// overflow, when the flush interval has passed, or when asked to. Without a buffer
/// (`capacity == 0`) every line is written at once, as nginx does for `access_log` without
/// `buffer=`. A line longer than the buffer is written by itself.
#[derive(Debug)]
pub struct AccessLogBuffer {
    file: Arc<LogFile>,
    buf: Vec<u8>,
    capacity: usize,
    flush_interval: Option<Duration>,
    /// When the oldest line still in the buffer was appended.
    oldest: Option<Instant>,
    /// `gzip=LEVEL`: each flush is written as one gzip member (concatenated members are
    /// one valid gzip file, which `zcat` reads whole).
    gzip: Option<u32>,
}

impl AccessLogBuffer {
    pub fn new(file: Arc<LogFile>, capacity: usize, flush_interval: Option<Duration>) -> Self {
        AccessLogBuffer {
            file,
            buf: Vec::with_capacity(capacity),
            capacity,
            flush_interval,
            oldest: None,
            gzip: None,
        }
    }

    /// The same buffer, each flush compressed at `level` (1 to 9).
    pub fn compressed(mut self, level: u32) -> Self {
        self.gzip = Some(level.clamp(1, 9));
        self
    }

    pub fn file(&self) -> &Arc<LogFile> {
        &self.file
    }

    /// Appends one line (the caller includes the newline).
    pub fn append(&mut self, line: &[u8], now: Instant) -> io::Result<()> {
        if self.capacity == 0 {
            self.file.append(line.to_vec());
            return Ok(());
        }
        if self.buf.len() + line.len() > self.capacity {
            self.flush()?;
        }
        if line.len() > self.capacity {
            self.file.append(line.to_vec());
            return Ok(());
        }
        self.buf.extend_from_slice(line);
        self.oldest.get_or_insert(now);
        Ok(())
    }

    /// Whether the flush interval of the oldest buffered line has passed.
    pub fn flush_due(&self, now: Instant) -> bool {
        match (self.oldest, self.flush_interval) {
            (Some(oldest), Some(interval)) => now.duration_since(oldest) >= interval,
            _ => false,
        }
    }

    /// When the buffered lines must be written at the latest, if a flush interval is set.
    pub fn flush_deadline(&self) -> Option<Instant> {
        Some(self.oldest? + self.flush_interval?)
    }

    /// Hands what is buffered to the file ([`LogFile::append`]). The buffer is emptied even
    /// if compressing fails, so a broken buffer cannot grow without bound.
    pub fn flush(&mut self) -> io::Result<()> {
        self.oldest = None;
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = match self.gzip {
            Some(level) => {
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(self.buf.len() / 4),
                    flate2::Compression::new(level),
                );
                std::io::Write::write_all(&mut encoder, &self.buf)
                    .and_then(|()| encoder.finish())
                    .map(|member| self.file.append(member))
            }
            None => {
                let full = std::mem::replace(&mut self.buf, Vec::with_capacity(self.capacity));
                self.file.append(full);
                Ok(())
            }
        };
        self.buf.clear();
        result
    }

    pub fn buffered_len(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(name: &str) -> (std::path::PathBuf, Arc<LogFile>) {
        let dir =
            std::env::temp_dir().join(format!("portico-access-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("access.log");
        let file = Arc::new(LogFile::open(&path).unwrap());
        (path, file)
    }

    fn contents(path: &std::path::Path) -> String {
        crate::writer::drain();
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn unbuffered_writes_each_line() {
        let (path, file) = setup("unbuffered");
        let mut log = AccessLogBuffer::new(file, 0, None);
        log.append(b"a\n", Instant::now()).unwrap();
        assert_eq!(contents(&path), "a\n");
        assert_eq!(log.buffered_len(), 0);
    }

    #[test]
    fn buffered_writes_when_full_or_flushed() {
        let (path, file) = setup("buffered");
        let mut log = AccessLogBuffer::new(file, 8, None);
        let now = Instant::now();
        log.append(b"abcd\n", now).unwrap();
        assert_eq!(contents(&path), "");
        log.append(b"efgh\n", now).unwrap();
        assert_eq!(contents(&path), "abcd\n", "the second line did not fit");
        log.append(b"0123456789\n", now).unwrap();
        assert_eq!(
            contents(&path),
            "abcd\nefgh\n0123456789\n",
            "an oversized line goes alone"
        );
        log.append(b"z\n", now).unwrap();
        log.flush().unwrap();
        assert_eq!(contents(&path), "abcd\nefgh\n0123456789\nz\n");
    }

    #[test]
    fn flush_interval_counts_from_the_oldest_line() {
        let (_path, file) = setup("interval");
        let mut log = AccessLogBuffer::new(file, 1024, Some(Duration::from_secs(5)));
        let start = Instant::now();
        assert!(!log.flush_due(start));
        assert_eq!(log.flush_deadline(), None);
        log.append(b"a\n", start).unwrap();
        log.append(b"b\n", start + Duration::from_secs(3)).unwrap();
        assert_eq!(log.flush_deadline(), Some(start + Duration::from_secs(5)));
        assert!(!log.flush_due(start + Duration::from_secs(4)));
        assert!(log.flush_due(start + Duration::from_secs(5)));
        log.flush().unwrap();
        assert!(!log.flush_due(start + Duration::from_secs(60)));
    }
}
