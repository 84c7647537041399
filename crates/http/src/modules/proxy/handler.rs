//! The proxy's content handler: choose a peer, connect (or reuse an idle connection), send
//! the request, read the response head, and decide, as nginx's upstream module does,
//! whether to pass the response on, try the next server, or end with 502/504.

use std::borrow::Cow;
use std::time::Instant;

use logging::Level;
use runtime::PeerAddress;

use crate::kernel::body::BodyState;
use crate::kernel::client::Client as RequestClient;
use crate::kernel::conf::{Location, LocationId};
use crate::modules::proxy::accel::{accel_redirect, accel_target};
use crate::modules::proxy::body::{BodyStart, Keepalive, Release, UpstreamBody};
use crate::modules::proxy::cache::lookup::{CacheRequest, lookup};
use crate::modules::proxy::cache::settings::UseStale;
use crate::modules::proxy::sticky;

mod caching;
mod intercept;
mod request_body;
mod variable_url;

use caching::{key_uri, stale_condition};
use intercept::intercept;
use request_body::read_request_body;
use variable_url::resolve_variable_url;

use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::send::body::Body;
use crate::kernel::upstream::balancer::SelectKey;
use crate::kernel::upstream::info::Attempt;
use crate::kernel::upstream::{Balancer, Group, Selected, Tried};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
pub use crate::modules::proxy::exchange::read_timed;
use crate::modules::proxy::exchange::{
    Answer, Client, OutBody, Outgoing, PeerChoice, PooledBuffer, ReceivedHead, UpstreamTls,
    take_buffer, try_peer,
};
pub use crate::modules::proxy::failure::errno_text;
use crate::modules::proxy::failure::{Failure, Side};
use crate::modules::proxy::gateway::response::StderrLog;
use crate::modules::proxy::gateway::settings::Protocol;
use crate::modules::proxy::next_upstream::{
    Next, Outcome, Policy, decide, status_counts_against_peer,
};
use crate::modules::proxy::request::{
    CacheFields, HeadInput, is_idempotent, upstream_uri, write_head,
};
use crate::modules::proxy::response::{self, RewriteInput, UpstreamFraming, UpstreamHead};
use crate::modules::proxy::settings::ProxyPass;
use crate::modules::proxy::{IgnoreHeaders, Proxy};

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
    /// A background refresh's response: read into the cache, not sent.
    Drain(Box<UpstreamBody<'a>>),
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

/// Where a request goes: the group, and the parts of the `proxy_pass` URL.
struct Target<'a> {
    group: GroupRef<'a>,
    /// The URL's URI part, which takes the place of the location's prefix.
    uri_part: Option<Cow<'a, [u8]>>,
    /// The URL as written, for `proxy_redirect default`; `None` with variables.
    url: Option<&'a [u8]>,
    /// `proxy_pass` has variables.
    variables: bool,
    /// `https://`: the upstream speaks TLS.
    tls: bool,
}

/// The request head for the upstream, the same for every try.
struct OutgoingHead {
    bytes: PooledBuffer,
    /// The method is HEAD: the response has no body.
    is_head: bool,
    idempotent: bool,
}

/// One proxied request, as every try of it sees it.
struct Proxying<'a, 'r> {
    worker: &'a HttpWorker,
    location: &'a Location,
    target: Target<'a>,
    outgoing: Outgoing<'r>,
    policy: Policy,
    is_head: bool,
    /// The cache's part in this request, while it goes upstream.
    cache: std::cell::RefCell<Option<CacheRequest>>,
}

/// The server a try went to, and the try's entry in `$upstream_*`.
#[derive(Clone, Copy)]
struct PeerTry {
    selected: Selected,
    attempt: usize,
}

