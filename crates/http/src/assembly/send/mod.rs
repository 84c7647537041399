//! Sending a response: the keep-alive decision, the filters in nginx's order (not
//! modified, headers, charset, range, chunked), the head, the body (memory, a file, pieces,
//! or a proxied body), and the access-log line at the end. This is the assembly's one place
//! that lists the filters; a new filter is one call here at its place in that order.

mod filters;

use std::io;
use std::time::Instant;

use http1::Version;
use http1::request::ConnectionOption;

use crate::assembly::connection::Connection;
use crate::kernel::client::ResponseSink;
use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::status_has_body;
use crate::kernel::send::body::{self, Body};
use crate::kernel::send::framing::{Framing, FramingInput, response_framing};
use crate::kernel::send::{coding, compress, head, pull};
use crate::kernel::variables::RequestVariables;
use crate::kernel::worker::HttpWorker;
use crate::modules::not_modified::Outcome;
use crate::modules::proxy::send::upstream as proxy_send;
use crate::modules::range as ranges;
use crate::{kernel::special, modules::charset};

/// The head buffer is kept for the connection's next request up to this capacity.
const OUT_BUFFER_KEPT_BYTES_MAX: usize = 64 * 1024;

fn location<'a>(worker: &'a HttpWorker, request: &Request<'_>) -> &'a Location {
    let conf = worker.conf();
    let id = request
        .location
        .or_else(|| request.server.map(|server| conf.server(server).location))
        .unwrap_or(crate::kernel::conf::LocationId(0));
    conf.location(id)
}

/// Whether the connection may serve another request after this one, as nginx decides.
pub(crate) fn keepalive_allowed(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
) -> bool {
    // An upgraded connection is the tunnel's until it ends; nginx keeps no CONNECT
    // connection alive, tunnelled or refused.
    if request.response.status == 101 || request.head.method == http1::Method::Connect {
        return false;
    }
    let wanted = match request.info.connection {
        ConnectionOption::Close => false,
        ConnectionOption::KeepAlive => request.head.version >= Version::Http10,
        ConnectionOption::Default | ConnectionOption::Upgrade => {
            request.head.version == Version::Http11
        }
    };
    if !wanted || !worker.is_running() {
        return false;
    }
    let core = &location(worker, request).settings.core;
    let browser = request.info.browser;
    if core.keepalive_timeout.timeout.is_zero()
        || connection.requests >= core.keepalive_requests
        || request.started.is_some_and(|now| {
            now.saturating_duration_since(connection.accepted) > core.keepalive_time
        })
        || (core.keepalive_disable.msie6
            && browser.msie6
            && request.head.method == http1::Method::Post)
        || (core.keepalive_disable.safari && browser.safari)
    {
        return false;
    }
    !(request.response.special && special::status_closes_connection(request.response.status))
}

/// Sends the response: the header filters in nginx's order (not modified, headers,
/// chunked), the head, then the body. `Err` means the connection is broken or timed out.
pub(crate) async fn send_response<'a>(
    worker: &'a HttpWorker,
    connection: &mut Connection,
    request: &mut Request<'a>,
    body: Body<'a>,
) -> io::Result<()> {
    let mut out = std::mem::take(&mut connection.out);
    out.clear();
    let sink = ResponseSink::http1(&connection.stream);
    let result = send_response_to(worker, &connection.info, sink, &mut out, request, body).await;
    // A large body may have grown the buffer; keep only a modest one for the next request.
    if out.capacity() <= OUT_BUFFER_KEPT_BYTES_MAX {
        connection.out = out;
    }
    result
}

