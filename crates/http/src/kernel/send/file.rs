//! Sending a file body: with `sendfile(2)` from page cache to the socket, or read in pieces
//! of `output_buffers` and written. Where the disk may be touched is decided by `aio`: on
//! the worker (`aio off`, nginx's blocking behaviour), or on a thread pool (`aio threads`),
//! after first taking from page cache what is already there (`aio_nowait`). Either way a
//! connection lets the others run between pieces once its turn is over.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use threadpool::{TaskKind, ThreadPool};

use crate::kernel::file::io::{
    FileBody, FileError, FileIo, NowaitEnd, PoolSendEnd, all_cached, cache_state_visible,
    probe_cached, read_direct, read_nowait, sendfile_from_pool,
};
use crate::kernel::file::read_chunk_into;
use crate::kernel::request::Request;
use crate::kernel::send::body::{BodyContext, INLINE_BODY_BYTES_MAX, Output, finish};
use crate::kernel::send::framing::{CHUNK_END, Framing, chunk_header_len_max};
use crate::kernel::send::turn::Turn;
use crate::kernel::worker::{HttpWorker, offload_to, offload_urgent_to};

/// Sends `file` after `head` (which goes out first, or with the first piece).
pub(super) async fn send_file(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    file: FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let statics = &context.location.settings.static_files;
    let chunked = context.framing == Framing::Chunked;
    if let FileIo::Missing(name) = &file.io {
        output.write(head).await?;
        head.clear();
        let message = format!("thread pool \"{name}\" not found");
        crate::kernel::request_log::log(
            context.worker,
            context.connection,
            request,
            logging::Level::Error,
            format_args!("{message}"),
        );
        return Err(io::Error::other(message));
    }
    let result = if file.len <= INLINE_BODY_BYTES_MAX as u64 {
        read_behind_head(context, &file, head).await
    } else if statics.sendfile
        && !chunked
        && !file.direct
        && !output.sink.socket().is_tls()
        && !output.sink.is_framed()
    {
        // Without kernel TLS, file data must pass through the session: as nginx, a TLS
        // connection reads the file (page cache on the worker, the rest on the pool).
        let cork = statics.tcp_nopush;
        if cork {
            // nginx's tcp_nopush: the head and the first file bytes share full packets.
            let _ = rustix::net::sockopt::set_tcp_cork(output.sink.socket(), true);
        }
        let sent = send_with_sendfile(context, output, &file, head).await;
        if cork {
            let _ = rustix::net::sockopt::set_tcp_cork(output.sink.socket(), false);
        }
        sent
    } else {
        send_with_reads(context, output, &file, head).await
    };
    result?;
    finish(context, request, head);
    if head.is_empty() {
        return Ok(());
    }
    output.write(head).await
}

/// A small file (up to [`INLINE_BODY_BYTES_MAX`], as for bodies in memory) is read behind
/// the head, which then goes out with it in one write: even with `sendfile on`, one system
/// call and one packet fewer than a `sendfile` after the head, which for small files costs
/// more than the copy saves (measured in docs/static-files.md).
async fn read_behind_head(
    context: &BodyContext<'_>,
    file: &FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let chunked = context.framing == Framing::Chunked;
    let len = file.len as usize;
    if len == 0 {
        return Ok(());
    }
    if chunked {
        http1::response::write_chunk_header(head, len);
    }
    let mut cache_first = CacheFirst::for_body(context);
    *head = read_file(
        context,
        file,
        file.offset,
        std::mem::take(head),
        len,
        &mut cache_first,
    )
    .await?;
    if chunked {
        head.extend_from_slice(CHUNK_END);
    }
    Ok(())
}

