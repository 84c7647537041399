//! What Portico shows about itself beyond `stub_status`: the Prometheus endpoint
//! (`portico_metrics`), the read-only NGINX Plus API (`api`) and the live status page
//! (`portico_status_page`: one HTML file compiled in, which reads the exposition from its
//! own location with `?metrics`). Both are rendered on the
//! worker's `default` pool from the process's counters ([`metrics::GLOBAL`]) and the
//! serving generation's pools and upstream groups, so a scrape never holds a worker's loop.

pub mod api;
pub mod directives;
pub mod prometheus;
pub mod settings;
pub(crate) mod zones;

use std::sync::Arc;

use crate::kernel::file::io::FileError;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;
use crate::kernel::worker::HttpWorker;

/// Which endpoint a location serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Metrics,
    Api,
    StatusPage,
}

/// The status page: self-contained (no external resource), it polls `?metrics` each second.
const STATUS_PAGE: &[u8] = include_bytes!("status_page.html");

/// How an endpoint answered.
pub(crate) enum Outcome<'a> {
    Respond(Body<'a>),
    /// End with this status (405 for a method the endpoint does not take, 404).
    Status(u16),
    /// The rendering could not run (the pool's queue was full): logged, then the status.
    Failed(FileError),
}

/// The content handler of a `portico_metrics` or `api` location.
pub(crate) async fn respond<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    endpoint: Endpoint,
) -> Outcome<'a> {
    let method = request.head.method;
    if !matches!(method, http1::Method::Get | http1::Method::Head) {
        return Outcome::Status(405);
    }
    request.discard_body = true;
    let generation = Arc::clone(&worker.generation);
    let endpoint = match endpoint {
        Endpoint::StatusPage if request.args.as_slice() != b"metrics" => {
            request.response.status = 200;
            request.response.content_type = Some(Bytes::Borrowed(b"text/html; charset=utf-8"));
            return Outcome::Respond(Body::Bytes(Bytes::Borrowed(STATUS_PAGE)));
        }
        Endpoint::StatusPage => Endpoint::Metrics,
        other => other,
    };
    let rendered = match endpoint {
        Endpoint::Metrics | Endpoint::StatusPage => {
            let accept = request.headers(b"accept").next().unwrap_or_default();
            let format = metrics::exposition::Format::from_accept(accept);
            let text = worker
                .offload(threadpool::TaskKind::Other, move || {
                    prometheus::render(&generation, format)
                })
                .await;
            text.map(|text| Ok((format.content_type().as_bytes(), text.into_bytes())))
        }
        Endpoint::Api => {
            let path = api::path_of(&request.uri);
            let at = api::At {
                unix_seconds: worker.clock.wall().unix_seconds,
                address: connection
                    .local
                    .map_or_else(|| "unix:".to_owned(), |local| local.ip().to_string()),
            };
            let json = worker
                .offload(threadpool::TaskKind::Other, move || {
                    api::render(&generation, &path, &at)
                })
                .await;
            json.map(|json| json.map(|json| (&b"application/json"[..], json.into_bytes())))
        }
    };
    match rendered {
        Ok(Ok((content_type, body))) => {
            request.response.status = 200;
            request.response.content_type = Some(Bytes::Borrowed(content_type));
            Outcome::Respond(Body::Bytes(Bytes::Owned(body)))
        }
        Ok(Err(status)) => Outcome::Status(status),
        Err(error) => Outcome::Failed(error),
    }
}
