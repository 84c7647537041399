//! The proxy's content handler: choose a peer, connect (or reuse an idle connection), send
//! the request, read the response head, and decide, as nginx's upstream module does,
//! whether to pass the response on, try the next server, or end with 502/504.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use logging::Level;
use runtime::PeerAddress;

use crate::body::BodyState;
use crate::body::reader::{BodyError, BodySettings, RequestBody, read_body};
use crate::conf::{HttpConf, Location, LocationId};
use crate::connection::Connection;
use crate::phases::log;
use crate::proxy::accel::accel_redirect;
use crate::proxy::body::{BodyStart, Keepalive, Release, UpstreamBody};
pub use crate::proxy::exchange::read_timed;
use crate::proxy::exchange::{
    Answer, Client, OutBody, Outgoing, PeerChoice, ReceivedHead, try_peer,
};
pub use crate::proxy::failure::errno_text;
use crate::proxy::pass::{ProxyPass, host_header, literal_address, parse_url};
use crate::proxy::request::{HeadInput, is_idempotent, upstream_uri, write_head};
use crate::proxy::response::{self, RewriteInput, UpstreamFraming, UpstreamHead};
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
    pub addr: std::sync::Arc<str>,
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
    /// The last response's head as received, and its fields as ranges of it
    /// (`$upstream_http_NAME`, `$upstream_cookie_NAME`).
    pub head: Vec<u8>,
    pub fields: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    /// The URI sent upstream; with the current try's address it makes the error log's
    /// `upstream: "http://ADDR/URI"`.
    pub uri: Vec<u8>,
    /// Whether a try is under way (the error log then names it).
    pub trying: bool,
}

