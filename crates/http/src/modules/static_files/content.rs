//! The static handlers as the content phase runs them, in nginx's order: `index` and
//! `autoindex` for a URI ending in `/` (else 403), the static module for the rest (a
//! file, a redirect for a directory without its slash, or an error). The file-system
//! calls run where `aio` says (the kernel's file access, and the directory listing).

use std::sync::Arc;

use logging::Level;

use crate::kernel::conf::{Location, LocationId};
use crate::kernel::file::cache::{self, symlink_check};
use crate::kernel::file::io::{FileBody, FileError, FileIo};
use crate::kernel::file::open::{ENAMETOOLONG, ENOENT, ENOTDIR};
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::static_files::autoindex;
use crate::modules::static_files::handler::{self as static_handler, StaticOutcome};
use crate::modules::static_files::settings::AutoindexFormat;

/// The content phase's static handler.
pub(crate) async fn serve_static<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location_id: LocationId,
) -> Result<StaticOutcome<'a>, FileError> {
    let conf = worker.conf();
    let location = conf.location(location_id);
    if !static_handler::method_allowed(request.head.method) {
        return Ok(respond_status(405));
    }
    let template = location.settings.core.document_root.template();
    // A literal root (the usual case) is used where it lies.
    let root = match template.as_literal() {
        Some(literal) => std::borrow::Cow::Borrowed(literal),
        None => std::borrow::Cow::Owned(render(worker, connection, request, template)),
    };
    let path = crate::kernel::file::map_path(location, &root, request);
    if request.uri.ends_with(b"/") {
        return serve_directory(worker, connection, request, location, path).await;
    }
    request.filename.clear();
    request.filename.extend_from_slice(&path);
    let check = symlink_check(worker, connection, request, location, &path);
    let io = cache::file_io(worker, connection, request, location);
    if let Some(outcome) = gzip_static(worker, connection, request, location, &path, &io).await? {
        return Ok(outcome);
    }
    let opened = cache::open(worker, location, &io, &path, check).await?;
    let (file, info) = match opened {
        Err(failure) => {
            let log_not_found = location.settings.core.log_not_found;
            return Err(crate::kernel::file::open_failure(
                &failure,
                &path,
                log_not_found,
            ));
        }
        Ok((_, info)) if info.is_dir => return Ok(StaticOutcome::AddSlash),
        Ok((Some(file), info)) if info.is_file => (file, info),
        Ok(_) => {
            return Err(FileError {
                status: 404,
                level: Level::Crit,
                message: format!("\"{}\" is not a regular file", shown(&path)),
            });
        }
    };
    if request.head.method == http1::Method::Post {
        return Ok(respond_status(405));
    }
    let response = &mut request.response;
    // A type set before (an `X-Accel-Redirect` response's) is kept, as nginx keeps it.
    if response.content_type.is_none() {
        response.content_type = Some(static_handler::content_type(location, &request.uri));
    }
    response.content_length = Some(info.len);
    response.last_modified = Some(info.modified);
    let etag = location.settings.core.etag;
    response.etag = etag.then(|| static_handler::etag(info.modified, info.len));
    // The range filter may answer with parts of the file.
    response.accept_ranges = true;
    let statics = &location.settings.static_files;
    let direct = match statics.directio {
        Some(size) if info.len >= size => crate::kernel::file::io::enable_directio(&file),
        // A descriptor from `open_file_cache` may be shared with a location that turned
        // `O_DIRECT` on: it is then read in aligned blocks here too.
        _ if statics.open_file_cache.is_some() => crate::kernel::file::io::is_direct(&file),
        _ => false,
    };
    if let Some(pin) = &statics.pin_hot_files {
        pin_if_hot(worker, pin, &file, &info, &io, &path);
    }
    let body = Body::File(FileBody {
        file,
        offset: 0,
        len: info.len,
        path: crate::kernel::pool_fs::path_from_vec(path),
        io,
        direct,
    });
    Ok(StaticOutcome::Respond { status: 200, body })
}

/// `pin_hot_files`: counts the request for the file, and pins it once it is hot, on the
/// location's pool (the default pool under `aio off`). A refused lock is logged once.
fn pin_if_hot(
    worker: &HttpWorker,
    pin: &crate::kernel::file::pin::PinHotFiles,
    file: &Arc<std::fs::File>,
    info: &crate::kernel::file::open::FileInfo,
    io: &FileIo,
    path: &[u8],
) {
    let pool = match io {
        FileIo::Pool(pool) => pool,
        FileIo::Worker | FileIo::Missing(_) => worker.pools.default_pool(),
    };
    let error_log = Arc::clone(&worker.generation.error_log);
    let shown = shown(path).to_string();
    crate::kernel::file::pin::note_use(
        pin,
        file,
        info.uniq,
        info.len,
        info.modified,
        pool,
        move |error| {
            if error_log.enabled(Level::Warn) {
                error_log.write(
                    Level::Warn,
                    &runtime::clock::wall_now(),
                    None,
                    format_args!(
                        "mlock() of \"{shown}\" failed ({}), hot files are not pinned",
                        runtime::sys::linux::error_text(&error)
                    ),
                    None,
                );
            }
        },
    );
}