/// The content handler for a location with `proxy_pass`.
pub async fn proxy<'a>(
    worker: &'a HttpWorker,
    client: &mut RequestClient<'_>,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> ProxyOutcome<'a> {
    // A background refresh asks for the one slice it refreshes (nginx refetches the whole
    // response there).
    if let Some((_, slice)) = &request.upstream.refresh {
        request.upstream.slice = *slice;
        return proxy_one(worker, client, request, location_id).await;
    }
    let slice = worker
        .conf()
        .location(location_id)
        .settings
        .proxy_cache
        .slice;
    if slice > 0 && matches!(request.method_bytes(), b"GET" | b"HEAD") {
        return crate::modules::proxy::slice::proxy_sliced(
            worker,
            client,
            request,
            location_id,
            slice,
        )
        .await;
    }
    proxy_one(worker, client, request, location_id).await
}

/// One proxied request (or one slice of one).
pub(crate) async fn proxy_one<'a>(
    worker: &'a HttpWorker,
    client: &mut RequestClient<'_>,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> ProxyOutcome<'a> {
    let location: &'a Location = worker.conf().location(location_id);
    let proxy = &location.settings.proxy;
    if proxy.protocol != Protocol::Http {
        request.upstream.scheme = proxy.protocol.scheme();
    }
    // A tunnel answers CONNECT only, as nginx's module does.
    if proxy.protocol == Protocol::Tunnel && request.head.method != http1::Method::Connect {
        return ProxyOutcome::Finalize(405);
    }
    // memcached answers GET and HEAD only, as nginx's module does.
    if proxy.protocol == Protocol::Memcached && !matches!(request.method_bytes(), b"GET" | b"HEAD")
    {
        return ProxyOutcome::Finalize(405);
    }
    let target = match find_target(worker, client.info, request, proxy).await {
        Ok(target) => target,
        Err(status) => return ProxyOutcome::Finalize(status),
    };
    // The body goes upstream whole, read first (`proxy_request_buffering`).
    let out_body = match read_request_body(worker, client, request, location).await {
        Ok(body) => body,
        Err(status) => return ProxyOutcome::Finalize(status),
    };
    // The default key's URI is made only for that key.
    let uri = |request: &Request<'_>| key_uri(request, location, &target);
    let looked_up = lookup(worker, client.info, request, location, uri).await;
    let cache = match caching::answer(worker, client.info, request, location, &target, looked_up) {
        Ok(cache) => cache,
        Err(outcome) => return outcome,
    };
    let storing = cache.as_ref().filter(|cache| cache.store);
    let head = match build_head(
        worker,
        client.info,
        request,
        location,
        &target,
        &out_body,
        storing,
    ) {
        Ok(head) => head,
        Err(status) => return ProxyOutcome::Finalize(status),
    };
    let hash = balancer_hash(worker, client.info, request, target.group.group());
    let bind = proxy.bind.as_ref().and_then(|template| {
        crate::modules::proxy::directives::parse_bind(&render(
            worker,
            client.info,
            request,
            template,
        ))
    });
    let policy = next_upstream_policy(proxy, target.group.group(), &head, &out_body);
    let tls = UpstreamTls::for_request(worker, client.info, request, location, target.tls);
    let proxying = Proxying {
        worker,
        location,
        outgoing: Outgoing {
            worker,
            connection: client.info,
            proxy,
            gateway: &location.settings.gateway,
            head: &head.bytes.0,
            body: &out_body,
            bind,
            idempotent: head.idempotent,
            tls,
        },
        target,
        policy,
        is_head: head.is_head,
        cache: std::cell::RefCell::new(cache),
    };
    let binding = sticky::binding(worker, client.info, request, proxying.target.group.group());
    let key = SelectKey {
        client: client_address(client.info),
        hash: &hash,
        sticky: &binding.wanted,
        session: &binding.session,
    };
    proxying.run(&key, client, request).await
}

