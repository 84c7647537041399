//! The proxy's content handler: choose a peer, connect (or reuse an idle connection), send
//! the request, read the response head, and decide, as nginx's upstream module does,
//! whether to pass the response on, try the next server, or end with 502/504.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use logging::Level;
use runtime::{PeerAddress, Stream};

use crate::body::BodyState;
use crate::body::reader::{BodyError, BodySettings, RequestBody, read_body};
use crate::conf::{HttpConf, Location, LocationId};
use crate::connection::Connection;
use crate::phases::log;
use crate::proxy::body::{Release, UpstreamBody};
use crate::proxy::pass::{ProxyPass, host_header, literal_address, parse_url};
use crate::proxy::request::{HeadInput, is_idempotent, upstream_uri, write_head};
use crate::proxy::response::{self, InvalidHead, RewriteInput, UpstreamFraming, UpstreamHead};
use crate::proxy::{IgnoreHeaders, NextUpstream, Proxy};
use crate::request::{ConnectionInfo, Request};
use crate::response::Body;
use crate::upstream::balancer::SelectKey;
use crate::upstream::{Balancer, Group, Peer, PeerAddr, Selected, Tried};
use crate::variables::render;
use crate::worker::HttpWorker;

/// Temporary files for request bodies are numbered across the process.
static TEMP_NUMBERS: AtomicU64 = AtomicU64::new(0);

/// One try of one upstream server, for `$upstream_*`.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub addr: Box<str>,
    /// The response's status; `None` when none arrived (the log then shows 502 or 504).
    pub status: Option<u16>,
    pub failed_status: u16,
    pub started: Instant,
    pub connect_time: Option<Duration>,
    pub header_time: Option<Duration>,
    pub response_time: Option<Duration>,
    /// Body bytes received (`$upstream_response_length`).
    pub response_length: u64,
    /// Bytes received, head included (`$upstream_bytes_received`).
    pub bytes_received: u64,
    pub bytes_sent: u64,
}

/// What the proxy did for a request.
#[derive(Debug, Default)]
pub struct UpstreamInfo {
    /// `$proxy_host`, `$proxy_port`.
    pub proxy_host: Vec<u8>,
    pub proxy_port: Vec<u8>,
    pub attempts: Vec<Attempt>,
    /// The last response's fields (`$upstream_http_NAME`).
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// `http://ADDR/URI` of the current try, for the error log's `upstream:`.
    pub log_url: Vec<u8>,
}

impl UpstreamInfo {
    pub fn clear(&mut self) {
        self.proxy_host.clear();
        self.proxy_port.clear();
        self.attempts.clear();
        self.headers.clear();
        self.log_url.clear();
    }
}

/// How the proxy ends the content phase.
pub enum ProxyOutcome<'a> {
    Respond(Body<'a>),
    Finalize(u16),
    /// `X-Accel-Redirect` to a URI (with its arguments) or a named location.
    Redirect {
        uri: Vec<u8>,
        args: Vec<u8>,
    },
    Named(Vec<u8>),
}

/// A group from the configuration, or one made for a `proxy_pass` with variables that
/// named a literal address.
enum GroupRef<'a> {
    Conf(&'a Group),
    Own(Box<Group>),
}

impl GroupRef<'_> {
    fn group(&self) -> &Group {
        match self {
            GroupRef::Conf(group) => group,
            GroupRef::Own(group) => group,
        }
    }
}

/// Why a try failed.
#[derive(Debug)]
struct TryError {
    /// Which `proxy_next_upstream` condition it is.
    kind: u16,
    status: u16,
    message: String,
    /// The request reached the server (non-idempotent requests are then not retried).
    sent: bool,
    /// The connection came from the keep-alive cache and failed before any answer.
    stale: bool,
}

/// The request's body as it goes upstream.
enum OutBody {
    None,
    Memory(Vec<u8>),
    File(crate::body::reader::TempBody),
}

