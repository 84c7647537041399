//! Log files and the error log.
//!
//! This crate owns the bytes-to-file side of logging: [`LogFile`] is a file that many worker
//! threads append to and that the master reopens on `USR1`; [`ErrorLog`] formats nginx's
//! error-log line (`2026/11/21 21:06:57 [error] 1234#1240: *5 message, client: ...`) and
//! writes it to every sink whose level allows it; [`AccessLogBuffer`] is a worker's buffer in
//! front of an access log file (`access_log ... buffer=SIZE flush=TIME`); [`Syslog`] is a
//! `syslog:` target, whose lines go out as RFC 3164 datagrams; [`escape`] is `log_format`'s
//! `escape=`, shared by the http and stream blocks.
//!
//! Once the server runs, every write goes through one thread, [`writer`], so that no worker
//! loop waits on a log file's disk.
//!
//! It does not know what a request is: the request context that follows a message
//! (`, client: ..., server: ..., request: "..."`) is written by `http` through [`LogContext`],
//! and access-log lines are rendered by `http::access_log` from `vars` templates.

mod access;
mod error_log;
pub mod escape;
mod file;
mod files;
mod level;
mod syslog;
pub mod time;
pub mod writer;

pub use access::AccessLogBuffer;
pub use error_log::{ErrorLog, ErrorSink, LINE_BYTES_MAX, LogContext, Subject, format_line};
pub use file::LogFile;
pub use files::LogFiles;
pub use level::Level;
pub use syslog::{Syslog, SyslogError, SyslogServer, hostname, syslog_target};
