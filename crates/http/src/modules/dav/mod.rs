//! WebDAV (nginx's ngx_http_dav_module): `PUT`, `DELETE`, `MKCOL`, `COPY` and `MOVE` on
//! the files under a location's root, for the methods `dav_methods` names. Every file
//! operation runs on the location's pool; a `PUT` body is read into a temporary file and
//! renamed into place.

pub mod directives;
mod fs;
mod headers;
pub mod settings;

use std::os::unix::ffi::OsStringExt;
use std::sync::atomic::AtomicU64;

use logging::Level;

use crate::kernel::body::reader::{BodySettings, read_body};
use crate::kernel::body::temp::RequestBody;
use crate::kernel::client::Client;
use crate::kernel::conf::Location;
use crate::kernel::core::BodyInFileOnly;
use crate::kernel::file::io::FileError;
use crate::kernel::pool_fs::{MissingDirectories, path_from_vec};
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::Location as LocationHeader;
use crate::kernel::worker::HttpWorker;
use fs::{Modes, Transfer, TransferKind, refused};
use headers::{DestinationError, depth, destination, overwrite};

/// Temporary files of `PUT` bodies are numbered across the process.
static TEMP_NUMBERS: AtomicU64 = AtomicU64::new(0);

/// What the handler decided.
#[derive(Debug)]
pub enum Outcome {
    /// A method `dav_methods` does not name here: the static handler's turn.
    Declined,
    /// Done: answer with this status and no body (a 201 may carry a `Location`, set).
    Respond(u16),
    /// Refused or failed: the status and the line to log.
    Failed(FileError),
    /// The body could not be read (already logged): end with this status.
    Status(u16),
}

/// Whether the module handles `request` in `location` (one bit test per static request).
pub(crate) fn handles(location: &Location, request: &Request<'_>) -> bool {
    location.settings.dav.methods.contains(request.head.method)
}

/// The content handler's part for a method `dav_methods` names.
pub(crate) async fn handle(
    worker: &HttpWorker,
    client: &mut Client<'_>,
    request: &mut Request<'_>,
    location: &Location,
) -> Outcome {
    let method = request.head.method;
    if !handles(location, request) || request.is_subrequest() {
        return Outcome::Declined;
    }
    if method != http1::Method::Put && has_body(request) {
        request.discard_body = true;
        let name = String::from_utf8_lossy(request.method_bytes()).into_owned();
        let message = match method {
            http1::Method::Copy | http1::Method::Move => {
                "COPY and MOVE with body are unsupported".to_owned()
            }
            _ => format!("{name} with body is unsupported"),
        };
        return Outcome::Failed(refused(415, message));
    }
    let result = match method {
        http1::Method::Put => put(worker, client, request, location).await,
        http1::Method::Delete => delete(worker, client.info, request, location).await,
        http1::Method::Mkcol => mkcol(worker, client.info, request, location).await,
        _ => transfer(worker, client.info, request, location).await,
    };
    match result {
        Ok(status) => {
            request.response.status = status;
            Outcome::Respond(status)
        }
        Err(outcome) => outcome,
    }
}

/// A body is coming: a `Content-Length` above zero, or chunked framing.
fn has_body(request: &Request<'_>) -> bool {
    match request.info.framing {
        http1::request::BodyFraming::None => false,
        http1::request::BodyFraming::Length(length) => length > 0,
        _ => true,
    }
}

/// The path `uri` maps to under the location's root or alias.
fn path_of(
    worker: &HttpWorker,
    client_info: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    uri: &[u8],
) -> std::path::PathBuf {
    let template = location.settings.core.document_root.template();
    let root = match template.as_literal() {
        Some(literal) => literal.to_vec(),
        None => crate::kernel::variables::evaluate::render(worker, client_info, request, template),
    };
    path_from_vec(crate::kernel::file::map_uri(
        location,
        &root,
        uri,
        request.add_uri_to_alias,
    ))
}

fn modes(location: &Location) -> Modes {
    let dav = &location.settings.dav;
    Modes {
        file: dav.access,
        directory: dav.directory_access(),
    }
}

/// Runs `work` on the pool `aio threads` names for the location, else the `default` one
/// (never on the loop, even with `aio off`); a full queue or a lost task is nginx's 500.
async fn on_pool(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    work: impl FnOnce() -> Result<u16, FileError> + Send + 'static,
) -> Result<u16, Outcome> {
    let pool = match crate::kernel::file::cache::file_io(worker, connection, request, location) {
        crate::kernel::file::io::FileIo::Pool(pool) => pool,
        _ => worker.pools.default_pool().clone(),
    };
    match crate::kernel::worker::offload_to(&pool, threadpool::TaskKind::Write, work).await {
        Ok(Ok(status)) => Ok(status),
        Ok(Err(error)) | Err(error) => Err(Outcome::Failed(error)),
    }
}