impl OutBody {
    fn len(&self) -> Option<u64> {
        match self {
            OutBody::None => None,
            OutBody::Memory(bytes) => Some(bytes.len() as u64),
            OutBody::File(file) => Some(file.len),
        }
    }
}

/// The content handler for a location with `proxy_pass`.
pub async fn proxy<'a>(
    worker: &'a HttpWorker,
    connection: &mut Connection,
    body_state: &mut BodyState,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> ProxyOutcome<'a> {
    let conf: &'a HttpConf = worker.conf();
    let location: &'a Location = conf.location(location_id);
    let proxy = &location.settings.proxy;
    let Some(pass) = proxy.pass.as_deref() else {
        return ProxyOutcome::Finalize(500);
    };
    // Where to: the group, `$proxy_host`, the URL's URI part.
    let (group, uri_part, url_text, variables) = match pass {
        ProxyPass::Static(target) => {
            request.upstream.proxy_host = target.host.to_vec();
            request.upstream.proxy_port = target.port.to_vec();
            (
                GroupRef::Conf(&conf.upstreams[target.upstream.0 as usize]),
                target.uri.as_deref().map(<[u8]>::to_vec),
                Some(target.url.as_bytes()),
                false,
            )
        }
        ProxyPass::Variables(template) => {
            let url = render(worker, &connection.info, request, template);
            match resolve_variable_url(conf, &url) {
                Ok((group, host, port, uri)) => {
                    request.upstream.proxy_host = host;
                    request.upstream.proxy_port = port;
                    (group, uri, None, true)
                }
                Err((status, message)) => {
                    log(
                        worker,
                        &connection.info,
                        request,
                        Level::Error,
                        format_args!("{message}"),
                    );
                    return ProxyOutcome::Finalize(status);
                }
            }
        }
    };
    // The body goes upstream whole, read first (`proxy_request_buffering`).
    let out_body = match read_request_body(worker, connection, body_state, request, location).await
    {
        Ok(body) => body,
        Err(status) => return ProxyOutcome::Finalize(status),
    };
    let method = crate::proxy::request::method(worker, &connection.info, request, proxy);
    let input = HeadInput {
        uri_part: uri_part.as_deref(),
        variables,
        host: &request.upstream.proxy_host.clone(),
        body_len: out_body.len(),
    };
    let uri = upstream_uri(request, location, &input);
    if uri.is_empty() {
        log(
            worker,
            &connection.info,
            request,
            Level::Error,
            format_args!("zero length URI to proxy"),
        );
        return ProxyOutcome::Finalize(500);
    }
    let mut head = Vec::with_capacity(512);
    write_head(
        worker,
        &connection.info,
        request,
        proxy,
        &method,
        &uri,
        &input,
        &mut head,
    );
    let is_head = method.eq_ignore_ascii_case(b"HEAD");
    let idempotent = is_idempotent(&method);

    let hash_key = match &group.group().balancer {
        Balancer::Hash { key, .. } => render(worker, &connection.info, request, key),
        _ => Vec::new(),
    };
    let client = match connection.info.peer {
        PeerAddress::Inet(address) => Some(address.ip()),
        PeerAddress::Unix => None,
    };
    let key = SelectKey {
        client,
        hash: &hash_key,
    };
    let bind = proxy.bind.as_ref().and_then(|template| {
        crate::proxy::directives::parse_bind(&render(worker, &connection.info, request, template))
    });
    let started = Instant::now();
    let group_ref = &group;
    let peer_group = group_ref.group();
    let mut tries_left = if peer_group.is_single() {
        1
    } else {
        peer_group.peer_count()
    };
    if proxy.next_upstream_tries > 0 {
        tries_left = tries_left.min(proxy.next_upstream_tries as usize);
    }
    let mut tried = Tried::new(peer_group);
    loop {
        let now = Instant::now();
        let Some(selected) = peer_group.select(&mut tried, &key, now) else {
            request.upstream.log_url.clear();
            log(
                worker,
                &connection.info,
                request,
                Level::Error,
                format_args!("no live upstreams while connecting to upstream"),
            );
            request
                .upstream
                .attempts
                .push(Attempt::new(&peer_group.name, now, 502));
            return ProxyOutcome::Finalize(502);
        };
        let peer = peer_group.peer(selected);
        request.upstream.log_url = log_url(peer, &uri);
        request
            .upstream
            .attempts
            .push(Attempt::new(&peer.name, now, 502));
        let attempt = request.upstream.attempts.len() - 1;
        let result = try_peer(
            worker, &group, selected, peer, proxy, bind, &head, &out_body, idempotent, request,
            attempt,
        )
        .await;
        match result {
            Ok((stream, upstream_head, leftover, opened, requests)) => {
                let status = upstream_head.status;
                request.upstream.attempts[attempt].status = Some(status);
                // `proxy_next_upstream http_5xx`: only while another server may be tried.
                if let Some(flag) = NextUpstream::for_status(status)
                    && proxy.next_upstream.has(flag)
                    && tries_left > 1
                    && retry_allowed(proxy, started, idempotent)
                {
                    let failure = matches!(status, 500 | 502 | 503 | 504 | 429);
                    release(
                        worker,
                        &connection.info,
                        request,
                        peer_group,
                        selected,
                        failure,
                    );
                    tries_left -= 1;
                    continue;
                }
                request.upstream.headers = upstream_head.headers.clone();
                if status >= 300
                    && proxy.intercept_errors
                    && location
                        .settings
                        .core
                        .error_page
                        .iter()
                        .any(|page| page.status == status)
                {
                    release(
                        worker,
                        &connection.info,
                        request,
                        peer_group,
                        selected,
                        false,
                    );
                    request.upstream.attempts[attempt].response_time = Some(started.elapsed());
                    // The challenge of an intercepted 401 still reaches the client.
                    if status == 401 {
                        for (name, value) in &upstream_head.headers {
                            if name.eq_ignore_ascii_case(b"www-authenticate") {
                                request.response.headers.push((
                                    crate::response::Bytes::Owned(name.clone()),
                                    crate::response::Bytes::Owned(value.clone()),
                                ));
                            }
                        }
                    }
                    return ProxyOutcome::Finalize(status);
                }
                if !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_REDIRECT)
                    && let Some(target) = upstream_head
                        .headers
                        .iter()
                        .find(|(name, value)| {
                            name.eq_ignore_ascii_case(b"x-accel-redirect") && !value.is_empty()
                        })
                        .map(|(_, value)| value.clone())
                {
                    release(
                        worker,
                        &connection.info,
                        request,
                        peer_group,
                        selected,
                        false,
                    );
                    request.upstream.attempts[attempt].response_time = Some(started.elapsed());
                    drop(stream);
                    return accel_redirect(
                        worker,
                        &connection.info,
                        request,
                        proxy,
                        &upstream_head,
                        target,
                    );
                }
                let rewrite = RewriteInput {
                    url: url_text,
                    url_has_uri: uri_part.is_some(),
                    location: location.prefix(),
                };
                response::apply(
                    worker,
                    &connection.info,
                    request,
                    proxy,
                    &upstream_head,
                    &rewrite,
                );
                let framing = response::framing(&upstream_head, is_head);
                let keepalive = match &group {
                    GroupRef::Conf(group)
                        if group.keepalive.is_some()
                            && !upstream_head.connection_close
                            && framing != UpstreamFraming::Close =>
                    {
                        Some((*group, opened, requests + 1))
                    }
                    _ => None,
                };
                let release = match &group {
                    GroupRef::Conf(group) => Some(Release { group, selected }),
                    GroupRef::Own(_) => None,
                };
                let body = UpstreamBody::new(
                    stream,
                    leftover,
                    framing,
                    proxy.read_timeout,
                    proxy.buffers.count * proxy.buffers.size,
                    keepalive,
                    selected,
                    release,
                    attempt,
                );
                return ProxyOutcome::Respond(Body::Upstream(Box::new(body)));
            }
            Err(error) => {
                let entry = &mut request.upstream.attempts[attempt];
                entry.failed_status = error.status;
                entry.response_time = Some(started.elapsed());
                let message = error.message.clone();
                log(
                    worker,
                    &connection.info,
                    request,
                    Level::Error,
                    format_args!("{message}"),
                );
                release(
                    worker,
                    &connection.info,
                    request,
                    peer_group,
                    selected,
                    true,
                );
                tries_left = tries_left.saturating_sub(1);
                let next = proxy.next_upstream.has(error.kind)
                    && !proxy.next_upstream.has(NextUpstream::OFF)
                    && tries_left > 0
                    && (!error.sent
                        || idempotent
                        || proxy.next_upstream.has(NextUpstream::NON_IDEMPOTENT))
                    && retry_allowed(proxy, started, true);
                if !next {
                    return ProxyOutcome::Finalize(error.status);
                }
            }
        }
    }
}

