//! Phase 7, content: the location's handler (the proxy, the static handler and the
//! modules that stand in for it), and what each one's answer makes of the request.

use super::{Step, file_failure};
use crate::kernel::client::Client;
use crate::kernel::conf::LocationId;
use crate::kernel::conf::scope::Content;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::{Bytes, Location};
use crate::kernel::send::body::Body;
use crate::kernel::special::Reply;
use crate::kernel::worker::HttpWorker;
use crate::modules::dav;
use crate::modules::observe::{self, Endpoint};
use crate::modules::proxy::handler::{self as proxy_handler, ProxyOutcome};
use crate::modules::static_files::content::serve_static;
use crate::modules::static_files::handler::{self as static_handler, StaticOutcome};

/// Phase 7: the proxy or the static handler.
pub(super) async fn content<'a>(
    worker: &'a HttpWorker,
    client: &mut Client<'_>,
    request: &mut Request<'a>,
) -> Step<'a> {
    let Some(location_id) = request.location else {
        return Step::Finalize(500);
    };
    if request.proxy_handler_orphaned {
        return Step::Finalize(500);
    }
    match worker.conf().location(location_id).settings.content {
        Content::Proxy | Content::Gateway(_) => {
            proxy_content(worker, client, request, location_id).await
        }
        Content::Static => {
            if dav::handles(worker.conf().location(location_id), request) {
                return dav_content(worker, client, request, location_id).await;
            }
            if let Some(step) = random_index(worker, client.info, request, location_id).await {
                return step;
            }
            static_content(worker, client.info, request, location_id).await
        }
        Content::StubStatus => match crate::modules::stub_status::respond(request) {
            Ok(body) => Step::Done(Reply::Respond(body)),
            Err(status) => Step::Finalize(status),
        },
        Content::EmptyGif => match crate::modules::empty_gif::respond(request) {
            Ok(body) => Step::Done(Reply::Respond(body)),
            Err(status) => Step::Finalize(status),
        },
        Content::Flv => flv_content(worker, client.info, request, location_id).await,
        Content::Metrics => observe_content(worker, client.info, request, Endpoint::Metrics).await,
        Content::Api => observe_content(worker, client.info, request, Endpoint::Api).await,
        Content::StatusPage => {
            observe_content(worker, client.info, request, Endpoint::StatusPage).await
        }
    }
}

/// WebDAV's content handler, for a method `dav_methods` names; boxed, as its file work
/// is not part of every request's future.
async fn dav_content<'a>(
    worker: &'a HttpWorker,
    client: &mut Client<'_>,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> Step<'a> {
    let location = worker.conf().location(location_id);
    match Box::pin(dav::handle(worker, client, request, location)).await {
        dav::Outcome::Declined => static_content(worker, client.info, request, location_id).await,
        dav::Outcome::Respond(_) => Step::Done(Reply::Respond(Body::Bytes(Bytes::Borrowed(b"")))),
        dav::Outcome::Failed(error) => file_failure(worker, client.info, request, &error),
        dav::Outcome::Status(status) => Step::Finalize(status),
    }
}

/// The metrics endpoint's and the API's content handler.
async fn observe_content<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    endpoint: Endpoint,
) -> Step<'a> {
    match Box::pin(observe::respond(worker, connection, request, endpoint)).await {
        observe::Outcome::Respond(body) => Step::Done(Reply::Respond(body)),
        observe::Outcome::Status(status) => Step::Finalize(status),
        observe::Outcome::Failed(error) => file_failure(worker, connection, request, &error),
    }
}

/// The proxy's content handler.
async fn proxy_content<'a>(
    worker: &'a HttpWorker,
    client: &mut Client<'_>,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> Step<'a> {
    // Boxed, as the other heavy handlers: their state is not part of every request's; made
    // in its box, not copied there (3 KiB).
    match runtime::sys::boxed::pin_boxed(|| {
        proxy_handler::proxy(worker, client, request, location_id)
    })
    .await
    {
        ProxyOutcome::Respond(body) => Step::Done(Reply::Respond(body)),
        ProxyOutcome::Finalize(status) => Step::Finalize(status),
        ProxyOutcome::Redirect { uri, args } => Step::Redirect { uri, args },
        ProxyOutcome::Named(name) => Step::Named(name),
        // Only a background refresh asks for this, and it does not run the phases.
        ProxyOutcome::Drain(_) => Step::Finalize(500),
    }
}

/// The static handlers' content phase.
async fn static_content<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> Step<'a> {
    match serve_static(worker, connection, request, location_id).await {
        Ok(StaticOutcome::Respond { status, body }) => {
            if status >= 300 || matches!(body, Body::Empty) && status != 200 {
                return Step::Finalize(status);
            }
            request.response.status = status;
            Step::Done(Reply::Respond(body))
        }
        Ok(StaticOutcome::AddSlash) => {
            let value = static_handler::directory_location(request);
            request.response.location = Some(Location { value });
            Step::Finalize(301)
        }
        Ok(StaticOutcome::Redirect(uri)) => Step::Redirect {
            uri,
            args: request.args.clone(),
        },
        Err(error) => file_failure(worker, connection, request, &error),
    }
}

/// `flv`: the static handler's file, from `?start=` behind the FLV header. Only GET and
/// HEAD (405 otherwise, as nginx's handler); a directory URI is the static handler's.
async fn flv_content<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> Step<'a> {
    if !matches!(
        request.head.method,
        http1::Method::Get | http1::Method::Head
    ) {
        return Step::Finalize(405);
    }
    let step = static_content(worker, connection, request, location_id).await;
    match step {
        Step::Done(Reply::Respond(body))
            if request.response.status == 200 && !request.uri.ends_with(b"/") =>
        {
            Step::Done(Reply::Respond(crate::modules::flv::from_start(
                request, body,
            )))
        }
        other => other,
    }
}

/// `random_index`: before the static handler, as nginx's handler runs before the index
/// module's; `None` when it declines.
async fn random_index<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> Option<Step<'a>> {
    let location = worker.conf().location(location_id);
    if !location.settings.random_index.random_index {
        return None;
    }
    match crate::modules::random_index::choose(worker, connection, request, location).await {
        Ok(crate::modules::random_index::Choice::Declined) => None,
        Ok(crate::modules::random_index::Choice::Redirect(uri)) => Some(Step::Redirect {
            uri,
            args: request.args.clone(),
        }),
        Err(error) => Some(file_failure(worker, connection, request, &error)),
    }
}