/// [`send_response_to`] a framed stream's sink (HTTP/2, HTTP/3): a request whose handler
/// left the rest of its body to go on beside the response (a bidirectional gRPC call's
/// `body_relay`) has it pumped from `source` while the response is sent.
pub(crate) async fn send_framed_response<'a>(
    worker: &'a HttpWorker,
    info: &ConnectionInfo,
    sink: ResponseSink<'_>,
    request: &mut Request<'a>,
    body: Body<'a>,
    source: crate::kernel::client::BodySource<'_>,
    body_state: &mut crate::kernel::body::BodyState,
) -> io::Result<()> {
    let mut out = Vec::new();
    let Some(relay) = request.body_relay.take() else {
        return send_response_to(worker, info, sink, &mut out, request, body).await;
    };
    let mut source = source;
    let send = send_response_to(worker, info, sink, &mut out, request, body);
    let sent = Box::pin(crate::kernel::body::relay::send_beside(
        send,
        &mut source,
        body_state,
        &relay,
    ))
    .await;
    request.length += relay.received();
    sent
}

/// [`send_response`] to any sink: `out` is the (empty) buffer the head is written into.
/// A framed sink (an HTTP/2 stream) gets no chunked framing: it frames the body itself.
pub(crate) async fn send_response_to<'a>(
    worker: &'a HttpWorker,
    info: &ConnectionInfo,
    sink: ResponseSink<'_>,
    out: &mut Vec<u8>,
    request: &mut Request<'a>,
    mut body: Body<'a>,
) -> io::Result<()> {
    let location = location(worker, request);
    let core = &location.settings.core;
    let mut outcome = Outcome::Unchanged;
    if request.response.status == 200 && !request.response.disable_not_modified {
        (body, outcome) = filters::not_modified(worker, request, location, body);
    }
    // One reading of the clock for `Date` and `Expires`, as nginx's cached time.
    let now = worker.clock.wall();
    filters::headers(worker, info, request, location, &now);
    let userid = &location.settings.userid;
    if userid.mode != crate::modules::userid::settings::Mode::Off {
        let variables = crate::kernel::variables::RequestVariables::of(worker, info, request);
        let fields = crate::modules::userid::filter(&variables, userid);
        crate::modules::userid::apply(request, fields);
    }
    // The headers filter decides on trailers before the range filter changes the status.
    let status = special::status_on_wire(request.response.status);
    let expect_trailers = location.settings.headers.expects_trailers(status);
    // sub_filter, then SSI, take the body in before charset and gzip see it, as nginx's
    // filter order has it.
    // Each filter is called only where its directives are set (the body is not moved
    // through the others).
    let settings = &location.settings;
    if !settings.sub_filter.substitutions.is_empty() {
        body = crate::modules::sub_filter::filter(worker, info, request, location, body);
    }
    if settings.ssi.ssi {
        body = crate::modules::ssi::filter(
            worker,
            info,
            request,
            location,
            body,
            &crate::assembly::phases::SUBREQUESTS,
        );
    }
    // addition wraps the (parsed) body in its subrequests' bodies.
    if settings.addition.before_body.is_some() || settings.addition.after_body.is_some() {
        body = crate::modules::addition::filter(
            worker,
            info,
            request,
            location,
            body,
            &crate::assembly::phases::SUBREQUESTS,
        );
    }
    // Then gunzip, charset and gzip, as in nginx; their codings of the body are gathered
    // in `coding`, applied as the body goes out. gzip rules ranges out; a single range of a
    // proxied body is cut out as it passes when the proxy allows ranges (a stored or
    // `proxy_force_ranges` one).
    let mut coding = coding::Coding::default();
    let codable = match &body {
        Body::Upstream(streamed) => streamed.takes_codings(),
        _ => true,
    };
    if codable && crate::modules::gunzip::filter(request, location) {
        coding.gunzip = Some(Box::default());
    }
    if matches!(body, Body::Upstream(_)) {
        body = charset_filter(worker, info, request, location, body, &mut coding)?;
        if codable && let Some(level) = crate::modules::gzip::filter(request, location, None).level
        {
            coding.gzip = Some(Box::new(compress::Compressor::new(level)));
        }
        if request.response.accept_ranges {
            (body, _) = ranges::filter(worker, info, request, location, body);
        }
    } else {
        body = charset_filter(worker, info, request, location, body, &mut coding)?;
        // A body recoded by pieces is sent as it is.
        if !matches!(body, Body::Pieces(_))
            && let Some(level) = crate::modules::gzip::filter(request, location, body.len()).level
        {
            coding.gzip = Some(Box::new(compress::Compressor::new(level)));
        }
        body = coded(body, &mut coding);
        let range;
        (body, range) = ranges::filter(worker, info, request, location, body);
        if range == ranges::RangeOutcome::NotSatisfiable {
            // The 416 page goes through the charset filter in turn, as nginx's error page
            // does, and is recoded as the file would have been.
            request.response.charset = None;
            body = charset_filter(worker, info, request, location, body, &mut coding)?;
        }
    }
    charset::fold_into_content_type(&mut request.response);
    let status = special::status_on_wire(request.response.status);
    let header_only = request.is_head() || !status_has_body(request.response.status);
    if request.response.content_length.is_none() && status_has_body(request.response.status) {
        request.response.content_length = body.len();
    }
    let mut framing = response_framing(&FramingInput {
        version: request.head.version,
        method: request.head.method,
        status,
        content_length: request.response.content_length,
        expect_trailers,
        chunked_transfer_encoding: core.chunked_transfer_encoding,
    });
    match framing {
        Framing::Length => {}
        Framing::Chunked => request.response.content_length = None,
        Framing::Close => request.keepalive = false,
    }
    // A framed sink (HTTP/2) frames the body itself: no chunks, and no content length
    // when HTTP/1.1 would have chunked it.
    if sink.is_framed() && framing == Framing::Chunked {
        framing = Framing::Close;
    }
    match sink.framed_sink() {
        // A framed sink (HTTP/2) takes the head as fields; HTTP/1 writes it as text in
        // front of the body (HTTP/0.9 has none).
        Some(framed) => {
            if let Body::Upstream(streamed) = &body
                && streamed.may_have_trailers()
            {
                framed.trailers_may_follow();
            }
            let mut fields = framed.spare_fields();
            head::write_head(
                worker,
                info,
                request,
                location,
                framing,
                now.unix_seconds,
                &mut fields,
            );
            request.sent.header_bytes = framed.head(fields) as u64;
        }
        None if request.head.version != Version::Http09 => {
            head::write_head(
                worker,
                info,
                request,
                location,
                framing,
                now.unix_seconds,
                &mut head::Text(out),
            );
            request.sent.header_bytes = out.len() as u64;
        }
        None => {}
    }
    if outcome == Outcome::PreconditionFailed {
        // nginx's header filter answers 412 by ending the request with an error once the
        // page is out: the connection closes although the head said keep-alive.
        request.keepalive = false;
    }
    let limit = filters::limit_rate(worker, info, request, location);
    let context = body::BodyContext {
        worker,
        connection: info,
        location,
        framing,
        header_only,
        expect_trailers,
        coding: std::cell::Cell::new(coding),
    };
    let mut output = body::Output::new(sink, &worker.clock, core.send_timeout, limit);
    let result = match body {
        Body::Upstream(streamed) => streamed.send(&context, &mut output, request, out).await,
        body => body::send(&context, &mut output, request, body, out).await,
    };
    // A framed sink (HTTP/2) gets the trailers as fields after the body: `add_trailer`'s,
    // and the upstream's (a gRPC response's), which go out whenever there are some.
    let has_trailers = expect_trailers || !request.response.trailers.is_empty();
    if let (Ok(()), Some(framed), true) = (&result, sink.framed_sink(), has_trailers) {
        let mut fields = crate::kernel::response::FieldList::default();
        head::write_trailers(worker, info, request, location, &mut fields);
        framed.trailers(fields);
    }
    request.sent.body_bytes = match sink.is_framed() {
        // A framed sink counts only body bytes: its head went aside.
        true => output.sent,
        false => output.sent.saturating_sub(request.sent.header_bytes),
    };
    if result.is_ok() {
        request.completed = true;
    }
    result
}