/// A URI ending in `/`: `index`, then `autoindex`, then 403 as nginx's core module answers.
async fn serve_directory<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
    directory: Vec<u8>,
) -> Result<StaticOutcome<'a>, FileError> {
    if let Some(outcome) = serve_index(worker, connection, request, location, &directory).await? {
        return Ok(outcome);
    }
    let get_or_head = matches!(
        request.head.method,
        http1::Method::Get | http1::Method::Head
    );
    if location.settings.static_files.autoindex && get_or_head {
        return serve_autoindex(worker, connection, request, location, directory).await;
    }
    Err(FileError {
        status: 403,
        level: Level::Error,
        message: format!("directory index of \"{}\" is forbidden", shown(&directory)),
    })
}

/// `index`: the first index file that exists becomes an internal redirect. `None` when
/// none does and the directory exists (the next handler decides).
async fn serve_index<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
    directory: &[u8],
) -> Result<Option<StaticOutcome<'a>>, FileError> {
    let mut directory_tested = false;
    for index in &location.settings.static_files.index {
        let name = render(worker, connection, request, index);
        // An absolute name is an internal redirect, without looking for the file.
        if name.starts_with(b"/") {
            return Ok(Some(StaticOutcome::Redirect(name)));
        }
        let mut path = directory.to_vec();
        path.extend_from_slice(&name);
        let check = symlink_check(worker, connection, request, location, &path);
        let failure = match cache::test(
            worker,
            location,
            &cache::file_io(worker, connection, request, location),
            &path,
            check,
        )
        .await?
        {
            Ok(_) => {
                let mut uri = request.uri.clone();
                uri.extend_from_slice(&name);
                return Ok(Some(StaticOutcome::Redirect(uri)));
            }
            Err(failure) => failure,
        };
        match failure.errno {
            ELOOP | EMLINK => return Err(forbidden_quietly()),
            ENOTDIR | ENAMETOOLONG | EACCES => {
                return Err(index_error(location, &path, failure.errno));
            }
            _ => {}
        }
        if !directory_tested {
            test_index_directory(worker, connection, request, location, directory, &path).await?;
            directory_tested = true;
        }
        if failure.errno != ENOENT {
            return Err(FileError {
                status: 500,
                level: Level::Crit,
                message: failure.message(&path),
            });
        }
    }
    Ok(None)
}

/// After an index file failed to open: whether its directory exists (nginx's
/// `ngx_http_index_test_dir`). A missing directory is a 404 naming the index file.
async fn test_index_directory(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    directory: &[u8],
    index_path: &[u8],
) -> Result<(), FileError> {
    let dir = match directory.strip_suffix(b"/") {
        Some(stripped) if !stripped.is_empty() => stripped,
        _ => directory,
    };
    let check = symlink_check(worker, connection, request, location, dir);
    match cache::test(
        worker,
        location,
        &cache::file_io(worker, connection, request, location),
        dir,
        check,
    )
    .await?
    {
        Ok(info) if info.is_dir => Ok(()),
        Ok(_) => Err(FileError {
            status: 500,
            level: Level::Alert,
            message: format!("\"{}\" is not a directory", shown(dir)),
        }),
        Err(failure) => match failure.errno {
            ELOOP | EMLINK => Err(forbidden_quietly()),
            ENOENT => Err(index_error(location, index_path, ENOENT)),
            // Searching the directory is allowed: the index file's error was not EACCES.
            EACCES => Ok(()),
            _ => Err(FileError {
                status: 500,
                level: Level::Crit,
                message: failure.message(dir),
            }),
        },
    }
}

/// nginx's `ngx_http_index_error`.
fn index_error(location: &Location, path: &[u8], errno: i32) -> FileError {
    let text = runtime::sys::linux::strerror(errno);
    if errno == EACCES {
        return FileError {
            status: 403,
            level: Level::Error,
            message: format!("\"{}\" is forbidden ({errno}: {text})", shown(path)),
        };
    }
    FileError {
        status: 404,
        level: if location.settings.core.log_not_found {
            Level::Error
        } else {
            Level::Debug
        },
        message: format!("\"{}\" is not found ({errno}: {text})", shown(path)),
    }
}

/// A symbolic link refused by `disable_symlinks` while looking for an index: 403, with
/// nothing logged above `debug`, as nginx does.
fn forbidden_quietly() -> FileError {
    FileError {
        status: 403,
        level: Level::Debug,
        message: "index file is a refused symbolic link".to_owned(),
    }
}

