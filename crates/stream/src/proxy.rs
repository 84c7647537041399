//! `proxy_pass` for TCP: a peer chosen by the group's balancer, connected within
//! `proxy_connect_timeout` (the next peer on failure, as `proxy_next_upstream*` allow),
//! then bytes relayed both ways until either side is done, under `proxy_timeout`, the
//! rate limits and `proxy_half_close`.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use logging::Level;
use runtime::{PeerAddress, Stream};
use upstream::balancer::SelectKey;
use upstream::server_line::TimeMeasure;
use upstream::{Balancer, Group, Peer, PeerAddr, Tried};

use crate::conf::{Content, StreamConf, settings::Bind};
use crate::session::{Session, status};
use crate::variables::StreamTemplate;

/// The group a session proxies to: one of the configuration's, or one made for the
/// address a `proxy_pass` with variables gave.
pub enum Target<'c> {
    Conf(&'c Group<StreamTemplate>),
    Owned(Box<Group<StreamTemplate>>),
}

impl Target<'_> {
    pub fn group(&self) -> &Group<StreamTemplate> {
        match self {
            Target::Conf(group) => group,
            Target::Owned(group) => group,
        }
    }
}

/// A one-peer group for an address written out in a `proxy_pass` value.
fn address_group(text: &[u8]) -> Option<Group<StreamTemplate>> {
    let text = std::str::from_utf8(text).ok()?;
    let (address, port) = if let Some(path) = text.strip_prefix("unix:") {
        (PeerAddr::Unix(path.into()), None)
    } else {
        let address: SocketAddr = text.parse().ok()?;
        (PeerAddr::Inet(address), Some(address.port()))
    };
    let peer = Peer {
        name: address.to_string().into(),
        address,
        server: text.into(),
        weight: 1,
        max_fails: 1,
        fail_timeout: Duration::from_secs(10),
        max_conns: 0,
        down: false,
        route: None,
        drain: false,
    };
    Some(Group::new(
        text.into(),
        vec![peer],
        Vec::new(),
        Balancer::RoundRobin,
        None,
        true,
        port,
    ))
}

fn one_address_group(name: &str, addresses: &[IpAddr], port: u16) -> Group<StreamTemplate> {
    let peers = addresses
        .iter()
        .map(|ip| {
            let address = PeerAddr::Inet(SocketAddr::new(*ip, port));
            Peer {
                name: address.to_string().into(),
                address,
                server: format!("{name}:{port}").into(),
                weight: 1,
                max_fails: 1,
                fail_timeout: Duration::from_secs(10),
                max_conns: 0,
                down: false,
                route: None,
                drain: false,
            }
        })
        .collect();
    Group::new(
        name.into(),
        peers,
        Vec::new(),
        Balancer::RoundRobin,
        None,
        true,
        Some(port),
    )
}

/// The group of the server's `proxy_pass`: a configured one, an address written out, or
/// a name looked up by `resolver` (without blocking the worker). `Err` is the status the
/// session ends with, logged.
pub async fn find_target<'c>(session: &mut Session<'c>) -> Result<Target<'c>, u16> {
    let conf: &'c StreamConf = session.conf;
    let server = session.server;
    let template = match &server.content {
        Content::Proxy(id) => return Ok(Target::Conf(&conf.groups[id.0 as usize])),
        Content::ProxyVariable(template) => template,
        _ => return Err(status::INTERNAL_SERVER_ERROR),
    };
    let value = session.eval().render(template);
    if let Some(group) = conf.group_named(&value) {
        return Ok(Target::Conf(group));
    }
    if let Some(group) = address_group(&value) {
        return Ok(Target::Owned(Box::new(group)));
    }
    let text = String::from_utf8_lossy(&value).into_owned();
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (
            host.to_owned(),
            port.parse::<u16>().ok().filter(|port| *port > 0),
        ),
        None => (text.clone(), None),
    };
    let Some(port) = port else {
        session.log(Level::Error, format_args!("no port in upstream \"{text}\""));
        return Err(status::INTERNAL_SERVER_ERROR);
    };
    let Some(resolver) = &server.settings.resolver else {
        session.log(
            Level::Error,
            format_args!("no resolver defined to resolve {host}"),
        );
        return Err(status::INTERNAL_SERVER_ERROR);
    };
    session.action = Some("resolving");
    let mut notes = Vec::new();
    let resolved = shared::resolver::resolve(
        resolver,
        server.settings.resolver_timeout,
        &host,
        &mut notes,
    )
    .await;
    for note in &notes {
        let level = if note.is_error() {
            Level::Error
        } else {
            Level::Info
        };
        session.log(level, format_args!("{note}"));
    }
    match resolved {
        Ok(addresses) => Ok(Target::Owned(Box::new(one_address_group(
            &host, &addresses, port,
        )))),
        Err(error) => {
            session.log(
                Level::Error,
                format_args!(
                    "{host} could not be resolved ({}: {})",
                    error.code, error.text
                ),
            );
            Err(status::BAD_GATEWAY)
        }
    }
}