/// A background refresh's proxied body, read into the cache and not sent.
pub(crate) async fn drain_into_cache<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location_id: crate::kernel::conf::LocationId,
    body: crate::modules::proxy::body::UpstreamBody<'a>,
) {
    let context = body::BodyContext {
        worker,
        connection,
        location: worker.conf().location(location_id),
        framing: Framing::Length,
        header_only: false,
        expect_trailers: false,
        coding: std::cell::Cell::default(),
    };
    proxy_send::drain_detached(&context, request, body).await;
}

/// A body in memory or in a file that has codings to go through, as a body that codes
/// itself on the way; any other body as it is (a streamed one takes its codings from the
/// body context).
fn coded<'a>(body: Body<'a>, coding: &mut coding::Coding) -> Body<'a> {
    if coding.is_empty() {
        return body;
    }
    match body {
        Body::Empty => Body::Upstream(Box::new(compress::CodedBytes {
            data: Vec::new(),
            coding: std::mem::take(coding),
        })),
        Body::Bytes(bytes) => Body::Upstream(Box::new(compress::CodedBytes {
            data: bytes.as_slice().to_vec(),
            coding: std::mem::take(coding),
        })),
        Body::File(file) => Body::Upstream(Box::new(compress::CodedFile {
            file,
            coding: std::mem::take(coding),
        })),
        other => other,
    }
}