/// `sendfile on`: pieces of at most `sendfile_max_chunk` go from the file to the socket
/// without a copy. Under `aio threads` the worker never calls `sendfile` ([`Route`]): a
/// large piece goes to a pool that keeps up ([`POOL_SEND_MIN`]); otherwise what page cache
/// holds the worker copies with a read that cannot wait for the disk, and the rest goes out
/// by `sendfile` on a pool thread. Between pieces the connection lets the others run once
/// its turn is over ([`Turn`]).
async fn send_with_sendfile(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    file: &FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let statics = &context.location.settings.static_files;
    let mut route = Route::choose(context, file);
    if route == Route::Worker && !head.is_empty() && file.len > 0 {
        // The worker's `sendfile` follows at once: the head waits for its first bytes.
        let written = output.try_write_more(head)?;
        head.drain(..written);
    }
    if !head.is_empty() {
        output.write(head).await?;
        head.clear();
    }
    let max_chunk = match statics.sendfile_max_chunk {
        0 => u64::MAX,
        limit => limit,
    };
    let copy_max = statics.output_buffers.read_bytes().max(1);
    let mut copy_buffer = Vec::new();
    let mut turn = Turn::new();
    let mut offset = file.offset;
    let end = file.offset + file.len;
    while offset < end {
        let allowed = output.allowance().await?;
        let count = (end - offset)
            .min(max_chunk)
            .min(allowed)
            .min(isize::MAX as u64) as usize;
        let mut lane = Lane::Ordinary;
        let on_worker = match route {
            Route::Worker => true,
            Route::Pool => false,
            Route::Hinted | Route::Copied => {
                let len = count.min(copy_max);
                let mut judged = None;
                if offset > file.offset && count >= POOL_SEND_MIN && urgent_lane_free(file) {
                    let resident =
                        probe_piece(context, file, route, offset, count, &mut copy_buffer);
                    judged = Some(resident);
                    if resident {
                        lane = Lane::Urgent;
                    }
                }
                let cached = match judged {
                    Some(true) => false,
                    // A hidden file's probe found a hole; what lies before it is copied.
                    Some(false) => route == Route::Copied,
                    None => route == Route::Copied || timed_hint(context, file, offset, len),
                };
                let sent = if cached {
                    copy_cached(context, output, file, offset, len, &mut copy_buffer).await?
                } else {
                    None
                };
                if let Some(sent) = sent {
                    let stats = &context.worker.stats;
                    stats.file_bytes_cached_on_worker.add(sent as u64);
                    offset += sent as u64;
                    turn.after_piece().await;
                    continue;
                }
                // Not cached. A file whose state is hidden is cold from here: the rest goes
                // to the pool ([`CacheFirst`]). An owned one is asked about again next piece.
                if route == Route::Copied && lane == Lane::Ordinary {
                    route = Route::Pool;
                }
                false
            }
        };
        let sent = match &file.io {
            FileIo::Pool(pool) if !on_worker => {
                let sent = sendfile_on_pool(output, pool, lane, file, offset, count).await?;
                context.worker.stats.file_bytes_on_pool.add(sent as u64);
                turn.restart();
                sent
            }
            _ => match sendfile_on_worker(context, output, file, offset, count)? {
                Some(sent) => {
                    let stats = &context.worker.stats;
                    match file.io {
                        FileIo::Pool(_) => stats.file_bytes_cached_on_worker.add(sent as u64),
                        _ => stats.file_bytes_aio_off.add(sent as u64),
                    }
                    sent
                }
                None => {
                    // The socket is full (`aio off`: the worker sends every piece).
                    wait_for_socket(output).await?;
                    turn.restart();
                    continue;
                }
            },
        };
        output.record(sent);
        offset += sent as u64;
        turn.after_piece().await;
    }
    Ok(())
}

/// From this size on, a piece that page cache holds is sent by `sendfile` on the pool's
/// urgent lane ([`Lane::Urgent`]) when a thread is free for it: the worker then spends one
/// hand-off (tens of microseconds, whatever the size) instead of copying the piece twice
/// (into its buffer, then into the socket), and the pool's `sendfile` copies nothing. With
/// the whole data set cached, `bench/threadpool.sh` measured the worker's copies at 0.43x
/// nginx's hot req/s (the workers CPU-bound), and the pool's `sendfile` at 1.04x. Smaller
/// pieces are copied: the hand-off would cost more than the copy.
const POOL_SEND_MIN: usize = 128 * 1024;

/// An urgent task that would wait longer than this for a pool thread is not submitted: the
/// worker copies the piece from page cache instead. A piece judged resident never waits in
/// a queue (issue 34).
const URGENT_DELAY_MAX: Duration = Duration::from_millis(1);

/// Which of the pool's queues a `sendfile` piece goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    /// Data that may have to come from the disk: the pool's ordinary queue.
    Ordinary,
    /// Data judged in page cache ([`probe_piece`]): ahead of every ordinary task, on
    /// threads that disk reads cannot all hold ([`ThreadPool::submit_urgent_as`]), so the
    /// hot file never waits behind reads of cold ones (the seed's scenario).
    Urgent,
}

