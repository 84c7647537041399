//! A client connection: reading request heads, keep-alive and pipelining, sending
//! responses, discarding unread bodies, lingering close.

use std::rc::Rc;
use std::time::{Duration, Instant};

use http1::request::{HeadLimits, Progress};
use http1::{RequestError, Version};
use logging::Level;
use runtime::{ConnectionGuard, PeerAddress, Phase, Stream};
use tokio::time::timeout_at;

use crate::body::BodyState;
use crate::conf::{AddressConf, ServerId};
use crate::core::{CoreServer, LingeringClose};
use crate::phases::{self, Reply};
use crate::request::{ConnectionInfo, Request};
use crate::response::Body;
use crate::send;
use crate::worker::HttpWorker;

/// A client connection and its buffers.
pub struct Connection {
    pub stream: Stream,
    pub info: ConnectionInfo,
    /// Bytes read and not yet consumed: the start of the next request, or body bytes.
    pub(crate) buf: Vec<u8>,
    pub(crate) filled: usize,
    /// The response head (and small bodies) being written.
    pub out: Vec<u8>,
}

/// How reading a request head ended.
enum HeadRead {
    Ready,
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

/// What happens to the connection after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    KeepAlive,
    Close,
    /// Close after reading and dropping what the client still sends.
    Linger,
}

/// Serves one accepted connection until it closes.
pub async fn serve(
    worker: Rc<HttpWorker>,
    socket: usize,
    stream: Stream,
    peer: PeerAddress,
    guard: ConnectionGuard,
) {
    let _guard = guard;
    let Some(address) = worker.address_conf(socket, &stream) else {
        return;
    };
    let local = stream.local_address();
    let default_server = worker.conf().server(address.default_server);
    let server_settings = &worker
        .conf()
        .location(default_server.location)
        .settings
        .core;
    let _ = stream.set_nodelay(server_settings.tcp_nodelay);
    let mut connection = Connection {
        stream,
        info: ConnectionInfo {
            id: worker.next_connection_id(),
            peer,
            local,
            accepted: Instant::now(),
            requests: 0,
        },
        buf: vec![0; default_server.core.client_header_buffer_size as usize],
        filled: 0,
        out: Vec::with_capacity(512),
    };
    let mut request = Request::default();
    let mut idle_timeout = default_server.core.client_header_timeout;
    let limits = head_limits(&default_server.core);
    let header_timeout = default_server.core.client_header_timeout;
    loop {
        request.reset();
        let head = connection
            .read_head(&worker, &limits, &mut request, idle_timeout, header_timeout)
            .await;
        let outcome = match head {
            HeadRead::Ready => None,
            HeadRead::Closed | HeadRead::Draining | HeadRead::Failed => return,
            HeadRead::ClosedPartial => Some((400, "client prematurely closed connection")),
            HeadRead::TimedOut { partial: false } => return,
            HeadRead::TimedOut { partial: true } => {
                Some((408, "client timed out (110: Connection timed out)"))
            }
            HeadRead::Invalid(error) => {
                connection.info.requests += 1;
                reject(
                    &worker,
                    &mut connection,
                    &mut request,
                    address.default_server,
                    &error,
                )
                .await;
                return;
            }
        };
        connection.info.requests += 1;
        if let Some((status, message)) = outcome {
            abandon(
                &worker,
                &mut connection,
                &mut request,
                address.default_server,
                status,
                message,
            );
            return;
        }
        let after = handle_request(&worker, &mut connection, address, &mut request).await;
        let core = request
            .location
            .map(|id| &worker.conf().location(id).settings.core);
        match after {
            After::KeepAlive => {
                idle_timeout = core.map_or(Duration::from_secs(75), |core| {
                    core.keepalive_timeout.timeout
                });
            }
            After::Close => return,
            After::Linger => {
                let core = core.unwrap_or(server_settings);
                connection
                    .linger(core.lingering_time, core.lingering_timeout)
                    .await;
                return;
            }
        }
    }
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
    request.started = Some(Instant::now());
    request.response.status = status;
    log_connection(
        worker,
        connection,
        request,
        Level::Info,
        message,
        "reading client request headers",
    );
    let core = &conf.location(conf.server(server).location).settings.core;
    if status == 408 && core.reset_timedout_connection {
        let _ = connection.stream.set_reset_on_close();
    }
    send::log_request(worker, connection, request);
}

