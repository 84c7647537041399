//! One `listen ... quic` socket on a worker: its QUIC endpoint, run by
//! [`quic::driver::drive`], the connections it has seen, and a task per request.
//!
//! A request's phases, handlers and send path take a client socket to watch (an upstream
//! exchange notices a client going away through it). A QUIC connection has none, so each
//! one is given a connected pair of Unix sockets that carries no byte: the request side
//! reads nothing from it, and the other end is closed when the QUIC connection closes,
//! which is what those waits see as the client going away.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use quic::driver::Shared;
use quic::router::{Membership, Router};
use quic::{ConnectionId, Endpoint, Event};
use runtime::accept::ConnectionGuard;
use runtime::{PeerAddress, Phase};
use tokio::sync::Notify;

use crate::assembly::stream_body::Inbox;
use crate::assembly::v3::stream::{Opened, run_request};
use crate::kernel::conf::{AddressConf, HttpConf};
use crate::kernel::request::ConnectionInfo;
use crate::kernel::worker::{Generation, HttpWorker};

/// Body bytes a request stream's inbox holds before the stream is no longer read (QUIC's
/// flow control then holds the client back, as HTTP/2's window does).
pub(crate) const INBOX_MAX: usize = 64 * 1024;

/// The state of one QUIC socket that its requests share.
pub(crate) struct SocketState {
    pub(crate) driver: Shared,
    pub(crate) socket_index: usize,
    pub(crate) connections: RefCell<HashMap<ConnectionId, Rc<Connection>>>,
    /// Request bodies arriving, by connection and stream, until their request ends.
    pub(crate) inboxes: RefCell<HashMap<(ConnectionId, u64), Inbox>>,
    /// The running requests, to stop one whose stream the client reset.
    requests: RefCell<HashMap<(ConnectionId, u64), Rc<Notify>>>,
}

/// A QUIC connection as its requests see it.
pub(crate) struct Connection {
    pub(crate) id: ConnectionId,
    pub(crate) info: ConnectionInfo,
    /// The request side of the socket pair (see the module's text).
    pub(crate) presence: runtime::Stream,
    /// The other end, closed when the QUIC connection closes.
    peer_end: RefCell<Option<tokio::net::UnixStream>>,
    /// Requests started (`$connection_requests`).
    pub(crate) requests: Cell<u64>,
}

/// The address configuration of a QUIC socket: its wildcard (or only) address. Datagrams
/// do not say which local address they were sent to, so the specific addresses behind a
/// wildcard `quic` socket are served as the wildcard's.
pub(crate) fn address_conf(conf: &HttpConf, socket_index: usize) -> Option<&AddressConf> {
    conf.sockets.get(socket_index)?.addresses.last()
}

/// Chooses the TLS of the server an SNI name selects on a QUIC address, as over TCP.
#[derive(Debug)]
struct ChooseBySni {
    generation: Arc<Generation>,
    socket_index: usize,
}

impl tls::ChooseServer for ChooseBySni {
    fn choose(&self, server_name: Option<&str>) -> Option<Arc<tls::ServerTls>> {
        let conf = &self.generation.http;
        let address = address_conf(conf, self.socket_index)?;
        let chosen = crate::kernel::ssl::handshake::server_for(conf, address, server_name);
        // `ssl_reject_handshake on`: no certificate, so the handshake fails.
        if conf.server(chosen).ssl.reject_handshake {
            return None;
        }
        conf.server(chosen)
            .tls
            .clone()
            .or_else(|| conf.server(address.default_server).tls.clone())
    }
}

/// The endpoint a QUIC socket is served with, from its default server's settings.
fn endpoint(
    worker: &HttpWorker,
    socket_index: usize,
    route_tag: Option<u8>,
) -> Result<Endpoint, String> {
    let conf = worker.conf();
    let address = address_conf(conf, socket_index).ok_or("no such socket")?;
    let server = conf.server(address.default_server);
    let choose = Arc::new(ChooseBySni {
        generation: Arc::clone(&worker.generation),
        socket_index,
    });
    let sessions = server.tls.as_deref();
    let tls =
        tls::quic_server_config(choose, server.v3.alpn(), sessions).map_err(|error| error.0)?;
    let (number, size) = server.core.large_client_header_buffers;
    let location = &conf.location(server.location).settings;
    let config = quic::Config {
        http3: server.v3.codec_config(number.saturating_mul(size)),
        retry: server.v3.retry,
        idle_timeout: location.core.keepalive_timeout.timeout,
        route_tag,
        ..quic::Config::default()
    };
    let host_key = server.v3.host_key.as_deref();
    Endpoint::with_host_key(tls, config, host_key).map_err(|error| error.0)
}