/// Fields of an `X-Accel-Redirect` response that the redirected request keeps.
const KEPT_ON_REDIRECT: &[&[u8]] = &[
    b"set-cookie",
    b"content-disposition",
    b"cache-control",
    b"expires",
    b"accept-ranges",
];

/// `X-Accel-Redirect`: an internal redirect to the URI (or named location) the upstream
/// named, keeping the fields nginx keeps; an unsafe URI is a 404.
fn accel_redirect<'a>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    proxy: &Proxy,
    head: &UpstreamHead,
    target: Vec<u8>,
) -> ProxyOutcome<'a> {
    for (name, value) in &head.headers {
        if name.eq_ignore_ascii_case(b"content-type") {
            request.response.content_type = Some(crate::response::Bytes::Owned(value.clone()));
        } else if KEPT_ON_REDIRECT
            .iter()
            .any(|kept| kept.eq_ignore_ascii_case(name))
        {
            request.response.headers.push((
                crate::response::Bytes::Owned(name.clone()),
                crate::response::Bytes::Owned(value.clone()),
            ));
        } else if name.eq_ignore_ascii_case(b"x-accel-limit-rate")
            && !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_LIMIT_RATE)
        {
            if let Some(rate) = std::str::from_utf8(value)
                .ok()
                .and_then(|text| text.parse().ok())
            {
                request.limit_rate = Some(rate);
            }
        }
    }
    if target.starts_with(b"@") {
        return ProxyOutcome::Named(target);
    }
    let Some((uri, args)) = safe_uri(&target) else {
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!(
                "unsafe URI \"{}\" was detected",
                String::from_utf8_lossy(&target)
            ),
        );
        return ProxyOutcome::Finalize(404);
    };
    if !request.is_head() {
        request.head.method = http1::Method::Get;
        request.method_is_get = true;
    }
    ProxyOutcome::Redirect { uri, args }
}