impl<'a> Proxying<'a, '_> {
    /// Tries the group's servers, one after another, until one answers or
    /// `proxy_next_upstream` says to stop.
    async fn run(
        &self,
        key: &SelectKey<'_>,
        client: &mut RequestClient<'_>,
        request: &mut Request<'a>,
    ) -> ProxyOutcome<'a> {
        let group = self.target.group.group();
        let mut tried = Tried::new(group);
        let mut tries = 0;
        loop {
            let now = runtime::clock::monotonic();
            let Some((selected, peer)) = group.select_peer(&mut tried, key, now) else {
                return self.no_live_upstreams(client.info, request, now);
            };
            tries += 1;
            request.upstream.trying = true;
            request
                .upstream
                .attempts
                .push(Attempt::new(&peer.name, now, 502));
            let current = PeerTry {
                selected,
                attempt: request.upstream.attempts.len() - 1,
            };
            let choice = PeerChoice {
                group: &self.target.group,
                selected,
                peer: &peer,
            };
            let early_hints = crate::modules::proxy::outgoing::early_hints(
                self.worker,
                client.info,
                request,
                &self.location.settings.core.early_hints,
            );
            let mut streaming = self.client(client, request.background, early_hints);
            let result = try_peer(
                &self.outgoing,
                &choice,
                &mut streaming,
                request,
                current.attempt,
            )
            .await;
            match result {
                Ok(answer) => {
                    let status = answer.received.head.status;
                    let attempt = &mut request.upstream.attempts[current.attempt];
                    attempt.status = Some(status);
                    group.note_response(
                        selected,
                        status,
                        attempt.connect_time,
                        attempt.header_time,
                        attempt.started,
                    );
                    let outcome = Outcome::Response(status);
                    if decide(&self.policy, outcome, tries, runtime::clock::monotonic())
                        != Next::Retry
                    {
                        if opens_tunnel(self.outgoing.proxy, status, request) {
                            // Bytes the client sent after its upgrade request go through
                            // the tunnel first.
                            let early = client.source.buffered().to_vec();
                            client.source.consume(early.len());
                            request.upstream.client_early = early;
                        }
                        return self.respond(client.info, request, answer, current);
                    }
                    let failed = status_counts_against_peer(status);
                    self.release(client.info, request, selected, failed);
                }
                Err(failure) => {
                    self.fail(client.info, request, current, &failure);
                    match failure.side() {
                        Side::Client => {
                            request.keepalive = false;
                            *client.body = BodyState::Done;
                        }
                        // Neither a stale entry nor the cache stands in for Portico's
                        // own failure, as in nginx.
                        Side::Internal => return ProxyOutcome::Finalize(failure.status()),
                        Side::Upstream => {}
                    }
                    let outcome = Outcome::Failed(&failure);
                    if decide(&self.policy, outcome, tries, runtime::clock::monotonic())
                        != Next::Retry
                    {
                        let condition = stale_condition(&failure);
                        if let Some(outcome) = self.stale_answer(client.info, request, condition) {
                            return outcome;
                        }
                        self.cache_error(client.info, request, failure.status(), None);
                        return ProxyOutcome::Finalize(failure.status());
                    }
                }
            }
        }
    }

    /// The client as a try sees it: its body may be passed on as it arrives. A
    /// `background` request does not watch for the client going away.
    fn client<'c, 's>(
        &self,
        client: &'c mut RequestClient<'s>,
        background: bool,
        early_hints: bool,
    ) -> Client<'c, 's> {
        let core = &self.location.settings.core;
        Client {
            source: &mut client.source,
            body: &mut *client.body,
            timeout: core.client_body_timeout,
            keep: usize::try_from(core.client_body_buffer_size).unwrap_or(usize::MAX),
            watch_abort: !self.outgoing.proxy.ignore_client_abort
                && !background
                && !self
                    .cache
                    .borrow()
                    .as_ref()
                    .is_some_and(|cache| cache.background),
            early_hints,
        }
    }

    /// No server of the group may be tried.
    fn no_live_upstreams(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        now: Instant,
    ) -> ProxyOutcome<'a> {
        // The group's name stands for the peer, in `$upstream_addr` and in the log line's
        // `upstream: "http://NAME/URI"`, as in nginx.
        let group = self.target.group.group();
        request
            .upstream
            .attempts
            .push(Attempt::new(&group.name, now, 502));
        request.upstream.trying = true;
        log(
            self.worker,
            info,
            request,
            Level::Error,
            format_args!("no live upstreams while connecting to upstream"),
        );
        request.upstream.trying = false;
        if let Some(outcome) = self.stale_answer(info, request, UseStale::ERROR) {
            return outcome;
        }
        ProxyOutcome::Finalize(502)
    }

    /// A failed try: its `$upstream_*` entry, the log line, the server's failure count.
    fn fail(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        current: PeerTry,
        failure: &Failure,
    ) {
        let entry = &mut request.upstream.attempts[current.attempt];
        entry.failed_status = failure.status();
        entry.response_time = Some(runtime::clock::since(self.policy.started));
        log(
            self.worker,
            info,
            request,
            failure.level(),
            format_args!("{failure}"),
        );
        let failed = failure.counts_against_peer();
        self.release(info, request, current.selected, failed);
    }

    /// Ends a try's hold on its server.
    fn release(
        &self,
        info: &ConnectionInfo,
        request: &Request<'_>,
        selected: Selected,
        failed: bool,
    ) {
        if self
            .target
            .group
            .group()
            .release(selected, failed, runtime::clock::monotonic())
        {
            log(
                self.worker,
                info,
                request,
                Level::Warn,
                format_args!("upstream server temporarily disabled while connecting to upstream"),
            );
        }
    }

    /// A response that is not retried: an intercepted error, an `X-Accel-Redirect`, or a
    /// response passed on with a body that streams from the upstream.
    fn respond(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        answer: Answer,
        current: PeerTry,
    ) -> ProxyOutcome<'a> {
        let proxy = self.outgoing.proxy;
        if proxy.protocol == Protocol::Memcached && answer.received.head.status == 404 {
            return self.memcached_not_found(info, request, answer, current);
        }
        let ReceivedHead { head, buffer, .. } = &answer.received;
        if let Some(outcome) = self.cache_answer(info, request, head, buffer) {
            self.release(info, request, current.selected, false);
            request.upstream.attempts[current.attempt].response_time =
                Some(runtime::clock::since(self.policy.started));
            return outcome;
        }
        if head.status >= 300
            && proxy.intercept_errors
            && self
                .location
                .settings
                .core
                .error_page
                .iter()
                .any(|page| page.status == head.status)
        {
            self.release(info, request, current.selected, false);
            request.upstream.attempts[current.attempt].response_time =
                Some(runtime::clock::since(self.policy.started));
            self.cache_error(info, request, head.status, Some((head, buffer)));
            return intercept(request, head, buffer);
        }
        if !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_REDIRECT)
            && let Some(target) = accel_target(head, buffer)
        {
            self.release(info, request, current.selected, false);
            request.upstream.attempts[current.attempt].response_time =
                Some(runtime::clock::since(self.policy.started));
            let Answer {
                stream, received, ..
            } = answer;
            drop(stream);
            let outcome = accel_redirect(
                self.worker,
                info,
                request,
                proxy,
                &received.head,
                &received.buffer,
                target,
            );
            request
                .upstream
                .keep_head(&received.buffer, received.head.len, &received.head.fields);
            return outcome;
        }
        self.pass_on(info, request, answer, current)
    }

    /// memcached's `END` to a `get`: the connection is whole and may be kept, and the
    /// 404 goes to `error_page` (nginx's memcached module intercepts it). Kept out of
    /// line, so that `respond` stays as small for `proxy_pass` as it was.
    #[cold]
    #[inline(never)]
    fn memcached_not_found(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        answer: Answer,
        current: PeerTry,
    ) -> ProxyOutcome<'a> {
        let Answer {
            stream,
            received,
            opened,
            requests,
            purpose,
        } = answer;
        if let GroupRef::Conf(group) = &self.target.group
            && group.keepalive.is_some()
            && received.buffer.len() == received.head.len
        {
            let idle = crate::kernel::upstream::keepalive::Idle {
                stream,
                opened,
                requests: requests + 1,
                purpose,
                state: None,
            };
            group.put_idle(current.selected, idle, runtime::clock::monotonic());
        }
        crate::modules::proxy::exchange::give_buffer(received.buffer);
        self.release(info, request, current.selected, false);
        request.upstream.attempts[current.attempt].response_time =
            Some(runtime::clock::since(self.policy.started));
        ProxyOutcome::Finalize(404)
    }

    /// The response goes to the client, its body read from the upstream as the client
    /// takes it; the connection may go back to the keep-alive cache after it.
    fn pass_on(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        answer: Answer,
        current: PeerTry,
    ) -> ProxyOutcome<'a> {
        let proxy = self.outgoing.proxy;
        let Answer {
            stream,
            received:
                ReceivedHead {
                    head,
                    buffer,
                    gateway,
                    grpc,
                },
            opened,
            requests,
            purpose,
        } = answer;
        let rewrite = RewriteInput {
            url: self.target.url,
            url_has_uri: self.target.uri_part.is_some(),
            location: self.location.prefix(),
        };
        request.upstream.keep_head(&buffer, head.len, &head.fields);
        response::apply(
            self.worker,
            info,
            request,
            proxy,
            &head,
            response::RawHead::Buffer(&buffer),
            &rewrite,
        );
        if opens_tunnel(proxy, head.status, request) {
            // An upgrade (WebSocket), or `tunnel_pass`'s connection: the connection becomes
            // a tunnel to the upstream. A 101 to a client that sent no `Upgrade` is passed
            // on as a response without a body, as nginx does.
            self.release(info, request, current.selected, false);
            request.upstream.attempts[current.attempt].response_time =
                Some(runtime::clock::since(self.policy.started));
            let buffer_bytes = match proxy.protocol {
                Protocol::Tunnel => usize::try_from(proxy.buffer_size).unwrap_or(usize::MAX),
                _ => crate::modules::proxy::send::tunnel::BUFFER_BYTES,
            };
            return ProxyOutcome::Respond(Body::Upstream(Box::new(
                crate::modules::proxy::send::tunnel::Tunnel {
                    upstream: stream,
                    upstream_early: buffer[head.len..].to_vec(),
                    client_early: std::mem::take(&mut request.upstream.client_early),
                    read_timeout: proxy.read_timeout,
                    upstream_send_timeout: proxy.send_timeout,
                    buffer_bytes,
                },
            )));
        }
        // A gateway's body ends with FastCGI's END_REQUEST or with the connection, whatever
        // its `Content-Length` says.
        // The length the head says: a FastCGI body is cut there (or is short of it), uwsgi
        // and SCGI bodies are read to it, else to the connection's end.
        let said = match response::framing(&head, self.is_head) {
            UpstreamFraming::Chunked => UpstreamFraming::Close,
            said => said,
        };
        let gateway = gateway.map(|gateway| gateway.into_body(said));
        let stderr_log = (gateway.is_some() || proxy.protocol == Protocol::Memcached).then(|| {
            Box::new(StderrLog {
                worker: self.worker,
                connection: info.clone(),
            })
        });
        let framing = match proxy.protocol {
            // An HTTP/2 stream's body ends with the stream.
            Protocol::Http if proxy.http_2 => UpstreamFraming::Close,
            Protocol::Http | Protocol::Memcached => response::framing(&head, self.is_head),
            // A gRPC body ends with its stream; a tunnel's body never reaches here.
            Protocol::Fastcgi | Protocol::Grpc | Protocol::Tunnel => UpstreamFraming::Close,
            Protocol::Uwsgi | Protocol::Scgi => said,
        };
        let reusable = match proxy.protocol {
            // As gRPC's: kept with its HTTP/2 state when the stream ended cleanly.
            Protocol::Http if proxy.http_2 => true,
            Protocol::Http => {
                head.status != 101 && !head.connection_close && framing != UpstreamFraming::Close
            }
            Protocol::Fastcgi => !head.connection_close,
            Protocol::Uwsgi | Protocol::Scgi | Protocol::Tunnel => false,
            // Back with its HTTP/2 state when the stream ended (`GrpcBody::into_idle_state`).
            Protocol::Grpc => true,
            // A HEAD leaves the value unread: the connection closes, as nginx closes it.
            Protocol::Memcached => !self.is_head,
        };
        let trailer = (proxy.protocol == Protocol::Memcached && !self.is_head)
            .then(crate::modules::proxy::memcached::response::Trailer::default);
        let keepalive = match &self.target.group {
            GroupRef::Conf(group) if group.keepalive.is_some() && reusable => Some(Keepalive {
                group,
                opened,
                requests: requests + 1,
                purpose,
            }),
            _ => None,
        };
        let release = match &self.target.group {
            GroupRef::Conf(group) => Some(Release {
                group,
                selected: current.selected,
                learned: sticky::answered(self.worker, info, request, group, current.selected),
                started: request.upstream.attempts[current.attempt].started,
            }),
            GroupRef::Own(_) => None,
        };
        let background = self
            .cache
            .borrow()
            .as_ref()
            .is_some_and(|cache| cache.background);
        let writer = self.cache_writer(info, request, &head, &buffer, framing);
        // Ranges of a proxied response: when it is stored and says `Accept-Ranges`, or
        // with `proxy_force_ranges` (nginx's `copy_allow_ranges`).
        if self.location.settings.proxy_cache.force_ranges
            || (writer.is_some() && caching::accepts_ranges(&head, &buffer))
        {
            crate::modules::proxy::cache::allow_ranges(request);
        }
        let start = BodyStart {
            stream,
            input: buffer,
            position: head.len,
            framing,
            read_timeout: proxy.read_timeout,
            read_size: proxy.buffers.count * proxy.buffers.size,
            keepalive,
            selected: current.selected,
            release,
            attempt: current.attempt,
            cache: writer,
            limit_rate: self.limit_rate(info, request, proxy),
            gateway,
            stderr_log,
            trailer,
            grpc,
        };
        // Made in its box, not copied there.
        let mut body = runtime::sys::boxed::boxed(|| UpstreamBody::new(start));
        body.keep_trailers(proxy);
        if background {
            return ProxyOutcome::Drain(body);
        }
        ProxyOutcome::Respond(Body::Upstream(body))
    }
}

