//! A client connection: reading request heads, keep-alive and pipelining, sending
//! responses, discarding unread bodies, lingering close.

use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use http1::request::{HeadLimits, Progress};
use http1::{RequestError, Version};
use logging::Level;
use runtime::{ConnectionGuard, PeerAddress, Stream};
use tokio::time::{Sleep, timeout_at};

use crate::assembly::{phases, send};
use crate::kernel::body::BodyState;
use crate::kernel::client::{BodySource, Client, ReadAhead, ResponseSink};
use crate::kernel::conf::{AddressConf, ServerId};
use crate::kernel::connection_log::{log_connection, log_idle_end, log_ignored_headers};
use crate::kernel::core::LingeringClose;
use crate::kernel::find::select_server;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::special::{self, Reply};
use crate::kernel::worker::HttpWorker;

/// A client connection and its buffers.
pub struct Connection {
    pub stream: Stream,
    pub info: ConnectionInfo,
    /// Bytes read and not yet consumed: the start of the next request, or body bytes.
    pub read_ahead: ReadAhead,
    /// The response head (and small bodies) being written.
    pub out: Vec<u8>,
    /// The one timer of the connection (see `wait_readable`).
    timer: Pin<Box<Sleep>>,
    /// Plain HTTP arrived on an `ssl` address: the request gets nginx's 497 page.
    pub plain_on_tls_port: bool,
}

/// How reading a request head ended.
enum HeadRead {
    Ready,
    /// Nothing of a request came within `IDLE_RELEASE_AFTER`: the connection waits on,
    /// idle, until this deadline.
    Idle(tokio::time::Instant),
    /// The client closed before sending a byte of the next request.
    Closed,
    /// The client closed in the middle of a head.
    ClosedPartial,
    TimedOut {
        partial: bool,
    },
    Invalid(RequestError),
    /// The worker is stopping and the connection was idle.
    Draining,
    Failed,
}

/// How long a connection waits for its next request before it lets go of its buffers, its
/// request's state and its burst's task (an idle connection holds none; a busy one keeps
/// them, so that it does not make them again for every request).
const IDLE_RELEASE_AFTER: Duration = Duration::from_millis(100);

/// The capacity the response head buffer starts with.
const OUT_BUFFER_BYTES: usize = 512;

/// A deadline later than any timeout: a timer that is not due.
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600)
}

/// Why waiting for the socket ended.
enum Wait {
    Readable,
    TimedOut,
    Draining,
    Failed,
}

/// What happens to the connection after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    KeepAlive,
    Close,
    /// Close after reading and dropping what the client still sends.
    Linger,
}

/// Serves one accepted connection until it closes.
///
/// A connection alternates between bursts of requests and idle waits. A burst (reading
/// heads, running requests, keep-alive) runs boxed, once per burst rather than once per
/// request; it ends when the connection has waited `IDLE_RELEASE_AFTER` for its next
/// request, and the box, the request's state and the buffers are freed while the
/// connection waits on in this small task.
pub async fn serve(
    worker: Rc<HttpWorker>,
    socket: usize,
    stream: Stream,
    peer: PeerAddress,
    guard: ConnectionGuard,
) {
    let _guard = guard;
    let mut state = crate::kernel::connection_state::ConnectionState::open(&worker.stats);
    let Some(address) = worker.address_conf(socket, &stream) else {
        return;
    };
    // Boxed: the start of the connection (with an HTTP/2 connection's loop) is large, and
    // a task keeps room for its largest step while it waits idle. Matched at once: a named
    // local would keep its room in the task beside `connection`.
    let Some(mut connection) = Box::pin(crate::assembly::connection_open::open(
        &worker, address, stream, peer,
    ))
    .await
    else {
        return;
    };
    let default_server = worker.conf().server(address.default_server);
    let mut waits = Waits {
        idle_timeout: default_server.core.client_header_timeout,
        resume: None,
    };
    loop {
        let burst = serve_burst(&worker, address, &mut connection, &mut state, &mut waits);
        let Burst::Idle(deadline) = Box::pin(burst).await else {
            return;
        };
        connection.release_buffers();
        let closable = connection.info.requests > 0;
        let waited = connection.wait_readable(&worker, deadline, closable).await;
        connection.restore_buffers();
        match waited {
            Wait::Readable => waits.resume = Some(deadline),
            Wait::TimedOut => {
                if connection.info.requests == 0 {
                    let message = "client timed out (110: Connection timed out)";
                    log_idle_end(&worker, &connection.info, address.default_server, message);
                }
                return;
            }
            Wait::Draining => {
                // A request may have arrived just now: serve it rather than reset it by
                // closing with unread data.
                let read = &mut connection.read_ahead;
                match connection.stream.try_read(&mut read.buf[read.filled..]) {
                    Ok(count) if count > 0 => read.filled += count,
                    _ => return,
                }
                waits.resume = Some(deadline);
            }
            Wait::Failed => return,
        }
    }
}