/// A URI from a header, as nginx checks one: arguments split off at `?`, `%XX` decoded, and
/// refused when a segment is `.` or `..` or it holds a NUL.
pub fn safe_uri(value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (path, args) = match memchr::memchr(b'?', value) {
        Some(question) => (&value[..question], value[question + 1..].to_vec()),
        None => (value, Vec::new()),
    };
    let mut uri = Vec::with_capacity(path.len());
    http1::uri::unescape(path, &mut uri);
    if uri.contains(&0) {
        return None;
    }
    let unsafe_segment = uri
        .split(|&byte| byte == b'/')
        .any(|segment| segment == b"." || segment == b"..");
    (!unsafe_segment).then_some((uri, args))
}

fn retry_allowed(proxy: &Proxy, started: Instant, idempotent: bool) -> bool {
    if !idempotent && !proxy.next_upstream.has(NextUpstream::NON_IDEMPOTENT) {
        return false;
    }
    proxy.next_upstream_timeout.is_zero() || started.elapsed() < proxy.next_upstream_timeout
}

fn release(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    group: &Group,
    selected: Selected,
    failed: bool,
) {
    if group.release(selected, failed, Instant::now()) {
        log(
            worker,
            connection,
            request,
            Level::Warn,
            format_args!("upstream server temporarily disabled while connecting to upstream"),
        );
    }
}