/// A `grpc_pass` address made by variables, as the proxy's URL. Out of line, so that
/// `find_target` stays as small for `proxy_pass` as it was.
#[cold]
#[inline(never)]
fn grpc_url(address: &[u8]) -> Vec<u8> {
    crate::modules::proxy::grpc::directives::proxy_url(address)
}

/// What `proxy_redirect default` and the other head rewrites need of the target.
/// The client's request has an `Upgrade` field: only then does a 101 open a tunnel.
fn asked_to_upgrade(request: &Request<'_>) -> bool {
    request.head.known.upgrade.is_some()
}

/// The answer makes the connection a tunnel: an upgrade's 101, or a `tunnel_pass` peer
/// that accepted the connection.
fn opens_tunnel(proxy: &Proxy, status: u16, request: &Request<'_>) -> bool {
    (status == 101 && asked_to_upgrade(request)) || proxy.protocol == Protocol::Tunnel
}

fn rewrite_input<'t>(location: &'t Location, target: &'t Target<'_>) -> RewriteInput<'t> {
    RewriteInput {
        url: target.url,
        url_has_uri: target.uri_part.is_some(),
        location: location.prefix(),
    }
}

/// Where `proxy_pass` points: its group and URL parts; sets `$proxy_host` and
/// `$proxy_port`. A failure is logged and is the status to end with.
async fn find_target<'a>(
    worker: &'a HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'a>,
    proxy: &'a Proxy,
) -> Result<Target<'a>, u16> {
    let Some(pass) = proxy.pass.as_deref() else {
        return Err(500);
    };
    match pass {
        ProxyPass::Static(target) => {
            // The request's buffers keep their memory from the connection's last request.
            request.upstream.proxy_host.clear();
            request.upstream.proxy_host.extend_from_slice(&target.host);
            request.upstream.proxy_port.clear();
            request.upstream.proxy_port.extend_from_slice(&target.port);
            Ok(Target {
                group: GroupRef::Conf(&worker.conf().upstreams[target.upstream.0 as usize]),
                uri_part: target.uri.as_deref().map(Cow::Borrowed),
                url: Some(target.url.as_bytes()),
                variables: false,
                tls: target.tls,
            })
        }
        ProxyPass::Variables(template) => {
            let mut url = render(worker, info, request, template);
            if proxy.protocol == Protocol::Grpc {
                url = grpc_url(&url);
            }
            if proxy.protocol == Protocol::Tunnel {
                crate::modules::proxy::tunnel::check_port(worker, info, request, &url)?;
            }
            let mut notes = Vec::new();
            let resolved = resolve_variable_url(worker.conf(), proxy, &url, &mut notes).await;
            for note in &notes {
                // What the name servers did wrong, as nginx's resolver logs it.
                let level = if note.is_error() {
                    Level::Error
                } else {
                    Level::Info
                };
                log(worker, info, request, level, format_args!("{note}"));
            }
            match resolved {
                Ok(resolved) => {
                    request.upstream.proxy_host = resolved.host;
                    request.upstream.proxy_port = resolved.port;
                    Ok(Target {
                        group: resolved.group,
                        uri_part: resolved.uri.map(Cow::Owned),
                        url: None,
                        variables: true,
                        tls: resolved.tls,
                    })
                }
                Err((status, message)) => {
                    log(
                        worker,
                        info,
                        request,
                        Level::Error,
                        format_args!("{message}"),
                    );
                    Err(status)
                }
            }
        }
    }
}

