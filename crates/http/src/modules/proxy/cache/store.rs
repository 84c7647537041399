//! Storing a response while it streams to the client: nginx's entry header, the key line
//! and the upstream's head as received go first, then the body as decoded, into a
//! temporary file written on the cache's pool; when the body ended where its framing
//! said, the file is renamed into place and the index learns of it. Anything else (an
//! upstream cut short, a write error, a full disk) discards the file: the client's
//! response goes on from memory, only the entry is lost.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use cache::format::{self, EntryHeader};
use cache::{FillGuard, Key, Zone};
use logging::Level;
use threadpool::ThreadPool;

use crate::kernel::file::io::FileIo;
use crate::modules::proxy::cache::freshness::Freshness;

/// Bytes gathered before one write on the pool.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// A failure to store, to be logged by the caller, which knows the request.
pub(crate) struct StoreFailure {
    pub level: Level,
    pub message: String,
}

/// Where an entry's temporary file goes, and the names it takes when one is taken.
#[derive(Clone)]
pub(crate) enum TempName {
    /// Beside the entry (`use_temp_path=off`): `<entry>.NNNNNNNNNN`, then the next numbers.
    Beside(PathBuf),
    /// Under `proxy_temp_path` (`use_temp_path=on`), by temporary number.
    Numbered(crate::kernel::core::TempPath, u64),
}

impl TempName {
    /// The first name, for log lines written before the file was made.
    fn first(&self) -> PathBuf {
        match self {
            TempName::Beside(path) => path.clone(),
            TempName::Numbered(temp, number) => {
                crate::kernel::body::temp::temp_file_path(temp, *number)
            }
        }
    }

    /// Creates the file under the first free name (on a pool thread).
    fn create(&self) -> std::io::Result<(File, PathBuf)> {
        match self {
            TempName::Beside(path) => cache::store::create_temp(path),
            TempName::Numbered(temp, number) => {
                let mut names = crate::kernel::body::temp::numbered_names(temp.clone(), *number);
                cache::store::create_temp_among(|| Some(names()))
            }
        }
    }
}

/// A response being stored.
pub(crate) struct CacheWriter {
    zone: Arc<Zone>,
    key: Key,
    /// The temporary file's name: the first one to try until it is made.
    temp: PathBuf,
    names: TempName,
    file: Option<Arc<File>>,
    pool: ThreadPool,
    pending: Vec<u8>,
    /// What `pending` is given room for once body bytes are pushed.
    capacity: usize,
    written: u64,
    /// `None` once committed.
    fill: Option<FillGuard>,
    /// The expired entry's UPDATING mark, held until the new entry is in place (or the
    /// store fails): nginx keeps an entry `updating` until its refresh is stored, so
    /// `proxy_cache_use_stale updating` keeps other requests off the upstream for the
    /// whole body, not only until its head arrived.
    update: Option<cache::UpdateGuard>,
    valid_sec: i64,
    body_start: u16,
    /// The body's length from its framing, when it had one.
    expected: Option<u64>,
    body_bytes: u64,
    /// Bytes reserved against the cache's ceiling.
    reserved: u64,
}

/// What a writer is made from.
pub(crate) struct StoreStart<'a> {
    pub zone: Arc<Zone>,
    pub key: Key,
    pub key_text: &'a [u8],
    pub fill: Option<FillGuard>,
    /// The mark of the expired entry this response refreshes, if it does.
    pub update: Option<cache::UpdateGuard>,
    pub fresh: Freshness,
    /// The upstream's head as received.
    pub raw_head: &'a [u8],
    pub variant: [u8; 16],
    pub now: i64,
    pub io: &'a FileIo,
    pub default_pool: &'a ThreadPool,
    /// Where the temporary file goes.
    pub temp: TempName,
    pub content_length: Option<u64>,
}

