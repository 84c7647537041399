//! One TCP session through nginx's stream phases, in order: post-accept (the PROXY
//! protocol header, then realip), preaccess (`set`, `limit_conn`), access (`allow`,
//! `deny`), preread (`ssl_preread`), content (`proxy_pass`, `return`, `pass`), log.

use std::os::unix::ffi::OsStrExt as _;
use std::rc::Rc;
use std::sync::Arc;

use logging::Level;
use runtime::{ConnectionGuard, PeerAddress, Stream};
use shared::access::Action;
use shared::proxy_protocol::{MAX_HEADER, Parsed};

use crate::conf::{AddressConf, Content, ServerConf, StreamConf};
use crate::log::SessionContext;
use crate::variables::{Eval, Protocol, SessionVars};
use crate::worker::StreamWorker;

/// nginx's stream status codes.
pub mod status {
    pub const OK: u16 = 200;
    pub const BAD_REQUEST: u16 = 400;
    pub const FORBIDDEN: u16 = 403;
    pub const INTERNAL_SERVER_ERROR: u16 = 500;
    pub const BAD_GATEWAY: u16 = 502;
    pub const SERVICE_UNAVAILABLE: u16 = 503;
}

/// How many times a connection may be handed on by `pass` (a loop of `pass` directives
/// ends there).
const PASS_DEPTH_MAX: u32 = 8;

/// A session's state shared by its phases.
pub struct Session<'w> {
    pub worker: &'w StreamWorker,
    pub conf: &'w StreamConf,
    pub entry: &'w AddressConf,
    pub server: &'w ServerConf,
    pub vars: SessionVars,
    /// What the session is doing, for error-log lines.
    pub action: Option<&'static str>,
    /// The upstream being talked to, for error-log lines.
    pub upstream_name: Option<std::sync::Arc<str>>,
    /// Bytes read from the client ahead of the content phase (the PROXY header's rest,
    /// `ssl_preread`), which the content phase sends on first.
    pub preread: Vec<u8>,
    /// Connections counted by `limit_conn`, given back when the session ends.
    limits: Vec<(usize, Vec<u8>)>,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        for (zone, key) in self.limits.drain(..) {
            let Some(zone) = self.conf.limit_zones.get(zone) else {
                continue;
            };
            let mut counts = zone
                .counts
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            if let Some(count) = counts.get_mut(&key) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    counts.remove(&key);
                }
            }
        }
    }
}