impl Attempt {
    fn new(addr: &str, started: Instant, failed_status: u16) -> Attempt {
        Attempt {
            addr: addr.into(),
            status: None,
            failed_status,
            started,
            connect_time: None,
            header_time: None,
            response_time: None,
            response_length: 0,
            bytes_received: 0,
            bytes_sent: 0,
        }
    }
}

fn log_url(peer: &Peer, uri: &[u8]) -> Vec<u8> {
    let mut url = b"http://".to_vec();
    url.extend_from_slice(peer.name.as_bytes());
    url.extend_from_slice(uri);
    url
}

/// A `proxy_pass` with variables: a group by name (and port), else a literal address.
#[allow(clippy::type_complexity)]
fn resolve_variable_url<'a>(
    conf: &'a HttpConf,
    url: &[u8],
) -> Result<(GroupRef<'a>, Vec<u8>, Vec<u8>, Option<Vec<u8>>), (u16, String)> {
    let text = String::from_utf8_lossy(url);
    let parsed = parse_url(&text).map_err(|error| match error {
        crate::proxy::pass::UrlError::Prefix => (500, format!("invalid URL prefix in \"{text}\"")),
        other => (500, other.message(&text)),
    })?;
    let host = host_header(parsed.host, parsed.port).to_vec();
    let port = parsed.port.unwrap_or(80).to_string().into_bytes();
    let uri = parsed.uri.map(|uri| uri.as_bytes().to_vec());
    if let Some((_, group)) = conf.find_upstream(parsed.host, parsed.port) {
        return Ok((GroupRef::Conf(group), host, port, uri));
    }
    match literal_address(parsed.host, parsed.port) {
        Some(address) => {
            let peer = Peer {
                name: address.to_string().into(),
                server: address.to_string().into(),
                address,
                weight: 1,
                max_fails: 1,
                fail_timeout: Duration::from_secs(10),
                max_conns: 0,
                down: false,
            };
            let host = if parsed.host.starts_with("unix:") {
                b"localhost".to_vec()
            } else {
                host
            };
            let group = Group::new(
                parsed.host.into(),
                vec![peer],
                Vec::new(),
                Balancer::RoundRobin,
                None,
                true,
                parsed.port,
            );
            Ok((GroupRef::Own(Box::new(group)), host, port, uri))
        }
        None => Err((
            502,
            format!("no resolver defined to resolve {}", parsed.host),
        )),
    }
}