impl CacheWriter {
    /// A writer, or `None` when the entry cannot be stored (a head too long for the
    /// format, no room under the cache's size limits).
    pub fn start(start: StoreStart<'_>) -> Result<CacheWriter, StoreFailure> {
        let header_start = format::header_start_for(start.key_text.len());
        let body_start =
            u16::try_from(header_start + start.raw_head.len()).map_err(|_| StoreFailure {
                level: Level::Error,
                message: "cache entry head is too long".to_owned(),
            })?;
        let header = EntryHeader {
            valid_sec: start.fresh.valid_sec,
            updating_sec: start.fresh.updating_sec,
            error_sec: start.fresh.error_sec,
            last_modified: start.fresh.last_modified,
            date: start.now,
            crc32: start.key.crc32,
            valid_msec: 0,
            header_start: header_start as u16,
            body_start,
            etag: start.fresh.etag.clone(),
            vary: start.fresh.vary.clone(),
            variant: start.variant,
        };
        let Some(mut fill) = start.fill else {
            return Err(StoreFailure {
                level: Level::Debug,
                message: "another request fills the entry".to_owned(),
            });
        };
        let expected_size = start
            .content_length
            .map_or(1 << 20, |length| length + u64::from(body_start));
        if !fill.reserve(expected_size) {
            return Err(no_room(&start.zone, expected_size));
        }
        // Room for a whole small entry (kept for one write with the commit) or for a batch
        // and the read that completes it, taken with the first body bytes pushed (a body
        // handed over whole at the end never needs it): the buffer does not grow by copies.
        let capacity = match start.content_length {
            Some(_) => usize::try_from(expected_size)
                .unwrap_or(usize::MAX)
                .min(2 * WRITE_BATCH_BYTES),
            None => WRITE_BATCH_BYTES,
        };
        let mut pending = Vec::with_capacity(usize::from(body_start));
        format::encode(&header, start.key_text, &mut pending);
        pending.extend_from_slice(start.raw_head);
        let pool = match start.io {
            FileIo::Pool(pool) => pool.clone(),
            FileIo::Worker | FileIo::Missing(_) => start.default_pool.clone(),
        };
        if let Some(length) = start.content_length {
            fill.publish_head(length);
        }
        Ok(CacheWriter {
            zone: start.zone,
            key: start.key,
            temp: start.temp.first(),
            names: start.temp,
            file: None,
            pool,
            pending,
            capacity,
            written: 0,
            fill: Some(fill),
            update: start.update,
            valid_sec: header.valid_sec,
            body_start,
            expected: start.content_length,
            body_bytes: 0,
            reserved: expected_size,
        })
    }

    /// Adds body bytes; writes on the pool once a batch is gathered.
    pub async fn push(&mut self, data: &[u8]) -> Result<(), StoreFailure> {
        if let Some(room) = self.capacity.checked_sub(self.pending.len())
            && self.pending.capacity() < self.capacity
        {
            self.pending.reserve_exact(room);
        }
        self.pending.extend_from_slice(data);
        self.body_bytes += data.len() as u64;
        // A body that is all here goes to disk with the commit, in one pool task.
        if self.expected == Some(self.body_bytes) {
            return Ok(());
        }
        // The first write goes at once when requests wait for this fill: they read the
        // head and the start of the body from the file.
        let watched = self.fill.as_ref().is_some_and(|fill| fill.fill().watched());
        if self.pending.len() >= WRITE_BATCH_BYTES || (self.file.is_none() && watched) {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), StoreFailure> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let bytes = std::mem::take(&mut self.pending);
        let offset = self.written;
        let len = bytes.len() as u64;
        let returned = match &self.file {
            Some(file) => {
                let file = Arc::clone(file);
                self.run("pwrite()", move || {
                    std::os::unix::fs::FileExt::write_all_at(&*file, &bytes, offset).map(|()| bytes)
                })
                .await?
            }
            None => {
                // The file is made and its first bytes written in one pool task. Waiters
                // read it through a handle of their own (it is opened for writing only).
                let names = self.names.clone();
                let (file, reader, path, bytes) = self
                    .run_steps("open()", move || {
                        let (file, path) = names.create().map_err(|error| ("open()", error))?;
                        std::os::unix::fs::FileExt::write_all_at(&file, &bytes, offset)
                            .map_err(|error| ("pwrite()", error))?;
                        let reader = cache::store::open_entry(&path)
                            .ok()
                            .map(|(reader, _)| reader);
                        Ok((file, reader, path, bytes))
                    })
                    .await?;
                self.temp = path;
                if let (Some(fill), Some(reader)) = (&self.fill, reader) {
                    fill.share_temp(Arc::new(reader));
                }
                self.file = Some(Arc::new(file));
                bytes
            }
        };
        self.pending = returned;
        self.pending.clear();
        self.written += len;
        let Some(fill) = self.fill.as_mut() else {
            return Ok(());
        };
        fill.progress(self.written);
        let grown = self.written.saturating_sub(self.reserved);
        if grown > 0 {
            // A body without a length reserves as it grows, a mebibyte at a time.
            let step = grown.max(1 << 20);
            if !fill.reserve(step) {
                return Err(no_room(&self.zone, step));
            }
            self.reserved += step;
        }
        Ok(())
    }

