//! The proxy handler's request body: read from the client (or `proxy_set_body`) for the
//! upstream, and the errors a body read ends with.

use std::sync::atomic::AtomicU64;

use logging::Level;

use crate::kernel::body::reader::{BodySettings, read_body};
use crate::kernel::body::temp::RequestBody;
use crate::kernel::client::Client as RequestClient;
use crate::kernel::conf::Location;
use crate::kernel::request::Request;
use crate::kernel::request_log::log;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::exchange::OutBody;

/// Temporary files for request bodies are numbered across the process.
static TEMP_NUMBERS: AtomicU64 = AtomicU64::new(0);

/// Reads the client's body for the upstream (or the `proxy_set_body` text instead).
pub(super) async fn read_request_body(
    worker: &HttpWorker,
    client: &mut RequestClient<'_>,
    request: &mut Request<'_>,
    location: &Location,
) -> Result<OutBody, u16> {
    let proxy = &location.settings.proxy;
    if let Some(template) = &proxy.set_body {
        return Ok(OutBody::Memory(render(
            worker,
            client.info,
            request,
            template,
        )));
    }
    if !proxy.pass_request_body {
        return Ok(OutBody::None);
    }
    // A subrequest sends the body its parent read into memory (a mirror's copy), if any.
    if request.is_subrequest() {
        return Ok(match &request.body {
            Some(RequestBody::Memory(bytes)) if !request.without_body => {
                OutBody::Memory(bytes.clone())
            }
            _ => OutBody::None,
        });
    }
    // Read already, for a location before an internal redirect (`error_page` to a named
    // location that proxies again): the same body goes to this upstream.
    if request.body_length.is_some() {
        return Ok(body_read_before(request));
    }
    let has_body =
        !client.body.is_done() || request.info.framing != http1::request::BodyFraming::None;
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
            client.info,
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
        && client.source.buffered().is_empty()
    {
        let _ = client.source.send_continue(settings.timeout).await;
    }
    let chunked = request.info.framing == http1::request::BodyFraming::Chunked;
    // A chunked body is passed on as it comes in HTTP/1.1's chunks or FastCGI's records.
    let framed = proxy.http_11
        || proxy.protocol == crate::modules::proxy::gateway::settings::Protocol::Fastcgi;
    if !proxy.request_buffering && (!chunked || framed) {
        let length = match request.info.framing {
            http1::request::BodyFraming::Length(length) => Some(length),
            _ => None,
        };
        return Ok(OutBody::Stream { chunked, length });
    }
    let result = read_body(
        &mut client.source,
        client.body,
        &settings,
        worker.pools.default_pool(),
        &TEMP_NUMBERS,
        false,
    )
    .await;
    match result {
        Ok(body) => Ok(keep_request_body(request, body)),
        Err(error) => Err(crate::kernel::body::failure::body_failed(
            worker,
            client.info,
            request,
            client.body,
            error,
        )),
    }
}

/// A body read whole goes upstream, and stays with the request for `$request_body` and
/// `$request_body_file`.
fn keep_request_body(request: &mut Request<'_>, body: RequestBody) -> OutBody {
    request.length += body.len();
    request.body_length = Some(body.len());
    match body {
        RequestBody::Memory(bytes) => {
            request.body = Some(RequestBody::Memory(bytes.clone()));
            OutBody::Memory(bytes)
        }
        RequestBody::File(file) => {
            request.body_file = Some(file.path.clone());
            let out = file.shared();
            request.body = Some(RequestBody::File(file));
            OutBody::File(out)
        }
    }
}

/// The body a handler read before, as the request keeps it.
#[cold]
fn body_read_before(request: &Request<'_>) -> OutBody {
    match &request.body {
        Some(RequestBody::Memory(bytes)) => OutBody::Memory(bytes.clone()),
        Some(RequestBody::File(file)) => OutBody::File(file.shared()),
        None => OutBody::None,
    }
}