/// The timeouts of the wait for a connection's next request, kept across bursts.
struct Waits {
    /// How long a connection with nothing of a request read waits: `client_header_timeout`
    /// before the first request, the last request's `keepalive_timeout` after it.
    idle_timeout: Duration,
    /// The deadline of a wait that an idle phase began: the burst goes on with it.
    resume: Option<tokio::time::Instant>,
}

/// How a burst of requests ended.
enum Burst {
    /// The connection waited `IDLE_RELEASE_AFTER` with nothing of a request read; it waits
    /// on for its next request until this deadline.
    Idle(tokio::time::Instant),
    /// The connection is over.
    End,
}

/// Serves requests on a connection until it closes or waits idle.
async fn serve_burst(
    worker: &HttpWorker,
    address: &AddressConf,
    connection: &mut Connection,
    state: &mut crate::kernel::connection_state::ConnectionState<'_>,
    waits: &mut Waits,
) -> Burst {
    let default_server = worker.conf().server(address.default_server);
    let server_settings = crate::assembly::connection_open::default_core(worker, address);
    // Made for the first request of the burst and reused by the next ones.
    let mut slot: Option<Box<Request>> = None;
    let limits = default_server.core.head_limits();
    let header_timeout = default_server.core.client_header_timeout;
    loop {
        if let Some(request) = &mut slot {
            request.reset();
            request.pipelined = connection.read_ahead.filled > 0;
        }
        let timeouts = (waits.idle_timeout, header_timeout, waits.resume.take());
        let head = connection
            .read_head(worker, &limits, &mut slot, state, timeouts)
            .await;
        let request: &mut Request = slot.get_or_insert_with(fresh_request);
        let outcome = match head {
            HeadRead::Ready => {
                state.writing();
                None
            }
            HeadRead::Idle(deadline) => return Burst::Idle(deadline),
            HeadRead::Closed => {
                log_idle_end(
                    worker,
                    &connection.info,
                    address.default_server,
                    "client closed connection",
                );
                return Burst::End;
            }
            HeadRead::TimedOut { partial: false } => {
                if connection.info.requests == 0 {
                    let message = "client timed out (110: Connection timed out)";
                    log_idle_end(worker, &connection.info, address.default_server, message);
                }
                return Burst::End;
            }
            HeadRead::Draining | HeadRead::Failed => return Burst::End,
            HeadRead::ClosedPartial => Some((400, "client prematurely closed connection")),
            HeadRead::TimedOut { partial: true } => {
                Some((408, "client timed out (110: Connection timed out)"))
            }
            HeadRead::Invalid(error) => {
                connection.info.requests += 1;
                let server = server_of_partial_head(worker, address, request);
                log_ignored_headers(worker, &connection.info, request, server);
                let rejected = reject(worker, connection, request, server, &error);
                Box::pin(rejected).await;
                return Burst::End;
            }
        };
        connection.info.requests += 1;
        if let Some((status, message)) = outcome {
            let server = server_of_partial_head(worker, address, request);
            abandon(worker, connection, request, server, status, message);
            return Burst::End;
        }
        let after = handle_request(worker, connection, address, request).await;
        // What the request held (a `limit_conn` count, realip's address) is not held while idle.
        request.cleanups.0.clear();
        connection.info.peer.set(connection.info.socket_peer);
        // What a TLS session still holds of the response goes out before the next wait.
        let send_timeout = request.location.map_or(Duration::from_secs(60), |id| {
            worker.conf().location(id).settings.core.send_timeout
        });
        if connection.stream.flush_timed(send_timeout).await.is_err() {
            return Burst::End;
        }
        let core = request
            .location
            .map(|id| &worker.conf().location(id).settings.core);
        match after {
            After::KeepAlive => {
                state.waiting();
                waits.idle_timeout = core.map_or(Duration::from_secs(75), |core| {
                    core.keepalive_timeout.timeout
                });
            }
            After::Close => {
                // The request is over: it leaves the counters before its log lines are
                // known to be written and before the close, which a client may see at once.
                state.closing();
                crate::kernel::log_buffers::log_lines_written(worker).await;
                connection.close_tls(send_timeout).await;
                return Burst::End;
            }
            After::Linger => {
                crate::kernel::log_buffers::log_lines_written(worker).await;
                let core = core.unwrap_or(server_settings);
                connection
                    .linger(core.lingering_time, core.lingering_timeout)
                    .await;
                return Burst::End;
            }
        }
    }
}

