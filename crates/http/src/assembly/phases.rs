//! The request phases in nginx's order. This file is the one place that lists them:
//!
//! 1. server rewrite: the server level's script (`rewrite`, `if`, `set`, `return`);
//! 2. find config: the location for `$uri`; `internal`, `limit_except` and
//!    `client_max_body_size` are checked here;
//! 3. rewrite: the location's script; a URI it changed is searched for again (2), at most
//!    ten times in all;
//! 4. preaccess: realip with the location's settings, `limit_req` (a delay, or 503 past the burst) and `limit_conn`;
//! 5. access: `allow` and `deny` (403 when a rule denies the client);
//! 6. precontent: `try_files`;
//! 7. content: the location's content handler, which its directives chose at load (the
//!    proxy for `proxy_pass`, else the static handlers: `root`/`alias`, `index`,
//!    `autoindex`);
//! 8. log: written by the connection once the response is sent.
//!
//! Any phase may end the request with a status; the finalize step then applies
//! `error_page`, which restarts the phases at 1 for a URI (an internal redirect, as `index`
//! makes too) or at 3 for a named location.

use std::future::Future;
use std::pin::Pin;

use logging::Level;

use crate::kernel::body::BodyState;
use crate::kernel::client::{BodySource, Client, ReadAhead};
use crate::kernel::conf::{ServerId, location};
use crate::kernel::core::settings::ErrorPage;
use crate::kernel::file::resolve_realpath_root;
use crate::kernel::find::current_location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::response::{Bytes, Location};
use crate::kernel::send::body::Body;
use crate::kernel::special::{Reply, STATUS_CLOSE, special_response};
use crate::kernel::subrequest::{Subrequest, SubrequestRunner};
use crate::kernel::variables::HttpTemplate;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::access::{self, Action};
use crate::modules::proxy::handler::{self as proxy_handler, ProxyOutcome};
use crate::modules::rewrite::{self, ScriptOutcome, status_is_redirect};
use crate::modules::static_files::handler as static_handler;
use crate::modules::static_files::try_files::{self, TryOutcome};
use crate::modules::{auth_basic, auth_request, limit, mirror, realip};

mod content;
use content::content;

/// Where the request goes next.
enum Step<'a> {
    ServerRewrite,
    FindConfig,
    Rewrite,
    /// The URI changed in the rewrite phase: count the change, then find config again.
    PostRewrite,
    PreAccess,
    Access,
    PreContent,
    Content,
    /// End with this status, through `error_page` if one applies.
    Finalize(u16),
    /// An internal redirect to a URI with these arguments.
    Redirect {
        uri: Vec<u8>,
        args: Vec<u8>,
    },
    /// An internal redirect to a named location.
    Named(Vec<u8>),
    Done(Reply<'a>),
}

/// Runs the phases for a request whose server is chosen.
pub async fn run<'a>(
    worker: &'a HttpWorker,
    client: Client<'_>,
    request: &mut Request<'a>,
) -> Reply<'a> {
    crate::modules::observe::zones::start(worker, request);
    run_from(worker, client, request, Step::ServerRewrite).await
}

/// Ends a request whose head was refused with `status`, through `error_page` as nginx
/// does (the default server's pages apply before a location is known).
pub(crate) async fn run_error<'a>(
    worker: &'a HttpWorker,
    client: Client<'_>,
    request: &mut Request<'a>,
    status: u16,
) -> Reply<'a> {
    crate::modules::observe::zones::start(worker, request);
    run_from(worker, client, request, Step::Finalize(status)).await
}

async fn run_from<'a>(
    worker: &'a HttpWorker,
    client: Client<'_>,
    request: &mut Request<'a>,
    mut step: Step<'a>,
) -> Reply<'a> {
    let Some(server) = request.server else {
        return special_response(worker, request, 500);
    };
    let mut client = client;
    loop {
        let connection = client.info;
        step = match step {
            Step::ServerRewrite => server_rewrite(worker, connection, request, server).await,
            Step::FindConfig => find_config(worker, connection, request, server),
            Step::Rewrite => location_rewrite(worker, connection, request, server).await,
            Step::PostRewrite => post_rewrite(worker, connection, request),
            Step::PreAccess => preaccess(worker, &client, request).await,
            Step::Access => {
                let step = check_access(worker, &client, request).await;
                delay_unauthorized(worker, request, step).await
            }
            Step::PreContent => precontent(worker, connection, request).await,
            Step::Content => content(worker, &mut client, request).await,
            Step::Finalize(status) => finalize(worker, connection, request, status),
            Step::Redirect { uri, args } => {
                internal_redirect(worker, connection, request, server, uri, args)
            }
            Step::Named(name) => named_location(worker, connection, request, server, name),
            Step::Done(reply) => {
                if request.err_status != 0 {
                    request.response.status = request.err_status;
                }
                // Checked here first: the future is not made for the usual request.
                if worker.conf().uses_realpath_root {
                    resolve_realpath_root(worker, connection, request).await;
                }
                return reply;
            }
        }
    }
}