/// Serves a `listen ... quic` socket on this worker until the worker stops; on a
/// graceful stop (a reload, `quit`) the endpoint sends GOAWAY, refuses new connections
/// and runs until its connections have closed. `guard`, a `worker_connections` slot
/// taken when the worker started, is held until then, so that the worker, which waits
/// for its connections to end, waits for this socket's too.
pub async fn serve_socket(
    worker: Rc<HttpWorker>,
    socket_index: usize,
    socket: tokio::net::UdpSocket,
    guard: Option<ConnectionGuard>,
) {
    // The socket's router, shared with the other generations' endpoints on this socket
    // (its copies in their workers are one socket, one inode).
    let mut membership = rustix::fs::fstat(&socket)
        .ok()
        .and_then(|stat| Router::for_socket(stat.st_ino).join());
    let route_tag = membership.as_ref().map(Membership::tag);
    let endpoint = match endpoint(&worker, socket_index, route_tag) {
        Ok(endpoint) => endpoint,
        Err(message) => {
            let error_log = &worker.generation.error_log;
            error_log.write(
                logging::Level::Emerg,
                &worker.clock.wall(),
                None,
                format_args!("QUIC endpoint failed ({message})"),
                None,
            );
            return;
        }
    };
    let state = Rc::new(SocketState {
        driver: Shared::new(endpoint),
        socket_index,
        connections: RefCell::default(),
        inboxes: RefCell::default(),
        requests: RefCell::default(),
    });
    let local = socket.local_addr().ok();
    let mut phase = worker.phase.clone();
    let running = async {
        while *phase.borrow_and_update() == Phase::Running {
            if phase.changed().await.is_err() {
                return;
            }
        }
    };
    let on_event = |_: &Shared, event: Event| handle_event(&worker, &state, local, event);
    let routed = membership.as_mut();
    quic::driver::drive_routed(&socket, &state.driver, routed, on_event, running).await;
    if *worker.phase.borrow() == Phase::Stopping {
        return;
    }
    // A graceful stop: GOAWAY, and the socket is served until its connections are gone;
    // new clients go to the next generation's endpoint on this socket.
    if let Some(membership) = &membership {
        membership.stop_accepting();
    }
    state.driver.endpoint().shutdown(Instant::now());
    state.driver.wake();
    let shut_down = async {
        loop {
            let progress = state.driver.progress();
            if state.driver.endpoint().is_shut_down() {
                return;
            }
            progress.await;
        }
    };
    let on_event = |_: &Shared, event: Event| handle_event(&worker, &state, local, event);
    let routed = membership.as_mut();
    quic::driver::drive_routed(&socket, &state.driver, routed, on_event, shut_down).await;
    drop(guard);
}

/// Turns what a client did into requests and body bytes.
fn handle_event(
    worker: &Rc<HttpWorker>,
    state: &Rc<SocketState>,
    local: Option<std::net::SocketAddr>,
    event: Event,
) {
    let (connection, event) = match event {
        Event::Closed { connection } => {
            closed(state, connection);
            return;
        }
        Event::Http3 { connection, event } => (connection, event),
    };
    match event {
        http3::Event::Headers {
            stream_id,
            fields,
            trailers: true,
            ..
        } => {
            // Trailers are not passed on, but malformed ones end the request (RFC 9114
            // §4.1.2).
            if http2::request::check_trailers(&fields).is_err() {
                abort(state, connection, stream_id, http3::Code::MessageError);
            }
        }
        http3::Event::Headers {
            stream_id,
            fields,
            section_len,
            ..
        } => {
            let Some(conn) = connection_of(worker, state, connection, local) else {
                return;
            };
            start_request(worker, state, &conn, stream_id, fields, section_len);
        }
        http3::Event::Data { stream_id, data } => {
            let mut inboxes = state.inboxes.borrow_mut();
            if let Some(inbox) = inboxes.get_mut(&(connection, stream_id)) {
                inbox.push(&data, false);
                if inbox.data.len() >= INBOX_MAX {
                    // The body reader is behind: the stream waits in QUIC until it has
                    // taken these bytes (`body.rs`).
                    state.driver.endpoint().pause_reading(connection, stream_id);
                }
            }
        }
        http3::Event::Finished { stream_id } => {
            if let Some(inbox) = state.inboxes.borrow_mut().get_mut(&(connection, stream_id)) {
                inbox.end();
            }
        }
        http3::Event::Aborted { stream_id, .. } => {
            state.inboxes.borrow_mut().remove(&(connection, stream_id));
            if let Some(reset) = state.requests.borrow_mut().remove(&(connection, stream_id)) {
                reset.notify_one();
            }
        }
        http3::Event::GoAway { .. } => {}
    }
}

