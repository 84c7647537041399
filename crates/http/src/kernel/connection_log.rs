//! The error-log lines of a client connection outside a request's phases: a connection
//! that ends while waiting for a request, header lines skipped, and messages about a head
//! being read, in nginx's wording and at nginx's levels.

use logging::Level;

use crate::kernel::conf::ServerId;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::worker::HttpWorker;

/// A connection that ended while waiting for a request: nginx notes it at `info` in the
/// default server's error log, differently for a new connection ("MESSAGE while waiting
/// for request") and for an idle keep-alive one ("client ADDR closed keepalive connection").
pub(crate) fn log_idle_end(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    server: ServerId,
    message: &str,
) {
    if connection.requests == 0 {
        crate::kernel::request_log::log_connection_to(
            worker,
            connection,
            server,
            Level::Info,
            Some("waiting for request"),
            format_args!("{message}"),
        );
        return;
    }
    let conf = worker.conf();
    let error_log = &conf
        .location(conf.server(server).location)
        .settings
        .core
        .error_log;
    if !error_log.enabled(Level::Info) {
        return;
    }
    let mut peer = Vec::new();
    crate::kernel::request::write_peer(&mut peer, &connection.peer.get());
    let peer = String::from_utf8_lossy(&peer);
    error_log.write(
        Level::Info,
        &worker.clock.wall(),
        Some(connection.id),
        format_args!("client {peer} closed keepalive connection"),
        None,
    );
}

/// `ignore_invalid_headers` skips bad header lines; nginx logs each at `info`.
pub(crate) fn log_ignored_headers(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    server: ServerId,
) {
    if request.head.ignored_headers.is_empty() {
        return;
    }
    let (saved_server, saved_location) = (request.server, request.location);
    request.server = Some(server);
    request.location = Some(worker.conf().server(server).location);
    let lines: Vec<std::ops::Range<usize>> = request.head.ignored_headers.clone();
    for line in lines {
        let mut text = String::new();
        crate::kernel::request::push_quoted(
            &mut text,
            request.head_bytes.get(line).unwrap_or_default(),
        );
        let message = format!("client sent invalid header line: \"{text}\"");
        log_connection(
            worker,
            connection,
            request,
            Level::Info,
            &message,
            "reading client request headers",
        );
    }
    request.server = saved_server;
    request.location = saved_location;
}

/// Logs a connection-level message to the error log of the request's server (the
/// address's default server until the head is read), as nginx does.
pub(crate) fn log_connection(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    level: Level,
    message: &str,
    action: &'static str,
) {
    crate::kernel::request_log::log_during(
        worker,
        connection,
        request,
        level,
        Some(action),
        format_args!("{message}"),
    );
}