/// Reads the client's body for the upstream (or the `proxy_set_body` text instead).
async fn read_request_body(
    worker: &HttpWorker,
    connection: &mut Connection,
    body_state: &mut BodyState,
    request: &mut Request<'_>,
    location: &Location,
) -> Result<OutBody, u16> {
    let proxy = &location.settings.proxy;
    if let Some(template) = &proxy.set_body {
        return Ok(OutBody::Memory(render(
            worker,
            &connection.info,
            request,
            template,
        )));
    }
    if !proxy.pass_request_body {
        return Ok(OutBody::None);
    }
    let has_body =
        !body_state.is_done() || request.info.framing != http1::request::BodyFraming::None;
    if !has_body {
        return Ok(OutBody::None);
    }
    let settings = BodySettings::from_location(&location.settings.core);
    if let http1::request::BodyFraming::Length(length) = request.info.framing
        && settings.max_size > 0
        && length > settings.max_size
    {
        log(
            worker,
            &connection.info,
            request,
            Level::Error,
            format_args!("client intended to send too large body: {length} bytes"),
        );
        request.discard_body = true;
        return Err(413);
    }
    // `100 Continue` once the body is wanted, even an empty one, as nginx answers.
    if request.info.expect_continue
        && request.head.version >= http1::Version::Http11
        && connection.filled == 0
    {
        let _ = connection
            .write_all_timed(b"HTTP/1.1 100 Continue\r\n\r\n", settings.timeout)
            .await;
    }
    let result = read_body(
        connection,
        body_state,
        &settings,
        &worker.generation.file_pool,
        &TEMP_NUMBERS,
        false,
    )
    .await;
    match result {
        Ok(body) => {
            request.length += body.len();
            Ok(match body {
                RequestBody::Memory(bytes) => {
                    request.body = Some(RequestBody::Memory(bytes.clone()));
                    OutBody::Memory(bytes)
                }
                RequestBody::File(file) => OutBody::File(file),
            })
        }
        Err(error) => {
            let (level, message) = match &error {
                BodyError::TooLarge { received } => (
                    Level::Error,
                    format!("client intended to send too large chunked body: {received} bytes"),
                ),
                BodyError::TimedOut => (
                    Level::Info,
                    "client timed out (110: Connection timed out) while reading client request body"
                        .to_owned(),
                ),
                BodyError::Closed => (
                    Level::Info,
                    "client prematurely closed connection while reading client request body"
                        .to_owned(),
                ),
                BodyError::Invalid(invalid) => (
                    Level::Info,
                    invalid.log_message_in(&request.head_bytes).to_string(),
                ),
                BodyError::File { path, call, error } => (
                    Level::Crit,
                    format!("{call}() \"{}\" failed ({})", path.display(), errno_text(error)),
                ),
                BodyError::Pool { name } => (
                    Level::Alert,
                    format!("thread pool \"{name}\" task was lost"),
                ),
            };
            log(
                worker,
                &connection.info,
                request,
                level,
                format_args!("{message}"),
            );
            request.keepalive = false;
            *body_state = BodyState::Done;
            request.discard_body = true;
            Err(match error {
                BodyError::Closed => 499,
                other => other.status(),
            })
        }
    }
}

/// `(111: Connection refused)` from an I/O error, as nginx writes errno.
pub fn errno_text(error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(code) => {
            let text = io::Error::from_raw_os_error(code).to_string();
            let text = text
                .rsplit_once(" (os error")
                .map_or(text.as_str(), |(text, _)| text)
                .to_owned();
            format!("{code}: {text}")
        }
        None => match error.kind() {
            io::ErrorKind::TimedOut => "110: Connection timed out".to_owned(),
            io::ErrorKind::UnexpectedEof => "104: Connection reset by peer".to_owned(),
            _ => error.to_string(),
        },
    }
}

type TryOk = (Stream, UpstreamHead, Vec<u8>, Instant, u64);