/// Phase 1.
async fn server_rewrite<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    server: ServerId,
) -> Step<'a> {
    let server_location = worker.conf().server(server).location;
    request.location = Some(server_location);
    // Most servers have no script of their own: no future is made for one.
    if worker
        .conf()
        .location(server_location)
        .settings
        .script
        .is_empty()
    {
        return Step::FindConfig;
    }
    let outcome = rewrite::run(worker, connection, request, server_location).await;
    match outcome {
        ScriptOutcome::Continue | ScriptOutcome::Last | ScriptOutcome::Break => Step::FindConfig,
        other => script_end(worker, connection, request, other),
    }
}

/// What a script's `return`, redirect or error leads to.
fn script_end<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    outcome: ScriptOutcome<'a>,
) -> Step<'a> {
    match outcome {
        ScriptOutcome::Return { status, text } => {
            respond_return(worker, connection, request, status, text)
        }
        ScriptOutcome::Redirect(status) | ScriptOutcome::Status(status) => Step::Finalize(status),
        ScriptOutcome::Continue | ScriptOutcome::Last | ScriptOutcome::Break => Step::PreAccess,
    }
}

/// Phase 2.
fn find_config<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    server: ServerId,
) -> Step<'a> {
    let conf = worker.conf();
    let server = conf.server(server);
    request.uri_changed = false;
    request.location_uri_changed = false;
    request.proxy_handler_orphaned = false;
    let found = location::find(
        &conf.locations,
        &server.locations,
        server.location,
        &request.uri,
        request.matches.get_mut(),
    );
    let redirect = location::auto_redirect(&conf.locations, &server.locations, &request.uri);
    let found = redirect.unwrap_or(found);
    request.location = Some(found);
    let mut location = conf.location(found);
    if connection.debug || location.settings.core.error_log.enabled(Level::Debug) {
        log(
            worker,
            connection,
            request,
            Level::Debug,
            format_args!("using configuration \"{}\"", location.name),
        );
    }
    if !request.internal && location.settings.core.internal {
        return Step::Finalize(404);
    }
    if redirect.is_some() {
        let mut value = Vec::with_capacity(location.prefix().len() + request.args.len() + 1);
        crate::kernel::response::escape_uri(location.prefix(), &mut value);
        if !request.args.is_empty() {
            value.push(b'?');
            value.extend_from_slice(&request.args);
        }
        request.response.location = Some(Location { value });
        return Step::Finalize(301);
    }
    if let Some((methods, block)) = location.limit_except
        && !methods.contains(request.head.method)
    {
        request.location = Some(block);
        location = conf.location(block);
    }
    let limit = location.settings.core.client_max_body_size;
    if let http1::request::BodyFraming::Length(length) = request.info.framing
        && !request.discard_body
        && limit > 0
        && length > limit
    {
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!("client intended to send too large body: {length} bytes"),
        );
        return Step::Finalize(413);
    }
    Step::Rewrite
}

/// Phase 3. A request no location matched has no location script to run.
async fn location_rewrite<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    server: ServerId,
) -> Step<'a> {
    let conf = worker.conf();
    let Some(current) = request.location else {
        return Step::PreAccess;
    };
    if current == conf.server(server).location {
        return Step::PreAccess;
    }
    match rewrite::run(worker, connection, request, current).await {
        ScriptOutcome::Continue | ScriptOutcome::Last if request.uri_changed => Step::PostRewrite,
        other => script_end(worker, connection, request, other),
    }
}

/// After the rewrite phase changed the URI: one change fewer is left.
fn post_rewrite<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
) -> Step<'a> {
    request.uri_changes = request.uri_changes.saturating_sub(1);
    if request.uri_changes == 0 {
        let uri = String::from_utf8_lossy(&request.uri).into_owned();
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!("rewrite or internal redirection cycle while processing \"{uri}\""),
        );
        return Step::Finalize(500);
    }
    Step::FindConfig
}