/// `autoindex`: the directory's listing, read on the pool.
async fn serve_autoindex<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
    mut directory: Vec<u8>,
) -> Result<StaticOutcome<'a>, FileError> {
    let settings = &location.settings.static_files;
    let mut format = settings.autoindex_format;
    let mut callback = None;
    if format == AutoindexFormat::Jsonp {
        match autoindex::jsonp_callback(&request.args) {
            Ok(Some(name)) => callback = Some(name.to_vec()),
            Ok(None) => format = AutoindexFormat::Json,
            Err(message) => {
                log(
                    worker,
                    connection,
                    request,
                    Level::Info,
                    format_args!("{message}"),
                );
                return Ok(respond_status(400));
            }
        }
    }
    if directory.len() > 1 {
        directory.pop();
    }
    let listing = worker
        .offload(threadpool::TaskKind::Open, move || {
            autoindex::read_listing(&directory)
        })
        .await?;
    for warning in &listing.warnings {
        log(
            worker,
            connection,
            request,
            Level::Crit,
            format_args!("{warning}"),
        );
    }
    let entries = listing.result.map_err(|failure| {
        let (status, level) = match failure.opendir_errno {
            Some(ENOENT | ENOTDIR | ENAMETOOLONG) => (404, Level::Error),
            Some(EACCES) => (403, Level::Error),
            _ => (500, Level::Crit),
        };
        FileError {
            status,
            level,
            message: failure.message,
        }
    })?;
    let body = match format {
        AutoindexFormat::Html => {
            let utc_offset_seconds = if settings.autoindex_localtime {
                i64::from(worker.clock.wall().utc_offset_seconds)
            } else {
                0
            };
            let charset = &location.settings.charset;
            let utf8 = matches!(&charset.charset,
                crate::modules::charset::settings::CharsetName::Named(name)
                    if crate::modules::charset::settings::same_name(name, "utf-8"))
                && charset.charset_types.contains(b"text/html");
            let options = autoindex::HtmlOptions {
                exact_size: settings.autoindex_exact_size,
                utc_offset_seconds,
                utf8,
            };
            autoindex::html(&request.uri, &entries, options)
        }
        AutoindexFormat::Xml => autoindex::xml(&entries),
        AutoindexFormat::Json | AutoindexFormat::Jsonp => {
            autoindex::json(&entries, callback.as_deref())
        }
    };
    let response = &mut request.response;
    response.content_type = Some(Bytes::Borrowed(autoindex::content_type(format)));
    response.accept_ranges = false;
    Ok(StaticOutcome::Respond {
        status: 200,
        body: Body::Bytes(Bytes::Owned(body)),
    })
}

fn respond_status<'a>(status: u16) -> StaticOutcome<'a> {
    StaticOutcome::Respond {
        status,
        body: Body::Empty,
    }
}

fn shown(path: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(path)
}

const EACCES: i32 = 13;
const EMLINK: i32 = 31;
const ELOOP: i32 = 40;

/// `gzip_static`: `FILE.gz` in place of `FILE` for a client that takes gzip (`on`), or for
/// every client (`always`), opened where `aio` says; `None` to serve `FILE` itself.
async fn gzip_static<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
    path: &[u8],
    io: &crate::kernel::file::io::FileIo,
) -> Result<Option<StaticOutcome<'a>>, FileError> {
    use crate::modules::gzip::settings::GzipStatic;
    let settings = &location.settings.gzip;
    let wanted = match settings.static_files {
        GzipStatic::Off => return Ok(None),
        GzipStatic::Always => true,
        GzipStatic::On => {
            let ok = crate::kernel::gzip_ok::gzip_ok(request, location);
            if settings.vary {
                request.response.add_vary_accept_encoding();
            }
            ok
        }
    };
    if !wanted
        || !matches!(
            request.head.method,
            http1::Method::Get | http1::Method::Head
        )
    {
        return Ok(None);
    }
    let mut gz = path.to_vec();
    gz.extend_from_slice(b".gz");
    let check = symlink_check(worker, connection, request, location, &gz);
    let (file, info) = match cache::open(worker, location, io, &gz, check).await? {
        Ok((Some(file), info)) if info.is_file => (file, info),
        _ => return Ok(None),
    };
    let response = &mut request.response;
    if response.content_type.is_none() {
        response.content_type = Some(static_handler::content_type(location, &request.uri));
    }
    response.headers.push((
        crate::kernel::response::Bytes::Borrowed(b"Content-Encoding"),
        crate::kernel::response::Bytes::Borrowed(b"gzip"),
    ));
    response.content_length = Some(info.len);
    response.last_modified = Some(info.modified);
    response.etag = location
        .settings
        .core
        .etag
        .then(|| static_handler::etag(info.modified, info.len));
    response.accept_ranges = true;
    let body = Body::File(FileBody {
        file,
        offset: 0,
        len: info.len,
        path: crate::kernel::pool_fs::path_from_vec(gz),
        io: io.clone(),
        direct: false,
    });
    Ok(Some(StaticOutcome::Respond { status: 200, body }))
}