/// A request ready for a head: `reset` sets what `Default` leaves at zero (the limits of
/// URI changes and subrequests).
fn fresh_request<'a>() -> Box<Request<'a>> {
    let mut request = Box::<Request>::default();
    request.reset();
    request
}

/// A head that never completed: nginx logs the message at `info` and an access-log line
/// with 400 (closed) or 408 (timed out), and sends nothing. A timed-out connection is
/// reset when `reset_timedout_connection` says so.
fn abandon(
    worker: &HttpWorker,
    connection: &mut Connection,
    request: &mut Request<'_>,
    server: ServerId,
    status: u16,
    message: &str,
) {
    let conf = worker.conf();
    request.server = Some(server);
    request.location = Some(conf.server(server).location);
    request.started = Some(runtime::clock::monotonic());
    request.response.status = status;
    let action = if request.head.request_line.is_empty() {
        "reading client request line"
    } else {
        "reading client request headers"
    };
    log_ignored_headers(worker, &connection.info, request, server);
    log_connection(
        worker,
        &connection.info,
        request,
        Level::Info,
        message,
        action,
    );
    let core = &conf.location(conf.server(server).location).settings.core;
    if status == 408 && core.reset_timedout_connection {
        let _ = connection.stream.set_reset_on_close();
    }
    send::log_request(worker, connection, request);
}

/// The server for a head that never completed or was rejected: once nginx has read a
/// valid `Host` line it has switched to the server that names, else it is the address's
/// default.
fn server_of_partial_head(
    worker: &HttpWorker,
    address: &AddressConf,
    request: &mut Request<'_>,
) -> ServerId {
    let mut host = Vec::new();
    let valid = request
        .known_header(request.head.known.host)
        .is_some_and(|raw| http1::host::validate_host(raw, &mut host).is_ok());
    if !valid {
        return address.default_server;
    }
    request.info.host = host;
    select_server(worker, address, request)
}

/// Answers a request whose head was rejected, as nginx does: log at `info`, the status
/// page, `Connection: close`, then a lingering close.
async fn reject<'a>(
    worker: &'a HttpWorker,
    connection: &mut Connection,
    request: &mut Request<'a>,
    server: ServerId,
    error: &RequestError,
) {
    request.server = Some(server);
    request.location = Some(worker.conf().server(server).location);
    let now = worker.clock.now();
    request.started = Some(now.monotonic);
    let message = error.log_message_in(&request.head_bytes);
    let action = if request.head.request_line.is_empty() {
        "reading client request line"
    } else {
        "reading client request headers"
    };
    log_connection(
        worker,
        &connection.info,
        request,
        Level::Info,
        &message,
        action,
    );
    // The body of a refused request is never read.
    let mut no_body = BodyState::Done;
    let client = Client {
        info: &connection.info,
        source: BodySource::http1(&connection.stream, &mut connection.read_ahead),
        body: &mut no_body,
    };
    let Reply::Respond(body) = phases::run_error(worker, client, request, error.status()).await
    else {
        return;
    };
    request.keepalive = false;
    let sent = send::send_response(worker, connection, request, body).await;
    let _ = connection
        .stream
        .flush_timed(send_timeout_of(worker, server))
        .await;
    send::log_request(worker, connection, request);
    let core = &worker
        .conf()
        .location(worker.conf().server(server).location)
        .settings
        .core;
    if sent.is_ok() && core.lingering_close != LingeringClose::Off {
        connection
            .linger(core.lingering_time, core.lingering_timeout)
            .await;
    }
}