/// Phase 4: `limit_req`, then `limit_conn`.
async fn preaccess<'a>(
    worker: &'a HttpWorker,
    client: &Client<'_>,
    request: &mut Request<'a>,
) -> Step<'a> {
    // realip first, as nginx runs its preaccess handler before the limits'.
    let location = current_location(worker, request);
    realip::apply(&location.settings.realip, client.info, request);
    match limit::preaccess(worker, client.info, client.source.socket(), request).await {
        None => Step::Access,
        Some(status) => Step::Finalize(status),
    }
}

/// Phase 5: `allow`/`deny`, `auth_basic`, `auth_request`, combined as `satisfy` says. A
/// subrequest is not checked again, as nginx's access phase skips it.
async fn check_access<'a>(
    worker: &'a HttpWorker,
    client: &Client<'_>,
    request: &mut Request<'a>,
) -> Step<'a> {
    if request.is_subrequest() {
        return Step::PreContent;
    }
    let connection = client.info;
    let location = current_location(worker, request);
    let rule = access::check(&location.settings.access, &connection.peer.get());
    let any = location.settings.core.satisfy == crate::kernel::core::settings::Satisfy::Any;
    // `satisfy any`: an address `allow` names is enough, the password is not asked.
    if any && rule == Some(Action::Allow) {
        return Step::PreContent;
    }
    if !any && rule == Some(Action::Deny) {
        return forbidden_by_rule(worker, connection, request);
    }
    // Under `satisfy any`, a refusal only counts when nothing else lets the request in.
    let mut refused = None;
    let mut challenge = None;
    match auth_basic::check(worker, connection, request, location).await {
        auth_basic::Verdict::Passed if any => return Step::PreContent,
        auth_basic::Verdict::Passed | auth_basic::Verdict::NotInvolved => {}
        auth_basic::Verdict::Challenge(realm) => {
            challenge = Some(realm);
            refused = Some(if request.is_proxy_auth() { 407 } else { 401 });
        }
        auth_basic::Verdict::Status(status) => return Step::Finalize(status),
    }
    if !any && let Some(realm) = challenge.take() {
        return basic_challenge(request, &realm);
    }
    // The subrequest's future is boxed only where `auth_request` is set.
    let verdict = if location.settings.auth_request.uri.is_none() {
        auth_request::Verdict::NotInvolved
    } else {
        let socket = client.source.socket();
        Box::pin(auth_request::check(
            worker,
            connection,
            socket,
            request,
            location,
            &SUBREQUESTS,
        ))
        .await
    };
    match verdict {
        auth_request::Verdict::Passed if any => {
            // nginx drops a challenge another module made once access is granted.
            request.response.headers.retain(|(name, _)| {
                let name = name.as_slice();
                !name.eq_ignore_ascii_case(b"www-authenticate")
                    && !name.eq_ignore_ascii_case(b"proxy-authenticate")
            });
            return Step::PreContent;
        }
        auth_request::Verdict::Passed | auth_request::Verdict::NotInvolved => {}
        auth_request::Verdict::Status(status @ (401 | 403)) if any => {
            refused = refused.or(Some(status));
        }
        auth_request::Verdict::Status(status) => return Step::Finalize(status),
    }
    if let Some(realm) = challenge {
        return basic_challenge(request, &realm);
    }
    if let Some(status) = refused {
        return Step::Finalize(status);
    }
    if any && rule == Some(Action::Deny) {
        return forbidden_by_rule(worker, connection, request);
    }
    Step::PreContent
}

/// `auth_delay`: a 401 from the access phase (`auth_basic`, `auth_request`) is answered
/// only once the delay has passed, as nginx delays it against timing attacks.
async fn delay_unauthorized<'a>(
    worker: &HttpWorker,
    request: &Request<'_>,
    step: Step<'a>,
) -> Step<'a> {
    if let Step::Finalize(401 | 407) = step {
        let delay = current_location(worker, request).settings.core.auth_delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
    step
}

fn forbidden_by_rule<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
) -> Step<'a> {
    log(
        worker,
        connection,
        request,
        Level::Error,
        format_args!("access forbidden by rule"),
    );
    Step::Finalize(403)
}

