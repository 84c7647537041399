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
    let opened = worker
        .offload({
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
            // The range filter may answer with parts of the file.
            response.accept_ranges = true;
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
        let opened = worker
            .offload(move || static_handler::open_and_stat(&path_buf))
            .await?;
        match opened {
            Opened::File { .. } | Opened::Directory | Opened::NotRegular => {
                return Ok(StaticOutcome::Redirect(uri));
            }
            Opened::Failed(error) if is_not_found(&error) => continue,
            Opened::Failed(error) => return Err(static_handler::open_failure(&error, &path, true)),
        }
    }
    let directory_buf = path_from_bytes(&directory);
    let exists = worker
        .offload(move || static_handler::open_and_stat(&directory_buf))
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

fn is_not_found(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(2) | Some(20))
}
