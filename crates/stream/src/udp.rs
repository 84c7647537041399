//! UDP: sessions keyed by the client's address on a `listen ... udp` socket.
//!
//! One task per socket and worker reads datagrams and routes each to its client's session
//! (a bounded queue; a full queue drops the datagram, as a full socket buffer would). A
//! new client's datagram starts a session within `worker_connections`, which goes through
//! the phases as a TCP session does; its content is `return` (one datagram back) or a
//! proxy over a connected UDP socket. `proxy_requests` ends a client's binding to its
//! session after that many datagrams; `proxy_responses` ends the session once every
//! datagram sent has had that many answers; `proxy_timeout` ends an idle one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use logging::Level;
use runtime::{ConnectionGauge, ConnectionGuard, PeerAddress};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use upstream::balancer::SelectKey;
use upstream::{PeerAddr, Tried};

use crate::conf::Content;
use crate::session::{Session, status};
use crate::variables::{Protocol, SessionVars, UpstreamTry};
use crate::worker::StreamWorker;

/// Datagrams a session may have waiting, and their bytes; more are dropped, so that a
/// flood holds at most `worker_connections` times this much memory.
const SESSION_QUEUE: usize = 64;
const SESSION_QUEUE_BYTES: usize = 256 * 1024;
/// The largest datagram read.
const DATAGRAM_MAX: usize = 65535;

/// A client's binding to its session.
struct Route {
    sender: mpsc::Sender<Vec<u8>>,
    /// Bytes waiting in the session's queue.
    queued: Rc<std::cell::Cell<usize>>,
    /// Datagrams routed to the session.
    count: u64,
    id: u64,
}

type Routes = Rc<RefCell<HashMap<SocketAddr, Route>>>;

/// Reads the datagrams of stream socket `socket_index` until the worker stops running.
pub async fn serve_socket(
    worker: Rc<StreamWorker>,
    socket_index: usize,
    socket: UdpSocket,
    gauge: Rc<ConnectionGauge>,
) {
    let socket = Rc::new(socket);
    let routes: Routes = Rc::default();
    let mut phase = worker.phase.clone();
    let mut buf = vec![0u8; DATAGRAM_MAX];
    let mut next_id = 0u64;
    loop {
        if worker.stopping() {
            return;
        }
        let received = tokio::select! {
            biased;
            _ = phase.changed() => continue,
            received = socket.recv_from(&mut buf) => received,
        };
        let Ok((len, client)) = received else {
            continue;
        };
        let datagram = buf[..len].to_vec();
        if route_to_session(&worker, socket_index, &routes, client, datagram.clone()) {
            continue;
        }
        let Some(guard) = gauge.try_acquire() else {
            log_process(
                &worker,
                Level::Alert,
                format_args!("{} worker_connections are not enough", gauge.limit()),
            );
            continue;
        };
        next_id += 1;
        let (sender, receiver) = mpsc::channel(SESSION_QUEUE);
        let queued = Rc::new(std::cell::Cell::new(datagram.len()));
        let _ = sender.try_send(datagram);
        let receiver = Queue {
            receiver,
            queued: Rc::clone(&queued),
        };
        let requests_max = requests_max(&worker, socket_index, &socket);
        if requests_max != 1 {
            routes.borrow_mut().insert(
                client,
                Route {
                    sender,
                    queued,
                    count: 1,
                    id: next_id,
                },
            );
        }
        tokio::task::spawn_local(runtime::clock::turn_clocked(run_session(
            Rc::clone(&worker),
            socket_index,
            Rc::clone(&socket),
            client,
            receiver,
            guard,
            Rc::clone(&routes),
            next_id,
        )));
    }
}

/// `proxy_requests` of the default server of the socket's address.
fn requests_max(worker: &StreamWorker, socket_index: usize, socket: &UdpSocket) -> u64 {
    let conf = &worker.conf;
    let entry = conf.sockets[socket_index].address_for(socket.local_addr().ok());
    conf.servers[entry.servers[0]].settings.proxy_requests
}

/// Gives a datagram to the client's session, if it has one that takes it.
fn route_to_session(
    worker: &StreamWorker,
    socket_index: usize,
    routes: &Routes,
    client: SocketAddr,
    datagram: Vec<u8>,
) -> bool {
    let mut routes = routes.borrow_mut();
    let Some(route) = routes.get_mut(&client) else {
        return false;
    };
    let len = datagram.len();
    if route.queued.get() + len > SESSION_QUEUE_BYTES {
        return true;
    }
    match route.sender.try_send(datagram) {
        Ok(()) => route.queued.set(route.queued.get() + len),
        Err(mpsc::error::TrySendError::Full(_)) => return true,
        Err(mpsc::error::TrySendError::Closed(_)) => {
            routes.remove(&client);
            return false;
        }
    }
    route.count += 1;
    let conf = &worker.conf;
    let entry = &conf.sockets[socket_index].addresses[0];
    let max = conf.servers[entry.servers[0]].settings.proxy_requests;
    if max > 0 && route.count >= max {
        routes.remove(&client);
    }
    true
}

