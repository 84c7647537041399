//! The error log: nginx's line format, written to every sink whose level allows it.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use crate::file::LogFile;
use crate::level::Level;
use crate::time::{Timestamp, push_number};

/// nginx cuts an error-log line at 2048 bytes (`NGX_MAX_ERROR_STR`); so do we, so that one
/// misbehaving client cannot make us write megabytes per line.
pub const LINE_BYTES_MAX: usize = 2048;

/// Writes what a message is about after the message itself, in nginx's order:
/// ` while reading client request headers, client: 127.0.0.1, server: localhost, request:
/// "GET / HTTP/1.1", host: "localhost"`. Implemented by the connection and request types.
pub trait LogContext {
    fn write_context(&self, out: &mut Vec<u8>);
}

/// One `error_log FILE LEVEL` directive.
#[derive(Clone, Debug)]
pub struct ErrorSink {
    pub file: Arc<LogFile>,
    pub level: Level,
}

/// The error log of a scope: every `error_log` directive of that scope, in order.
#[derive(Clone, Debug)]
pub struct ErrorLog {
    sinks: Vec<ErrorSink>,
    level_max: Option<Level>,
}

/// What the message is about, for the `*N` part of the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// Not tied to a connection (startup, reload, signals).
    Process,
    /// Client connection number `N` (nginx's `*N`).
    Connection(u64),
}

impl ErrorLog {
    pub fn new(sinks: Vec<ErrorSink>) -> ErrorLog {
        let level_max = sinks.iter().map(|sink| sink.level).max();
        ErrorLog { sinks, level_max }
    }

    /// Whether any sink would write a message at `level`. Check before formatting anything
    /// costly.
    pub fn enabled(&self, level: Level) -> bool {
        self.level_max.is_some_and(|max| level <= max)
    }

    pub fn sinks(&self) -> &[ErrorSink] {
        &self.sinks
    }

    /// Formats one line and appends it to every sink at `level` or above (through the log
    /// writer once it runs). Write failures are ignored: there is nowhere left to report
    /// them.
    pub fn write(
        &self,
        level: Level,
        time: &Timestamp,
        connection: Option<u64>,
        message: fmt::Arguments<'_>,
        context: Option<&dyn LogContext>,
    ) {
        if !self.enabled(level) {
            return;
        }
        self.write_to(false, level, time, connection, message, context);
    }

    /// [`ErrorLog::write`] to every sink whatever its level: a line of a connection that
    /// `debug_connection` names, which nginx writes to each log of the connection.
    pub fn write_to_all(
        &self,
        level: Level,
        time: &Timestamp,
        connection: Option<u64>,
        message: fmt::Arguments<'_>,
        context: Option<&dyn LogContext>,
    ) {
        self.write_to(true, level, time, connection, message, context);
    }

    fn write_to(
        &self,
        all: bool,
        level: Level,
        time: &Timestamp,
        connection: Option<u64>,
        message: fmt::Arguments<'_>,
        context: Option<&dyn LogContext>,
    ) {
        if self.sinks.is_empty() {
            return;
        }
        let line = format_line(level, time, connection, message, context);
        let mut sinks = self
            .sinks
            .iter()
            .filter(|sink| all || level <= sink.level)
            .peekable();
        while let Some(sink) = sinks.next() {
            if let Some(syslog) = sink.file.as_syslog() {
                sink.file.append_now(syslog.frame(level, time, &line));
            } else if sinks.peek().is_some() {
                sink.file.append_now(line.clone());
            } else {
                sink.file.append_now(line);
                break;
            }
        }
    }
}

/// One complete line, newline included, cut at [`LINE_BYTES_MAX`].
pub fn format_line(
    level: Level,
    time: &Timestamp,
    connection: Option<u64>,
    message: fmt::Arguments<'_>,
    context: Option<&dyn LogContext>,
) -> Vec<u8> {
    let mut line = Vec::with_capacity(256);
    time.write_error_log(&mut line);
    line.extend_from_slice(b" [");
    line.extend_from_slice(level.as_str().as_bytes());
    line.extend_from_slice(b"] ");
    push_number(
        &mut line,
        rustix::process::getpid().as_raw_nonzero().get().into(),
        1,
    );
    line.push(b'#');
    push_number(
        &mut line,
        rustix::thread::gettid().as_raw_nonzero().get().into(),
        1,
    );
    line.extend_from_slice(b": ");
    if let Some(connection) = connection {
        line.push(b'*');
        push_number(&mut line, connection as i64, 1);
        line.push(b' ');
    }
    let mut text = String::new();
    let _ = text.write_fmt(message);
    line.extend_from_slice(text.as_bytes());
    if let Some(context) = context {
        context.write_context(&mut line);
    }
    line.truncate(LINE_BYTES_MAX - 1);
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Request;

    impl LogContext for Request {
        fn write_context(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(b", client: 127.0.0.1, server: localhost");
        }
    }

    fn time() -> Timestamp {
        Timestamp {
            unix_seconds: 1_795_295_217,
            milliseconds: 0,
            utc_offset_seconds: 0,
        }
    }

    fn text(line: Vec<u8>) -> String {
        String::from_utf8(line).unwrap()
    }

    #[test]
    fn line_has_nginx_shape() {
        let line = text(format_line(
            Level::Info,
            &time(),
            Some(5),
            format_args!("client sent invalid method"),
            Some(&Request),
        ));
        let pid = std::process::id();
        let prefix = format!("2026/11/21 21:06:57 [info] {pid}#");
        assert!(line.starts_with(&prefix), "{line}");
        assert!(
            line.ends_with(
                ": *5 client sent invalid method, client: 127.0.0.1, server: localhost\n"
            ),
            "{line}"
        );
    }

    #[test]
    fn process_lines_have_no_connection_number() {
        let line = text(format_line(
            Level::Notice,
            &time(),
            None,
            format_args!("signal 1"),
            None,
        ));
        assert!(line.ends_with(": signal 1\n"), "{line}");
        assert!(!line.contains('*'));
    }

    #[test]
    fn long_lines_are_cut() {
        let long = "x".repeat(10_000);
        let line = format_line(Level::Error, &time(), None, format_args!("{long}"), None);
        assert_eq!(line.len(), LINE_BYTES_MAX);
        assert_eq!(line.last(), Some(&b'\n'));
    }

    #[test]
    fn sinks_filter_by_level() {
        let dir = std::env::temp_dir().join(format!("portico-errlog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let warn = Arc::new(LogFile::open(&dir.join("warn.log")).unwrap());
        let info = Arc::new(LogFile::open(&dir.join("info.log")).unwrap());
        let log = ErrorLog::new(vec![
            ErrorSink {
                file: warn,
                level: Level::Warn,
            },
            ErrorSink {
                file: info,
                level: Level::Info,
            },
        ]);
        assert!(log.enabled(Level::Info));
        assert!(!log.enabled(Level::Debug));
        log.write(Level::Info, &time(), Some(1), format_args!("quiet"), None);
        log.write(Level::Error, &time(), Some(1), format_args!("loud"), None);
        crate::writer::drain();
        let warn_text = std::fs::read_to_string(dir.join("warn.log")).unwrap();
        let info_text = std::fs::read_to_string(dir.join("info.log")).unwrap();
        assert_eq!(warn_text.lines().count(), 1);
        assert!(warn_text.contains("[error]") && warn_text.contains("loud"));
        assert_eq!(info_text.lines().count(), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn empty_log_writes_nothing() {
        let log = ErrorLog::new(Vec::new());
        assert!(!log.enabled(Level::Emerg));
    }
}