    /// The body ended where its framing said: the entry goes into place.
    pub async fn finish(self) -> Result<(), StoreFailure> {
        self.finish_with(None).await
    }

    /// [`CacheWriter::finish`] for a body none of which was pushed, all of it in
    /// `buffer[from..]` (the bytes about to go to the client): the pool writes it from
    /// `buffer` itself, which is lent for the task and back when this returns, whatever
    /// the outcome. A writer that was pushed bytes takes the rest as a push.
    pub async fn finish_from(
        mut self,
        buffer: &mut Vec<u8>,
        from: usize,
    ) -> Result<(), StoreFailure> {
        if self.file.is_some() || self.body_bytes != 0 {
            self.push(&buffer[from..]).await?;
            return self.finish().await;
        }
        self.body_bytes = (buffer.len() - from) as u64;
        let lent = Arc::new(std::mem::take(buffer));
        let result = self.finish_with(Some((Arc::clone(&lent), from))).await;
        // The pool task's share is dropped before its result is sent, or with the task when
        // it is refused or lost: the buffer comes back without a copy.
        *buffer = Arc::try_unwrap(lent).unwrap_or_else(|lent| lent.as_ref().clone());
        result
    }

    /// The commit, with the body's last bytes in `tail` (a lent buffer and where in it
    /// they start) when they were not pushed.
    async fn finish_with(
        mut self,
        tail: Option<(Arc<Vec<u8>>, usize)>,
    ) -> Result<(), StoreFailure> {
        if self
            .expected
            .is_some_and(|expected| expected != self.body_bytes)
        {
            return Err(StoreFailure {
                level: Level::Info,
                message: "cache entry not stored: body length mismatch".to_owned(),
            });
        }
        // What is left of the body and the rename go in one pool task (with the file's
        // creation, when nothing was written yet).
        let file = self.file.clone();
        let last = std::mem::take(&mut self.pending);
        let offset = self.written;
        let tail_len = tail
            .as_ref()
            .map_or(0, |(buffer, from)| buffer.len() - from);
        self.written += (last.len() + tail_len) as u64;
        if let Some(fill) = self.fill.as_mut()
            && self.written > self.reserved
            && !fill.reserve(self.written - self.reserved)
        {
            return Err(no_room(&self.zone, self.written - self.reserved));
        }
        let temp = self.temp.clone();
        let names = self.names.clone();
        let target = self.zone.params().layout.entry_path(&self.key);
        let block_size = self.zone.block_size();
        if let Some(fill) = self.fill.as_mut() {
            fill.begin_rename().await;
        }
        let committed = self
            .run_steps("rename()", move || {
                let tail: &[u8] = tail.as_ref().map_or(&[], |(buffer, from)| &buffer[*from..]);
                let Some(file) = file else {
                    return create_write_commit(&names, &[&last, tail], &target, block_size);
                };
                if !last.is_empty() || !tail.is_empty() {
                    cache::store::write_all_parts_at(&file, &[&last, tail], offset)
                        .map_err(|error| ("pwrite()", error))?;
                }
                cache::store::commit(&file, &temp, &target, block_size)
                    .map_err(|error| ("rename()", error))
            })
            .await
            .map_err(|mut failure| {
                if failure.message.starts_with("rename() ") {
                    let errno = failure
                        .message
                        .rsplit_once(" failed (")
                        .map(|(_, rest)| rest);
                    failure.message = format!(
                        "rename() \"{}\" to \"{}\" failed ({})",
                        self.temp.display(),
                        self.zone.params().layout.entry_path(&self.key).display(),
                        errno.unwrap_or(")")
                    );
                }
                failure
            })?;
        self.temp = PathBuf::new();
        if let Some(fill) = self.fill.take() {
            fill.commit(cache::CommitInfo {
                file: committed,
                valid_sec: self.valid_sec,
                body_start: self.body_start,
            });
        }
        // The new entry answers now: the old one is no longer being updated.
        self.update = None;
        Ok(())
    }