/// The receiving end of a session's queue, which gives back the room of what it takes.
struct Queue {
    receiver: mpsc::Receiver<Vec<u8>>,
    queued: Rc<std::cell::Cell<usize>>,
}

impl Queue {
    async fn recv(&mut self) -> Option<Vec<u8>> {
        let datagram = self.receiver.recv().await?;
        self.queued
            .set(self.queued.get().saturating_sub(datagram.len()));
        Some(datagram)
    }
}

fn log_process(worker: &StreamWorker, level: Level, message: std::fmt::Arguments<'_>) {
    if let Some(server) = worker.conf.servers.first() {
        let error_log = &server.settings.error_log;
        if error_log.enabled(level) {
            error_log.write(level, &worker.clock.wall(), None, message, None);
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_session(
    worker: Rc<StreamWorker>,
    socket_index: usize,
    socket: Rc<UdpSocket>,
    client: SocketAddr,
    mut receiver: Queue,
    guard: ConnectionGuard,
    routes: Routes,
    id: u64,
) {
    let conf = std::sync::Arc::clone(&worker.conf);
    let local = socket.local_addr().ok();
    let entry = conf.sockets[socket_index].address_for(local);
    let number = worker.next_connection();
    let vars = SessionVars::new(
        number,
        Protocol::Udp,
        PeerAddress::Inet(client),
        local,
        conf.slots.len(),
    );
    let mut session = Session::new(&worker, entry, vars);
    if session.logs(Level::Info) {
        let shown = local.map_or_else(|| entry.text.clone(), |local| local.to_string());
        session.log_connected(format_args!("udp client {client} connected to {shown}"));
    }
    let status = match phases(&mut session, &socket, client, &mut receiver).await {
        Ok(status) | Err(status) => status,
    };
    session.vars.status = status;
    session.log_phase();
    drop(session);
    let mut routes = routes.borrow_mut();
    if routes.get(&client).is_some_and(|route| route.id == id) {
        routes.remove(&client);
    }
    drop(guard);
}

async fn phases(
    session: &mut Session<'_>,
    socket: &UdpSocket,
    client: SocketAddr,
    receiver: &mut Queue,
) -> Result<u16, u16> {
    session.run_preaccess()?;
    let server = session.server;
    match &server.content {
        Content::Return(template) => {
            let first = receiver.recv().await.unwrap_or_default();
            session.vars.bytes_received += first.len() as u64;
            let value = session.eval().render(template);
            if socket.send_to(&value, client).await.is_ok() {
                session.vars.bytes_sent += value.len() as u64;
            }
            Ok(status::OK)
        }
        Content::Proxy(_) | Content::ProxyVariable(_) => {
            Ok(proxy(session, socket, client, receiver).await)
        }
        Content::None => Err(status::INTERNAL_SERVER_ERROR),
        Content::Pass(_) => {
            session.log(Level::Error, format_args!("pass is not supported for udp"));
            Err(status::INTERNAL_SERVER_ERROR)
        }
    }
}

/// Counts of one UDP proxy session.
#[derive(Default)]
struct Counts {
    /// Datagrams from the client sent to the upstream.
    requests: u64,
    /// Datagrams from the upstream sent to the client.
    responses: u64,
    bytes_to_upstream: u64,
    bytes_from_upstream: u64,
}

async fn connect_udp(
    address: &PeerAddr,
    bind: Option<(SocketAddr, bool)>,
) -> io::Result<UdpSocket> {
    let PeerAddr::Inet(address) = address else {
        return Err(io::Error::from_raw_os_error(libc::EAFNOSUPPORT));
    };
    let local = match bind {
        Some((local, _)) => local,
        None if address.is_ipv4() => SocketAddr::from(([0, 0, 0, 0], 0)),
        None => SocketAddr::from(([0u16; 8], 0)),
    };
    let socket = UdpSocket::bind(local).await?;
    socket.connect(address).await?;
    Ok(socket)
}

/// Proxies the session's datagrams; the status it ends with.
async fn proxy(
    session: &mut Session<'_>,
    socket: &UdpSocket,
    client: SocketAddr,
    receiver: &mut Queue,
) -> u16 {
    let server = session.server;
    let settings = &server.settings;
    let target = match crate::proxy::find_target(session).await {
        Ok(target) => target,
        Err(status) => return status,
    };
    let group = target.group();
    let Ok(bind) = crate::proxy::bind_for(session, &settings.proxy_bind) else {
        return status::BAD_GATEWAY;
    };
    let key = crate::proxy::balancer_key(session, group);
    let select_key = SelectKey {
        client: Some(client.ip()),
        hash: &key,
        sticky: b"",
        session: b"",
    };
    let mut tried = Tried::new(group);
    let mut tries_left = group.peer_count().max(1);
    if settings.proxy_next_upstream_tries > 0 {
        tries_left = tries_left.min(settings.proxy_next_upstream_tries as usize);
    }
    // Datagrams sent to a peer that has not answered yet, for the next peer.
    let mut unanswered: Vec<Vec<u8>> = Vec::new();
    match receiver.recv().await {
        Some(first) => {
            session.vars.bytes_received += first.len() as u64;
            unanswered.push(first);
        }
        None => return status::OK,
    }
    let mut counts = Counts::default();
    // Answers are read into the spare room of a buffer that is never zeroed: zeroing
    // 64 KiB for every session was 8-23% of a UDP session's CPU (`bench/stream.sh udp`).
    let mut buf: Vec<u8> = Vec::with_capacity(DATAGRAM_MAX);
    let mut upload = Pace::new(crate::proxy::rate(session, &settings.proxy_upload_rate));
    let mut download = Pace::new(crate::proxy::rate(session, &settings.proxy_download_rate));
    if let Some(first) = unanswered.first() {
        upload.note(first.len());
    }
    loop {
        session.action = Some("connecting to upstream");
        let now = runtime::clock::monotonic();
        let Some((selected, peer)) = group.select_peer(&mut tried, &select_key, now) else {
            session.upstream_name = Some(std::sync::Arc::clone(&group.name));
            if session.vars.upstream.is_empty() {
                // `$upstream_addr` names the group when no peer could be tried at all.
                session.vars.upstream.push(crate::variables::UpstreamTry {
                    name: std::sync::Arc::clone(&group.name),
                    ..Default::default()
                });
            }
            session.log(Level::Error, format_args!("no live upstreams"));
            return status::BAD_GATEWAY;
        };
        session.upstream_name = Some(std::sync::Arc::clone(&peer.name));
        session.vars.upstream.push(UpstreamTry {
            name: std::sync::Arc::clone(&peer.name),
            ..UpstreamTry::default()
        });
        let started = Instant::now();
        let upstream = match connect_udp(&peer.address, bind).await {
            Ok(upstream) => upstream,
            Err(error) => {
                let text = runtime::sys::linux::error_text(&error);
                session.log(Level::Error, format_args!("connect() failed ({text})"));
                group.release(selected, true, runtime::clock::monotonic());
                tries_left = tries_left.saturating_sub(1);
                if tries_left == 0 || !settings.proxy_next_upstream {
                    return status::BAD_GATEWAY;
                }
                continue;
            }
        };
        session.vars.last_try().connect_time = Some(started.elapsed());
        if session.logs(Level::Info) {
            let local = upstream
                .local_addr()
                .map(|address| address.to_string())
                .unwrap_or_default();
            session.log(
                Level::Info,
                format_args!("udp proxy {local} connected to {}", peer.name),
            );
        }
        session.action = Some("proxying connection");
        counts.requests = 0;
        for datagram in &unanswered {
            if upstream.send(datagram).await.is_ok() {
                counts.requests += 1;
                counts.bytes_to_upstream += datagram.len() as u64;
            }
        }
        let mut received_any = false;
        let mut last_activity = tokio::time::Instant::now();
        let mut client_open = true;
        loop {
            let upload_open = upload.open();
            let download_open = download.open();
            if let Some(responses) = settings.proxy_responses
                && (settings.proxy_requests == 0 || counts.requests >= settings.proxy_requests)
                && counts.responses >= responses.saturating_mul(counts.requests)
            {
                session.log(
                    Level::Info,
                    format_args!(
                        concat!(
                            "udp done, packets from/to client:{}/{}, packets from/to upstream:{}/{}, ",
                            "bytes from/to client:{}/{}, bytes from/to upstream:{}/{}"
                        ),
                        counts.requests,
                        counts.responses,
                        counts.responses,
                        counts.requests,
                        session.vars.bytes_received,
                        session.vars.bytes_sent,
                        counts.bytes_from_upstream,
                        counts.bytes_to_upstream
                    ),
                );
                record_try(session, &counts, started);
                crate::proxy::note_least_time(session, group, selected);
                group.release(selected, false, runtime::clock::monotonic());
                return status::OK;
            }
            let deadline = last_activity + settings.proxy_timeout;
            tokio::select! {
                _ = sleep_until(upload.until), if upload.until.is_some() => upload.until = None,
                _ = sleep_until(download.until), if download.until.is_some() => download.until = None,
                datagram = receiver.recv(), if client_open && upload_open => match datagram {
                    Some(datagram) => {
                        last_activity = tokio::time::Instant::now();
                        session.vars.bytes_received += datagram.len() as u64;
                        upload.note(datagram.len());
                        if upstream.send(&datagram).await.is_ok() {
                            counts.requests += 1;
                            counts.bytes_to_upstream += datagram.len() as u64;
                        }
                        if !received_any {
                            unanswered.push(datagram);
                        }
                    }
                    None => client_open = false,
                },
                answer = async {
                    buf.clear();
                    upstream.recv_buf(&mut buf).await
                }, if download_open => match answer {
                    Ok(len) => {
                        last_activity = tokio::time::Instant::now();
                        download.note(len);
                        if !received_any {
                            received_any = true;
                            unanswered.clear();
                            session.vars.last_try().first_byte_time = Some(started.elapsed());
                        }
                        counts.responses += 1;
                        counts.bytes_from_upstream += len as u64;
                        if socket.send_to(&buf[..len], client).await.is_ok() {
                            session.vars.bytes_sent += len as u64;
                        }
                    }
                    Err(error) => {
                        let text = runtime::sys::linux::error_text(&error);
                        session.log(Level::Error, format_args!("recv() failed ({text})"));
                        let now = runtime::clock::monotonic();
                        if group.release(selected, true, now) {
                            session.log(Level::Warn, format_args!("upstream server temporarily disabled"));
                        }
                        record_try(session, &counts, started);
                        // nginx does not try another peer for datagrams once one was sent.
                        return status::BAD_GATEWAY;
                    }
                },
                _ = tokio::time::sleep_until(deadline) => {
                    record_try(session, &counts, started);
                    crate::proxy::note_least_time(session, group, selected);
                    group.release(selected, false, runtime::clock::monotonic());
                    let expected = settings
                        .proxy_responses
                        .is_some_and(|responses| counts.responses < responses.saturating_mul(counts.requests));
                    if expected {
                        session.log(
                            Level::Error,
                            format_args!("upstream timed out (110: Connection timed out)"),
                        );
                        return status::BAD_GATEWAY;
                    }
                    return status::OK;
                }
            }
        }
    }
}

/// `proxy_upload_rate`/`proxy_download_rate` for datagrams, nginx's arithmetic: a
/// datagram is never split; after one, reading in that direction waits as long as its
/// bytes take at the rate, and while more than a second's worth has passed.
struct Pace {
    rate: u64,
    began: Instant,
    total: u64,
    until: Option<tokio::time::Instant>,
}

impl Pace {
    fn new(rate: u64) -> Pace {
        Pace {
            rate,
            began: Instant::now(),
            total: 0,
            until: None,
        }
    }

    /// Whether the next datagram may be read now; sets the wait otherwise.
    fn open(&mut self) -> bool {
        if self.rate == 0 || self.until.is_some() {
            return self.until.is_none();
        }
        let allowed = i128::from(self.rate) * i128::from(self.began.elapsed().as_secs() + 1)
            - i128::from(self.total);
        if allowed > 0 {
            return true;
        }
        let wait = u64::try_from(-allowed).unwrap_or(u64::MAX) * 1000 / self.rate + 1;
        self.until = Some(tokio::time::Instant::now() + Duration::from_millis(wait));
        false
    }

    /// Counts a datagram of `len` bytes.
    fn note(&mut self, len: usize) {
        self.total += len as u64;
        if let Some(wait) = (len as u64 * 1000).checked_div(self.rate)
            && wait > 0
        {
            self.until = Some(tokio::time::Instant::now() + Duration::from_millis(wait));
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn record_try(session: &mut Session<'_>, counts: &Counts, started: Instant) {
    let attempt = session.vars.last_try();
    attempt.bytes_sent = counts.bytes_to_upstream;
    attempt.bytes_received = counts.bytes_from_upstream;
    attempt.session_time = Some(started.elapsed().max(Duration::ZERO));
}