fn head_limits(core: &CoreServer) -> HeadLimits {
    HeadLimits {
        client_header_buffer_size: core.client_header_buffer_size as usize,
        large_client_header_buffers: (
            core.large_client_header_buffers.0 as usize,
            core.large_client_header_buffers.1 as usize,
        ),
        max_headers: Some(core.max_headers as usize),
        ignore_invalid_headers: core.ignore_invalid_headers,
        underscores_in_headers: core.underscores_in_headers,
        merge_slashes: core.merge_slashes,
    }
}

/// Logs a connection-level message to the error log of the request's server (the
/// address's default server until the head is read), as nginx does.
fn log_connection(
    worker: &HttpWorker,
    connection: &Connection,
    request: &Request<'_>,
    level: Level,
    message: &str,
    action: &'static str,
) {
    let conf = worker.conf();
    let error_log = match request.location {
        Some(location) => &conf.location(location).settings.core.error_log,
        None => &worker.generation.error_log,
    };
    if !error_log.enabled(level) {
        return;
    }
    let context = request
        .log_context(&connection.info, conf)
        .with_action(action);
    error_log.write(
        level,
        &worker.clock.wall(),
        Some(connection.info.id),
        format_args!("{message}"),
        Some(&context),
    );
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
    phases::log(
        worker,
        &connection.info,
        request,
        Level::Info,
        format_args!("{message}"),
    );
    let Reply::Respond(body) =
        phases::finalize_status(worker, &connection.info, request, error.status())
    else {
        return;
    };
    request.keepalive = false;
    let sent = send::send_response(worker, connection, request, body).await;
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

/// Runs one request whose head was read: server choice, phases, response, log.
async fn handle_request<'a>(
    worker: &'a HttpWorker,
    connection: &mut Connection,
    address: &AddressConf,
    request: &mut Request<'a>,
) -> After {
    let conf = worker.conf();
    let now = worker.clock.now();
    request.started = Some(now.monotonic);
    request.started_wall = Some(now.wall);
    request.length = request.head.len as u64;
    if let Err(error) =
        http1::request::analyze(&request.head_bytes, &request.head, &mut request.info)
    {
        let server = select_server(worker, address, request);
        reject(worker, connection, request, server, &error).await;
        return After::Close;
    }
    request.server = Some(select_server(worker, address, request));
    request.uri.extend_from_slice(&request.head.uri);
    if let Some(args) = request.info.target.args.clone() {
        request.args.extend_from_slice(&request.head_bytes[args]);
    }
    let mut body_state = BodyState::new(request.info.framing);
    let reply = phases::run(worker, &connection.info, request).await;
    let body = match reply {
        Reply::Respond(body) => body,
        Reply::Close => {
            send::log_request(worker, connection, request);
            return After::Close;
        }
    };
    request.keepalive = send::keepalive_allowed(worker, &connection.info, request);
    if !body_state.is_done() {
        if request.info.expect_continue && connection.filled == 0 {
            let _ = connection
                .stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await;
        }
        if connection.discard_buffered(&mut body_state).is_err() {
            request.keepalive = false;
        }
    }
    let sent = send::send_response(worker, connection, request, body).await;
    send::log_request(worker, connection, request);
    if let Err(error) = sent {
        if error.kind() == std::io::ErrorKind::TimedOut {
            phases::log(
                worker,
                &connection.info,
                request,
                Level::Info,
                format_args!(
                    "client timed out (110: Connection timed out) while sending response to client"
                ),
            );
            let location = request.location.map(|id| conf.location(id));
            if location.is_some_and(|location| location.settings.core.reset_timedout_connection) {
                let _ = connection.stream.set_reset_on_close();
            }
        }
        return After::Close;
    }
    if !request.keepalive {
        return closing_mode(worker, request, &body_state, connection.filled > 0);
    }
    if !body_state.is_done() {
        let core = &conf
            .location(
                request
                    .location
                    .unwrap_or(conf.server(request.server.unwrap_or(ServerId(0))).location),
            )
            .settings
            .core;
        if !connection
            .discard_rest(&mut body_state, core.lingering_time, core.lingering_timeout)
            .await
        {
            return After::Close;
        }
    }
    After::KeepAlive
}