    /// Runs a task of several file calls on the writer's pool; its failure names the call
    /// that failed and the file.
    /// `first` names the failure when the task itself is lost.
    async fn run_steps<T: Send + 'static>(
        &self,
        first: &'static str,
        work: impl FnOnce() -> Result<T, (&'static str, std::io::Error)> + Send + 'static,
    ) -> Result<T, StoreFailure> {
        let failed_call = Arc::new(std::sync::Mutex::new(first));
        let record = Arc::clone(&failed_call);
        self.run("", move || {
            work().map_err(|(call, error)| {
                *record.lock().unwrap_or_else(|poison| poison.into_inner()) = call;
                error
            })
        })
        .await
        .map_err(|mut failure| {
            let call = *failed_call
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            failure.message = format!("{call}{}", failure.message);
            failure
        })
    }

    /// Runs a file task on the writer's pool; its failure names the call and the file.
    /// The pool is woken at the end of the worker's turn, once for the entries all its
    /// connections queued in it (`threadpool::wake_deferred`).
    async fn run<T: Send + 'static>(
        &self,
        call: &str,
        work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, StoreFailure> {
        let result = match self
            .pool
            .submit_deferred_as(threadpool::TaskKind::Write, work)
        {
            Ok(completion) => completion
                .await
                .map_err(|_| std::io::Error::other("thread pool task was lost"))
                .and_then(|result| result),
            Err(overflow) => Err(std::io::Error::other(format!(
                "thread pool \"{}\" queue overflow: {} tasks waiting",
                self.pool.name(),
                overflow.waiting
            ))),
        };
        result.map_err(|error| StoreFailure {
            level: Level::Crit,
            message: failure_text(call, &self.temp, &error),
        })
    }
}

/// A store refused for room, and why: `cache "NAME" is full (...)`, or its file system
/// is read-only or has too little free space (not the same advice for the operator).
fn no_room(zone: &Zone, bytes: u64) -> StoreFailure {
    StoreFailure {
        level: Level::Warn,
        message: format!(
            "cache \"{}\" has no room for the response, not cached: {}",
            zone.params().name,
            zone.no_room(bytes)
        ),
    }
}

/// nginx's `CALL "FILE" failed (ERRNO: TEXT)`; a call that names its files itself
/// (`rename() "A" to "B"`) is written as it is.
/// A whole entry in one go, on a pool thread: the temporary file made, written and renamed
/// into place. A failure after the file was made removes it.
fn create_write_commit(
    names: &TempName,
    parts: &[&[u8]],
    target: &std::path::Path,
    block_size: u64,
) -> Result<cache::FileInfo, (&'static str, std::io::Error)> {
    let (file, path) = names.create().map_err(|error| ("open()", error))?;
    let result = cache::store::write_all_parts_at(&file, parts, 0)
        .map_err(|error| ("pwrite()", error))
        .and_then(|()| {
            cache::store::commit(&file, &path, target, block_size)
                .map_err(|error| ("rename()", error))
        });
    if result.is_err() {
        let _ = cache::store::unlink(&path);
    }
    result
}

fn failure_text(call: &str, file: &std::path::Path, error: &std::io::Error) -> String {
    let errno = crate::modules::proxy::handler::errno_text(error);
    if call.contains('"') {
        format!("{call} failed ({errno})")
    } else {
        format!("{call} \"{}\" failed ({errno})", file.display())
    }
}

impl Drop for CacheWriter {
    fn drop(&mut self) {
        // A writer dropped before its commit leaves a temporary file to remove (the fill
        // guard, dropped with it, tells waiters the fill failed).
        if self.file.is_some() && !self.temp.as_os_str().is_empty() {
            let path = std::mem::take(&mut self.temp);
            let _ = self.pool.submit(move || {
                let _ = cache::store::unlink(&path);
            });
        }
    }
}

/// What keeps a proxied body as it passes: the cache, or `proxy_store`.
pub(crate) enum Keeper {
    Cache(CacheWriter),
    File(FileStore),
}

impl Keeper {
    pub async fn push(&mut self, data: &[u8]) -> Result<(), StoreFailure> {
        match self {
            Keeper::Cache(writer) => writer.push(data).await,
            Keeper::File(store) => store.push(data).await,
        }
    }

