//! File access for any handler that sends a file: mapping a URI to a path under `root` or
//! `alias`, opening and stat-ing where `aio` says (with `disable_symlinks` and
//! `open_file_cache`), the file body a response carries, and the reads and residency tests
//! that keep a worker from waiting for a disk.

pub mod cache;
pub mod io;
pub mod open;
pub mod open_cache;
pub mod pin;

use std::fs::File;

use logging::Level;

use crate::kernel::conf::Location;
use crate::kernel::core::{AliasPart, DocumentRoot};
use crate::kernel::file::io::FileError;
use crate::kernel::file::open::OpenFailure;
use crate::kernel::find::current_location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;

/// Appends `len` bytes of the file at `offset` to `buffer` (never zeroed first); fewer
/// bytes only at the end of the file. Returns how many it read. May wait for the disk:
/// runs on a pool thread, or on the worker under `aio off`.
pub(crate) fn read_chunk_into(
    file: &File,
    offset: u64,
    buffer: &mut Vec<u8>,
    len: usize,
) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < len {
        let wait = runtime::sys::read_into::ReadWait::Wait;
        let at = offset + filled as u64;
        match runtime::sys::read_into::pread_appending(file, buffer, len - filled, at, wait) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Maps the request's URI to a file path under the location's `root` or `alias`
/// (`root` already evaluated), as nginx's `ngx_http_map_uri_to_path` does.
pub(crate) fn map_path(location: &Location, root: &[u8], request: &Request<'_>) -> Vec<u8> {
    map_uri(location, root, &request.uri, request.add_uri_to_alias)
}

/// [`map_path`] for a URI that is not (yet) the request's.
pub(crate) fn map_uri(
    location: &Location,
    root: &[u8],
    uri: &[u8],
    add_uri_to_alias: bool,
) -> Vec<u8> {
    let mut path = Vec::with_capacity(root.len() + uri.len());
    path.extend_from_slice(root);
    match &location.settings.core.document_root {
        DocumentRoot::Root(_) => path.extend_from_slice(uri),
        // In a regex location the alias, with its captures, is the whole path, unless
        // `try_files` made `$uri` the part after it.
        DocumentRoot::Alias(_, AliasPart::Whole) if add_uri_to_alias => {
            path.extend_from_slice(uri);
        }
        DocumentRoot::Alias(_, AliasPart::Whole) => {}
        DocumentRoot::Alias(_, AliasPart::Prefix(len)) => {
            path.extend_from_slice(uri.get(*len..).unwrap_or_default());
        }
    }
    path
}

/// The status and log line for a failed `open()`, as nginx's static module chooses them.
pub(crate) fn open_failure(failure: &OpenFailure, path: &[u8], log_not_found: bool) -> FileError {
    let errno = failure.errno;
    let message = failure.message(path);
    match errno {
        _ if failure.is_not_found() => FileError {
            status: 404,
            level: if log_not_found {
                Level::Error
            } else {
                Level::Debug
            },
            message,
        },
        EACCES | EMLINK | ELOOP => FileError {
            status: 403,
            level: Level::Error,
            message,
        },
        _ => FileError {
            status: 500,
            level: Level::Crit,
            message,
        },
    }
}

/// The errno values answered with 403.
const EACCES: i32 = 13;
const EMLINK: i32 = 31;
const ELOOP: i32 = 40;

/// Resolves `$realpath_root` for the request's current document root on the file pool,
/// when the configuration uses it and it is not resolved for that root yet.
pub(crate) async fn resolve_realpath_root(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
) {
    if !worker.conf().uses_realpath_root {
        return;
    }
    let template = current_location(worker, request)
        .settings
        .core
        .document_root
        .template();
    let root = render(worker, connection, request, template);
    if matches!(&request.realpath_root, Some((resolved_for, _)) if *resolved_for == root) {
        return;
    }
    let path = crate::kernel::pool_fs::path_from_bytes(&root);
    let resolved = worker
        .offload(threadpool::TaskKind::Open, move || {
            crate::kernel::pool_fs::realpath(&path)
        })
        .await;
    match resolved {
        Ok(Ok(real)) => {
            let real = std::os::unix::ffi::OsStrExt::as_bytes(real.as_os_str()).to_vec();
            request.realpath_root = Some((root, real));
        }
        Ok(Err(error)) => {
            let errno = error.raw_os_error().unwrap_or(0);
            log(
                worker,
                connection,
                request,
                Level::Crit,
                format_args!(
                    "realpath() \"{}\" failed ({errno}: {})",
                    String::from_utf8_lossy(&root),
                    runtime::sys::linux::strerror(errno)
                ),
            );
        }
        Err(error) => log(
            worker,
            connection,
            request,
            error.level,
            format_args!("{}", error.message),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::file::open::{self, SymlinkCheck};

    #[test]
    fn open_failures_map_to_nginx_statuses() {
        let failure = |errno| OpenFailure {
            errno,
            call: "open()",
        };
        let missing = open_failure(&failure(2), b"/x", true);
        assert_eq!((missing.status, missing.level), (404, Level::Error));
        assert_eq!(
            missing.message,
            "open() \"/x\" failed (2: No such file or directory)"
        );
        assert_eq!(open_failure(&failure(2), b"/x", false).level, Level::Debug);
        assert_eq!(open_failure(&failure(13), b"/x", true).status, 403);
        assert_eq!(open_failure(&failure(5), b"/x", true).status, 500);
    }

    #[test]
    fn cached_open_answers_without_the_pool_for_a_cached_path() {
        let path = std::env::temp_dir().join(format!("portico-cached-{}", std::process::id()));
        std::fs::write(&path, b"cached").unwrap();
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
        // Just written: its directory entry is in the dentry cache.
        match open::open_and_stat_cached(&bytes) {
            Some(Ok((Some(_), info))) => assert_eq!(info.len, 6),
            other => panic!("expected an open file, got {other:?}"),
        }
        let directory = std::env::temp_dir();
        let directory = std::os::unix::ffi::OsStrExt::as_bytes(directory.as_os_str()).to_vec();
        assert!(matches!(
            open::open_and_stat_cached(&directory),
            Some(Ok((None, info))) if info.is_dir
        ));
        std::fs::remove_file(&path).unwrap();
        // A name the cache knows to be absent is a real answer; one it does not know is
        // left to the pool. Either way nothing waits for the disk.
        match open::open_and_stat_cached(&bytes) {
            Some(Err(failure)) => assert_eq!(failure.errno, 2),
            None => {}
            Some(Ok(_)) => panic!("a removed file opened"),
        }
    }

    #[test]
    fn reads_whole_and_short_files() {
        let path = std::env::temp_dir().join(format!("portico-static-{}", std::process::id()));
        std::fs::write(&path, b"hello world").unwrap();
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
        let (Some(file), info) = open::open_and_stat(&bytes, SymlinkCheck::OFF).unwrap() else {
            panic!("not a file")
        };
        assert_eq!(info.len, 11);
        let mut buf = b"hello ".to_vec();
        assert_eq!(read_chunk_into(&file, 6, &mut buf, 100).unwrap(), 5);
        assert_eq!(buf, b"hello world");
        let (none, info) = open::open_and_stat(b"/tmp", SymlinkCheck::OFF).unwrap();
        assert!(none.is_none() && info.is_dir);
        let fifo = std::env::temp_dir().join(format!("portico-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let fifo_bytes = std::os::unix::ffi::OsStrExt::as_bytes(fifo.as_os_str()).to_vec();
        let (_, info) = open::open_and_stat(&fifo_bytes, SymlinkCheck::OFF)
            .expect("a FIFO opens without blocking");
        assert!(!info.is_file && !info.is_dir);
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(open::open_and_stat(&bytes, SymlinkCheck::OFF).is_err());
    }
}