impl<'w> Session<'w> {
    pub fn new(worker: &'w StreamWorker, entry: &'w AddressConf, vars: SessionVars) -> Session<'w> {
        let conf = &*worker.conf;
        let mut vars = vars;
        vars.server = entry.servers[0];
        let server = &conf.servers[entry.servers[0]];
        Session {
            worker,
            conf,
            entry,
            server,
            vars,
            action: None,
            upstream_name: None,
            preread: Vec::new(),
            limits: Vec::new(),
        }
    }

    /// Makes server `index` of the configuration serve the rest of the session (the
    /// name a TLS hello gives chose it).
    pub fn switch_server(&mut self, index: usize) {
        self.server = &self.conf.servers[index];
        self.vars.server = index;
    }

    pub fn eval(&mut self) -> Eval<'_> {
        Eval::new(
            self.conf,
            &mut self.vars,
            self.worker.clock.wall(),
            &self.worker.hostname,
        )
    }

    /// Writes an error-log line about this session to its server's error log.
    pub fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
        let error_log = &self.server.settings.error_log;
        if !error_log.enabled(level) {
            return;
        }
        // Made only for a line that is written: most sessions write none.
        let client = match self.vars.remote {
            PeerAddress::Inet(address) => address.ip().to_string(),
            PeerAddress::Unix => "unix:".to_owned(),
        };
        let context = SessionContext {
            action: self.action,
            protocol: self.vars.protocol,
            client: client.as_bytes(),
            server: &self.entry.text,
            upstream: self.upstream_name.as_deref(),
        };
        error_log.write(
            level,
            &self.worker.clock.wall(),
            Some(self.vars.connection),
            message,
            Some(&context),
        );
    }

    /// Whether the server's error log takes lines at `level` (check before formatting).
    pub fn logs(&self, level: Level) -> bool {
        self.server.settings.error_log.enabled(level)
    }

    /// The `client ... connected to ...` line, which nginx writes before the session's
    /// context exists.
    pub fn log_connected(&self, message: std::fmt::Arguments<'_>) {
        let error_log = &self.server.settings.error_log;
        if error_log.enabled(Level::Info) {
            error_log.write(
                Level::Info,
                &self.worker.clock.wall(),
                Some(self.vars.connection),
                message,
                None,
            );
        }
    }

    /// The log phase: every `access_log` of the server whose condition holds.
    pub fn log_phase(&mut self) {
        let server = self.server;
        for log in &server.settings.access_log {
            let conf = self.conf;
            let mut eval = self.eval();
            if let Some(condition) = &log.condition {
                let value = eval.render(condition);
                if value.is_empty() || value == b"0" {
                    continue;
                }
            }
            let line = crate::log::render_line(&conf.log_formats[log.format], &mut eval);
            match &conf.access_logs[log.target].path {
                crate::conf::LogPath::File(file) if file.as_syslog().is_some() => {
                    file.append_line(&line, &self.worker.clock.wall());
                }
                crate::conf::LogPath::File(_) => self.worker.write_access_log(log.target, &line),
                crate::conf::LogPath::Template(template) => {
                    let path = eval.render(template);
                    let path = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&path));
                    let error_log = Arc::clone(&server.settings.error_log);
                    self.worker.write_path_line(path, line, error_log);
                }
            }
        }
    }

    /// The post-accept, preaccess and access phases' modules that need no reading:
    /// realip, `set`, `limit_conn`, `allow`/`deny`.
    pub fn run_preaccess(&mut self) -> Result<(), u16> {
        self.realip();
        self.run_sets();
        self.limit_conn()?;
        self.access()
    }

    /// `set`: the server's assignments, in order.
    fn run_sets(&mut self) {
        let server = self.server;
        for (slot, template) in &server.sets {
            let value = self.eval().render(template);
            if let Some(stored) = self.vars.slots.get_mut(*slot) {
                *stored = Some(value);
            }
        }
    }

    /// `limit_conn`: counts this session in each zone; a zone at its limit ends the
    /// session with 503 (unless `limit_conn_dry_run`).
    fn limit_conn(&mut self) -> Result<(), u16> {
        let server = self.server;
        for limit in &server.settings.limit_conn {
            let Some(zone) = self.conf.limit_zones.get(limit.zone) else {
                continue;
            };
            let key = self.eval().render(&zone.key);
            if key.is_empty() {
                continue;
            }
            if key.len() > 255 {
                self.log(
                    Level::Error,
                    format_args!(
                        "the value of the \"{}\" key is more than 255 bytes: \"{}\"",
                        zone.name,
                        key.escape_ascii()
                    ),
                );
                continue;
            }
            let mut counts = zone
                .counts
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            let count = counts.entry(key.clone()).or_insert(0);
            if *count >= limit.number {
                if counts.get(&key) == Some(&0) {
                    counts.remove(&key);
                }
                drop(counts);
                let dry_run = server.settings.limit_conn_dry_run;
                self.log(
                    server.settings.limit_conn_log_level,
                    format_args!(
                        "limiting connections{} by zone \"{}\"",
                        if dry_run { ", dry run," } else { "" },
                        zone.name
                    ),
                );
                if dry_run {
                    self.vars.limit_conn_status = Some("REJECTED_DRY_RUN");
                    continue;
                }
                self.vars.limit_conn_status = Some("REJECTED");
                return Err(status::SERVICE_UNAVAILABLE);
            }
            *count += 1;
            drop(counts);
            self.limits.push((limit.zone, key));
            if self.vars.limit_conn_status.is_none() {
                self.vars.limit_conn_status = Some("PASSED");
            }
        }
        Ok(())
    }

    /// `allow`/`deny`.
    fn access(&mut self) -> Result<(), u16> {
        if self.server.settings.access.check(&self.vars.remote) == Some(Action::Deny) {
            self.log(Level::Error, format_args!("access forbidden by rule"));
            return Err(status::FORBIDDEN);
        }
        Ok(())
    }

    /// realip: with the client's own address trusted, the PROXY header's source is the
    /// client.
    fn realip(&mut self) {
        let trusted = &self.server.settings.set_real_ip_from;
        if trusted.is_empty() || !trusted.contains(&self.vars.socket_remote) {
            return;
        }
        let Some(header) = &self.vars.proxy_header else {
            return;
        };
        let Some(ip) = std::str::from_utf8(&header.source_addr)
            .ok()
            .and_then(|text| text.parse::<std::net::IpAddr>().ok())
        else {
            return;
        };
        let address = std::net::SocketAddr::new(ip, header.source_port);
        self.vars.remote = PeerAddress::Inet(address);
    }
}