/// A request nginx answers with one of its TLS codes (495, 496, 497) once the head is
/// read: logged at `info` with the reason, answered through `error_page` or the 400 page.
async fn refuse<'a>(
    worker: &'a HttpWorker,
    connection: &mut Connection,
    request: &mut Request<'a>,
    server: ServerId,
    status: u16,
    message: &str,
) {
    request.location = Some(worker.conf().server(server).location);
    log_connection(
        worker,
        &connection.info,
        request,
        Level::Info,
        message,
        "reading client request headers",
    );
    let mut no_body = BodyState::Done;
    let client = Client {
        info: &connection.info,
        source: BodySource::http1(&connection.stream, &mut connection.read_ahead),
        body: &mut no_body,
    };
    let Reply::Respond(body) = phases::run_error(worker, client, request, status).await else {
        return;
    };
    request.keepalive = false;
    let _ = send::send_response(worker, connection, request, body).await;
    connection.close_tls(send_timeout_of(worker, server)).await;
    send::log_request(worker, connection, request);
}

/// The server level's `send_timeout`, for the last bytes of a refused request's answer.
fn send_timeout_of(worker: &HttpWorker, server: ServerId) -> Duration {
    let conf = worker.conf();
    conf.location(conf.server(server).location)
        .settings
        .core
        .send_timeout
}

/// Runs one request whose head was read: server choice, phases, response, log.
async fn handle_request<'a>(
    worker: &'a HttpWorker,
    connection: &mut Connection,
    address: &AddressConf,
    request: &mut Request<'a>,
) -> After {
    request.started = Some(runtime::clock::monotonic());
    request.length = request.head.len as u64;
    if let Err(error) =
        http1::request::analyze(&request.head_bytes, &request.head, &mut request.info)
    {
        let server = select_server(worker, address, request);
        Box::pin(reject(worker, connection, request, server, &error)).await;
        return After::Close;
    }
    let server = select_server(worker, address, request);
    request.server = Some(server);
    if let Err(error) = check_connect(worker, server, request) {
        Box::pin(reject(worker, connection, request, server, &error)).await;
        return After::Close;
    }
    if let Some((status, message)) = crate::kernel::ssl::refusal(
        worker,
        (&connection.info, connection.plain_on_tls_port),
        server,
        &request.info.host,
    ) {
        Box::pin(refuse(
            worker, connection, request, server, status, &message,
        ))
        .await;
        return After::Close;
    }
    if let Err(error) = reread_with_server_rules(worker, address.default_server, server, request) {
        log_ignored_headers(worker, &connection.info, request, server);
        Box::pin(reject(worker, connection, request, server, &error)).await;
        return After::Close;
    }
    log_ignored_headers(worker, &connection.info, request, server);
    // nginx's post-read phase: realip with the server's settings.
    crate::modules::realip::post_read(worker, server, &connection.info, request);
    request.uri.extend_from_slice(&request.head.uri);
    if let Some(args) = request.info.target.args.clone() {
        request.args.extend_from_slice(&request.head_bytes[args]);
    }
    let mut body_state = BodyState::new(request.info.framing);
    let client = Client {
        info: &connection.info,
        source: BodySource::http1(&connection.stream, &mut connection.read_ahead),
        body: &mut body_state,
    };
    let reply = phases::run(worker, client, request).await;
    let mut body = match reply {
        Reply::Respond(body) => body,
        Reply::Close => {
            send::log_request(worker, connection, request);
            // `reset_timedout_connection` also resets connections closed with 444.
            if current_core(worker, request).reset_timedout_connection {
                let _ = connection.stream.set_reset_on_close();
            }
            return After::Close;
        }
    };
    request.keepalive = send::keepalive_allowed(worker, &connection.info, request);
    if !body_state.is_done() {
        if request.info.expect_continue && connection.read_ahead.filled == 0 {
            let _ = connection
                .stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await;
        }
        if let Err(error) = connection.discard_buffered(&mut body_state) {
            // A malformed body nobody reads still ends the request with nginx's answer.
            let message = error.log_message_in(&request.head_bytes);
            crate::kernel::request_log::log(
                worker,
                &connection.info,
                request,
                Level::Error,
                format_args!("{message}"),
            );
            if let Reply::Respond(page) = special::special_response(worker, request, error.status())
            {
                body = page;
            }
            request.keepalive = false;
            body_state = BodyState::Done;
        }
    }
    let sent = send::send_response(worker, connection, request, body).await;
    send::log_request(worker, connection, request);
    // Rare steps are boxed, else every request's future holds their state (9.4 KiB).
    if phases::has_work_after_response(worker, request) {
        let mut source = BodySource::http1(&connection.stream, &mut connection.read_ahead);
        Box::pin(phases::after_response(
            worker,
            &connection.info,
            &mut source,
            request,
        ))
        .await;
    }
    if let Err(error) = sent {
        if error.kind() == std::io::ErrorKind::TimedOut {
            crate::kernel::request_log::log(
                worker,
                &connection.info,
                request,
                Level::Info,
                format_args!(
                    "client timed out (110: Connection timed out) while sending response to client"
                ),
            );
            if current_core(worker, request).reset_timedout_connection {
                let _ = connection.stream.set_reset_on_close();
            }
        }
        return After::Close;
    }
    // nginx reads the rest of a body nobody used before the connection goes on or closes,
    // so the client sees the response and a clean close rather than a reset.
    if !body_state.is_done() {
        let core = current_core(worker, request);
        if !connection
            .discard_rest(&mut body_state, core.lingering_time, core.lingering_timeout)
            .await
        {
            return After::Close;
        }
    }
    if !request.keepalive {
        return closing_mode(worker, request, connection.read_ahead.filled > 0);
    }
    After::KeepAlive
}

