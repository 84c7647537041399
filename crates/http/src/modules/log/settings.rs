//! What the log module's directives set: the data other modules may read.

use std::sync::Arc;
use std::time::Duration;

use logging::LogFile;

use crate::kernel::variables::HttpTemplate;
use crate::settings;

pub use logging::escape::Escape;

/// A compiled `log_format`.
#[derive(Debug)]
pub struct LogFormat {
    pub name: String,
    pub escape: Escape,
    pub template: HttpTemplate,
}

/// `buffer=SIZE [flush=TIME]` of one `access_log`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffering {
    pub size: usize,
    pub flush: Option<Duration>,
    /// Which of the worker's buffers this log uses.
    pub slot: usize,
    /// `gzip[=LEVEL]`: the buffer is written compressed.
    pub gzip: Option<u32>,
}

/// Where an `access_log` writes.
#[derive(Clone, Debug)]
pub enum LogPath {
    /// A path without variables: opened once per configuration.
    File(Arc<LogFile>),
    /// A path with variables (made absolute from the prefix): opened, written and closed
    /// on a pool for each line, as nginx opens it per request.
    Template(HttpTemplate),
}

/// `open_log_file_cache max=N [inactive=TIME] [min_uses=N] [valid=TIME]`: each worker
/// keeps the descriptors of logs whose paths have variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenLogFileCache {
    /// The most descriptors (and paths counted towards `min_uses`) kept.
    pub max: usize,
    /// A path not logged to for this long is forgotten and its descriptor closed.
    pub inactive: Duration,
    /// A descriptor is kept once its path was logged to this many times within
    /// `inactive`.
    pub min_uses: u32,
    /// A kept descriptor is used this long, then its path is opened again (a rotated log
    /// is picked up).
    pub valid: Duration,
}

/// One `access_log PATH FORMAT ...`.
#[derive(Clone, Debug)]
pub struct AccessLogTarget {
    pub path: LogPath,
    pub format: Arc<LogFormat>,
    pub buffering: Option<Buffering>,
    /// `if=CONDITION`: the line is written unless it renders empty or `0`.
    pub condition: Option<HttpTemplate>,
}

settings! {
    /// A level with its own `access_log` replaces the enclosing level's list; `off` is an
    /// empty list.
    pub struct AccessLogConf => AccessLog (env) {
        /// `access_log`
        access_log: Vec<AccessLogTarget> = Vec::new(),
        /// `access_log off` appeared at the level that set the list: nginx then logs nothing
        /// there, whatever other `access_log` lines the level has.
        access_log_off: bool = false,
        /// `open_log_file_cache`: `None` is `off`.
        open_log_file_cache: Option<Arc<OpenLogFileCache>> = None,
    }
}

/// nginx's predefined format.
pub const COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" \
                            $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";