/// Whether the file's pool would start an urgent task now.
fn urgent_lane_free(file: &FileBody) -> bool {
    matches!(&file.io, FileIo::Pool(pool) if pool.starts_urgent_within(URGENT_DELAY_MAX))
}

/// Whether page cache holds a piece about to be sent: `mincore` over the whole piece where
/// the worker can see the file's state ([`Route::Hinted`]), else one-byte reads that may
/// not wait, every [`PROBE_STRIDE`](crate::kernel::file::io::PROBE_STRIDE) bytes
/// ([`probe_cached`]). Timed for the stall watcher and counted in the residency answers.
fn probe_piece(
    context: &BodyContext<'_>,
    file: &FileBody,
    route: Route,
    offset: u64,
    count: usize,
    scratch: &mut Vec<u8>,
) -> bool {
    if route == Route::Hinted {
        return timed_hint(context, file, offset, count);
    }
    let started = crate::kernel::worker::BlockingTimer::start();
    let end = probe_cached(&file.file, offset, count as u64, scratch);
    context.worker.note_blocking(started.elapsed(), || {
        format!("preadv2() of \"{}\"", file.path.display())
    });
    count_nowait(context.worker, end);
    end == NowaitEnd::Complete
}

/// Who sends a piece of a file under `sendfile on`, decided once per response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// `aio off`: the worker, always, as in nginx (it may wait for the disk).
    Worker,
    /// `aio threads; aio_nowait off`: a pool thread, always.
    Pool,
    /// `aio threads`, a file whose page-cache state the worker can see (it owns the file:
    /// cache files): each piece is asked about first ([`all_cached`]); a cached one is
    /// copied as in [`Route::Copied`], any other is sent by a pool thread without the
    /// worker touching it (a worker's read of pages not cached would start readahead on
    /// the worker, and its page allocations may reclaim memory there when memory is
    /// short).
    Hinted,
    /// `aio threads`, a file whose page-cache state is hidden from the worker (a web root
    /// owned by root, served as `user www-data`): what page cache holds is read by the
    /// worker without waiting (`preadv2(RWF_NOWAIT)`) and written, at most
    /// `output_buffers` at a time; from the first piece whose first page is not there, the
    /// rest is sent by a pool thread. Under `aio threads` the worker's own `sendfile` is
    /// never used: no test made before it (`mincore`) can promise the pages are still there
    /// when it runs, and under memory pressure they were not (a 9.6 s loop stall in
    /// `bench/cache.sh` b6, ARCHITECTURE.md).
    Copied,
}

impl Route {
    fn choose(context: &BodyContext<'_>, file: &FileBody) -> Route {
        match &file.io {
            FileIo::Pool(_) if !context.location.settings.static_files.aio_nowait => Route::Pool,
            FileIo::Pool(_) if cache_state_visible(&file.file) => Route::Hinted,
            FileIo::Pool(_) => Route::Copied,
            FileIo::Worker | FileIo::Missing(_) => Route::Worker,
        }
    }
}

/// Reads up to `len` bytes at `offset` from page cache without waiting and writes them:
/// how many went out, or `None` when not even the first page is cached.
async fn copy_cached(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    file: &FileBody,
    offset: u64,
    len: usize,
    buffer: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    buffer.clear();
    let got = read_nowait(&file.file, offset, buffer, len)?;
    count_nowait(context.worker, got.end);
    if got.filled == 0 {
        if got.end == NowaitEnd::EndOfFile {
            return Err(truncated(format!(
                "read only 0 of {len} from \"{}\"",
                file.path.display()
            )));
        }
        return Ok(None);
    }
    output.write(&buffer[..got.filled]).await?;
    Ok(Some(got.filled))
}

/// [`all_cached`], noted for the stall watcher (it maps and unmaps the range).
fn timed_hint(context: &BodyContext<'_>, file: &FileBody, offset: u64, len: usize) -> bool {
    let started = crate::kernel::worker::BlockingTimer::start();
    let cached = all_cached(&file.file, offset, len as u64);
    context.worker.note_blocking(started.elapsed(), || {
        format!("mincore() of \"{}\"", file.path.display())
    });
    count_hint(context.worker, cached);
    cached
}