/// `auth_basic`'s 401 with its `WWW-Authenticate`; for a CONNECT request, 407 with
/// `Proxy-Authenticate`, as nginx answers a client that talks to it as to a proxy.
fn basic_challenge<'a>(request: &mut Request<'a>, realm: &[u8]) -> Step<'a> {
    let mut value = b"Basic realm=\"".to_vec();
    value.extend_from_slice(realm);
    value.push(b'"');
    let (name, status): (&'static [u8], u16) = if request.is_proxy_auth() {
        (b"Proxy-Authenticate", 407)
    } else {
        (b"WWW-Authenticate", 401)
    };
    request.response.headers.push((
        crate::kernel::response::Bytes::Borrowed(name),
        crate::kernel::response::Bytes::Owned(value),
    ));
    Step::Finalize(status)
}

/// Phase 6: `try_files`.
async fn precontent<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
) -> Step<'a> {
    let location = current_location(worker, request);
    crate::modules::mirror::record(request, location);
    match try_files::run(worker, connection, request, location).await {
        Ok(TryOutcome::Continue) => Step::Content,
        Ok(TryOutcome::Redirect { uri, args }) => Step::Redirect { uri, args },
        Ok(TryOutcome::Named(name)) => Step::Named(name),
        Ok(TryOutcome::Status(status)) => Step::Finalize(status),
        Err(error) => file_failure(worker, connection, request, &error),
    }
}

/// Whether [`after_response`] has anything to do for `request`: a cheap look, so that the
/// usual request does not make (or box) its future.
pub(crate) fn has_work_after_response(worker: &HttpWorker, request: &Request<'_>) -> bool {
    mirror::pending(request)
        || request.upstream.refresh.is_some()
        || current_location(worker, request)
            .settings
            .core
            .post_action
            .is_some()
}

/// What runs once a request's response is out and logged, whatever the protocol that
/// carried it (nginx's posted subrequests and `post_action`): the mirrors, `post_action`,
/// and the background refresh of a stale cache entry that was just sent
/// (`proxy_cache_background_update`). The client's connection (or stream) waits for them,
/// as nginx's main request waits for its subrequests.
pub(crate) async fn after_response<'a>(
    worker: &'a HttpWorker,
    info: &ConnectionInfo,
    source: &mut BodySource<'_>,
    request: &mut Request<'a>,
) {
    if mirror::pending(request) {
        run_mirrors(worker, info, source.socket(), request).await;
    }
    if let Some(uri) = current_location(worker, request)
        .settings
        .core
        .post_action
        .clone()
    {
        let mut done = BodyState::Done;
        let client = Client {
            info,
            source: source.reborrow(),
            body: &mut done,
        };
        post_action(worker, client, request, uri.into_vec()).await;
    }
    if request.upstream.refresh.is_some() {
        let mut done = BodyState::Done;
        let client = Client {
            info,
            source: source.reborrow(),
            body: &mut done,
        };
        background_update(worker, client, request).await;
        request.upstream.refresh = None;
    }
}

/// `post_action`: once the response is out, the request goes on to the URI as an internal
/// redirect, through every phase; what it answers is discarded.
async fn post_action<'a>(
    worker: &'a HttpWorker,
    client: Client<'_>,
    request: &mut Request<'a>,
    uri: Vec<u8>,
) {
    let (uri, args) = match memchr::memchr(b'?', &uri) {
        Some(at) => (uri[..at].to_vec(), uri[at + 1..].to_vec()),
        None => (uri, Vec::new()),
    };
    request.response.clear();
    request.background = true;
    let reply = run_from(worker, client, request, Step::Redirect { uri, args }).await;
    drop(reply);
}

/// The runner of subrequests that filters are handed (`ssi`'s `include`).
pub(crate) struct Subrequests;

pub(crate) static SUBREQUESTS: Subrequests = Subrequests;

impl SubrequestRunner for Subrequests {
    fn run<'a, 's>(
        &'s self,
        worker: &'a HttpWorker,
        connection: &'s ConnectionInfo,
        socket: &'s runtime::Stream,
        child: Box<Request<'a>>,
    ) -> Pin<Box<dyn Future<Output = Subrequest<'a>> + 's>>
    where
        'a: 's,
    {
        Box::pin(run_subrequest(worker, connection, socket, child))
    }
}

