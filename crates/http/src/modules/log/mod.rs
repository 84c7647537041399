//! Logging directives: `log_format`, `access_log` and the `error_log` of `http`, `server`
//! and `location` (nginx's ngx_http_log_module and the core's error_log), and rendering
//! access-log lines.

pub mod access;
pub mod directives;
pub mod settings;

pub use settings::{
    AccessLog, AccessLogConf, AccessLogTarget, Buffering, COMBINED, Escape, LogFormat, LogPath,
    OpenLogFileCache,
};