/// The charset filter; a charset variable that is not found ends the request without a
/// response, as nginx's filter error does.
#[inline]
fn charset_filter<'a>(
    worker: &'a HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &Location,
    body: Body<'a>,
    coding: &mut coding::Coding,
) -> io::Result<Body<'a>> {
    // Without `charset` or an `X-Accel-Charset`, the body is not moved through the filter.
    if request.response.override_charset.is_none()
        && location.settings.charset.charset == charset::settings::CharsetName::Off
    {
        return Ok(body);
    }
    charset::filter(worker, info, request, location, body, coding)
        .map_err(|_| io::Error::other("charset variable not found"))
}

/// A subrequest's body nobody receives (a mirror's): read to the end and dropped, so a
/// proxied one completes (and its connection may be kept).
pub(crate) async fn drain_subrequest<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    socket: &runtime::Stream,
    child: &mut Request<'a>,
    body: Body<'a>,
) {
    let Some(mut puller) = pull::Puller::new(body) else {
        return;
    };
    let context = body::BodyContext {
        worker,
        connection,
        location: location(worker, child),
        framing: Framing::Length,
        header_only: false,
        expect_trailers: false,
        coding: std::cell::Cell::default(),
    };
    let mut piece = Vec::new();
    loop {
        piece.clear();
        match puller.next(&context, socket, child, &mut piece).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
    }
}

/// The log phase: the access-log line(s) of the request's location.
pub(crate) fn log_request(worker: &HttpWorker, connection: &Connection, request: &Request<'_>) {
    log_request_info(worker, &connection.info, request);
}

/// [`log_request`] for a request that is not the connection's own (a subrequest).
pub(crate) fn log_request_info(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
) {
    let location = location(worker, request);
    crate::modules::observe::zones::record(worker, location, request);
    let zone = request
        .upstream
        .cache_zone
        .and_then(|index| worker.generation.cache_zones.get(index));
    if let (Some(zone), Some(status)) = (zone, request.upstream.cache_status) {
        zone.stats().record(status, request.sent.body_bytes);
    }
    let settings = &location.settings.access_log;
    let targets = &settings.access_log;
    if targets.is_empty() || settings.access_log_off {
        return;
    }
    let now = worker.clock.now();
    let variables = RequestVariables::new(
        request,
        connection,
        worker.conf(),
        now,
        &worker.generation.hostname,
    );
    let deferred = crate::modules::log::access::log(
        &mut worker.log_buffers.borrow_mut(),
        targets,
        &variables,
        &now,
    );
    for line in deferred {
        write_path_line(worker, connection, location, line);
    }
    report_log_failures(location, targets, connection.id, &now.wall);
}