/// Serves one accepted TCP connection on socket `socket_index`.
pub async fn serve(
    worker: Rc<StreamWorker>,
    socket_index: usize,
    stream: Stream,
    peer: PeerAddress,
    guard: ConnectionGuard,
) {
    let conf = Arc::clone(&worker.conf);
    let Some(socket) = conf.sockets.get(socket_index) else {
        return;
    };
    // A socket on one address says where the client connected without a system call.
    let local = match &socket.address {
        runtime::ListenAddress::Inet(address) if !address.ip().is_unspecified() => Some(*address),
        _ => stream.local_address(),
    };
    let entry = socket.address_for(local);
    let number = worker.next_connection();
    run(&worker, entry, stream, peer, local, number, guard, 0).await;
}

/// The phases of one connection on `entry`; `guard` is its `worker_connections` slot,
/// held until it ends or is passed on.
#[allow(clippy::too_many_arguments)]
fn run<'w>(
    worker: &'w StreamWorker,
    entry: &'w AddressConf,
    stream: Stream,
    peer: PeerAddress,
    local: Option<std::net::SocketAddr>,
    number: u64,
    guard: ConnectionGuard,
    depth: u32,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'w>> {
    Box::pin(async move {
        let slots = worker.conf.slots.len();
        let vars = SessionVars::new(number, Protocol::Tcp, peer, local, slots);
        let mut session = Session::new(worker, entry, vars);
        if depth == 0 && session.logs(Level::Info) {
            let server_text = match local {
                Some(local) => local.to_string(),
                None => entry.text.clone(),
            };
            session.log_connected(format_args!(
                "client {} connected to {server_text}",
                peer_text(&peer)
            ));
        }
        if session.logs(Level::Debug) {
            session.log(Level::Debug, format_args!("stream session started"));
        }
        if let Err(status) = first_phases(&mut session, &stream).await {
            return finish(session, status);
        }
        let stream = if session.entry.ssl {
            match crate::ssl::handshake(&mut session, stream).await {
                Ok(stream) => stream,
                Err(status) => return finish(session, status),
            }
        } else {
            stream
        };
        let status = match content_phases(&mut session, &stream).await {
            Ok(Next::Done(status)) => status,
            Ok(Next::Pass(target)) => {
                return pass(session, stream, target, guard, depth).await;
            }
            Err(status) => status,
        };
        if stream.is_tls() {
            // A TLS session ends with its `close_notify`, as nginx's `SSL_shutdown`: a
            // client that sees none may refuse to resume the session.
            let _ = stream.shutdown_write();
        }
        finish(session, status);
    })
}

/// The log phase, with the status the session ended with.
fn finish(mut session: Session<'_>, status: u16) {
    session.vars.status = status;
    session.log_phase();
}