/// What a `proxy_bind` value says: an address, with a port or without.
pub fn bind_address(text: &[u8]) -> Option<SocketAddr> {
    let text = std::str::from_utf8(text).ok()?;
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Some(address);
    }
    let trimmed = text.trim_start_matches('[').trim_end_matches(']');
    trimmed
        .parse::<IpAddr>()
        .ok()
        .map(|ip| SocketAddr::new(ip, 0))
}

/// Opens a TCP or Unix connection to `address` within `timeout`.
pub async fn connect(
    address: &PeerAddr,
    bind: Option<(SocketAddr, bool)>,
    timeout: Duration,
    keepalive: bool,
) -> io::Result<Stream> {
    let connecting = async {
        match address {
            PeerAddr::Inet(address) => {
                let domain = socket2::Domain::for_address(*address);
                let socket = socket2::Socket::new(
                    domain,
                    socket2::Type::STREAM,
                    Some(socket2::Protocol::TCP),
                )?;
                socket.set_nonblocking(true)?;
                if keepalive {
                    socket.set_keepalive(true)?;
                }
                if let Some((local, transparent)) = bind {
                    if transparent {
                        socket.set_ip_transparent_v4(true)?;
                    }
                    socket.bind(&local.into())?;
                }
                let std_stream: std::net::TcpStream = socket.into();
                let socket = tokio::net::TcpSocket::from_std_stream(std_stream);
                Ok(Stream::Tcp(socket.connect(*address).await?))
            }
            PeerAddr::Unix(path) => Ok(Stream::Unix(tokio::net::UnixStream::connect(path).await?)),
        }
    };
    match tokio::time::timeout(timeout, connecting).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// The key the hash balancers hash, rendered for this session.
pub fn balancer_key(session: &mut Session<'_>, group: &Group<StreamTemplate>) -> Vec<u8> {
    match &group.balancer {
        Balancer::Hash { key, .. } => session.eval().render(key),
        _ => Vec::new(),
    }
}

pub fn client_ip(peer: &PeerAddress) -> Option<IpAddr> {
    match peer {
        PeerAddress::Inet(address) => Some(address.ip()),
        PeerAddress::Unix => None,
    }
}

/// The `proxy_bind` address for this session, if any.
/// A `proxy_bind` value that is no address (logged).
#[derive(Debug)]
pub struct InvalidBind;

pub fn bind_for(
    session: &mut Session<'_>,
    bind: &Option<Bind>,
) -> Result<Option<(SocketAddr, bool)>, InvalidBind> {
    let Some(bind) = bind else {
        return Ok(None);
    };
    let value = session.eval().render(&bind.address);
    if value.is_empty() {
        return Ok(None);
    }
    match bind_address(&value) {
        Some(address) => Ok(Some((address, bind.transparent))),
        None => {
            session.log(
                Level::Error,
                format_args!("invalid local address \"{}\"", value.escape_ascii()),
            );
            Err(InvalidBind)
        }
    }
}

/// A rate from its template: bytes per second, 0 for none.
pub fn rate(session: &mut Session<'_>, template: &StreamTemplate) -> u64 {
    let value = session.eval().render(template);
    std::str::from_utf8(&value)
        .ok()
        .and_then(conf::value::parse_size)
        .unwrap_or(0)
}

/// The content phase of a TCP session that `proxy_pass` serves; the status it ends with.
pub async fn run(session: &mut Session<'_>, client: &Stream) -> u16 {
    let server = session.server;
    let settings = &server.settings;
    let target = match find_target(session).await {
        Ok(target) => target,
        Err(status) => return status,
    };
    let group = target.group();
    if settings.tcp_nodelay {
        let _ = client.set_nodelay(true);
    }
    let Ok(bind) = bind_for(session, &settings.proxy_bind) else {
        return status::BAD_GATEWAY;
    };
    let key = balancer_key(session, group);
    let upstream_tls = match &session.server.upstream_tls {
        Some(base) => match crate::ssl::session_client(session, base).await {
            Ok(client) => Some(client),
            Err(status) => return status,
        },
        None => None,
    };
    let Some((upstream, selected)) =
        connect_with_retries(session, group, &key, bind, upstream_tls.as_deref()).await
    else {
        return status::BAD_GATEWAY;
    };
    let rates = (
        rate(session, &settings.proxy_upload_rate),
        rate(session, &settings.proxy_download_rate),
    );
    let status = relay_session(session, client, &upstream, rates).await;
    note_least_time(session, group, selected);
    group.release(selected, false, runtime::clock::monotonic());
    status
}

/// `least_time`: gives the group what the session's last try took, to what the group
/// measures (its connect, the upstream's first byte, or the end of the session). A try
/// that never got its first byte leaves `first_byte`'s average alone.
pub fn note_least_time(
    session: &mut Session<'_>,
    group: &Group<StreamTemplate>,
    selected: upstream::Selected,
) {
    let Some(measure) = group.measures_time() else {
        return;
    };
    let attempt = session.vars.last_try();
    let took = match measure {
        TimeMeasure::Connect => attempt.connect_time,
        TimeMeasure::FirstByte => attempt.first_byte_time,
        TimeMeasure::LastByte => attempt.session_time,
    };
    if let Some(took) = took {
        group.note_time(selected, took, runtime::clock::monotonic());
    }
}

/// Chooses and connects peers until one answers or the tries run out; logs each failure
/// as nginx does.
pub async fn connect_with_retries(
    session: &mut Session<'_>,
    group: &Group<StreamTemplate>,
    key: &[u8],
    bind: Option<(SocketAddr, bool)>,
    upstream_tls: Option<&tls::ClientTls>,
) -> Option<(Stream, upstream::Selected)> {
    let settings = &session.server.settings;
    let began = runtime::clock::monotonic();
    let mut tried = Tried::new(group);
    let mut tries_left = group.peer_count().max(1);
    if settings.proxy_next_upstream_tries > 0 {
        tries_left = tries_left.min(settings.proxy_next_upstream_tries as usize);
    }
    let select_key = SelectKey {
        client: client_ip(&session.vars.remote),
        hash: key,
        sticky: b"",
        session: b"",
    };
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
            return None;
        };
        session.upstream_name = Some(std::sync::Arc::clone(&peer.name));
        session.vars.upstream.push(crate::variables::UpstreamTry {
            name: std::sync::Arc::clone(&peer.name),
            ..Default::default()
        });
        let attempt_started = Instant::now();
        let connected = connect(
            &peer.address,
            bind,
            settings.proxy_connect_timeout,
            settings.proxy_socket_keepalive,
        )
        .await;
        // The PROXY line goes first, before any TLS to the upstream.
        let connected = match connected {
            Ok(stream) if settings.proxy_protocol => {
                let line = proxy_protocol_line(session);
                stream
                    .write_all_timed(&line, settings.proxy_connect_timeout)
                    .await
                    .map(|()| stream)
            }
            other => other,
        };
        let connected = match (connected, upstream_tls) {
            (Ok(stream), Some(client)) => {
                session.action = Some("SSL handshaking to upstream");
                let name = crate::ssl::upstream_name(session, &group.name);
                let alpn = crate::ssl::upstream_alpn(session);
                let timeout = settings.proxy_connect_timeout;
                crate::ssl::connect_upstream(stream, client, &name, alpn, timeout).await
            }
            (connected, _) => connected,
        };
        match connected {
            Ok(stream) => {
                session.vars.last_try().connect_time = Some(attempt_started.elapsed());
                if session.logs(Level::Info) {
                    let local = match &stream {
                        Stream::Tcp(tcp) => tcp
                            .local_addr()
                            .map(|address| address.to_string())
                            .unwrap_or_default(),
                        _ => String::new(),
                    };
                    session.log(
                        Level::Info,
                        format_args!("proxy {local} connected to {}", peer.name),
                    );
                }
                if settings.tcp_nodelay {
                    let _ = stream.set_nodelay(true);
                }
                group.note_success(selected);
                return Some((stream, selected));
            }
            Err(error) => {
                if error.kind() == io::ErrorKind::TimedOut && error.raw_os_error().is_none() {
                    session.log(
                        Level::Error,
                        format_args!("upstream timed out (110: Connection timed out)"),
                    );
                } else {
                    let text = runtime::sys::linux::error_text(&error);
                    session.log(Level::Error, format_args!("connect() failed ({text})"));
                }
                let now = runtime::clock::monotonic();
                if group.release(selected, true, now) {
                    session.log(
                        Level::Warn,
                        format_args!("upstream server temporarily disabled"),
                    );
                }
                tries_left = tries_left.saturating_sub(1);
                let timeout = settings.proxy_next_upstream_timeout;
                let out_of_time =
                    !timeout.is_zero() && now.saturating_duration_since(began) >= timeout;
                if !settings.proxy_next_upstream || tries_left == 0 || out_of_time {
                    return None;
                }
            }
        }
    }
}