/// The request line and fields for the upstream, and the URI in `request.upstream.uri`;
/// an empty URI is logged and ends the request with 500.
fn build_head(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
    target: &Target<'_>,
    out_body: &OutBody,
    cache: Option<&CacheRequest>,
) -> Result<OutgoingHead, u16> {
    let proxy = &location.settings.proxy;
    // A HEAD that may be stored goes upstream as GET (`proxy_cache_convert_head`).
    let convert_head = cache.is_some()
        && location.settings.proxy_cache.convert_head
        && proxy.method.is_none()
        && request.is_head();
    let method = proxy
        .method
        .as_ref()
        .map(|template| render(worker, info, request, template));
    let mut uri = std::mem::take(&mut request.upstream.uri);
    let mut bytes = PooledBuffer(take_buffer(0));
    let method_bytes = match (&method, convert_head) {
        (Some(method), _) => method.as_slice(),
        (None, true) => b"GET".as_slice(),
        (None, false) => request.method_bytes(),
    };
    let is_head = method_bytes.eq_ignore_ascii_case(b"HEAD");
    let idempotent = is_idempotent(method_bytes);
    let input = HeadInput {
        uri_part: target.uri_part.as_deref(),
        variables: target.variables,
        method: method_bytes,
        host: &request.upstream.proxy_host,
        body_len: match (out_body, request.info.framing) {
            // `proxy_pass_request_body off` keeps the body back but, as in nginx, not
            // the client's `Content-Length`.
            (OutBody::None, http1::request::BodyFraming::Length(length))
                if !proxy.pass_request_body =>
            {
                Some(length)
            }
            _ => out_body.len(),
        },
        chunked: matches!(out_body, OutBody::Stream { chunked: true, .. }),
        cache: cache.map(|cache| {
            let (last_modified, etag) = cache.validators(request);
            CacheFields {
                if_modified_since: last_modified,
                if_none_match: etag.map(<[u8]>::to_vec),
            }
        }),
    };
    if !matches!(proxy.protocol, Protocol::Http | Protocol::Grpc) {
        if proxy.protocol == Protocol::Tunnel {
            // Nothing goes to the peer before the relay.
        } else if proxy.protocol == Protocol::Memcached {
            crate::modules::proxy::memcached::request::write_request(
                worker,
                info,
                request,
                location,
                &mut bytes.0,
            )?;
        } else {
            crate::modules::proxy::gateway::request::write_request(
                worker,
                info,
                request,
                location,
                &input,
                &mut bytes.0,
            )?;
        }
        uri.clear();
        request.upstream.uri = uri;
        return Ok(OutgoingHead {
            bytes,
            is_head,
            idempotent,
        });
    }
    upstream_uri(request, location, &input, &mut uri);
    if !uri.is_empty() {
        write_head(worker, info, request, proxy, &uri, &input, &mut bytes.0);
    }
    request.upstream.uri = uri;
    if request.upstream.uri.is_empty() {
        log(
            worker,
            info,
            request,
            Level::Error,
            format_args!("zero length URI to proxy"),
        );
        return Err(500);
    }
    Ok(OutgoingHead {
        bytes,
        is_head,
        idempotent,
    })
}