/// `127.0.0.1:5555` or `unix:`, as the connect line shows the client.
fn peer_text(peer: &PeerAddress) -> String {
    match peer {
        PeerAddress::Inet(address) => address.to_string(),
        PeerAddress::Unix => "unix:".to_owned(),
    }
}

enum Next<'w> {
    Done(u16),
    Pass(PassTarget<'w>),
}

/// Where `pass` hands a connection: another stream address, or any other listening
/// socket of the worker (the http block's), through [`StreamWorker::pass_elsewhere`].
enum PassTarget<'w> {
    Stream(&'w AddressConf),
    Other(runtime::ListenAddress),
}

/// Post-accept, preaccess and access.
async fn first_phases(session: &mut Session<'_>, stream: &Stream) -> Result<(), u16> {
    if session.entry.proxy_protocol && session.vars.proxy_header.is_none() {
        read_proxy_protocol(session, stream).await?;
    }
    session.run_preaccess()
}

/// Preread and content.
async fn content_phases<'w>(session: &mut Session<'w>, stream: &Stream) -> Result<Next<'w>, u16> {
    if session.server.settings.ssl_preread {
        crate::preread::run(session, stream).await?;
    }
    session.action = None;
    let server = session.server;
    match &server.content {
        Content::Return(template) => {
            let value = session.eval().render(template);
            Ok(Next::Done(return_value(session, stream, &value).await))
        }
        Content::Proxy(_) | Content::ProxyVariable(_) => {
            Ok(Next::Done(crate::proxy::run(session, stream).await))
        }
        Content::None => Err(status::INTERNAL_SERVER_ERROR),
        Content::Pass(template) => {
            let value = session.eval().render(template);
            if !session.preread.is_empty() {
                session.log(
                    Level::Error,
                    format_args!("cannot pass connection with preread data"),
                );
                return Err(status::INTERNAL_SERVER_ERROR);
            }
            let Some(address) = pass_address(&value) else {
                session.log(
                    Level::Error,
                    format_args!("invalid pass address \"{}\"", value.escape_ascii()),
                );
                return Err(status::INTERNAL_SERVER_ERROR);
            };
            match find_pass_target(session.conf, &address) {
                Some(target) => Ok(Next::Pass(PassTarget::Stream(target))),
                None => Ok(Next::Pass(PassTarget::Other(address))),
            }
        }
    }
}

/// `return`: the value, then the connection closes.
async fn return_value(session: &mut Session<'_>, stream: &Stream, value: &[u8]) -> u16 {
    let timeout = std::time::Duration::from_secs(60);
    match stream.write_all_timed(value, timeout).await {
        Ok(()) => {
            session.vars.bytes_sent = value.len() as u64;
            let _ = stream.flush().await;
            status::OK
        }
        Err(_) => status::OK,
    }
}

/// The address a `pass` names: `ADDRESS:PORT`, `[IPV6]:PORT` or `unix:PATH`.
pub fn pass_address(text: &[u8]) -> Option<runtime::ListenAddress> {
    let text = std::str::from_utf8(text).ok()?;
    if let Some(path) = text.strip_prefix("unix:") {
        return Some(runtime::ListenAddress::Unix(path.into()));
    }
    text.parse::<std::net::SocketAddr>()
        .ok()
        .map(runtime::ListenAddress::Inet)
}

fn find_pass_target<'c>(
    conf: &'c StreamConf,
    address: &runtime::ListenAddress,
) -> Option<&'c AddressConf> {
    let address = address.clone();
    let mut wildcard = None;
    for socket in &conf.sockets {
        if socket.options.datagram {
            continue;
        }
        for entry in &socket.addresses {
            if entry.address == address {
                return Some(entry);
            }
            if let (runtime::ListenAddress::Inet(listen), runtime::ListenAddress::Inet(wanted)) =
                (&entry.address, &address)
                && listen.ip().is_unspecified()
                && listen.port() == wanted.port()
            {
                wildcard = Some(entry);
            }
        }
    }
    wildcard
}