/// A subrequest: the phases from the server rewrite phase, without the request body
/// (nginx's subrequests share the parent's, which SSI's never read), then the body
/// filters a subrequest's body passes (SSI for a nested document). Its head is not sent.
async fn run_subrequest<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    socket: &runtime::Stream,
    mut child: Box<Request<'a>>,
) -> Subrequest<'a> {
    let mut read_ahead = ReadAhead::new(1);
    let mut no_body = BodyState::Done;
    let client = Client {
        info: connection,
        source: BodySource::http1(socket, &mut read_ahead),
        body: &mut no_body,
    };
    let body = match run(worker, client, &mut child).await {
        Reply::Respond(mut body) => {
            let location = current_location(worker, &child);
            // gunzip comes before sub_filter and SSI in nginx's filter order; a subrequest
            // is never sent gzip, so a gzip answer is always decoded for it.
            if crate::modules::gunzip::filter(&mut child, location)
                && let Some(decoded) =
                    crate::kernel::send::pull::Gunzipped::new(std::mem::take(&mut body))
            {
                body = crate::kernel::send::body::Body::Upstream(Box::new(decoded));
            }
            let body =
                crate::modules::sub_filter::filter(worker, connection, &mut child, location, body);
            Some(crate::modules::ssi::filter(
                worker,
                connection,
                &mut child,
                location,
                body,
                &SUBREQUESTS,
            ))
        }
        Reply::Close => None,
    };
    Subrequest {
        request: child,
        body,
    }
}

/// The request's mirrors, once its response is out: their subrequests run together, their
/// answers are read to the end and dropped; each writes its access-log line where
/// `log_subrequest` says. A mirror that fails never touches the client's response.
async fn run_mirrors<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    socket: &runtime::Stream,
    request: &mut Request<'a>,
) {
    let mirrors = mirror::take(request);
    if mirrors.is_empty() {
        return;
    }
    let without_body = !current_location(worker, request)
        .settings
        .mirror
        .request_body;
    let mut runs = Vec::with_capacity(mirrors.len());
    for mirror in mirrors {
        match request.child(mirror.uri, mirror.args) {
            Ok(mut child) => {
                // A mirror keeps the request's method, as nginx's does.
                child.head.method = request.head.method;
                child.method_is_get = request.method_is_get;
                child.without_body = without_body;
                child.background = true;
                runs.push(run_subrequest(worker, connection, socket, Box::new(child)));
            }
            Err(refused) => {
                let message = refused.message(&request.uri);
                log(
                    worker,
                    connection,
                    request,
                    Level::Error,
                    format_args!("{message}"),
                );
            }
        }
    }
    for done in join_runs(runs).await {
        let mut child = done.request;
        if let Some(body) = done.body {
            crate::assembly::send::drain_subrequest(worker, connection, socket, &mut child, body)
                .await;
        }
        if current_location(worker, &child)
            .settings
            .mirror
            .log_subrequest
        {
            crate::assembly::send::log_request_info(worker, connection, &child);
        }
    }
}

/// Runs futures together until all are done, in their order.
async fn join_runs<F: Future>(runs: Vec<F>) -> Vec<F::Output> {
    let mut runs: Vec<Pin<Box<F>>> = runs.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = runs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (run, slot) in runs.iter_mut().zip(done.iter_mut()) {
            if slot.is_none() {
                match run.as_mut().poll(cx) {
                    std::task::Poll::Ready(output) => *slot = Some(output),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// After a stale response went out (`proxy_cache_background_update`): the request goes
/// upstream again from its location, and the answer is read into the cache, not sent.
async fn background_update<'a>(
    worker: &'a HttpWorker,
    mut client: Client<'_>,
    request: &mut Request<'a>,
) {
    let Some(location_id) = request.location else {
        return;
    };
    if let ProxyOutcome::Drain(body) =
        proxy_handler::proxy(worker, &mut client, request, location_id).await
    {
        crate::assembly::send::drain_into_cache(worker, client.info, request, location_id, *body)
            .await;
    }
}

/// A file the request needed could not be used: its line in the error log, then the
/// status the failure says.
fn file_failure<'a>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    error: &crate::kernel::file::io::FileError,
) -> Step<'a> {
    log(
        worker,
        connection,
        request,
        error.level,
        format_args!("{}", error.message),
    );
    Step::Finalize(error.status)
}

/// An internal redirect: the request starts over at the server rewrite phase.
fn internal_redirect<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    server: ServerId,
    uri: Vec<u8>,
    args: Vec<u8>,
) -> Step<'a> {
    request.uri_changes = request.uri_changes.saturating_sub(1);
    if request.uri_changes == 0 {
        let uri = String::from_utf8_lossy(&uri).into_owned();
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!(
                "rewrite or internal redirection cycle while internally redirecting to \"{uri}\""
            ),
        );
        return Step::Finalize(500);
    }
    request.uri = uri;
    request.args = args;
    request.add_uri_to_alias = false;
    request.internal = true;
    request.location = Some(worker.conf().server(server).location);
    Step::ServerRewrite
}