/// The `Location` of a 201: the request's URI, escaped (nginx's `ngx_http_dav_location`).
fn set_location(request: &mut Request<'_>) {
    let mut value = Vec::with_capacity(request.uri.len());
    crate::kernel::response::escape_uri(&request.uri, &mut value);
    request.response.location = Some(LocationHeader { value });
}

/// `PUT`: the body, read into a temporary file, renamed over the target with
/// `dav_access`'s mode and the `Date` header's time. 201 with a `Location` for a new file,
/// 204 for a replaced one.
async fn put(
    worker: &HttpWorker,
    client: &mut Client<'_>,
    request: &mut Request<'_>,
    location: &Location,
) -> Result<u16, Outcome> {
    if request.uri.ends_with(b"/") {
        request.discard_body = true;
        return Err(Outcome::Failed(refused(
            409,
            "cannot PUT to a collection".to_owned(),
        )));
    }
    if request.header(b"content-range").is_some() {
        request.discard_body = true;
        return Err(Outcome::Failed(refused(
            501,
            "PUT with range is unsupported".to_owned(),
        )));
    }
    let mut settings = BodySettings::from_location(&location.settings.core);
    settings.in_file_only = BodyInFileOnly::Clean;
    let body = read_body(
        &mut client.source,
        client.body,
        &settings,
        worker.pools.default_pool(),
        &TEMP_NUMBERS,
        request.info.expect_continue,
    )
    .await;
    let mut body = match body {
        Ok(RequestBody::File(body)) => body,
        Ok(RequestBody::Memory(_)) => return Err(Outcome::Status(500)),
        Err(error) => {
            return Err(Outcome::Status(crate::kernel::body::failure::body_failed(
                worker,
                client.info,
                request,
                client.body,
                error,
            )));
        }
    };
    request.length += body.len;
    request.body_length = Some(body.len);
    let target = path_of(worker, client.info, request, location, &request.uri);
    let dav = &location.settings.dav;
    let access = dav.access;
    let missing = if dav.create_full_put_path {
        MissingDirectories::Create
    } else {
        MissingDirectories::Fail
    };
    let modified = request
        .header(b"date")
        .and_then(http1::response::parse_http_date);
    let (file, temp) = (std::sync::Arc::clone(&body.file), body.path.clone());
    let status = on_pool(worker, client.info, request, location, move || {
        let status = fs::put_status(&target)?;
        crate::kernel::pool_fs::store_file(&file, &temp, &target, access, modified, missing)
            // nginx answers any failure to put the file in place with 500, at `crit`.
            .map_err(|(call, error)| FileError {
                level: Level::Crit,
                status: 500,
                ..fs::failure_between(call, &temp, &target, &error, 500)
            })?;
        Ok(status)
    })
    .await?;
    // The file is in place under its new name: nothing to remove.
    body.keep = true;
    if status == 201 {
        set_location(request);
    }
    Ok(status)
}

/// `DELETE`: a file, or a directory tree (its URI ends in `/`), below `min_delete_depth`.
async fn delete(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
) -> Result<u16, Outcome> {
    let minimum = location.settings.dav.min_delete_depth;
    let reached = uri_depth(&request.uri, minimum);
    if reached < minimum {
        return Err(Outcome::Failed(refused(
            409,
            format!("insufficient URI depth:{reached} to DELETE"),
        )));
    }
    let depth = depth(request.header(b"depth")).map_err(|()| invalid_depth(request))?;
    let collection = request.uri.ends_with(b"/");
    let path = path_of(worker, connection, request, location, &request.uri);
    on_pool(worker, connection, request, location, move || {
        fs::delete(&path, collection, depth)
    })
    .await
}

/// How many of the URI's `/` have something after them, counted up to `minimum` (nginx's
/// count for `min_delete_depth`).
fn uri_depth(uri: &[u8], minimum: u64) -> u64 {
    let mut depth = 0;
    for (index, &byte) in uri.iter().enumerate() {
        if byte == b'/' && index + 1 < uri.len() {
            depth += 1;
            if depth >= minimum {
                break;
            }
        }
    }
    depth
}