/// One try: a connection (cached or new), the request, the response head.
#[allow(clippy::too_many_arguments)]
async fn try_peer(
    worker: &HttpWorker,
    group: &GroupRef<'_>,
    selected: Selected,
    peer: &Peer,
    proxy: &Proxy,
    bind: Option<SocketAddr>,
    head: &[u8],
    body: &OutBody,
    idempotent: bool,
    request: &mut Request<'_>,
    attempt: usize,
) -> Result<TryOk, TryError> {
    let started = request.upstream.attempts[attempt].started;
    // A cached connection first; one that turns out stale is replaced by a new one.
    if let GroupRef::Conf(group) = group
        && let Some(idle) = group.take_idle(selected, Instant::now())
    {
        request.upstream.attempts[attempt].connect_time = Some(Duration::ZERO);
        match exchange(
            &idle.stream,
            proxy,
            head,
            body,
            worker,
            request,
            attempt,
            started,
        )
        .await
        {
            Ok((response, leftover)) => {
                return Ok((idle.stream, response, leftover, idle.opened, idle.requests));
            }
            // A connection the server closed while idle: a new one, when repeating
            // the request is safe.
            Err(error) if error.stale && idempotent => {}
            Err(error) => return Err(error),
        }
    }
    let stream = connect(&peer.address, bind, proxy.connect_timeout)
        .await
        .map_err(|error| {
            let timed_out = error.kind() == io::ErrorKind::TimedOut;
            TryError {
                kind: if timed_out {
                    NextUpstream::TIMEOUT
                } else {
                    NextUpstream::ERROR
                },
                status: if timed_out { 504 } else { 502 },
                message: if timed_out {
                    "upstream timed out (110: Connection timed out) while connecting to upstream"
                        .to_owned()
                } else {
                    format!(
                        "connect() failed ({}) while connecting to upstream",
                        errno_text(&error)
                    )
                },
                sent: false,
                stale: false,
            }
        })?;
    let opened = Instant::now();
    request.upstream.attempts[attempt].connect_time =
        Some(opened.saturating_duration_since(started));
    let (response, leftover) = exchange(
        &stream, proxy, head, body, worker, request, attempt, started,
    )
    .await
    .map_err(|mut error| {
        error.stale = false;
        error
    })?;
    Ok((stream, response, leftover, opened, 0))
}