/// `proxy_next_upstream` for this request, its clock started now.
fn next_upstream_policy(
    proxy: &Proxy,
    group: &Group,
    head: &OutgoingHead,
    out_body: &OutBody,
) -> Policy {
    let group_tries = if group.is_single() {
        1
    } else {
        group.peer_count()
    };
    Policy {
        idempotent: head.idempotent,
        streamed_body: matches!(out_body, OutBody::Stream { .. }),
        ..Policy::new(
            proxy.next_upstream,
            group_tries,
            proxy.next_upstream_tries,
            proxy.next_upstream_timeout,
            runtime::clock::monotonic(),
        )
    }
}

/// The key a `hash` balancer selects by; empty for the other balancers.
fn balancer_hash(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    group: &Group,
) -> Vec<u8> {
    match &group.balancer {
        Balancer::Hash { key, .. } => render(worker, info, request, key),
        _ => Vec::new(),
    }
}

/// The client's address, for `ip_hash`.
fn client_address(info: &ConnectionInfo) -> Option<std::net::IpAddr> {
    match info.peer.get() {
        PeerAddress::Inet(address) => Some(address.ip()),
        PeerAddress::Unix => None,
    }
}

impl<'a> Proxying<'a, '_> {
    /// `proxy_limit_rate` for this response. With variables it is evaluated once the
    /// response head is in, so `$upstream_http_*` may set it; a value that is not a size is
    /// logged at `error` and means no limit.
    fn limit_rate(&self, info: &ConnectionInfo, request: &Request<'a>, proxy: &Proxy) -> u64 {
        let template = match &proxy.limit_rate {
            crate::kernel::core::SizeValue::Fixed(rate) => return *rate,
            crate::kernel::core::SizeValue::Variable(template) => template,
        };
        let text = render(self.worker, info, request, template);
        match std::str::from_utf8(&text)
            .ok()
            .and_then(conf::value::parse_size)
        {
            Some(rate) => rate,
            None => {
                let shown = String::from_utf8_lossy(&text);
                log(
                    self.worker,
                    info,
                    request,
                    Level::Error,
                    format_args!("invalid size \"{shown}\""),
                );
                0
            }
        }
    }
}