impl UpstreamInfo {
    /// The last response's fields, names and values.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().filter_map(|(name, value)| {
            Some((self.head.get(name.clone())?, self.head.get(value.clone())?))
        })
    }

    /// Keeps a response's head (the buffers keep their memory for the connection's next
    /// request).
    fn keep_head(&mut self, raw: &[u8], head: &UpstreamHead) {
        self.head.clear();
        self.head.extend_from_slice(&raw[..head.len.min(raw.len())]);
        self.fields.clear();
        self.fields.extend_from_slice(&head.fields);
    }

    pub fn clear(&mut self) {
        self.proxy_host.clear();
        self.proxy_port.clear();
        self.attempts.clear();
        self.head.clear();
        self.fields.clear();
        self.uri.clear();
        self.trying = false;
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
pub(super) enum GroupRef<'a> {
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
            // The request's buffers keep their memory from the connection's last request.
            request.upstream.proxy_host.clear();
            request.upstream.proxy_host.extend_from_slice(&target.host);
            request.upstream.proxy_port.clear();
            request.upstream.proxy_port.extend_from_slice(&target.port);
            (
                GroupRef::Conf(&conf.upstreams[target.upstream.0 as usize]),
                target.uri.as_deref().map(std::borrow::Cow::Borrowed),
                Some(target.url.as_bytes()),
                false,
            )
        }
        ProxyPass::Variables(template) => {
            let url = render(worker, &connection.info, request, template);
            match resolve_variable_url(conf, proxy, &url).await {
                Ok((group, host, port, uri)) => {
                    request.upstream.proxy_host = host;
                    request.upstream.proxy_port = port;
                    (group, uri.map(std::borrow::Cow::Owned), None, true)
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
    let method = proxy
        .method
        .as_ref()
        .map(|template| render(worker, &connection.info, request, template));
    let method_bytes = method.as_deref().unwrap_or_else(|| request.method_bytes());
    let is_head = method_bytes.eq_ignore_ascii_case(b"HEAD");
    let idempotent = is_idempotent(method_bytes);
    let mut uri = std::mem::take(&mut request.upstream.uri);
    let mut head = crate::proxy::exchange::PooledBuffer(crate::proxy::exchange::take_buffer(0));
    {
        let method_bytes = method.as_deref().unwrap_or_else(|| request.method_bytes());
        let input = HeadInput {
            uri_part: uri_part.as_deref(),
            variables,
            method: method_bytes,
            host: &request.upstream.proxy_host,
            body_len: match (&out_body, request.info.framing) {
                // `proxy_pass_request_body off` keeps the body back but, as in nginx, not
                // the client's `Content-Length`.
                (OutBody::None, http1::request::BodyFraming::Length(length))
                    if !location.settings.proxy.pass_request_body =>
                {
                    Some(length)
                }
                _ => out_body.len(),
            },
            chunked: matches!(out_body, OutBody::Stream { chunked: true, .. }),
        };
        upstream_uri(request, location, &input, &mut uri);
        if !uri.is_empty() {
            write_head(
                worker,
                &connection.info,
                request,
                proxy,
                &uri,
                &input,
                &mut head.0,
            );
        }
    }
    request.upstream.uri = uri;
    if request.upstream.uri.is_empty() {
        log(
            worker,
            &connection.info,
            request,
            Level::Error,
            format_args!("zero length URI to proxy"),
        );
        return ProxyOutcome::Finalize(500);
    }

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
    let outgoing = Outgoing {
        worker,
        proxy,
        head: &head.0,
        body: &out_body,
        bind,
        idempotent,
    };
    loop {
        let now = Instant::now();
        let Some(selected) = peer_group.select(&mut tried, &key, now) else {
            // The group's name stands for the peer, in `$upstream_addr` and in the log
            // line's `upstream: "http://NAME/URI"`, as in nginx.
            request
                .upstream
                .attempts
                .push(Attempt::new(&peer_group.name, now, 502));
            request.upstream.trying = true;
            log(
                worker,
                &connection.info,
                request,
                Level::Error,
                format_args!("no live upstreams while connecting to upstream"),
            );
            request.upstream.trying = false;
            return ProxyOutcome::Finalize(502);
        };
        let peer = peer_group.peer(selected);
        request.upstream.trying = true;
        request
            .upstream
            .attempts
            .push(Attempt::new(&peer.name, now, 502));
        let attempt = request.upstream.attempts.len() - 1;
        let mut client = Client {
            connection: &mut *connection,
            body: &mut *body_state,
            timeout: location.settings.core.client_body_timeout,
            keep: usize::try_from(location.settings.core.client_body_buffer_size)
                .unwrap_or(usize::MAX),
        };
        let choice = PeerChoice {
            group: &group,
            selected,
            peer,
        };
        let result = try_peer(&outgoing, &choice, &mut client, request, attempt).await;
        match result {
            Ok(Answer {
                stream,
                received:
                    ReceivedHead {
                        head: upstream_head,
                        buffer,
                    },
                opened,
                requests,
            }) => {
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
                        for (name, value) in &upstream_head.fields {
                            let name = &buffer[name.clone()];
                            if name.eq_ignore_ascii_case(b"www-authenticate") {
                                request.response.headers.push((
                                    crate::response::Bytes::Owned(name.to_vec()),
                                    crate::response::Bytes::Owned(buffer[value.clone()].to_vec()),
                                ));
                            }
                        }
                    }
                    request.upstream.keep_head(&buffer, &upstream_head);
                    return ProxyOutcome::Finalize(status);
                }
                if !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_REDIRECT)
                    && let Some(target) = upstream_head
                        .fields
                        .iter()
                        .map(|(name, value)| (&buffer[name.clone()], &buffer[value.clone()]))
                        .find(|(name, value)| {
                            name.eq_ignore_ascii_case(b"x-accel-redirect") && !value.is_empty()
                        })
                        .map(|(_, value)| value.to_vec())
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
                    let outcome = accel_redirect(
                        worker,
                        &connection.info,
                        request,
                        proxy,
                        &upstream_head,
                        &buffer,
                        target,
                    );
                    request.upstream.keep_head(&buffer, &upstream_head);
                    return outcome;
                }
                let rewrite = RewriteInput {
                    url: url_text,
                    url_has_uri: uri_part.is_some(),
                    location: location.prefix(),
                };
                request.upstream.keep_head(&buffer, &upstream_head);
                response::apply(
                    worker,
                    &connection.info,
                    request,
                    proxy,
                    &upstream_head,
                    &buffer,
                    &rewrite,
                );
                let framing = response::framing(&upstream_head, is_head);
                let keepalive = match &group {
                    GroupRef::Conf(group)
                        if group.keepalive.is_some()
                            && !upstream_head.connection_close
                            && framing != UpstreamFraming::Close =>
                    {
                        Some(Keepalive {
                            group,
                            opened,
                            requests: requests + 1,
                        })
                    }
                    _ => None,
                };
                let release = match &group {
                    GroupRef::Conf(group) => Some(Release { group, selected }),
                    GroupRef::Own(_) => None,
                };
                let body = UpstreamBody::new(BodyStart {
                    stream,
                    input: buffer,
                    position: upstream_head.len,
                    framing,
                    read_timeout: proxy.read_timeout,
                    read_size: proxy.buffers.count * proxy.buffers.size,
                    keepalive,
                    selected,
                    release,
                    attempt,
                });
                return ProxyOutcome::Respond(Body::Upstream(Box::new(body)));
            }
            Err(failure) => {
                let entry = &mut request.upstream.attempts[attempt];
                entry.failed_status = failure.status();
                entry.response_time = Some(started.elapsed());
                log(
                    worker,
                    &connection.info,
                    request,
                    failure.level(),
                    format_args!("{failure}"),
                );
                release(
                    worker,
                    &connection.info,
                    request,
                    peer_group,
                    selected,
                    failure.counts_against_peer(),
                );
                // The client's own failures count against no server and end the request.
                let Some(condition) = failure.condition() else {
                    request.keepalive = false;
                    *body_state = BodyState::Done;
                    return ProxyOutcome::Finalize(failure.status());
                };
                tries_left = tries_left.saturating_sub(1);
                // A body passed on as it arrived cannot be sent again.
                let streamed = matches!(out_body, OutBody::Stream { .. }) && failure.sent;
                let next = !streamed
                    && proxy.next_upstream.has(condition)
                    && !proxy.next_upstream.has(NextUpstream::OFF)
                    && tries_left > 0
                    && (!failure.sent
                        || idempotent
                        || proxy.next_upstream.has(NextUpstream::NON_IDEMPOTENT))
                    && retry_allowed(proxy, started, true);
                if !next {
                    return ProxyOutcome::Finalize(failure.status());
                }
            }
        }
    }
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
    fn new(addr: &std::sync::Arc<str>, started: Instant, failed_status: u16) -> Attempt {
        Attempt {
            addr: std::sync::Arc::clone(addr),
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

/// A `proxy_pass` with variables: a group by name (and port), else a literal address,
/// else the addresses the location's `resolver` finds for the name.
#[allow(clippy::type_complexity)]
async fn resolve_variable_url<'a>(
    conf: &'a HttpConf,
    proxy: &Proxy,
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
    let addresses = match literal_address(parsed.host, parsed.port) {
        Some(address) => vec![address],
        None => {
            let Some(resolver) = &proxy.resolver else {
                return Err((
                    502,
                    format!("no resolver defined to resolve {}", parsed.host),
                ));
            };
            let found =
                crate::proxy::resolver::resolve(resolver, proxy.resolver_timeout, parsed.host)
                    .await
                    .map_err(|error| {
                        (
                            502,
                            format!(
                                "{} could not be resolved ({}: {})",
                                parsed.host, error.code, error.text
                            ),
                        )
                    })?;
            found
                .into_iter()
                .map(|ip| PeerAddr::Inet(std::net::SocketAddr::new(ip, parsed.port.unwrap_or(80))))
                .collect()
        }
    };
    let peers = addresses
        .into_iter()
        .map(|address| Peer {
            name: address.to_string().into(),
            server: address.to_string().into(),
            address,
            weight: 1,
            max_fails: 1,
            fail_timeout: Duration::from_secs(10),
            max_conns: 0,
            down: false,
        })
        .collect();
    let host = if parsed.host.starts_with("unix:") {
        b"localhost".to_vec()
    } else {
        host
    };
    let group = Group::new(
        parsed.host.into(),
        peers,
        Vec::new(),
        Balancer::RoundRobin,
        None,
        true,
        parsed.port,
    );
    Ok((GroupRef::Own(Box::new(group)), host, port, uri))
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
    let chunked = request.info.framing == http1::request::BodyFraming::Chunked;
    if !proxy.request_buffering && (!chunked || proxy.http_11) {
        let length = match request.info.framing {
            http1::request::BodyFraming::Length(length) => Some(length),
            _ => None,
        };
        return Ok(OutBody::Stream { chunked, length });
    }
    let result = read_body(
        connection,
        body_state,
        &settings,
        worker.pools.default_pool(),
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
                RequestBody::File(file) => {
                    request.body_file = Some(file.path.clone());
                    OutBody::File(file)
                }
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
