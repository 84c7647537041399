//! The static handler as the content phase runs it: `root`/`alias`, `index`, and the
//! answer for a directory without its slash. The file-system calls themselves are in
//! `handler.rs` and run on the file pool.

use std::sync::Arc;

use logging::Level;

use crate::conf::LocationId;
use crate::pool_fs::path_from_bytes;
use crate::request::{ConnectionInfo, Request};
use crate::response::Body;
use crate::static_files::handler::{self as static_handler, Opened, StaticOutcome};
use crate::static_files::io::FileIo;
use crate::static_files::{Aio, PoolChoice};
use crate::variables::render;
use crate::worker::HttpWorker;

/// The content phase's static handler.
pub async fn serve_static<'a>(
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
            render(worker, connection, request, template)
        }
    };
    if request.uri.ends_with(b"/") {
        return serve_index(worker, connection, request, location_id, &root).await;
    }
    let path = static_handler::map_path(location, &root, &request.uri);
    request.filename = path.clone();
    let path_buf = path_from_bytes(&path);
    let io = file_io(worker, connection, request, location_id);
    let nowait = location.settings.static_files.aio_nowait;
    let opened = open_file(worker, &io, nowait, &path_buf).await?;
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
            let statics = &location.settings.static_files;
            let direct = statics.directio.is_some_and(|size| len >= size)
                && crate::static_files::io::enable_directio(&file);
            let body = Body::File(static_handler::FileBody {
                file: Arc::new(file),
                offset: 0,
                len,
                path: path_buf,
                io,
                direct,
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
    let io = file_io(worker, connection, request, location_id);
    let nowait = location.settings.static_files.aio_nowait;
    for index in &location.settings.static_files.index {
        let name = render(worker, connection, request, index);
        // An absolute name is an internal redirect, without looking for the file.
        if name.starts_with(b"/") {
            return Ok(StaticOutcome::Redirect(name));
        }
        let mut uri = request.uri.clone();
        uri.extend_from_slice(&name);
        let mut path = directory.clone();
        path.extend_from_slice(&name);
        let path_buf = path_from_bytes(&path);
        let opened = open_file(worker, &io, nowait, &path_buf).await?;
        match opened {
            Opened::File { .. } | Opened::Directory | Opened::NotRegular => {
                return Ok(StaticOutcome::Redirect(uri));
            }
            Opened::Failed(error) if is_not_found(&error) => continue,
            Opened::Failed(error) => return Err(static_handler::open_failure(&error, &path, true)),
        }
    }
    let directory_buf = path_from_bytes(&directory);
    let exists = open_file(worker, &io, nowait, &directory_buf).await?;
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
                .map(|index| render(worker, connection, request, index))
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

/// Where the location's file work runs: `aio off` on the worker, `aio threads` on the
/// named pool (a name with variables is rendered now; an unknown one fails the request
/// when the body is sent, as nginx fails it).
fn file_io(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location_id: LocationId,
) -> FileIo {
    let location = worker.conf().location(location_id);
    let name = match &location.settings.static_files.aio {
        Aio::Off => return FileIo::Worker,
        Aio::Threads(PoolChoice::Named(name)) => name.as_bytes().to_vec(),
        Aio::Threads(PoolChoice::Template(template)) => {
            render(worker, connection, request, template)
        }
    };
    match worker.pools.get(&name) {
        Some(pool) => FileIo::Pool(pool.clone()),
        None => FileIo::Missing(String::from_utf8_lossy(&name).into_owned()),
    }
}

/// `open()` and `fstat()` where the location's `aio` says; under `aio threads` with
/// `aio_nowait`, first on the worker if the path resolves from cache alone.
async fn open_file(
    worker: &HttpWorker,
    io: &FileIo,
    nowait: bool,
    path: &std::path::Path,
) -> Result<Opened, static_handler::FileError> {
    let path = path.to_path_buf();
    let started = std::time::Instant::now();
    let inline = match io {
        FileIo::Pool(_) if nowait => static_handler::open_and_stat_cached(&path),
        FileIo::Pool(_) => None,
        FileIo::Worker | FileIo::Missing(_) => Some(static_handler::open_and_stat(&path)),
    };
    if let Some(opened) = inline {
        worker.note_blocking(started.elapsed(), || {
            format!("open() of \"{}\"", path.display())
        });
        return Ok(opened);
    }
    offload_file(io, move || static_handler::open_and_stat(&path)).await
}

/// Runs `work` where the location's `aio` says: inline on the worker, or on its pool (a
/// full queue or a lost task is a 500 with nginx's error-log line).
async fn offload_file<T: Send + 'static>(
    io: &FileIo,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, static_handler::FileError> {
    match io {
        FileIo::Worker | FileIo::Missing(_) => Ok(work()),
        FileIo::Pool(pool) => crate::worker::offload_to(pool, work).await,
    }
}

fn is_not_found(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(2) | Some(20))
}
