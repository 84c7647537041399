//! The request phases in nginx's order. This file is the one place that lists them:
//!
//! 1. server rewrite: the server level's `return`;
//! 2. find config: the location for `$uri`, and `client_max_body_size`;
//! 3. rewrite: the location's `return`;
//! 4. content: the static handler (`root`/`alias`, `index`);
//! 5. log: written by the connection once the response is sent.
//!
//! An internal redirect (from `index`) goes back to find config, at most ten times.

use std::sync::Arc;

use logging::Level;

use crate::conf::location;
use crate::conf::{LocationId, ServerId};
use crate::request::{ConnectionInfo, Request};
use crate::response::{Body, Bytes, Location};
use crate::rewrite::{RewriteOutcome, STATUS_CLOSE, status_is_redirect};
use crate::special;
use crate::static_files::handler::{self as static_handler, Opened, StaticOutcome};
use crate::variables::{HttpTemplate, RequestVariables};
use crate::worker::HttpWorker;

/// How the request ends.
#[derive(Debug)]
pub enum Reply<'a> {
    /// Send `request.response` with this body.
    Respond(Body<'a>),
    /// `return 444`: close without a response.
    Close,
}

/// nginx's limit on internal redirects and URI rewrites per request.
pub const REDIRECTS_MAX: u8 = 10;

/// Runs the phases for a request whose server is chosen.
pub async fn run<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
) -> Reply<'a> {
    let conf = worker.conf();
    let Some(server_id) = request.server else {
        return finalize_status(worker, connection, request, 500);
    };
    let server = conf.server(server_id);
    let server_location = conf.location(server.location);
    request.location = Some(server.location);
    if let RewriteOutcome::Return { status, text } = server_location.settings.rewrite.run() {
        return respond_return(worker, connection, request, status, text);
    }
    loop {
        let location_id = find_config(worker, server_id, request);
        let location = conf.location(location_id);
        let limit = location.settings.core.client_max_body_size;
        if let http1::request::BodyFraming::Length(length) = request.info.framing
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
            return finalize_status(worker, connection, request, 413);
        }
        if let RewriteOutcome::Return { status, text } = location.settings.rewrite.run() {
            return respond_return(worker, connection, request, status, text);
        }
        match serve_static(worker, connection, request, location_id).await {
            Ok(StaticOutcome::Respond { status, body }) => {
                if status >= 300 || matches!(body, Body::Empty) && status != 200 {
                    return finalize_status(worker, connection, request, status);
                }
                request.response.status = status;
                return Reply::Respond(body);
            }
            Ok(StaticOutcome::AddSlash) => {
                let mut value = request.uri.clone();
                value.push(b'/');
                if !request.args.is_empty() {
                    value.push(b'?');
                    value.extend_from_slice(&request.args);
                }
                request.response.location = Some(Location { value });
                return finalize_status(worker, connection, request, 301);
            }
            Ok(StaticOutcome::Redirect(uri)) => {
                request.redirects += 1;
                if request.redirects > REDIRECTS_MAX {
                    let uri_text = String::from_utf8_lossy(&uri).into_owned();
                    log(
                        worker,
                        connection,
                        request,
                        Level::Error,
                        format_args!(
                            "rewrite or internal redirection cycle while internally redirecting to \"{uri_text}\""
                        ),
                    );
                    return finalize_status(worker, connection, request, 500);
                }
                request.uri = uri;
            }
            Err(error) => {
                if worker_error_enabled(worker, request, error.level) {
                    log(
                        worker,
                        connection,
                        request,
                        error.level,
                        format_args!("{}", error.message),
                    );
                }
                return finalize_status(worker, connection, request, error.status);
            }
        }
    }
}

fn worker_error_enabled(worker: &HttpWorker, request: &Request<'_>, level: Level) -> bool {
    match request.location {
        Some(location) => worker
            .conf()
            .location(location)
            .settings
            .core
            .error_log
            .enabled(level),
        None => worker.generation.error_log.enabled(level),
    }
}

/// Finds the location for the current `$uri`.
fn find_config(worker: &HttpWorker, server_id: ServerId, request: &mut Request<'_>) -> LocationId {
    let conf = worker.conf();
    let server = conf.server(server_id);
    let found = location::find(
        &conf.locations,
        &server.locations,
        server.location,
        &request.uri,
        &mut request.matches,
    );
    request.location = Some(found);
    found
}