/// Whether to linger before closing: `lingering_close always`, or `on` while the client
/// may still be sending.
fn closing_mode(
    worker: &HttpWorker,
    request: &Request<'_>,
    body: &BodyState,
    buffered: bool,
) -> After {
    let mode = request
        .location
        .map(|id| worker.conf().location(id).settings.core.lingering_close)
        .unwrap_or(LingeringClose::On);
    match mode {
        LingeringClose::Off => After::Close,
        LingeringClose::Always => After::Linger,
        LingeringClose::On if !body.is_done() || buffered => After::Linger,
        LingeringClose::On => After::Close,
    }
}

/// The server for the request's host on this address, else the address's default.
fn select_server(
    worker: &HttpWorker,
    address: &AddressConf,
    request: &mut Request<'_>,
) -> ServerId {
    let conf = worker.conf();
    let found = address.names.find(
        &request.info.host,
        |index| &conf.server_regexes[index],
        &mut request.matches.captures,
    );
    match found {
        Some((server, regex)) => {
            if let Some(regex) = regex {
                regex.store(&request.matches.captures, &mut request.matches.named);
            }
            server
        }
        None => address.default_server,
    }
}

impl Connection {
    /// Reads until a complete head is in the buffer, then moves it into `request`.
    async fn read_head(
        &mut self,
        worker: &HttpWorker,
        limits: &HeadLimits,
        request: &mut Request<'_>,
        idle_timeout: Duration,
        header_timeout: Duration,
    ) -> HeadRead {
        // The clock is read only when the connection has to wait: a request that arrives
        // in one packet never arms its header timer.
        let mut started = self.filled > 0;
        let mut timeout = if started {
            header_timeout
        } else {
            idle_timeout
        };
        let mut deadline = None;
        // Parsing starts over from the first byte each time, so it runs only when a line
        // may have ended (or the buffer is full and a limit may be hit): a client sending
        // one byte at a time costs a scan per line, not a scan per byte.
        let mut parse = self.filled > 0;
        loop {
            if parse {
                match http1::request::parse_head(
                    &self.buf[..self.filled],
                    limits,
                    &mut request.head,
                ) {
                    Ok(Progress::Complete) => {
                        let len = request.head.len;
                        request.head_bytes.extend_from_slice(&self.buf[..len]);
                        self.consume(len);
                        return HeadRead::Ready;
                    }
                    Ok(Progress::Partial) => {}
                    Err(error) => {
                        request
                            .head_bytes
                            .extend_from_slice(&self.buf[..self.filled]);
                        return HeadRead::Invalid(error);
                    }
                }
                if self.filled == self.buf.len() {
                    let max = limits.client_header_buffer_size
                        + limits.large_client_header_buffers.0
                            * limits.large_client_header_buffers.1;
                    if self.buf.len() >= max {
                        request
                            .head_bytes
                            .extend_from_slice(&self.buf[..self.filled]);
                        return HeadRead::Invalid(RequestError::RequestTooLarge);
                    }
                    let grown =
                        (self.buf.len() * 2).clamp(limits.large_client_header_buffers.1, max);
                    self.buf.resize(grown.max(self.buf.len() + 1), 0);
                }
                parse = false;
            }
            let read = match self.stream.try_read(&mut self.buf[self.filled..]) {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    let deadline =
                        *deadline.get_or_insert_with(|| tokio::time::Instant::now() + timeout);
                    match self.wait_readable(worker, deadline, started).await {
                        Ok(()) => continue,
                        Err(outcome) => return outcome,
                    }
                }
                other => other,
            };
            match read {
                Ok(0) => {
                    return if started {
                        HeadRead::ClosedPartial
                    } else {
                        HeadRead::Closed
                    };
                }
                Ok(count) => {
                    let fresh = &self.buf[self.filled..self.filled + count];
                    parse = memchr::memchr(b'\n', fresh).is_some()
                        || self.filled + count == self.buf.len();
                    self.filled += count;
                    if !started {
                        started = true;
                        timeout = header_timeout;
                        deadline = None;
                    }
                }
                Err(_) => return HeadRead::Failed,
            }
        }
    }

    /// Waits for the socket to become readable, the deadline, or (while idle) a stop.
    async fn wait_readable(
        &self,
        worker: &HttpWorker,
        deadline: tokio::time::Instant,
        started: bool,
    ) -> Result<(), HeadRead> {
        let mut phase = worker.phase.clone();
        if !started && *phase.borrow_and_update() != Phase::Running {
            return Err(HeadRead::Draining);
        }
        tokio::select! {
            biased;
            result = timeout_at(deadline, self.stream.readable()) => match result {
                Ok(Ok(())) => Ok(()),
                Ok(Err(_)) => Err(HeadRead::Failed),
                Err(_) => Err(HeadRead::TimedOut { partial: started }),
            },
            _ = phase.changed(), if !started => Err(HeadRead::Draining),
        }
    }

    /// A connection on `stream` with an empty buffer of `buffer_size` bytes.
    pub fn new(stream: Stream, info: ConnectionInfo, buffer_size: usize) -> Connection {
        Connection {
            stream,
            info,
            buf: vec![0; buffer_size.max(1)],
            filled: 0,
            out: Vec::with_capacity(512),
        }
    }

    /// Puts bytes in the buffer as if they had been read (tests and pipelined input).
    pub fn preload(&mut self, bytes: &[u8]) {
        if self.buf.len() < self.filled + bytes.len() {
            self.buf.resize(self.filled + bytes.len(), 0);
        }
        self.buf[self.filled..self.filled + bytes.len()].copy_from_slice(bytes);
        self.filled += bytes.len();
    }

    pub(crate) fn consume(&mut self, len: usize) {
        self.buf.copy_within(len..self.filled, 0);
        self.filled -= len;
    }

    /// Drops body bytes already in the buffer.
    fn discard_buffered(&mut self, body: &mut BodyState) -> Result<(), RequestError> {
        let taken = body.discard(&self.buf[..self.filled])?;
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
            self.filled = 0;
            let deadline = give_up.min(tokio::time::Instant::now() + timeout);
            match timeout_at(deadline, self.stream.read(&mut self.buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return false,
                Ok(Ok(count)) => self.filled = count,
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
        let mut scratch = [0u8; 4096];
        loop {
            let deadline = give_up.min(tokio::time::Instant::now() + timeout);
            match timeout_at(deadline, self.stream.read(&mut scratch)).await {
                Ok(Ok(count)) if count > 0 => continue,
                _ => return,
            }
        }
    }

    /// Writes all of `bytes`, each wait for the socket bounded by `send_timeout`.
    pub async fn write_all_timed(
        &self,
        mut bytes: &[u8],
        send_timeout: Duration,
    ) -> std::io::Result<()> {
        while !bytes.is_empty() {
            match self.stream.try_write(bytes) {
                Ok(written) => bytes = &bytes[written..],
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    let deadline = tokio::time::Instant::now() + send_timeout;
                    match timeout_at(deadline, self.stream.writable()).await {
                        Ok(result) => result?,
                        Err(_) => return Err(std::io::ErrorKind::TimedOut.into()),
                    }
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    pub fn is_http09(request: &Request<'_>) -> bool {
        request.head.version == Version::Http09
    }
}

/// Keeps `Body` used in signatures of this module's callers.
pub type ResponseBody<'a> = Body<'a>;