/// A failed write of an access-log file (found by the log writer, which knows no request)
/// is reported through this request's error log, at `alert` and at most once a minute per
/// file, in nginx's words: `write() to "/var/log/access.log" failed (28: No space left on
/// device)`. One atomic load per file when nothing failed.
fn report_log_failures(
    location: &Location,
    targets: &[crate::modules::log::AccessLogTarget],
    connection: u64,
    now: &logging::time::Timestamp,
) {
    for target in targets {
        let crate::modules::log::LogPath::File(file) = &target.path else {
            continue;
        };
        let Some(error) = file.take_failure(now.unix_seconds) else {
            continue;
        };
        let error_log = &location.settings.core.error_log;
        if error_log.enabled(logging::Level::Alert) {
            let name = file.name();
            error_log.write(
                logging::Level::Alert,
                now,
                Some(connection),
                format_args!(
                    "write() to \"{name}\" failed ({})",
                    crate::kernel::request_log::errno_text(&error)
                ),
                None,
            );
        }
    }
}

/// A line for a log whose path has variables: appended on the `default` pool (the file
/// opened, written and closed there, never on the loop; or written through the descriptor
/// `open_log_file_cache` kept). A failure is logged at `crit` as
/// nginx logs it, and the line is lost, as in nginx.
fn write_path_line(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    location: &Location,
    line: crate::modules::log::access::PathLine,
) {
    let pool = worker.pools.default_pool().clone();
    let error_log = std::sync::Arc::clone(&location.settings.core.error_log);
    let clock = worker.clock.clone();
    let id = connection.id;
    let order = std::rc::Rc::clone(&worker.log_buffers.borrow().path_lines);
    let generation = std::sync::Arc::clone(&worker.generation);
    let pending = std::rc::Rc::clone(&worker.log_buffers.borrow().path_pending);
    pending.count.set(pending.count.get() + 1);
    let cache = location.settings.access_log.open_log_file_cache.clone();
    tokio::task::spawn_local(runtime::clock::turn_clocked(async move {
        use crate::kernel::log_buffers::PathUse;
        let _counted = Written(pending);
        // Local tasks start in the order they were spawned and the lock is fair, so lines
        // keep the order in which the worker logged them.
        let _turn = order.lock().await;
        let path = line.path.clone();
        let path_use = match &cache {
            Some(cache) => lock_files(&generation).use_path(cache, &path, Instant::now()),
            None => PathUse::Open { keep: false },
        };
        let result =
            crate::kernel::worker::offload_to(&pool, threadpool::TaskKind::Write, move || {
                use std::io::Write;
                match path_use {
                    PathUse::Kept(file) => (&*file).write_all(&line.line).map(|()| None),
                    PathUse::Open { keep } => {
                        let mut file = crate::kernel::pool_fs::open_append(&line.path)?;
                        file.write_all(&line.line)?;
                        Ok(keep.then(|| std::sync::Arc::new(file)))
                    }
                }
            })
            .await;
        let message = match result {
            Ok(Ok(kept)) => {
                if let Some(cache) = &cache {
                    lock_files(&generation).opened(cache, &path, kept, Instant::now());
                }
                return;
            }
            Ok(Err(error)) => format!(
                "open() \"{}\" failed ({})",
                path.display(),
                crate::kernel::request_log::errno_text(&error)
            ),
            Err(error) => error.message,
        };
        if error_log.enabled(logging::Level::Crit) {
            error_log.write(
                logging::Level::Crit,
                &clock.wall(),
                Some(id),
                format_args!("{message}"),
                None,
            );
        }
    }));
}

/// The configuration's kept log descriptors; a poisoned lock (a panic elsewhere while it
/// was held) leaves the map usable.
fn lock_files(
    generation: &crate::kernel::worker::Generation,
) -> std::sync::MutexGuard<'_, crate::kernel::log_buffers::PathFiles> {
    generation
        .log_files
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Takes a line off the pending count when its task ends, written or not.
struct Written(std::rc::Rc<crate::kernel::log_buffers::PathPending>);

impl Drop for Written {
    fn drop(&mut self) {
        let left = self.0.count.get().saturating_sub(1);
        self.0.count.set(left);
        if left == 0 {
            self.0.done.notify_waiters();
        }
    }
}