/// `MKCOL`: a directory, for a URI that ends in `/`; 201 with a `Location`.
async fn mkcol(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
) -> Result<u16, Outcome> {
    if !request.uri.ends_with(b"/") {
        return Err(Outcome::Failed(refused(
            409,
            "MKCOL can create a collection only".to_owned(),
        )));
    }
    let mut path = path_of(worker, connection, request, location, &request.uri)
        .into_os_string()
        .into_vec();
    while path.len() > 1 && path.ends_with(b"/") {
        path.pop();
    }
    let path = path_from_vec(path);
    let mode = modes(location).directory;
    let status = on_pool(worker, connection, request, location, move || {
        fs::mkcol(&path, mode)
    })
    .await?;
    set_location(request);
    Ok(status)
}

/// `COPY` and `MOVE`: the `Destination` on this host, checked and mapped under the same
/// location's root; `Depth` and `Overwrite` as RFC 4918 has them.
async fn transfer(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
) -> Result<u16, Outcome> {
    let Some(value) = request.header(b"destination").map(<[u8]>::to_vec) else {
        return Err(Outcome::Failed(refused(
            400,
            "client sent no \"Destination\" header".to_owned(),
        )));
    };
    let shown = String::from_utf8_lossy(&value).into_owned();
    let target = destination(&value, &request.info.host).map_err(|error| {
        Outcome::Failed(refused(
            400,
            match error {
                DestinationError::Invalid => {
                    format!("client sent invalid \"Destination\" header: \"{shown}\"")
                }
                DestinationError::OtherHost => format!(
                    "\"Destination\" URI \"{shown}\" is handled by different repository than \
                     the source URI"
                ),
            },
        ))
    })?;
    if request.uri.ends_with(b"/") != target.ends_with(b"/") {
        return Err(Outcome::Failed(refused(
            409,
            format!(
                "both URI \"{}\" and \"Destination\" URI \"{shown}\" should be either \
                 collections or non-collections",
                String::from_utf8_lossy(&request.uri)
            ),
        )));
    }
    let kind = if request.head.method == http1::Method::Move {
        TransferKind::Move
    } else {
        TransferKind::Copy
    };
    let depth = depth(request.header(b"depth")).map_err(|()| invalid_depth(request))?;
    match (kind, depth) {
        (TransferKind::Move, headers::Depth::Infinity)
        | (TransferKind::Copy, headers::Depth::Zero | headers::Depth::Infinity) => {}
        (TransferKind::Move, _) => {
            return Err(Outcome::Failed(refused(
                400,
                "\"Depth\" header must be infinity".to_owned(),
            )));
        }
        (TransferKind::Copy, _) => {
            return Err(Outcome::Failed(refused(
                400,
                "\"Depth\" header must be 0 or infinity".to_owned(),
            )));
        }
    }
    let overwrite = overwrite(request.header(b"overwrite")).map_err(|()| {
        let value = String::from_utf8_lossy(request.header(b"overwrite").unwrap_or_default());
        Outcome::Failed(refused(
            400,
            format!("client sent invalid \"Overwrite\" header: \"{value}\""),
        ))
    })?;
    let strip = |path: std::path::PathBuf| {
        let mut bytes = path.into_os_string().into_vec();
        while bytes.len() > 1 && bytes.ends_with(b"/") {
            bytes.pop();
        }
        path_from_vec(bytes)
    };
    let work = Transfer {
        source: strip(path_of(worker, connection, request, location, &request.uri)),
        destination: strip(path_of(worker, connection, request, location, &target)),
        overwrite,
        depth,
        kind,
        modes: modes(location),
    };
    if work.source == work.destination {
        return Err(Outcome::Failed(refused(
            409,
            format!(
                "\"Destination\" URI \"{shown}\" is the same as the source URI \"{}\"",
                String::from_utf8_lossy(&request.uri)
            ),
        )));
    }
    on_pool(worker, connection, request, location, move || {
        fs::transfer(&work)
    })
    .await
}

fn invalid_depth(request: &Request<'_>) -> Outcome {
    let value = String::from_utf8_lossy(request.header(b"depth").unwrap_or_default());
    Outcome::Failed(refused(
        400,
        format!("client sent invalid \"Depth\" header: \"{value}\""),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_depth_counts_slashes_with_something_after_them() {
        assert_eq!(uri_depth(b"/min3/shallow", 3), 2);
        assert_eq!(uri_depth(b"/min3/a/b/deep", 3), 3);
        assert_eq!(uri_depth(b"/a/b/", 3), 2);
        assert_eq!(uri_depth(b"/top", 0), 1);
    }
}
