//! Opening request paths for the static handlers, through `open_file_cache` when the
//! location has one: a per-worker cache of open descriptors, stat results and (with
//! `open_file_cache_errors`) failures, as nginx's `ngx_open_cached_file` keeps them. An
//! entry is used only while it is younger than `open_file_cache_valid`; after that the
//! path is opened again. The cache lives on the worker's loop and is never shared with
//! another thread; the opens themselves run where the location's `aio` says (the worker
//! for `aio off`, a pool for `aio threads`, the worker when cached with `aio_nowait`).

use std::sync::Arc;
use std::time::Instant;

use crate::kernel::conf::Location;
use crate::kernel::file::io::{FileError, FileIo};
use crate::kernel::file::open::{self, FileInfo, OpenFailure, SymlinkCheck};
use crate::kernel::file::open_cache::{EXPIRE_PER_LOOKUP, OpenResult};
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::static_files::settings::{Aio, PoolChoice};

/// The symlink check for `path` in `location` (`disable_symlinks`, its `from=` evaluated).
pub(crate) fn symlink_check(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    path: &[u8],
) -> SymlinkCheck {
    let setting = &location.settings.static_files.disable_symlinks;
    let from = setting
        .from
        .as_ref()
        .map(|template| render(worker, connection, request, template));
    SymlinkCheck::for_path(setting.mode, from.as_deref(), path)
}

/// Where the location's `aio` runs a request's file work: the worker (`aio off`) or a
/// pool (`aio threads`, its name rendered when it has variables).
pub(crate) fn file_io(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
) -> FileIo {
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

/// Runs a file task where `io` says: on the worker (the time it took is noted for the
/// stall watcher), or on the pool.
async fn run<T: Send + 'static>(
    worker: &HttpWorker,
    io: &FileIo,
    path: &[u8],
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, FileError> {
    match io {
        FileIo::Pool(pool) => {
            crate::kernel::worker::offload_to(pool, threadpool::TaskKind::Open, work).await
        }
        FileIo::Worker | FileIo::Missing(_) => {
            let started = crate::kernel::worker::BlockingTimer::start();
            let result = work();
            worker.note_blocking(started.elapsed(), || {
                format!("open() of \"{}\"", String::from_utf8_lossy(path))
            });
            Ok(result)
        }
    }
}

/// `open()` and `fstat()` where `io` says; under `aio threads` with `aio_nowait`, on the
/// worker when the path resolves from cached directory entries alone.
async fn open_where(
    worker: &HttpWorker,
    location: &Location,
    io: &FileIo,
    path: &[u8],
    check: SymlinkCheck,
) -> Result<Result<(Option<std::fs::File>, FileInfo), OpenFailure>, FileError> {
    if matches!(io, FileIo::Pool(_))
        && location.settings.static_files.aio_nowait
        && check.mode == open::Symlinks::Off
        && let Some(opened) = open::open_and_stat_cached(path)
    {
        return Ok(opened);
    }
    let owned = path.to_vec();
    run(worker, io, path, move || open::open_and_stat(&owned, check)).await
}

/// Opens `path` for reading (a directory is only stat-ed).
pub async fn open(
    worker: &HttpWorker,
    location: &Location,
    io: &FileIo,
    path: &[u8],
    check: SymlinkCheck,
) -> Result<OpenResult, FileError> {
    let settings = &location.settings.static_files;
    let Some(conf) = &settings.open_file_cache else {
        let result = open_where(worker, location, io, path, check).await?;
        return Ok(result.map(|(file, info)| (file.map(Arc::new), info)));
    };
    let key = Arc::as_ptr(conf) as usize;
    let now = Instant::now();
    let valid = settings.open_file_cache_valid;
    let uses = {
        let mut caches = worker.open_files.borrow_mut();
        let cache = caches.cache(key);
        cache.expire_inactive(now, conf.inactive, EXPIRE_PER_LOOKUP);
        match cache.lookup(path, now) {
            Some(entry) => {
                entry.uses += 1;
                if entry.check == check && now.duration_since(entry.created) < valid {
                    match &entry.result {
                        Ok((Some(file), info)) => return Ok(Ok((Some(file.clone()), *info))),
                        Ok((None, info)) if info.is_dir => return Ok(Ok((None, *info))),
                        Err(failure) => return Ok(Err(*failure)),
                        // Not used often enough yet to be kept open: open it again.
                        Ok((None, _)) => {}
                    }
                }
                entry.uses
            }
            None => 1,
        }
    };
    let result: OpenResult = open_where(worker, location, io, path, check)
        .await?
        .map(|(file, info)| (file.map(Arc::new), info));
    let mut caches = worker.open_files.borrow_mut();
    let cache = caches.cache(key);
    if result.is_err() && !settings.open_file_cache_errors {
        cache.remove(path);
        return Ok(result);
    }
    let kept = match &result {
        Ok((file, info)) if uses >= settings.open_file_cache_min_uses => Ok((file.clone(), *info)),
        Ok((_, info)) => Ok((None, *info)),
        Err(failure) => Err(*failure),
    };
    cache.store(path, kept, check, uses, now, conf);
    Ok(result)
}

/// Stats `path` without keeping it (`try_files`); with a cache, the file is opened and
/// cached as for serving it, as nginx does.
pub async fn test(
    worker: &HttpWorker,
    location: &Location,
    io: &FileIo,
    path: &[u8],
    check: SymlinkCheck,
) -> Result<Result<FileInfo, OpenFailure>, FileError> {
    if location.settings.static_files.open_file_cache.is_some() {
        return Ok(open(worker, location, io, path, check)
            .await?
            .map(|(_, info)| info));
    }
    let owned = path.to_vec();
    run(worker, io, path, move || open::test(&owned, check)).await
}