/// An internal redirect to `@name`: its script runs, without a location search.
fn named_location<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    server: ServerId,
    name: Vec<u8>,
) -> Step<'a> {
    let shown = String::from_utf8_lossy(&name).into_owned();
    request.uri_changes = request.uri_changes.saturating_sub(1);
    if request.uri_changes == 0 {
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!(
                "rewrite or internal redirection cycle while redirect to named location \"{shown}\""
            ),
        );
        return Step::Finalize(500);
    }
    let found = worker
        .conf()
        .server(server)
        .named_locations
        .iter()
        .find(|(named, _)| named.as_bytes() == name.as_slice());
    let Some((_, id)) = found else {
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!("could not find named location \"{shown}\""),
        );
        return Step::Finalize(500);
    };
    request.internal = true;
    request.uri_changed = false;
    request.location = Some(*id);
    Step::Rewrite
}

/// nginx's finalize with a status: `444` closes; otherwise an `error_page` for the status
/// (once per request unless `recursive_error_pages`), else Portico's page for it.
fn finalize<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    status: u16,
) -> Step<'a> {
    // nginx terminates the request without a response for 444, 408 and 499.
    if matches!(status, STATUS_CLOSE | 408 | 499) {
        request.response.status = status;
        return Step::Done(Reply::Close);
    }
    request.err_status = status;
    request.discard_body = true;
    let core = &current_location(worker, request).settings.core;
    if !request.error_page && !core.error_page.is_empty() && request.uri_changes != 0 {
        if !core.recursive_error_pages {
            request.error_page = true;
        }
        if let Some(page) = core.error_page.iter().find(|page| page.status == status) {
            return error_page(worker, connection, request, page);
        }
    }
    Step::Done(special_response(worker, request, status))
}

/// Follows an `error_page`.
fn error_page<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    page: &ErrorPage,
) -> Step<'a> {
    if let Some(overwrite) = page.overwrite {
        request.err_status = overwrite;
    }
    let uri = render(worker, connection, request, &page.uri);
    if uri.starts_with(b"/") {
        let (uri, args) = match &page.args {
            Some(args) => (uri, args.to_vec()),
            None => match memchr::memchr(b'?', &uri) {
                Some(question) => (uri[..question].to_vec(), uri[question + 1..].to_vec()),
                None => (uri, Vec::new()),
            },
        };
        if !request.is_head() {
            request.head.method = http1::Method::Get;
            request.method_is_get = true;
        }
        return Step::Redirect { uri, args };
    }
    if uri.starts_with(b"@") {
        return Step::Named(uri);
    }
    let status = match page.overwrite {
        Some(code) if status_is_redirect(code) => code,
        _ => 302,
    };
    request.err_status = status;
    request.response.location = Some(Location { value: uri });
    Step::Done(special_response(worker, request, status))
}

/// `return`: a redirect with `Location`, a text body, an error page, or closing.
fn respond_return<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    status: u16,
    text: Option<&'a HttpTemplate>,
) -> Step<'a> {
    // `return 404;` and `return 404 "";` end with the status page (or an error_page);
    // any status below 400 and any text make a response of their own.
    let empty = text.is_none_or(|template| template.as_literal() == Some(b""));
    if status >= 400 && empty {
        return Step::Finalize(status);
    }
    request.discard_body = true;
    if status_is_redirect(status) {
        let value = text
            .map(|template| render(worker, connection, request, template))
            .unwrap_or_default();
        request.response.location = Some(Location { value });
        return Step::Finalize(status);
    }
    let body = match text {
        None => Bytes::Borrowed(b""),
        // A literal text is sent straight from the configuration, without a copy.
        Some(template) => match template.as_literal() {
            Some(literal) => Bytes::Borrowed(literal),
            None => Bytes::Owned(render(worker, connection, request, template)),
        },
    };
    let location = current_location(worker, request);
    request.response.status = status;
    // A type set before (an `X-Accel-Redirect` response's) is kept, as nginx keeps it.
    if request.response.content_type.is_none() {
        request.response.content_type = Some(static_handler::content_type(location, &request.uri));
    }
    Step::Done(Reply::Respond(Body::Bytes(body)))
}