/// Counts a `mincore` hint's answer (the metrics' residency answers).
fn count_hint(worker: &HttpWorker, cached: bool) {
    let stats = &worker.stats;
    if cached {
        stats.hints_cached.add(1);
    } else {
        stats.hints_not_cached.add(1);
    }
}

/// Counts how a read that may not wait ended: with every byte (or the file's end), or short.
fn count_nowait(worker: &HttpWorker, end: NowaitEnd) {
    let stats = &worker.stats;
    match end {
        NowaitEnd::Complete | NowaitEnd::EndOfFile => stats.nowait_reads_cached.add(1),
        NowaitEnd::WouldBlock | NowaitEnd::Unsupported => stats.nowait_reads_short.add(1),
    }
}

/// One piece sent by `sendfile` on a pool thread, through a duplicate of the client's
/// socket (non-blocking, so the thread never waits for the client). Waits first until the
/// socket can take bytes, so that the task is not spent on a full socket. Returns how many
/// bytes went out: at least one.
async fn sendfile_on_pool(
    output: &Output<'_>,
    pool: &ThreadPool,
    lane: Lane,
    file: &FileBody,
    offset: u64,
    count: usize,
) -> io::Result<usize> {
    let stream = output.sink.socket();
    loop {
        wait_writable(output).await?;
        let socket = stream.duplicate()?;
        let handle = Arc::clone(&file.file);
        let send = move || sendfile_from_pool(&socket, &handle, offset, count);
        let result = match lane {
            Lane::Ordinary => offload_to(pool, TaskKind::Sendfile, send).await,
            Lane::Urgent => offload_urgent_to(pool, TaskKind::Sendfile, send).await,
        }
        .map_err(pool_failure)??;
        match result.end {
            _ if result.sent > 0 => return Ok(result.sent),
            PoolSendEnd::EndOfFile => {
                return Err(truncated(format!(
                    "sendfile() reported that \"{}\" was truncated at {offset}",
                    file.path.display()
                )));
            }
            PoolSendEnd::SocketFull | PoolSendEnd::Complete => {}
        }
    }
}

/// Waits, within `send_timeout`, until the kernel says the socket can take bytes (another
/// thread may have filled it since the poller last looked).
async fn wait_writable(output: &Output<'_>) -> io::Result<()> {
    loop {
        match output.sink.socket().probe_writable() {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                wait_for_socket(output).await?;
            }
            result => return result,
        }
    }
}