/// The PROXY protocol version 1 line for this session's client and local addresses.
pub fn proxy_protocol_line(session: &Session<'_>) -> Vec<u8> {
    let (PeerAddress::Inet(source), Some(destination)) = (session.vars.remote, session.vars.local)
    else {
        return b"PROXY UNKNOWN\r\n".to_vec();
    };
    let family = if source.is_ipv4() { "TCP4" } else { "TCP6" };
    let show = |ip: IpAddr| match ip {
        IpAddr::V6(v6) if source.is_ipv4() => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        _ => ip,
    };
    format!(
        "PROXY {family} {} {} {} {}\r\n",
        show(source.ip()),
        show(destination.ip()),
        source.port(),
        destination.port()
    )
    .into_bytes()
}

/// One direction of the relay: a buffer filled from one side and drained to the other.
struct Pump {
    /// The bytes read and not yet written are `buf[start..]`; reads append to it, into
    /// room that is never zeroed.
    buf: Vec<u8>,
    start: usize,
    /// `proxy_buffer_size`: how much may wait.
    size: usize,
    eof: bool,
    shut: bool,
    total: u64,
    written: u64,
    rate: u64,
    began: Instant,
    /// The rate limit holds reading until then.
    delayed_until: Option<tokio::time::Instant>,
}

