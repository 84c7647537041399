//! Error-log lines about a request or a connection, written to the log of the location
//! (or server) they concern, with nginx's context (client, server, request, host).

use logging::Level;

use crate::kernel::request::{ConnectionInfo, Request, RequestLogContext};
use crate::kernel::worker::HttpWorker;

/// Writes an error-log line about this request to its location's error log.
pub fn log(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    level: Level,
    message: std::fmt::Arguments<'_>,
) {
    log_during(worker, connection, request, level, None, message);
}

/// [`log`], with what the connection was doing (`action`) as nginx adds it: `while
/// reading client request headers`.
pub(crate) fn log_during(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    level: Level,
    action: Option<&'static str>,
    message: std::fmt::Arguments<'_>,
) {
    let conf = worker.conf();
    let error_log = match request.location {
        Some(location) => &conf.location(location).settings.core.error_log,
        None => &worker.generation.error_log,
    };
    // `debug_connection`: the connection's debug lines go to every log.
    let forced = level == Level::Debug && connection.debug;
    if !forced && !error_log.enabled(level) {
        return;
    }
    let mut context = request.log_context(connection, conf);
    if let Some(action) = action {
        context = context.with_action(action);
    }
    let time = worker.clock.wall();
    if forced {
        error_log.write_to_all(level, &time, Some(connection.id), message, Some(&context));
    } else {
        error_log.write(level, &time, Some(connection.id), message, Some(&context));
    }
}

/// Writes an error-log line about a connection before any request exists (its PROXY
/// header, its handshake, its first wait) to `server`'s error log, with what the connection
/// was doing (`action`) as nginx adds it: `while waiting for request`.
pub(crate) fn log_connection_to(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    server: crate::kernel::conf::ServerId,
    level: Level,
    action: Option<&'static str>,
    message: std::fmt::Arguments<'_>,
) {
    let conf = worker.conf();
    let error_log = &conf
        .location(conf.server(server).location)
        .settings
        .core
        .error_log;
    if !error_log.enabled(level) {
        return;
    }
    let context = RequestLogContext {
        request: None,
        connection,
        conf,
        action,
    };
    error_log.write(
        level,
        &worker.clock.wall(),
        Some(connection.id),
        message,
        Some(&context),
    );
}

/// `(111: Connection refused)` from an I/O error, as nginx writes errno.
pub fn errno_text(error: &std::io::Error) -> String {
    match error.raw_os_error() {
        Some(code) => {
            let text = std::io::Error::from_raw_os_error(code).to_string();
            let text = text
                .rsplit_once(" (os error")
                .map_or(text.as_str(), |(text, _)| text)
                .to_owned();
            format!("{code}: {text}")
        }
        None => match error.kind() {
            std::io::ErrorKind::TimedOut => "110: Connection timed out".to_owned(),
            std::io::ErrorKind::UnexpectedEof => "104: Connection reset by peer".to_owned(),
            _ => error.to_string(),
        },
    }
}