/// The connection's state, made at its first request.
fn connection_of(
    worker: &HttpWorker,
    state: &SocketState,
    id: ConnectionId,
    local: Option<std::net::SocketAddr>,
) -> Option<Rc<Connection>> {
    if let Some(conn) = state.connections.borrow().get(&id) {
        return Some(Rc::clone(conn));
    }
    let (remote, handshake) = {
        let endpoint = state.driver.endpoint();
        (endpoint.request_address(id)?, endpoint.handshake(id))
    };
    let (ours, theirs) = tokio::net::UnixStream::pair().ok()?;
    let peer = PeerAddress::Inet(remote);
    let info = ConnectionInfo {
        id: worker.next_connection_id(),
        peer: Cell::new(peer),
        socket_peer: peer,
        proxy_protocol: None,
        local,
        accepted: Instant::now(),
        requests: 0,
        tls: Some(Rc::new(handshake.unwrap_or_else(|| {
            tls::HandshakeInfo::for_quic(None, None, None)
        }))),
        debug: worker.generation.debug_connection(&peer),
    };
    worker.stats.accepted.add(1);
    worker.stats.handled.add(1);
    let conn = Rc::new(Connection {
        id,
        info,
        presence: runtime::Stream::Unix(ours),
        peer_end: RefCell::new(Some(theirs)),
        requests: Cell::new(0),
    });
    state.connections.borrow_mut().insert(id, Rc::clone(&conn));
    Some(conn)
}

/// A request head arrived: its request runs in a task of its own.
fn start_request(
    worker: &Rc<HttpWorker>,
    state: &Rc<SocketState>,
    conn: &Rc<Connection>,
    stream_id: u64,
    fields: http3::FieldList,
    section_len: usize,
) {
    let conf = worker.conf();
    let Some(address) = address_conf(conf, state.socket_index) else {
        return;
    };
    let core = &conf.server(address.default_server).core;
    let policy = http2::request::FieldPolicy {
        underscores: core.underscores_in_headers,
        ignore_invalid: core.ignore_invalid_headers,
    };
    let connect = fields
        .iter()
        .any(|field| field.name == b":method" && field.value == b"CONNECT");
    let head = if connect {
        // nginx serves no CONNECT: 405, whatever the other fields.
        Err(405)
    } else {
        match http2::request::parse(fields, policy) {
            Ok(head) => Ok(head),
            Err(malformed) => {
                crate::assembly::stream_head::log_malformed(
                    worker,
                    &conn.info,
                    address,
                    malformed.message(),
                );
                if malformed.resets_stream() {
                    abort(state, conn.id, stream_id, http3::Code::MessageError);
                    return;
                }
                Err(400)
            }
        }
    };
    let declared = head.as_ref().ok().and_then(|head| {
        head.fields()
            .find(|field| field.name == b"content-length")
            .and_then(|field| std::str::from_utf8(field.value).ok()?.parse().ok())
    });
    let key = (conn.id, stream_id);
    state.inboxes.borrow_mut().insert(key, Inbox::new(declared));
    conn.requests.set(conn.requests.get() + 1);
    // The request that reaches `keepalive_requests`, or comes after `keepalive_time`, is
    // the connection's last: GOAWAY names the next stream, as nginx's does.
    let settings = &conf
        .location(conf.server(address.default_server).location)
        .settings;
    let old = conn.info.accepted.elapsed() > settings.core.keepalive_time;
    if conn.requests.get() >= settings.core.keepalive_requests || old {
        state.driver.endpoint().send_goaway(conn.id);
        state.driver.wake();
    }
    let reset = Rc::new(Notify::new());
    state.requests.borrow_mut().insert(key, Rc::clone(&reset));
    let opened = Opened {
        stream_id,
        requests: conn.requests.get(),
        head,
        section_len,
        reset,
    };
    tokio::task::spawn_local(runtime::clock::turn_clocked(run_request(
        Rc::clone(worker),
        Rc::clone(state),
        Rc::clone(conn),
        opened,
    )));
}

/// Resets a stream both ways and drops its body.
pub(crate) fn abort(
    state: &SocketState,
    connection: ConnectionId,
    stream_id: u64,
    code: http3::Code,
) {
    state.inboxes.borrow_mut().remove(&(connection, stream_id));
    state.driver.endpoint().abort(connection, stream_id, code);
    state.driver.wake();
}

/// The request of `stream_id` has ended.
pub(crate) fn request_ended(state: &SocketState, connection: ConnectionId, stream_id: u64) {
    state.inboxes.borrow_mut().remove(&(connection, stream_id));
    state.requests.borrow_mut().remove(&(connection, stream_id));
}

/// A connection is gone: its requests see their client go away.
fn closed(state: &SocketState, connection: ConnectionId) {
    if let Some(conn) = state.connections.borrow_mut().remove(&connection) {
        conn.peer_end.borrow_mut().take();
    }
    state
        .inboxes
        .borrow_mut()
        .retain(|(owner, _), _| *owner != connection);
}