/// Writes an error-log line about this request to its location's error log.
pub fn log(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    level: Level,
    message: std::fmt::Arguments<'_>,
) {
    let conf = worker.conf();
    let error_log = match request.location {
        Some(location) => &conf.location(location).settings.core.error_log,
        None => &worker.generation.error_log,
    };
    if !error_log.enabled(level) {
        return;
    }
    let context = request.log_context(connection, conf);
    error_log.write(
        level,
        &worker.clock.wall(),
        Some(connection.id),
        message,
        Some(&context),
    );
}

/// `return`: a redirect with `Location`, a text body, an error page, or closing.
fn respond_return<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    status: u16,
    text: Option<&'a HttpTemplate>,
) -> Reply<'a> {
    if status == STATUS_CLOSE {
        request.response.status = STATUS_CLOSE;
        return Reply::Close;
    }
    if status_is_redirect(status) {
        let value = text.map(|template| evaluate(worker, connection, request, template));
        request.response.location = Some(Location {
            value: value.unwrap_or_default(),
        });
        return finalize_status(worker, connection, request, status);
    }
    // nginx answers `return 400;` with its status page but `return 200;` with an empty
    // body of the URI's type.
    let body = match text {
        None if status >= 400 => return finalize_status(worker, connection, request, status),
        None => Bytes::Borrowed(b""),
        // A literal text is sent straight from the configuration, without a copy.
        Some(template) => match template.as_literal() {
            Some(literal) => Bytes::Borrowed(literal),
            None => Bytes::Owned(evaluate(worker, connection, request, template)),
        },
    };
    let location = current_location(worker, request);
    request.response.status = status;
    request.response.content_type = Some(static_handler::content_type(location, &request.uri));
    Reply::Respond(Body::Bytes(body))
}

fn current_location<'a>(
    worker: &'a HttpWorker,
    request: &Request<'_>,
) -> &'a crate::conf::Location {
    let conf = worker.conf();
    let id = request
        .location
        .or_else(|| request.server.map(|server| conf.server(server).location));
    conf.location(id.unwrap_or(LocationId(0)))
}

fn evaluate(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    template: &HttpTemplate,
) -> Vec<u8> {
    if let Some(literal) = template.as_literal() {
        return literal.to_vec();
    }
    let now = worker.clock.now();
    let mut variables = RequestVariables::new(
        request,
        connection,
        worker.conf(),
        now,
        &worker.generation.hostname,
    );
    let mut out = Vec::new();
    template.evaluate(&mut variables, &mut out);
    out
}

/// Ends the request with `status` and nginx's own page for it (if it has one).
pub fn finalize_status<'a>(
    worker: &'a HttpWorker,
    _connection: &ConnectionInfo,
    request: &mut Request<'a>,
    status: u16,
) -> Reply<'a> {
    let location = current_location(worker, request);
    let core = &location.settings.core;
    request.response.status = status;
    request.response.content_type = None;
    request.response.content_length = None;
    request.response.etag = None;
    request.response.last_modified = None;
    request.response.accept_ranges = false;
    request.response.special = true;
    let browser = request.info.browser;
    let padding = core.msie_padding && (browser.msie || browser.chrome);
    match special::page(status, core.server_tokens, padding) {
        Some(page) => {
            request.response.content_type = Some(Bytes::Borrowed(b"text/html"));
            Reply::Respond(Body::Bytes(Bytes::Owned(page)))
        }
        None => Reply::Respond(Body::Empty),
    }
}