/// Waits, within `send_timeout`, for the poller to report the socket writable.
async fn wait_for_socket(output: &Output<'_>) -> io::Result<()> {
    match tokio::time::timeout(output.send_timeout, output.sink.socket().writable()).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// One `sendfile(2)` on the worker, to the non-blocking socket: how many bytes went out
/// (at least one), or `None` when the socket is full. A file that ends early is an error.
/// The time the call took is noted for the stall watcher (the worker's loop stood still).
fn sendfile_on_worker(
    context: &BodyContext<'_>,
    output: &Output<'_>,
    file: &FileBody,
    offset: u64,
    count: usize,
) -> io::Result<Option<usize>> {
    let stream = output.sink.socket();
    let mut position = offset;
    let started = crate::kernel::worker::BlockingTimer::start();
    let sent = stream.try_io_write(|| {
        rustix::fs::sendfile(stream, &*file.file, Some(&mut position), count)
            .map_err(io::Error::from)
    });
    context.worker.note_blocking(started.elapsed(), || {
        format!("sendfile() of \"{}\"", file.path.display())
    });
    match sent {
        Ok(0) => Err(truncated(format!(
            "sendfile() reported that \"{}\" was truncated at {offset}",
            file.path.display()
        ))),
        Ok(sent) => Ok(Some(sent)),
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(error) => Err(error),
    }
}

/// `sendfile off` (or a chunked body, or `directio`): the file is read in pieces of
/// `output_buffers` (no larger than the rate limit lets go now) and written; the head goes
/// out with the first piece.
async fn send_with_reads(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    file: &FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let statics = &context.location.settings.static_files;
    let piece_max = statics.output_buffers.read_bytes().max(1);
    let chunked = context.framing == Framing::Chunked;
    let framing_bytes = if chunked {
        chunk_header_len_max(piece_max) + CHUNK_END.len()
    } else {
        0
    };
    let mut offset = file.offset;
    let end = file.offset + file.len;
    let mut buffer = Vec::new();
    let mut turn = Turn::new();
    let mut cache_first = CacheFirst::for_body(context);
    if cache_first == CacheFirst::Yes
        && matches!(file.io, FileIo::Pool(_))
        && cache_state_visible(&file.file)
    {
        cache_first = CacheFirst::Asked;
    }
    while offset < end {
        let allowed = output.allowance().await?;
        let overhead = (head.len() + framing_bytes) as u64;
        if allowed <= overhead && !head.is_empty() {
            // Not even the head fits this second: send it on its own.
            output.write(head).await?;
            head.clear();
            continue;
        }
        let len = (end - offset)
            .min(piece_max as u64)
            .min(allowed.saturating_sub(overhead).max(1)) as usize;
        if let (0, Some(framed)) = (buffer.capacity(), output.sink.framed_sink()) {
            buffer = framed.spare_buffer().unwrap_or_default();
        }
        buffer.clear();
        buffer.extend_from_slice(head);
        head.clear();
        if chunked {
            http1::response::write_chunk_header(&mut buffer, len);
        }
        buffer = read_file(context, file, offset, buffer, len, &mut cache_first).await?;
        if chunked {
            buffer.extend_from_slice(CHUNK_END);
        }
        if output.sink.is_framed() {
            // An HTTP/2 stream frames the piece where it was read, with no copy; the next
            // piece gets a buffer of its own.
            output
                .write_shared(Bytes::from(std::mem::take(&mut buffer)))
                .await?;
        } else {
            output.write(&buffer).await?;
        }
        offset += len as u64;
        turn.after_piece().await;
    }
    Ok(())
}

/// Whether the reads of one body still try page cache on the worker first (`aio_nowait`).
/// Once a piece had to come from the pool, the rest of the body is read there too: its file
/// is cold, and a non-blocking read of pages that are not cached still starts readahead on
/// the worker, whose page allocations may reclaim memory synchronously when the memory
/// cgroup is full (seen in `bench/threadpool.sh` as loop stalls of 100 to 180 ms, the
/// worker in `try_to_free_mem_cgroup_pages` under `preadv2`).
///
/// Where the worker can see the file's page-cache state (a file it owns, such as a cache
/// file it wrote), a large body's pieces are asked about first ([`all_cached`]): a piece
/// not all cached goes to the pool without the worker touching it, and the next piece is
/// asked again ([`CacheFirst::Asked`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CacheFirst {
    Yes,
    Asked,
    No,
}

impl CacheFirst {
    pub(super) fn for_body(context: &BodyContext<'_>) -> CacheFirst {
        if context.location.settings.static_files.aio_nowait {
            CacheFirst::Yes
        } else {
            CacheFirst::No
        }
    }
}

/// Appends `len` bytes of the file at `offset` to `buffer`, read where `aio` says
/// ([`read_piece`]); a read on the worker is timed for the stall watcher. Used for every read of a file
/// body: small files behind the head, `sendfile off`, and multipart or recoded pieces.
pub(super) async fn read_file(
    context: &BodyContext<'_>,
    file: &FileBody,
    offset: u64,
    buffer: Vec<u8>,
    len: usize,
    cache_first: &mut CacheFirst,
) -> io::Result<Vec<u8>> {
    let statics = &context.location.settings.static_files;
    let started = crate::kernel::worker::BlockingTimer::start();
    let data_start = buffer.len();
    let (buffer, on_pool) = read_piece(
        context.worker,
        file,
        cache_first,
        statics.directio_alignment,
        offset,
        buffer,
        len,
    )
    .await?;
    if matches!(file.io, FileIo::Worker) {
        context.worker.note_blocking(started.elapsed(), || {
            format!("read() of \"{}\"", file.path.display())
        });
    }
    let stats = &context.worker.stats;
    let read = (buffer.len() - data_start) as u64;
    match file.io {
        FileIo::Pool(_) => {
            stats.file_bytes_on_pool.add(on_pool as u64);
            stats
                .file_bytes_cached_on_worker
                .add(read.saturating_sub(on_pool as u64));
        }
        _ => stats.file_bytes_aio_off.add(read),
    }
    Ok(buffer)
}