impl Pump {
    fn new(size: usize, rate: u64) -> Pump {
        let size = size.max(1);
        Pump {
            buf: Vec::with_capacity(size),
            start: 0,
            size,
            eof: false,
            shut: false,
            total: 0,
            written: 0,
            rate,
            began: Instant::now(),
            delayed_until: None,
        }
    }

    fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    fn wants_read(&self) -> bool {
        !self.eof && self.buf.len() < self.size && self.delayed_until.is_none()
    }

    fn done(&self) -> bool {
        self.eof && self.pending() == 0
    }

    /// Moves what it can without waiting; whether anything moved. An error ends the
    /// direction as an end of stream would.
    fn run(&mut self, from: &Stream, to: &Stream) -> bool {
        let mut moved = false;
        loop {
            while self.start < self.buf.len() {
                match to.try_write(&self.buf[self.start..]) {
                    Ok(written) => {
                        self.start += written;
                        self.written += written as u64;
                        moved = true;
                    }
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        // The receiving side is gone: nothing more can be delivered.
                        self.eof = true;
                        self.start = self.buf.len();
                        return true;
                    }
                }
            }
            if self.start == self.buf.len() {
                self.start = 0;
                self.buf.clear();
            }
            if !self.wants_read() {
                return moved;
            }
            let mut room = self.size - self.buf.len();
            if self.rate > 0 {
                let elapsed = self.began.elapsed().as_secs() + 1;
                let allowed = (self.rate * elapsed) as i128 - self.total as i128;
                if allowed <= 0 {
                    let wait = (-allowed) as u64 * 1000 / self.rate + 1;
                    self.delayed_until =
                        Some(tokio::time::Instant::now() + Duration::from_millis(wait));
                    return moved;
                }
                room = room.min(allowed as usize);
            }
            match from.try_read_appending(&mut self.buf, room) {
                Ok(0) => {
                    self.eof = true;
                    return true;
                }
                Ok(read) => {
                    self.total += read as u64;
                    moved = true;
                    if let Some(wait) = (read as u64 * 1000).checked_div(self.rate)
                        && wait > 0
                    {
                        self.delayed_until =
                            Some(tokio::time::Instant::now() + Duration::from_millis(wait));
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return moved,
                Err(_) => {
                    self.eof = true;
                    return true;
                }
            }
        }
    }
}

/// Why relaying ended.
enum RelayEnd {
    /// The client's or the upstream's side ended (`true` for the upstream).
    Closed {
        upstream: bool,
    },
    TimedOut,
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Sends the PROXY line and the preread bytes, then relays; updates the byte counts and
/// the `$upstream_*` times, and logs the end.
async fn relay_session(
    session: &mut Session<'_>,
    client: &Stream,
    upstream: &Stream,
    (upload_rate, download_rate): (u64, u64),
) -> u16 {
    let settings = &session.server.settings;
    let try_started = Instant::now();
    // The PROXY line, if any, was sent when the connection opened.
    let header_len = if settings.proxy_protocol {
        proxy_protocol_line(session).len() as u64
    } else {
        0
    };
    let first = std::mem::take(&mut session.preread);
    session.action = Some("proxying connection");
    let buffer_size = settings.proxy_buffer_size;
    let mut up = Pump::new(buffer_size.max(first.len()), upload_rate);
    up.buf.extend_from_slice(&first);
    let mut down = Pump::new(buffer_size, download_rate);
    let half_close = settings.proxy_half_close;
    let timeout = settings.proxy_timeout;
    let received_before = session.vars.bytes_received;
    let mut last_activity = tokio::time::Instant::now();
    let idle = tokio::time::sleep(timeout);
    tokio::pin!(idle);
    let mut first_byte = None;
    let end = loop {
        let up_moved = up.run(client, upstream);
        let down_moved = down.run(upstream, client);
        if up_moved || down_moved {
            last_activity = tokio::time::Instant::from_std(runtime::clock::monotonic());
        }
        if first_byte.is_none() && down.total > 0 {
            first_byte = Some(try_started.elapsed());
        }
        if half_close {
            if up.done() && !up.shut {
                up.shut = true;
                let _ = upstream.shutdown_write();
            }
            if down.done() && !down.shut {
                down.shut = true;
                let _ = client.shutdown_write();
            }
            if up.done() && down.done() {
                break RelayEnd::Closed { upstream: true };
            }
        } else if down.done() {
            break RelayEnd::Closed { upstream: true };
        } else if up.done() {
            break RelayEnd::Closed { upstream: false };
        }
        tokio::select! {
            _ = client.readable(), if up.wants_read() => {}
            _ = upstream.writable(), if up.pending() > 0 => {}
            _ = upstream.readable(), if down.wants_read() => {}
            _ = client.writable(), if down.pending() > 0 => {}
            _ = sleep_until(up.delayed_until), if up.delayed_until.is_some() => {
                up.delayed_until = None;
                last_activity = tokio::time::Instant::now();
            }
            _ = sleep_until(down.delayed_until), if down.delayed_until.is_some() => {
                down.delayed_until = None;
                last_activity = tokio::time::Instant::now();
            }
            () = &mut idle => {
                // The timer is set again only when it fires, not per byte moved.
                let deadline = last_activity + timeout;
                if deadline <= tokio::time::Instant::now() {
                    break RelayEnd::TimedOut;
                }
                idle.as_mut().reset(deadline);
            }
        }
    };
    let _ = client.flush().await;
    let from_client = received_before + up.total;
    let to_client = down.written;
    let to_upstream = up.written;
    let from_upstream = down.total;
    session.vars.bytes_received = from_client;
    session.vars.bytes_sent = to_client;
    {
        let attempt = session.vars.last_try();
        attempt.bytes_sent = up.written + header_len;
        attempt.bytes_received = from_upstream;
        // Both count from the start of the connect, as nginx's do.
        let connect_time = attempt.connect_time.unwrap_or_default();
        attempt.first_byte_time = first_byte.map(|first_byte| first_byte + connect_time);
        attempt.session_time = Some(try_started.elapsed() + connect_time);
    }
    match end {
        RelayEnd::Closed { upstream } => session.log(
            Level::Info,
            format_args!(
                concat!(
                    "{} disconnected, bytes from/to client:{}/{}, ",
                    "bytes from/to upstream:{}/{}"
                ),
                if upstream { "upstream" } else { "client" },
                from_client,
                to_client,
                from_upstream,
                to_upstream
            ),
        ),
        RelayEnd::TimedOut => session.log(
            Level::Info,
            format_args!("connection timed out (110: Connection timed out)"),
        ),
    }
    status::OK
}