/// The content phase's static handler.
async fn serve_static<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> Result<StaticOutcome<'a>, static_handler::FileError> {
    let conf = worker.conf();
    let location = conf.location(location_id);
    if !static_handler::method_allowed(request.head.method) {
        return Ok(StaticOutcome::Respond {
            status: 405,
            body: Body::Empty,
        });
    }
    let root = match &location.settings.core.document_root {
        crate::core::DocumentRoot::Root(template) | crate::core::DocumentRoot::Alias(template) => {
            evaluate(worker, connection, request, template)
        }
    };
    if request.uri.ends_with(b"/") {
        return serve_index(worker, connection, request, location_id, &root).await;
    }
    let path = static_handler::map_path(location, &root, &request.uri);
    request.filename = path.clone();
    let path_buf = bytes_to_path(&path);
    let opened = run_on_pool(worker, {
        let path_buf = path_buf.clone();
        move || static_handler::open_and_stat(&path_buf)
    })
    .await?;
    match opened {
        Opened::Failed(error) => Err(static_handler::open_failure(
            &error,
            &path,
            location.settings.core.log_not_found,
        )),
        Opened::Directory => Ok(StaticOutcome::AddSlash),
        Opened::NotRegular => Err(static_handler::FileError {
            status: 404,
            level: Level::Crit,
            message: format!(
                "\"{}\" is not a regular file",
                String::from_utf8_lossy(&path)
            ),
        }),
        Opened::File { .. } if request.head.method == http1::Method::Post => {
            Ok(StaticOutcome::Respond {
                status: 405,
                body: Body::Empty,
            })
        }
        Opened::File {
            file,
            len,
            modified,
        } => {
            let response = &mut request.response;
            response.content_type = Some(static_handler::content_type(location, &request.uri));
            response.content_length = Some(len);
            response.last_modified = Some(modified);
            let etag = location.settings.core.etag;
            response.etag = etag.then(|| static_handler::etag(modified, len));
            // `Accept-Ranges` comes with byte-range support in the static module.
            response.accept_ranges = false;
            let body = Body::File(static_handler::FileBody {
                file: Arc::new(file),
                offset: 0,
                len,
                path: path_buf,
            });
            Ok(StaticOutcome::Respond { status: 200, body })
        }
    }
}

/// `index`: the first index file that opens becomes an internal redirect.
async fn serve_index<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location_id: LocationId,
    root: &[u8],
) -> Result<StaticOutcome<'a>, static_handler::FileError> {
    let location = worker.conf().location(location_id);
    let directory = static_handler::map_path(location, root, &request.uri);
    for index in &location.settings.static_files.index {
        let name = evaluate(worker, connection, request, index);
        // An absolute name is an internal redirect, without looking for the file.
        if name.starts_with(b"/") {
            return Ok(StaticOutcome::Redirect(name));
        }
        let mut uri = request.uri.clone();
        uri.extend_from_slice(&name);
        let mut path = directory.clone();
        path.extend_from_slice(&name);
        let path_buf = bytes_to_path(&path);
        let opened = run_on_pool(worker, move || static_handler::open_and_stat(&path_buf)).await?;
        match opened {
            Opened::File { .. } | Opened::Directory | Opened::NotRegular => {
                return Ok(StaticOutcome::Redirect(uri));
            }
            Opened::Failed(error) if is_not_found(&error) => continue,
            Opened::Failed(error) => return Err(static_handler::open_failure(&error, &path, true)),
        }
    }
    let directory_buf = bytes_to_path(&directory);
    let exists = run_on_pool(worker, move || {
        static_handler::open_and_stat(&directory_buf)
    })
    .await?;
    let shown = String::from_utf8_lossy(&directory).into_owned();
    match exists {
        Opened::Directory => Err(static_handler::FileError {
            status: 403,
            level: Level::Error,
            message: format!("directory index of \"{shown}\" is forbidden"),
        }),
        _ => {
            let first = location
                .settings
                .static_files
                .index
                .first()
                .map(|index| evaluate(worker, connection, request, index))
                .unwrap_or_default();
            let mut missing = directory.clone();
            missing.extend_from_slice(&first);
            Err(static_handler::FileError {
                status: 404,
                level: if location.settings.core.log_not_found {
                    Level::Error
                } else {
                    Level::Debug
                },
                message: format!(
                    "\"{}\" is not found (2: No such file or directory)",
                    String::from_utf8_lossy(&missing)
                ),
            })
        }
    }
}

fn is_not_found(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(2) | Some(20))
}

fn bytes_to_path(bytes: &[u8]) -> std::path::PathBuf {
    std::path::PathBuf::from(
        <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes.to_vec()),
    )
}

/// Runs `work` on the file pool; a full queue or a lost task is a 500, as nginx answers
/// when it cannot post a thread task.
async fn run_on_pool<T: Send + 'static>(
    worker: &HttpWorker,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, static_handler::FileError> {
    let pool = &worker.generation.file_pool;
    match pool.submit(work) {
        Ok(completion) => completion.await.map_err(|_| static_handler::FileError {
            status: 500,
            level: Level::Alert,
            message: format!("thread pool \"{}\" task was lost", pool.name()),
        }),
        Err(overflow) => Err(static_handler::FileError {
            status: 500,
            level: Level::Error,
            message: format!(
                "thread pool \"{}\" queue overflow: {} tasks waiting",
                pool.name(),
                overflow.waiting
            ),
        }),
    }
}