/// Opens a connection to `address` within `timeout`.
pub async fn connect(
    address: &PeerAddr,
    bind: Option<SocketAddr>,
    timeout: Duration,
) -> io::Result<Stream> {
    let connecting = async {
        match address {
            PeerAddr::Inet(address) => {
                let socket = if address.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()?
                } else {
                    tokio::net::TcpSocket::new_v6()?
                };
                if let Some(local) = bind {
                    socket.bind(local)?;
                }
                let stream = socket.connect(*address).await?;
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }
            PeerAddr::Unix(path) => Ok(Stream::Unix(tokio::net::UnixStream::connect(path).await?)),
        }
    };
    match tokio::time::timeout(timeout, connecting).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// Sends the request and reads the response head.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    stream: &Stream,
    proxy: &Proxy,
    head: &[u8],
    body: &OutBody,
    worker: &HttpWorker,
    request: &mut Request<'_>,
    attempt: usize,
    started: Instant,
) -> Result<(UpstreamHead, Vec<u8>), TryError> {
    let send_error = |error: io::Error, sent: bool| {
        let timed_out = error.kind() == io::ErrorKind::TimedOut;
        TryError {
            kind: if timed_out {
                NextUpstream::TIMEOUT
            } else {
                NextUpstream::ERROR
            },
            status: if timed_out { 504 } else { 502 },
            message: if timed_out {
                "upstream timed out (110: Connection timed out) while sending request to upstream"
                    .to_owned()
            } else {
                format!(
                    "writev() failed ({}) while sending request to upstream",
                    errno_text(&error)
                )
            },
            sent,
            stale: !timed_out,
        }
    };
    let mut sent = head.len() as u64;
    match body {
        OutBody::None => write_timed(stream, head, proxy.send_timeout)
            .await
            .map_err(|error| send_error(error, false))?,
        // Head and body in one write, as one `writev` would send them.
        OutBody::Memory(bytes) => {
            let mut request_bytes = Vec::with_capacity(head.len() + bytes.len());
            request_bytes.extend_from_slice(head);
            request_bytes.extend_from_slice(bytes);
            write_timed(stream, &request_bytes, proxy.send_timeout)
                .await
                .map_err(|error| send_error(error, false))?;
            sent += bytes.len() as u64;
        }
        OutBody::File(file) => {
            write_timed(stream, head, proxy.send_timeout)
                .await
                .map_err(|error| send_error(error, false))?;
            let mut offset = 0;
            while offset < file.len {
                let len = (file.len - offset).min(64 * 1024) as usize;
                let handle = std::sync::Arc::clone(&file.file);
                let read = worker
                    .offload(move || {
                        let mut buffer = vec![0; len];
                        std::os::unix::fs::FileExt::read_exact_at(&*handle, &mut buffer, offset)
                            .map(|()| buffer)
                    })
                    .await;
                let chunk = match read {
                    Ok(Ok(chunk)) => chunk,
                    Ok(Err(error)) => return Err(send_error(error, true)),
                    Err(error) => return Err(send_error(io::Error::other(error.message), true)),
                };
                write_timed(stream, &chunk, proxy.send_timeout)
                    .await
                    .map_err(|error| send_error(error, true))?;
                offset += len as u64;
                sent += len as u64;
            }
        }
    }
    request.upstream.attempts[attempt].bytes_sent = sent;
    let read_error = |error: io::Error, stale: bool| {
        let timed_out = error.kind() == io::ErrorKind::TimedOut;
        TryError {
            kind: if timed_out {
                NextUpstream::TIMEOUT
            } else {
                NextUpstream::ERROR
            },
            status: if timed_out { 504 } else { 502 },
            message: if timed_out {
                "upstream timed out (110: Connection timed out) while reading response header from upstream"
                    .to_owned()
            } else {
                format!(
                    "recv() failed ({}) while reading response header from upstream",
                    errno_text(&error)
                )
            },
            sent: true,
            stale: stale && !timed_out,
        }
    };
    let limit = usize::try_from(proxy.buffer_size)
        .unwrap_or(usize::MAX)
        .max(1024);
    let mut buffer = vec![0u8; limit];
    let mut filled = 0;
    loop {
        let count = read_timed(stream, &mut buffer[filled..], proxy.read_timeout)
            .await
            .map_err(|error| read_error(error, filled == 0))?;
        request.upstream.attempts[attempt].bytes_received += count as u64;
        if count == 0 {
            if filled > 0 && !buffer.starts_with(b"HTTP/") {
                // An HTTP/0.9 answer ends with the connection.
                let response = UpstreamHead {
                    status: 200,
                    http_09: true,
                    connection_close: true,
                    ..UpstreamHead::default()
                };
                buffer.truncate(filled);
                return Ok((response, buffer));
            }
            return Err(TryError {
                kind: NextUpstream::ERROR,
                status: 502,
                message: "upstream prematurely closed connection while reading response header from upstream"
                    .to_owned(),
                sent: true,
                stale: filled == 0,
            });
        }
        filled += count;
        match response::parse(&buffer[..filled]) {
            Ok(Some(response)) => {
                // Interim 1xx answers (other than 101) are skipped.
                if (100..200).contains(&response.status)
                    && response.status != 101
                    && !response.http_09
                {
                    buffer.copy_within(response.len..filled, 0);
                    filled -= response.len;
                    continue;
                }
                request.upstream.attempts[attempt].header_time = Some(started.elapsed());
                let leftover = buffer[response.len..filled].to_vec();
                return Ok((response, leftover));
            }
            Ok(None) if filled == buffer.len() => {
                return Err(TryError {
                    kind: NextUpstream::INVALID_HEADER,
                    status: 502,
                    message:
                        "upstream sent too big header while reading response header from upstream"
                            .to_owned(),
                    sent: true,
                    stale: false,
                });
            }
            Ok(None) => {}
            Err(InvalidHead(message)) => {
                return Err(TryError {
                    kind: NextUpstream::INVALID_HEADER,
                    status: 502,
                    message: format!("{message} while reading response header from upstream"),
                    sent: true,
                    stale: false,
                });
            }
        }
    }
}

pub async fn write_timed(stream: &Stream, bytes: &[u8], timeout: Duration) -> io::Result<()> {
    match tokio::time::timeout(timeout, stream.write_all(bytes)).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

pub async fn read_timed(
    stream: &Stream,
    buffer: &mut [u8],
    timeout: Duration,
) -> io::Result<usize> {
    match tokio::time::timeout(timeout, stream.read(buffer)).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}