/// Appends `wanted` bytes of the file at `offset` to `buffer`: read on the worker under
/// `aio off`; under `aio threads` what page cache holds is read on the worker without
/// waiting (`aio_nowait`, until a piece needs the pool: [`CacheFirst`]), and only the rest
/// on the pool. A file shorter than promised (truncated while being sent) is an error: the
/// promised length cannot be met. With the buffer comes how many bytes the pool read.
async fn read_piece(
    worker: &HttpWorker,
    file: &FileBody,
    cache_first: &mut CacheFirst,
    alignment: u64,
    offset: u64,
    mut buffer: Vec<u8>,
    wanted: usize,
) -> io::Result<(Vec<u8>, usize)> {
    let direct = file.direct;
    let read = move |file: &std::fs::File, at: u64, buffer: &mut Vec<u8>, len: usize| {
        if direct {
            // `O_DIRECT` reads go through an aligned scratch buffer anyway.
            let start = buffer.len();
            buffer.resize(start + len, 0);
            let filled = read_direct(file, at, &mut buffer[start..], alignment);
            buffer.truncate(start + *filled.as_ref().unwrap_or(&0));
            filled
        } else {
            read_chunk_into(file, at, buffer, len)
        }
    };
    let pool = match &file.io {
        FileIo::Worker | FileIo::Missing(_) => {
            let filled = read(&file.file, offset, &mut buffer, wanted)?;
            return complete(file, buffer, filled, wanted).map(|buffer| (buffer, 0));
        }
        FileIo::Pool(pool) => pool,
    };
    let mut done = 0;
    let try_cache = match *cache_first {
        CacheFirst::Yes => true,
        CacheFirst::Asked => {
            let cached = all_cached(&file.file, offset, wanted as u64);
            count_hint(worker, cached);
            cached
        }
        CacheFirst::No => false,
    };
    if try_cache && !direct {
        let got = read_nowait(&file.file, offset, &mut buffer, wanted)?;
        count_nowait(worker, got.end);
        match got.end {
            NowaitEnd::Complete => return Ok((buffer, 0)),
            NowaitEnd::EndOfFile => {
                return complete(file, buffer, got.filled, wanted).map(|buffer| (buffer, 0));
            }
            NowaitEnd::WouldBlock | NowaitEnd::Unsupported => done = got.filled,
        }
    }
    if *cache_first == CacheFirst::Yes {
        *cache_first = CacheFirst::No;
    }
    let handle = Arc::clone(&file.file);
    let (buffer, filled) = offload_to(pool, TaskKind::Read, move || {
        let filled = read(&handle, offset + done as u64, &mut buffer, wanted - done);
        (buffer, filled)
    })
    .await
    .map_err(pool_failure)?;
    let filled = filled?;
    complete(file, buffer, done + filled, wanted).map(|buffer| (buffer, filled))
}

/// The buffer, or nginx's `read only N of M from "FILE"` when the file ended early.
fn complete(file: &FileBody, buffer: Vec<u8>, filled: usize, wanted: usize) -> io::Result<Vec<u8>> {
    if filled < wanted {
        return Err(truncated(format!(
            "read only {filled} of {wanted} from \"{}\"",
            file.path.display()
        )));
    }
    Ok(buffer)
}

/// A file that is shorter than its size when opened (truncated while being sent): the
/// promised length cannot be met, the connection closes and nginx's `alert` says why.
#[derive(Debug)]
struct Truncated(String);

impl std::fmt::Display for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Truncated {}

fn truncated(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, Truncated(message))
}

/// A pool task refused (queue overflow) or lost while the body is being sent.
#[derive(Debug)]
struct PoolFailure(FileError);

impl std::fmt::Display for PoolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for PoolFailure {}

fn pool_failure(error: FileError) -> io::Error {
    io::Error::other(PoolFailure(error))
}

/// A file body that failed part-way: the head may be out already, so the connection just
/// closes; the error log says why with nginx's line (`thread pool "NAME" queue overflow: N
/// tasks waiting` at the pool's level, a truncated file at `alert`).
pub(super) fn log_file_failure(
    context: &BodyContext<'_>,
    request: &Request<'_>,
    error: &io::Error,
) {
    let Some(inner) = error.get_ref() else {
        return;
    };
    let (level, message) = if let Some(failure) = inner.downcast_ref::<PoolFailure>() {
        (failure.0.level, failure.0.message.as_str())
    } else if let Some(Truncated(message)) = inner.downcast_ref::<Truncated>() {
        (logging::Level::Alert, message.as_str())
    } else {
        return;
    };
    crate::kernel::request_log::log(
        context.worker,
        context.connection,
        request,
        level,
        format_args!("{message}"),
    );
}