/// The core settings of the request's location (its server's, before one is found).
fn current_core<'a>(
    worker: &'a HttpWorker,
    request: &Request<'_>,
) -> &'a crate::kernel::core::CoreLocation {
    let conf = worker.conf();
    let id = request
        .location
        .unwrap_or_else(|| conf.server(request.server.unwrap_or(ServerId(0))).location);
    &conf.location(id).settings.core
}

/// nginx switches to the server `Host` selects as soon as it has read `Host`, so the header
/// lines after it follow that server's `ignore_invalid_headers`, `underscores_in_headers`
/// and `max_headers`. When those differ from the default server's, the head is read again
/// with the selected server's rules (lines before `Host`, usually none, are read by them
/// too).
fn reread_with_server_rules(
    worker: &HttpWorker,
    default: ServerId,
    selected: ServerId,
    request: &mut Request<'_>,
) -> Result<(), RequestError> {
    if default == selected {
        return Ok(());
    }
    let conf = worker.conf();
    let (first, chosen) = (&conf.server(default).core, &conf.server(selected).core);
    let same = first.ignore_invalid_headers == chosen.ignore_invalid_headers
        && first.underscores_in_headers == chosen.underscores_in_headers
        && first.max_headers == chosen.max_headers;
    if same {
        return Ok(());
    }
    let mut limits = chosen.head_limits();
    limits.merge_slashes = first.merge_slashes;
    // The head was complete under the first rules and is re-read from the same bytes.
    let head_len = request.head.len;
    let bytes = &request.head_bytes[..head_len.min(request.head_bytes.len())];
    match http1::request::parse_head(bytes, &limits, &mut request.head)? {
        Progress::Complete => {}
        Progress::Partial => return Err(RequestError::InvalidRequest),
    }
    http1::request::analyze(&request.head_bytes, &request.head, &mut request.info)
}

/// A CONNECT request goes on only on HTTP/1.1 to a server that tunnels, and without a
/// body, as nginx checks it once the server is known.
fn check_connect(
    worker: &HttpWorker,
    server: ServerId,
    request: &Request<'_>,
) -> Result<(), RequestError> {
    let allowed = if worker.conf().server(server).allow_connect {
        http1::request::ConnectAllowed::Yes
    } else {
        http1::request::ConnectAllowed::No
    };
    http1::request::check_connect(&request.head, &request.info, allowed)
}