    pub async fn finish(self) -> Result<(), StoreFailure> {
        match self {
            Keeper::Cache(writer) => writer.finish().await,
            Keeper::File(store) => store.finish().await,
        }
    }

    /// The body's last bytes, `buffer[from..]`, not pushed, then [`Keeper::finish`]; the
    /// cache writes them from `buffer` without a copy.
    pub async fn finish_from(self, buffer: &mut Vec<u8>, from: usize) -> Result<(), StoreFailure> {
        match self {
            Keeper::Cache(writer) => writer.finish_from(buffer, from).await,
            Keeper::File(mut store) => {
                store.push(&buffer[from..]).await?;
                store.finish().await
            }
        }
    }
}

/// `proxy_store`: a 200 response's body written to a temporary file under
/// `proxy_temp_path` on the pool, and renamed to its path when it ended where its framing
/// said; removed otherwise.
pub(crate) struct FileStore {
    /// The temporary file's name (the first one to try until it is made).
    pub temp: PathBuf,
    /// `proxy_temp_path` and the temporary number the name was made from.
    pub temp_dir: (crate::kernel::core::TempPath, u64),
    pub target: PathBuf,
    pub file: Option<Arc<File>>,
    pub pool: ThreadPool,
    pub pending: Vec<u8>,
    pub written: u64,
    /// `proxy_store_access`.
    pub access: u32,
    /// The upstream's `Last-Modified`, the file's time.
    pub modified: Option<i64>,
    pub expected: Option<u64>,
    pub committed: bool,
}

impl FileStore {
    async fn push(&mut self, data: &[u8]) -> Result<(), StoreFailure> {
        self.pending.extend_from_slice(data);
        if self.pending.len() >= WRITE_BATCH_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), StoreFailure> {
        let file = match &self.file {
            Some(file) => Arc::clone(file),
            None => {
                let (dir, number) = self.temp_dir.clone();
                let (file, path) = self
                    .run("open()", move || {
                        crate::kernel::body::temp::create_numbered(&dir, number)
                    })
                    .await?;
                let file = Arc::new(file);
                self.temp = path;
                self.file = Some(Arc::clone(&file));
                file
            }
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let bytes = std::mem::take(&mut self.pending);
        let offset = self.written;
        self.written += bytes.len() as u64;
        self.run("pwrite()", move || {
            std::os::unix::fs::FileExt::write_all_at(&*file, &bytes, offset)
        })
        .await
    }

    async fn finish(mut self) -> Result<(), StoreFailure> {
        self.flush().await?;
        if self
            .expected
            .is_some_and(|expected| expected != self.written)
        {
            return Err(StoreFailure {
                level: Level::Info,
                message: "response not stored: body length mismatch".to_owned(),
            });
        }
        let Some(file) = self.file.clone() else {
            return Ok(());
        };
        let (temp, target) = (self.temp.clone(), self.target.clone());
        let (access, modified) = (self.access, self.modified);
        let call = format!(
            "rename() \"{}\" to \"{}\"",
            temp.display(),
            target.display()
        );
        self.run(&call, move || {
            crate::kernel::pool_fs::store_file(
                &file,
                &temp,
                &target,
                access,
                modified,
                crate::kernel::pool_fs::MissingDirectories::Create,
            )
            .map_err(|(_, error)| error)
        })
        .await?;
        self.committed = true;
        Ok(())
    }

    async fn run<T: Send + 'static>(
        &self,
        call: &str,
        work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, StoreFailure> {
        let result = match self.pool.submit_as(threadpool::TaskKind::Write, work) {
            Ok(completion) => completion
                .await
                .map_err(|_| std::io::Error::other("thread pool task was lost"))
                .and_then(|result| result),
            Err(overflow) => Err(std::io::Error::other(format!(
                "thread pool \"{}\" queue overflow: {} tasks waiting",
                self.pool.name(),
                overflow.waiting
            ))),
        };
        result.map_err(|error| StoreFailure {
            level: Level::Crit,
            message: failure_text(call, &self.temp, &error),
        })
    }
}

impl Drop for FileStore {
    fn drop(&mut self) {
        if self.file.is_some() && !self.committed {
            let path = std::mem::take(&mut self.temp);
            let _ = self
                .pool
                .submit(move || crate::kernel::body::temp::remove(&path));
        }
    }
}