/// `pass`: the connection goes through the phases again as if it had arrived at the
/// target (a stream address), or to the http block's socket there.
async fn pass<'w>(
    session: Session<'w>,
    stream: Stream,
    target: PassTarget<'w>,
    guard: ConnectionGuard,
    depth: u32,
) {
    let worker = session.worker;
    let peer = session.vars.socket_remote;
    let number = session.vars.connection;
    if depth >= PASS_DEPTH_MAX {
        session.log(Level::Error, format_args!("pass loop detected"));
        return finish(session, status::INTERNAL_SERVER_ERROR);
    }
    match target {
        PassTarget::Stream(entry) => {
            let local = match &entry.address {
                runtime::ListenAddress::Inet(address) => Some(*address),
                runtime::ListenAddress::Unix(_) => None,
            };
            drop(session);
            run(worker, entry, stream, peer, local, number, guard, depth + 1).await;
        }
        PassTarget::Other(address) => {
            if worker
                .pass_elsewhere(&address, stream, peer, guard)
                .is_err()
            {
                session.log(
                    Level::Error,
                    format_args!("no listening socket for pass to {address}"),
                );
                finish(session, status::INTERNAL_SERVER_ERROR);
            }
        }
    }
}

/// Reads the PROXY protocol header within `proxy_protocol_timeout`; what follows it
/// stays in the session's preread bytes.
async fn read_proxy_protocol(session: &mut Session<'_>, stream: &Stream) -> Result<(), u16> {
    session.action = Some("reading PROXY protocol");
    let timeout = session.server.settings.proxy_protocol_timeout;
    // Peeked until whole, then exactly its bytes read: what follows (a TLS hello) stays
    // in the socket.
    let reading = async {
        let mut buf = vec![0u8; MAX_HEADER];
        let mut closed = false;
        loop {
            let peeked = match stream.try_peek(&mut buf) {
                Ok(0) => return Err(None),
                Ok(peeked) => peeked,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    closed = stream.readable_or_closed().await.map_err(|_| None)?;
                    continue;
                }
                Err(_) => return Err(None),
            };
            // A version 1 line is judged on the bytes that arrived, as nginx reads it in
            // one go; a version 2 header says its length and is awaited whole.
            let complete = closed || (buf.starts_with(b"PROXY") && peeked >= 8);
            match shared::proxy_protocol::parse(&buf[..peeked], complete) {
                Parsed::Done { len, header } => {
                    let mut done = 0;
                    while done < len {
                        match stream.read(&mut buf[done..len]).await {
                            Ok(0) | Err(_) => return Err(None),
                            Ok(read) => done += read,
                        }
                    }
                    return Ok((header, Vec::new()));
                }
                Parsed::Invalid(broken) => return Err(Some(broken.to_string())),
                Parsed::Incomplete if closed => return Err(None),
                Parsed::Incomplete => {
                    stream.clear_readable();
                    closed = stream.readable_or_closed().await.map_err(|_| None)?;
                }
            }
        }
    };
    match tokio::time::timeout(timeout, reading).await {
        Ok(Ok((header, rest))) => {
            session.vars.bytes_received += rest.len() as u64;
            session.preread = rest;
            session.vars.proxy_header = Some(header.unwrap_or_default());
            if let Some(header) = &session.vars.proxy_header
                && !header.source_addr.is_empty()
            {
                session.log(
                    Level::Debug,
                    format_args!(
                        "PROXY protocol address: {} {}",
                        header.source_addr.escape_ascii(),
                        header.source_port
                    ),
                );
            }
            session.action = None;
            Ok(())
        }
        Ok(Err(Some(message))) => {
            session.log(Level::Error, format_args!("{message}"));
            Err(status::BAD_REQUEST)
        }
        Ok(Err(None)) => {
            session.log(Level::Info, format_args!("client closed connection"));
            Err(status::BAD_REQUEST)
        }
        Err(_) => {
            session.log(
                Level::Info,
                format_args!("client timed out (110: Connection timed out)"),
            );
            Err(status::OK)
        }
    }
}