/// Whether to linger before closing: `lingering_close always`, or `on` while the client
/// may still be sending.
fn closing_mode(worker: &HttpWorker, request: &Request<'_>, buffered: bool) -> After {
    match current_core(worker, request).lingering_close {
        LingeringClose::Off => After::Close,
        LingeringClose::Always => After::Linger,
        LingeringClose::On if buffered => After::Linger,
        LingeringClose::On => After::Close,
    }
}

impl Connection {
    /// Reads until a complete head is in the buffer, then moves it into the request in
    /// `slot` (made if there is none). A connection that waits `IDLE_RELEASE_AFTER` with
    /// nothing of a head read returns [`HeadRead::Idle`], so that its request and buffers
    /// are let go while it waits on (an idle connection holds neither, as in nginx).
    ///
    /// `timeouts`: how long to wait with nothing read, `client_header_timeout`, and the
    /// deadline of an idle wait this read goes on with.
    async fn read_head(
        &mut self,
        worker: &HttpWorker,
        limits: &HeadLimits,
        slot: &mut Option<Box<Request<'_>>>,
        state: &mut crate::kernel::connection_state::ConnectionState<'_>,
        timeouts: (Duration, Duration, Option<tokio::time::Instant>),
    ) -> HeadRead {
        let (idle_timeout, header_timeout, resume) = timeouts;
        // The clock is read only when the connection has to wait: a request that arrives
        // in one packet never arms its header timer.
        let mut started = self.read_ahead.filled > 0;
        if started {
            state.reading();
        }
        let mut timeout = if started {
            header_timeout
        } else {
            idle_timeout
        };
        // A new connection has `client_header_timeout` from accept for its whole first head,
        // as in nginx; a keep-alive connection waits `keepalive_timeout` for the first byte
        // and then has `client_header_timeout` for the rest.
        let first = self.info.requests == 0;
        let mut deadline = resume.or_else(|| {
            first.then(|| tokio::time::Instant::from_std(self.info.accepted) + header_timeout)
        });
        // Parsing starts over from the first byte each time, so it runs only when a line
        // may have ended (or the buffer is full and a limit may be hit): a client sending
        // one byte at a time costs a scan per line, not a scan per byte. The first bytes
        // of a head are parsed whatever they hold, so that a client speaking another
        // protocol (a uwsgi packet has no line end) gets its 400 at once, as from nginx.
        let mut parse = self.read_ahead.filled > 0;
        loop {
            if parse {
                let request = slot.get_or_insert_with(fresh_request);
                match http1::request::parse_head(
                    &self.read_ahead.buf[..self.read_ahead.filled],
                    limits,
                    &mut request.head,
                ) {
                    Ok(Progress::Complete) => {
                        let len = request.head.len;
                        request
                            .head_bytes
                            .extend_from_slice(&self.read_ahead.buf[..len]);
                        self.consume(len);
                        return HeadRead::Ready;
                    }
                    Ok(Progress::Partial) => {}
                    Err(error) => {
                        request
                            .head_bytes
                            .extend_from_slice(&self.read_ahead.buf[..self.read_ahead.filled]);
                        return HeadRead::Invalid(error);
                    }
                }
                if self.read_ahead.filled == self.read_ahead.buf.len() {
                    let max = limits.client_header_buffer_size
                        + limits.large_client_header_buffers.0
                            * limits.large_client_header_buffers.1;
                    if self.read_ahead.buf.len() >= max {
                        request
                            .head_bytes
                            .extend_from_slice(&self.read_ahead.buf[..self.read_ahead.filled]);
                        return HeadRead::Invalid(RequestError::RequestTooLarge);
                    }
                    let grown = (self.read_ahead.buf.len() * 2)
                        .clamp(limits.large_client_header_buffers.1, max);
                    self.read_ahead
                        .buf
                        .resize(grown.max(self.read_ahead.buf.len() + 1), 0);
                }
                parse = false;
            }
            let read = match self
                .stream
                .try_read(&mut self.read_ahead.buf[self.read_ahead.filled..])
            {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    let deadline = *deadline.get_or_insert_with(|| {
                        tokio::time::Instant::from_std(runtime::clock::monotonic()) + timeout
                    });
                    // Only an idle keep-alive connection is closed when the worker stops;
                    // a new connection still gets its first request served, as in nginx.
                    let closable = !started && self.info.requests > 0;
                    if !started {
                        // A connection that has not sent a second request yet lets its
                        // buffers and request go at once, as nginx does (freed right
                        // after they were made, they leave no holes in the heap)...
                        if self.info.requests <= 1 {
                            return HeadRead::Idle(deadline);
                        }
                        // ...but a keep-alive client usually sends its next request within
                        // a round trip: they are let go only once the connection has been
                        // idle for IDLE_RELEASE_AFTER, so that a busy connection does not
                        // make them again for every request.
                        let soon = (tokio::time::Instant::from_std(runtime::clock::monotonic())
                            + IDLE_RELEASE_AFTER)
                            .min(deadline);
                        if soon < deadline {
                            match self.wait_readable(worker, soon, closable).await {
                                Wait::TimedOut => return HeadRead::Idle(deadline),
                                Wait::Readable => continue,
                                Wait::Draining => {}
                                Wait::Failed => return HeadRead::Failed,
                            }
                        }
                    }
                    let waited = self.wait_readable(worker, deadline, closable).await;
                    match waited {
                        Wait::Readable => continue,
                        Wait::Draining => {
                            // A request may have arrived just now: serve it rather than
                            // reset it by closing with unread data.
                            match self
                                .stream
                                .try_read(&mut self.read_ahead.buf[self.read_ahead.filled..])
                            {
                                Ok(count) if count > 0 => Ok(count),
                                _ => return HeadRead::Draining,
                            }
                        }
                        Wait::TimedOut => {
                            slot.get_or_insert_with(fresh_request)
                                .head_bytes
                                .extend_from_slice(&self.read_ahead.buf[..self.read_ahead.filled]);
                            return HeadRead::TimedOut { partial: started };
                        }
                        Wait::Failed => return HeadRead::Failed,
                    }
                }
                other => other,
            };
            match read {
                Ok(0) => {
                    if !started {
                        // End of stream on an idle connection is the drain's own shutdown
                        // when the worker is stopping, not the client closing.
                        return if worker.idle_grace_over() {
                            HeadRead::Draining
                        } else {
                            HeadRead::Closed
                        };
                    }
                    slot.get_or_insert_with(fresh_request)
                        .head_bytes
                        .extend_from_slice(&self.read_ahead.buf[..self.read_ahead.filled]);
                    return HeadRead::ClosedPartial;
                }
                Ok(count) => {
                    let fresh = &self.read_ahead.buf
                        [self.read_ahead.filled..self.read_ahead.filled + count];
                    parse = !started
                        || memchr::memchr(b'\n', fresh).is_some()
                        || self.read_ahead.filled + count == self.read_ahead.buf.len();
                    self.read_ahead.filled += count;
                    if !started {
                        started = true;
                        state.reading();
                        if !first {
                            timeout = header_timeout;
                            deadline = None;
                        }
                    }
                }
                Err(_) => return HeadRead::Failed,
            }
        }
    }

    /// Waits for the socket to become readable, until `deadline`; an idle keep-alive
    /// connection (`closable`) also wakes when the worker starts draining.
    ///
    /// The connection keeps one timer for its whole life and re-arms it only when it fires
    /// before the current deadline or must fire earlier: a keep-alive connection that gets
    /// a request every few milliseconds does no timer work per request.
    async fn wait_readable(
        &mut self,
        worker: &HttpWorker,
        deadline: tokio::time::Instant,
        closable: bool,
    ) -> Wait {
        if closable && worker.idle_grace_over() {
            return Wait::Draining;
        }
        // After the drain grace, the worker shuts down the reading side of registered
        // sockets, which wakes them.
        let _idle = closable.then(|| worker.register_idle(self.stream.raw_fd()));
        if self.timer.deadline() > deadline {
            self.timer.as_mut().reset(deadline);
        }
        loop {
            tokio::select! {
                biased;
                result = self.stream.readable() => {
                    return if result.is_ok() { Wait::Readable } else { Wait::Failed };
                }
                () = &mut self.timer => {
                    if tokio::time::Instant::now() >= deadline {
                        return Wait::TimedOut;
                    }
                    self.timer.as_mut().reset(deadline);
                }
            }
        }
    }

    /// A connection on `stream` with an empty buffer of `buffer_size` bytes.
    pub fn new(stream: Stream, info: ConnectionInfo, buffer_size: usize) -> Connection {
        Connection {
            stream,
            info,
            read_ahead: ReadAhead::new(buffer_size),
            out: Vec::with_capacity(OUT_BUFFER_BYTES),
            timer: Box::pin(tokio::time::sleep_until(far_future())),
            plain_on_tls_port: false,
        }
    }

    /// Frees the read and write buffers of a connection waiting with nothing of a request
    /// read, as nginx frees its header buffer: an idle keep-alive connection holds none.
    fn release_buffers(&mut self) {
        self.read_ahead.release();
        self.out = Vec::new();
    }

    /// Makes the buffers [`Connection::release_buffers`] freed again, before reading.
    fn restore_buffers(&mut self) {
        self.read_ahead.restore();
        if self.out.capacity() == 0 {
            self.out = Vec::with_capacity(OUT_BUFFER_BYTES);
        }
    }

    /// Ends a TLS session as nginx does: a `close_notify`, sent within `timeout`.
    async fn close_tls(&mut self, timeout: Duration) {
        if self.stream.is_tls() {
            let _ = self.stream.shutdown_write();
            let _ = self.stream.flush_timed(timeout).await;
        }
    }

    /// Puts bytes in the buffer as if they had been read (tests and pipelined input).
    pub fn preload(&mut self, bytes: &[u8]) {
        self.read_ahead.append(bytes);
    }

    pub(crate) fn consume(&mut self, len: usize) {
        self.read_ahead.consume(len);
    }

    /// The request body's source: the bytes read ahead, then the socket.
    pub fn body_source(&mut self) -> BodySource<'_> {
        BodySource::http1(&self.stream, &mut self.read_ahead)
    }

    /// Where the response goes.
    pub fn sink(&self) -> ResponseSink<'_> {
        ResponseSink::http1(&self.stream)
    }

    /// Drops body bytes already in the buffer.
    fn discard_buffered(&mut self, body: &mut BodyState) -> Result<(), RequestError> {
        let taken = body.discard(&self.read_ahead.buf[..self.read_ahead.filled])?;
        self.consume(taken);
        Ok(())
    }

    /// Reads and drops the rest of an unread body, each read waiting at most `timeout` and
    /// all of it at most `total`. `false` if the connection cannot go on.
    async fn discard_rest(
        &mut self,
        body: &mut BodyState,
        total: Duration,
        timeout: Duration,
    ) -> bool {
        let give_up = tokio::time::Instant::now() + total;
        while !body.is_done() {
            if self.discard_buffered(body).is_err() {
                return false;
            }
            if body.is_done() {
                break;
            }
            self.read_ahead.filled = 0;
            let deadline = give_up.min(tokio::time::Instant::now() + timeout);
            match timeout_at(deadline, self.stream.read(&mut self.read_ahead.buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return false,
                Ok(Ok(count)) => self.read_ahead.filled = count,
            }
        }
        true
    }

    /// nginx's lingering close: stop sending, then read and drop what the client sends
    /// until it closes, `lingering_timeout` passes without data, or `lingering_time` ends.
    async fn linger(&mut self, total: Duration, timeout: Duration) {
        if self.stream.shutdown_write().is_err() {
            return;
        }
        let give_up = tokio::time::Instant::now() + total;
        // On the heap: an array here would sit in every connection's future.
        let mut scratch = vec![0u8; 4096];
        loop {
            let deadline = give_up.min(tokio::time::Instant::now() + timeout);
            match timeout_at(deadline, self.stream.read(&mut scratch)).await {
                Ok(Ok(count)) if count > 0 => continue,
                _ => return,
            }
        }
    }

    pub fn is_http09(request: &Request<'_>) -> bool {
        request.head.version == Version::Http09
    }
}
