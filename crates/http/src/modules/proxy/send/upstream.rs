//! Passing a proxied body to the client: what the upstream sent is re-framed for the
//! client (chunked or as is), coalesced with the head while the upstream's bytes are
//! already there, and written as soon as the next read from the upstream would wait.

use std::future::Future;
use std::io;
use std::pin::Pin;

use crate::kernel::request::Request;
use crate::kernel::send::body::{BodyContext, Output, StreamedBody, finish};
use crate::kernel::send::coding::Coding;
use crate::kernel::send::compress::{coding_failed, framed, framed as framed_into};
use crate::kernel::send::framing::Framing;
use crate::kernel::send::pull::PulledBody;
use crate::kernel::send::turn::Turn;
use crate::modules::proxy::body::{BodyRead, UpstreamBody, log_failure};
use crate::modules::proxy::cache::store::{Keeper, StoreFailure};
use crate::modules::proxy::failure::Failure;

/// Writes are gathered up to this size while the upstream's bytes keep coming without a
/// wait.
const GATHER_BYTES_MAX: usize = 64 * 1024;

impl<'a> StreamedBody<'a> for UpstreamBody<'a> {
    fn send<'s, 'o>(
        self: Box<Self>,
        context: &'s BodyContext<'s>,
        output: &'s mut Output<'o>,
        request: &'s mut Request<'a>,
        head: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<()>> + 's>>
    where
        'a: 's,
        'o: 's,
    {
        runtime::sys::boxed::pin_boxed(|| send_upstream(context, output, request, self, head))
    }

    fn may_have_trailers(&self) -> bool {
        self.carries_trailers()
    }

    fn into_pulled(self: Box<Self>) -> Option<Box<dyn PulledBody<'a> + 'a>> {
        let mut body = *self;
        Some(Box::new(Pulled {
            store: Store(body.take_cache_writer()),
            attempt: body.attempt(),
            received: 0,
            body: Some(body),
        }))
    }
}

/// A proxied body taken in by a filter (a subrequest's, which SSI includes): the cache
/// gets its copy as when it is sent, and the connection goes back to the keep-alive cache
/// at the end.
struct Pulled<'a> {
    body: Option<UpstreamBody<'a>>,
    store: Store,
    attempt: usize,
    received: u64,
}

impl<'a> PulledBody<'a> for Pulled<'a> {
    fn next<'s>(
        &'s mut self,
        context: &'s BodyContext<'s>,
        _socket: &'s runtime::Stream,
        request: &'s mut Request<'a>,
        out: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<bool>> + 's>>
    where
        'a: 's,
    {
        Box::pin(async move {
            let Some(body) = self.body.as_mut() else {
                return Ok(false);
            };
            // The body's reader stops at the first byte it adds to its buffer, so it gets
            // an empty one.
            let mut piece = Vec::new();
            match body.next(&mut piece, true, request).await {
                Ok(more) => {
                    self.received += piece.len() as u64;
                    self.store.push(context, request, &piece).await;
                    out.extend_from_slice(&piece);
                    if !more {
                        end_attempt(request, self.attempt, self.received);
                        self.store.finish(context, request).await;
                        if let Some(done) = self.body.take() {
                            done.finish();
                        }
                    }
                    Ok(more)
                }
                Err(failure) => {
                    end_attempt(request, self.attempt, self.received);
                    self.store.abort();
                    self.body = None;
                    log_failure(context.worker, context.connection, request, &failure);
                    Err(io::Error::other("upstream failed"))
                }
            }
        })
    }
}

/// The body stays boxed (as the trait object it came in) and the rare paths' futures are
/// boxed where they start: this future is allocated for every proxied response.
async fn send_upstream(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    mut body: Box<UpstreamBody<'_>>,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let attempt = body.attempt();
    let mut store = Store(body.take_cache_writer());
    let mut slot = Some(body);
    if context.header_only {
        let written = output.write(head).await;
        if store.0.is_some() {
            // A HEAD turned into GET for the cache: the body is read into the cache.
            Box::pin(drain(context, request, &mut slot, &mut store)).await;
        } else {
            end_attempt(request, attempt, 0);
            if let Some(body) = slot.take()
                && body.is_done()
            {
                body.finish();
            }
        }
        return written;
    }
    let proxy = &context.location.settings.proxy;
    let result = if proxy.buffering {
        let limit = proxy.buffers.count.saturating_mul(proxy.buffers.size);
        let limit = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .max(GATHER_BYTES_MAX);
        send_buffered(context, output, request, &mut slot, head, limit, &mut store).await
    } else {
        Box::pin(send_streamed(
            context, output, request, &mut slot, head, &mut store,
        ))
        .await
    };
    if result.is_err() && store.0.is_some() && slot.is_some() {
        // The client went away; the response goes on into the cache.
        Box::pin(drain(context, request, &mut slot, &mut store)).await;
    }
    result
}

/// The cache's copy of the body, when the response is stored: failures are logged and
/// end the copy only.
struct Store(Option<Box<Keeper>>);

impl Store {
    async fn push(&mut self, context: &BodyContext<'_>, request: &Request<'_>, data: &[u8]) {
        let Some(writer) = self.0.as_mut() else {
            return;
        };
        if data.is_empty() {
            return;
        }
        if let Err(failure) = writer.push(data).await {
            self.0 = None;
            store_failed(context, request, &failure);
        }
    }

    async fn finish(&mut self, context: &BodyContext<'_>, request: &Request<'_>) {
        let Some(writer) = self.0.take() else {
            return;
        };
        // Boxed: only a stored response makes this future.
        if let Err(failure) = Box::pin(writer.finish()).await {
            store_failed(context, request, &failure);
        }
    }

    /// [`Store::finish`] after the body's last bytes, `buffer[from..]`, which were not
    /// pushed: the cache writes them from `buffer` itself.
    async fn finish_from(
        &mut self,
        context: &BodyContext<'_>,
        request: &Request<'_>,
        buffer: &mut Vec<u8>,
        from: usize,
    ) {
        let Some(writer) = self.0.take() else {
            return;
        };
        if let Err(failure) = Box::pin(writer.finish_from(buffer, from)).await {
            store_failed(context, request, &failure);
        }
    }

    /// The upstream failed: nothing is stored.
    fn abort(&mut self) {
        self.0 = None;
    }
}

fn store_failed(context: &BodyContext<'_>, request: &Request<'_>, failure: &StoreFailure) {
    // A full or failing disk fails every store: its `crit` is written once a second.
    static LAST_CRIT_SECOND: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    if failure.level == logging::Level::Crit {
        let now = context.worker.clock.wall().unix_seconds;
        let last = LAST_CRIT_SECOND.swap(now, std::sync::atomic::Ordering::Relaxed);
        if last == now {
            return;
        }
    }
    crate::kernel::request_log::log(
        context.worker,
        context.connection,
        request,
        failure.level,
        format_args!("{}", failure.message),
    );
}

/// A body nobody receives (a background refresh): read into the cache if it is kept.
pub(crate) async fn drain_detached(
    context: &BodyContext<'_>,
    request: &mut Request<'_>,
    mut body: UpstreamBody<'_>,
) {
    let mut store = Store(body.take_cache_writer());
    if store.0.is_none() {
        return;
    }
    let mut slot = Some(Box::new(body));
    drain(context, request, &mut slot, &mut store).await;
}

/// Reads the rest of the body into the cache alone.
async fn drain(
    context: &BodyContext<'_>,
    request: &mut Request<'_>,
    slot: &mut Option<Box<UpstreamBody<'_>>>,
    store: &mut Store,
) {
    let Some(body) = slot.as_mut() else {
        return;
    };
    let attempt = body.attempt();
    let mut data = Vec::new();
    let mut received = 0u64;
    loop {
        data.clear();
        match body.next(&mut data, true, request).await {
            Ok(more) => {
                received += data.len() as u64;
                store.push(context, request, &data).await;
                if !more {
                    end_attempt(request, attempt, received);
                    store.finish(context, request).await;
                    if let Some(done) = slot.take() {
                        done.finish();
                    }
                    return;
                }
                if store.0.is_none() {
                    return;
                }
            }
            Err(failure) => {
                end_attempt(request, attempt, received);
                store.abort();
                log_failure(context.worker, context.connection, request, &failure);
                return;
            }
        }
    }
}

/// `proxy_buffering off`: each piece the upstream sends is written before the next is read.
async fn send_streamed(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    slot: &mut Option<Box<UpstreamBody<'_>>>,
    head: &mut Vec<u8>,
    store: &mut Store,
) -> io::Result<()> {
    let Some(body) = slot.as_mut() else {
        return Ok(());
    };
    let attempt = body.attempt();
    let chunked = context.framing == Framing::Chunked;
    let mut window = Window::of(request);
    let mut coding = context.coding.take();
    // The head's buffer (the connection's, kept for its next response) gathers the body.
    let pending = head;
    let mut data = Vec::new();
    let mut received = 0u64;
    loop {
        data.clear();
        let mut result = body.next(&mut data, false, request).await;
        if matches!(result, Ok(true)) && data.is_empty() {
            // Nothing more without waiting for the upstream: send what is gathered first.
            if !pending.is_empty() {
                output.write(pending).await?;
                pending.clear();
            }
            result = body.next(&mut data, true, request).await;
        }
        let more = match result {
            Ok(more) => more,
            Err(failure) => {
                end_attempt(request, attempt, received);
                store.abort();
                // What arrived is passed on; the client sees the body cut short.
                let _ = output.write(pending).await;
                log_failure(context.worker, context.connection, request, &failure);
                return Err(io::Error::other(failure));
            }
        };
        if !data.is_empty() {
            received += data.len() as u64;
            store.push(context, request, &data).await;
            let data = window.clip(&data);
            code_into(context, output, request, &mut coding, data, pending).await?;
        }
        if !more {
            break;
        }
        if pending.len() >= GATHER_BYTES_MAX {
            output.write(pending).await?;
            pending.clear();
        }
    }
    end_attempt(request, attempt, received);
    store.finish(context, request).await;
    if let Some(mut done) = slot.take() {
        if done.carries_trailers() {
            pass_trailers(context, request, &mut done);
        }
        done.finish();
    }
    let mut rest = Vec::new();
    let ended = coding.finish(&mut rest);
    request.gzip_ratio = coding.gzip_ratio;
    framed(&rest, chunked, pending);
    if let Err(error) = ended {
        let _ = output.write(pending).await;
        return Err(coding_failed(context, request, &error));
    }
    finish(context, request, pending);
    if !pending.is_empty() {
        output.write(pending).await?;
    }
    Ok(())
}

/// `proxy_buffering on`: the upstream is read ahead of the client, so that a slow client
/// does not hold the upstream connection. Up to `limit` unsent bytes are held in memory;
/// beyond that, up to `proxy_max_temp_file_size`, in a temporary file under
/// `proxy_temp_path`, written and read back on the thread pool. Once the body has been read
/// whole the connection goes back to the keep-alive cache (and the server's count of
/// requests in flight down) while the client is still being written to.
async fn send_buffered(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    body: &mut Option<Box<UpstreamBody<'_>>>,
    head: &mut Vec<u8>,
    limit: usize,
    store: &mut Store,
) -> io::Result<()> {
    let Some(attempt) = body.as_deref().map(UpstreamBody::attempt) else {
        return Ok(());
    };
    let mut window = Window::of(request);
    let mut coding = context.coding.take();
    let proxy = &context.location.settings.proxy;
    let mut spool = Spool {
        memory: head,
        sent: 0,
        limit,
        spill: None,
        spill_max: proxy.max_temp_file_size,
    };
    // A body of known length that fits is gathered whole without growing the buffer by steps.
    if let Some(left) = body.as_deref().and_then(UpstreamBody::length_left) {
        spool
            .memory
            .reserve(usize::try_from(left).unwrap_or(usize::MAX).min(limit));
    }
    // Bytes the client gets as the upstream sent them are decoded straight into the spool.
    let as_sent = coding.is_empty() && context.framing != Framing::Chunked && window.is_whole();
    let mut data = Vec::new();
    let mut framed = Vec::new();
    let mut received = 0u64;
    loop {
        // Where the bytes read as sent in this pass start in memory, not yet given to the
        // cache: a body that ends in the pass goes to it from the spool without a copy.
        let mut unstored: Option<usize> = None;
        // Read what is already there without waiting, while memory has room (the client
        // is offered it before anything goes to the temporary file).
        while let Some(upstream) = body.as_mut()
            && spool.in_memory()
        {
            data.clear();
            let out = if as_sent {
                &mut *spool.memory
            } else {
                &mut data
            };
            let start = out.len();
            let read = upstream.next(out, false, request).await;
            let more = match read {
                Ok(more) => more,
                Err(failure) => {
                    out.truncate(start);
                    store.abort();
                    return upstream_failed(
                        context, output, request, &mut spool, attempt, received, failure,
                    )
                    .await;
                }
            };
            let piece_len = out.len() - start;
            received += piece_len as u64;
            if as_sent {
                unstored.get_or_insert(start);
            } else {
                store.push(context, request, &data).await;
                let clipped = window.clip(&data);
                store_coded(
                    context,
                    output,
                    request,
                    &mut spool,
                    &mut coding,
                    clipped,
                    &mut framed,
                )
                .await?;
            }
            if !more {
                end_attempt(request, attempt, received);
                match unstored.take() {
                    Some(from) => {
                        store
                            .finish_from(context, request, spool.memory, from)
                            .await
                    }
                    None => store.finish(context, request).await,
                }
                if let Some(mut done) = body.take() {
                    if done.carries_trailers() {
                        pass_trailers(context, request, &mut done);
                    }
                    done.finish();
                }
                end_coded(context, output, request, &mut spool, &mut coding).await?;
            } else if piece_len == 0 {
                break;
            }
        }
        if let Some(from) = unstored {
            store.push(context, request, &spool.memory[from..]).await;
        }
        // Write what the client takes now; refill from the file when memory is sent.
        loop {
            while spool.sent < spool.memory.len() {
                let written = output.try_write_now(&spool.memory[spool.sent..])?;
                if written == 0 {
                    break;
                }
                spool.sent += written;
            }
            if spool.sent < spool.memory.len() || !spool.refill(context, request).await? {
                break;
            }
        }
        if spool.is_empty() {
            if body.is_none() {
                return Ok(());
            }
        } else if spool.sent >= GATHER_BYTES_MAX {
            spool.memory.drain(..spool.sent);
            spool.sent = 0;
        }
        // Wait for the client or for the upstream, whichever comes first.
        let writing = spool.sent < spool.memory.len();
        let reading = body.is_some() && spool.has_room();
        tokio::select! {
            ready = output.ready(), if writing => ready?,
            read = next_waiting(body.as_deref_mut(), &mut data), if reading => {
                // What the application wrote to stderr comes first, even before a failure.
                if let Some(body) = body.as_mut() {
                    body.log_stderr(request);
                }
                let BodyRead { more, received: bytes } = match read {
                    Ok(read) => read,
                    Err(failure) => {
                        store.abort();
                        return upstream_failed(
                            context, output, request, &mut spool, attempt, received, failure,
                        )
                        .await;
                    }
                };
                received += data.len() as u64;
                store.push(context, request, &data).await;
                if let Some(entry) = request.upstream.attempts.get_mut(attempt) {
                    entry.bytes_received += bytes;
                }
                let clipped = window.clip(&data);
                store_coded(
                    context, output, request, &mut spool, &mut coding, clipped, &mut framed,
                )
                .await?;
                if !more {
                    end_attempt(request, attempt, received);
                    store.finish(context, request).await;
                    if let Some(mut done) = body.take() {
                        if done.carries_trailers() {
                        pass_trailers(context, request, &mut done);
                    }
                        done.finish();
                    }
                    end_coded(context, output, request, &mut spool, &mut coding).await?;
                }
            }
        }
    }
}

/// The upstream failed mid-body: what was read is passed on (the client sees the body cut
/// short), the failure logged, and the connection ends.
async fn upstream_failed(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    spool: &mut Spool<'_>,
    attempt: usize,
    received: u64,
    failure: Failure,
) -> io::Result<()> {
    end_attempt(request, attempt, received);
    let _ = output.write(&spool.memory[spool.sent..]).await;
    log_failure(context.worker, context.connection, request, &failure);
    Err(io::Error::other(failure))
}

/// Bytes for the client not written yet: in memory, then (once memory holds `limit`) in a
/// temporary file.
struct Spool<'m> {
    /// `memory[sent..]` is to be written.
    memory: &'m mut Vec<u8>,
    sent: usize,
    limit: usize,
    spill: Option<Spill>,
    /// `proxy_max_temp_file_size`; 0 never spills.
    spill_max: u64,
}

/// A temporary file of response bytes: written at `written`, read back from `read`.
struct Spill {
    file: std::sync::Arc<std::fs::File>,
    path: std::path::PathBuf,
    written: u64,
    read: u64,
    pool: threadpool::ThreadPool,
}

impl Drop for Spill {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.path);
        let _ = self
            .pool
            .submit(move || crate::kernel::body::temp::remove(&path));
    }
}

impl Spool<'_> {
    fn unsent_memory(&self) -> usize {
        self.memory.len() - self.sent
    }

    fn spilled(&self) -> u64 {
        self.spill
            .as_ref()
            .map_or(0, |spill| spill.written - spill.read)
    }

    fn is_empty(&self) -> bool {
        self.unsent_memory() == 0 && self.spilled() == 0
    }

    /// Whether bytes stored now stay in memory.
    fn in_memory(&self) -> bool {
        self.spilled() == 0 && self.unsent_memory() < self.limit
    }

    /// Whether more may be read from the upstream now.
    fn has_room(&self) -> bool {
        if self.spilled() == 0 && self.unsent_memory() < self.limit {
            return true;
        }
        self.spill_max > 0 && self.spill.as_ref().map_or(0, |spill| spill.written) < self.spill_max
    }

    /// Keeps `bytes` for the client: in memory while it has room and nothing waits in the
    /// file, else at the end of the file (the order of bytes is kept).
    async fn store(
        &mut self,
        context: &BodyContext<'_>,
        request: &Request<'_>,
        bytes: &[u8],
    ) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.in_memory() || self.spill_max == 0 {
            self.memory.extend_from_slice(bytes);
            return Ok(());
        }
        if self.spill.is_none() {
            self.spill = Some(open_spill(context, request).await?);
        }
        let Some(spill) = self.spill.as_mut() else {
            return Ok(());
        };
        let file = std::sync::Arc::clone(&spill.file);
        let offset = spill.written;
        let owned = bytes.to_vec();
        run_on(&spill.pool, threadpool::TaskKind::Write, move || {
            std::os::unix::fs::FileExt::write_all_at(&*file, &owned, offset)
        })
        .await
        .and_then(|result| result)
        .map_err(|error| temp_failure(context, request, "pwrite()", &spill.path, error))?;
        spill.written += bytes.len() as u64;
        Ok(())
    }

    /// Once memory is all written, reads the next part of the file into it; whether it did.
    async fn refill(
        &mut self,
        context: &BodyContext<'_>,
        request: &Request<'_>,
    ) -> io::Result<bool> {
        if self.unsent_memory() > 0 || self.spilled() == 0 {
            return Ok(false);
        }
        let len = usize::try_from(self.spilled())
            .unwrap_or(usize::MAX)
            .min(self.limit.max(1));
        let Some(spill) = self.spill.as_mut() else {
            return Ok(false);
        };
        let file = std::sync::Arc::clone(&spill.file);
        let offset = spill.read;
        let bytes = run_on(&spill.pool, threadpool::TaskKind::Read, move || {
            let mut buffer = vec![0u8; len];
            std::os::unix::fs::FileExt::read_exact_at(&*file, &mut buffer, offset).map(|()| buffer)
        })
        .await
        .and_then(|result| result)
        .map_err(|error| temp_failure(context, request, "pread()", &spill.path, error))?;
        spill.read += len as u64;
        self.memory.clear();
        self.memory.extend_from_slice(&bytes);
        self.sent = 0;
        Ok(true)
    }
}

/// Creates the temporary file under the location's `proxy_temp_path`, on the pool.
async fn open_spill(context: &BodyContext<'_>, request: &Request<'_>) -> io::Result<Spill> {
    let worker = context.worker;
    let number = worker
        .generation
        .temp_numbers
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let dir = context.location.settings.proxy.proxy_temp_path.clone();
    let first = crate::kernel::body::temp::temp_file_path(&dir, number);
    let pool = worker.pools.default_pool().clone();
    let (file, path) = run_on(&pool, threadpool::TaskKind::Write, move || {
        crate::kernel::body::temp::create_numbered(&dir, number)
    })
    .await
    .and_then(|result| result)
    .map_err(|error| temp_failure(context, request, "open()", &first, error))?;
    Ok(Spill {
        file: std::sync::Arc::new(file),
        path,
        written: 0,
        read: 0,
        pool,
    })
}

/// Runs `work` on `pool`; a refused or lost task is an error.
async fn run_on<T: Send + 'static>(
    pool: &threadpool::ThreadPool,
    kind: threadpool::TaskKind,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<T> {
    match pool.submit_as(kind, work) {
        Ok(completion) => completion.await.map_err(|_| {
            io::Error::other(format!("thread pool \"{}\" task was lost", pool.name()))
        }),
        Err(overflow) => Err(io::Error::other(format!(
            "thread pool \"{}\" queue overflow: {} tasks waiting",
            pool.name(),
            overflow.waiting
        ))),
    }
}

/// Logs a temporary-file failure as nginx does (`crit`) and ends the response.
fn temp_failure(
    context: &BodyContext<'_>,
    request: &Request<'_>,
    call: &str,
    path: &std::path::Path,
    error: io::Error,
) -> io::Error {
    crate::kernel::request_log::log(
        context.worker,
        context.connection,
        request,
        logging::Level::Crit,
        format_args!(
            "{call} \"{}\" failed ({})",
            path.display(),
            crate::modules::proxy::handler::errno_text(&error)
        ),
    );
    error
}

/// The next piece of the body, waiting for the upstream as needed; whether more follows
/// and the bytes received from the connection.
async fn next_waiting(
    body: Option<&mut UpstreamBody<'_>>,
    data: &mut Vec<u8>,
) -> Result<BodyRead, Failure> {
    let Some(body) = body else {
        return std::future::pending().await;
    };
    data.clear();
    body.next_detached(data).await
}

/// The part of the body the client gets: all of it, or the single range the range
/// filter chose.
struct Window {
    start: u64,
    end: u64,
    /// Offset in the whole body of the next byte read.
    offset: u64,
}

impl Window {
    fn of(request: &Request<'_>) -> Window {
        let (start, end) = request.response.body_window.unwrap_or((0, u64::MAX));
        Window {
            start,
            end,
            offset: 0,
        }
    }

    /// Whether the client gets the whole body.
    fn is_whole(&self) -> bool {
        self.start == 0 && self.end == u64::MAX
    }

    fn clip<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        let begin = self.offset;
        self.offset += data.len() as u64;
        let from = self.start.saturating_sub(begin).min(data.len() as u64) as usize;
        let to = self.end.saturating_sub(begin).min(data.len() as u64) as usize;
        &data[from..to.max(from)]
    }
}

/// Codes `data` step by step into `pending`, framed; when a step leaves more to do (a
/// gzip body inflating), what is pending is written before the next step.
async fn code_into(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &Request<'_>,
    coding: &mut Coding,
    mut data: &[u8],
    pending: &mut Vec<u8>,
) -> io::Result<()> {
    let chunked = context.framing == Framing::Chunked;
    if coding.is_empty() {
        framed(data, chunked, pending);
        return Ok(());
    }
    let mut coded = Vec::new();
    let mut turn = Turn::new();
    loop {
        let step = match coding.step(data, &mut coded) {
            Ok(step) => step,
            Err(error) => {
                // What was decoded goes out; the client sees the body cut short.
                let _ = output.write(pending).await;
                return Err(coding_failed(context, request, &error));
            }
        };
        data = &data[step.consumed..];
        framed(&coded, chunked, pending);
        coded.clear();
        if !step.more {
            return Ok(());
        }
        output.write(pending).await?;
        pending.clear();
        turn.after_piece().await;
    }
}

/// Codes `data` step by step into the spool, framed. A step that leaves more to do and
/// finds the spool full in memory (with no file to spill to) writes to the client first,
/// so an inflating body stays within the buffers.
async fn store_coded(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &Request<'_>,
    spool: &mut Spool<'_>,
    coding: &mut Coding,
    mut data: &[u8],
    framed: &mut Vec<u8>,
) -> io::Result<()> {
    let chunked = context.framing == Framing::Chunked;
    framed.clear();
    if coding.is_empty() {
        if !chunked {
            return spool.store(context, request, data).await;
        }
        framed_into(data, chunked, framed);
        return spool.store(context, request, framed).await;
    }
    let mut coded = Vec::new();
    let mut turn = Turn::new();
    loop {
        let step = match coding.step(data, &mut coded) {
            Ok(step) => step,
            Err(error) => {
                let _ = output.write(&spool.memory[spool.sent..]).await;
                return Err(coding_failed(context, request, &error));
            }
        };
        data = &data[step.consumed..];
        framed.clear();
        framed_into(&coded, chunked, framed);
        coded.clear();
        spool.store(context, request, framed).await?;
        if !step.more {
            return Ok(());
        }
        if spool.spill.is_none() && !spool.has_room() {
            output.write(&spool.memory[spool.sent..]).await?;
            spool.memory.clear();
            spool.sent = 0;
        }
        turn.after_piece().await;
    }
}

/// The body's end: the rest of its codings and the last chunk into the spool.
async fn end_coded(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    spool: &mut Spool<'_>,
    coding: &mut Coding,
) -> io::Result<()> {
    let chunked = context.framing == Framing::Chunked;
    let mut rest = Vec::new();
    let ended = coding.finish(&mut rest);
    request.gzip_ratio = coding.gzip_ratio;
    let mut framed = Vec::new();
    framed_into(&rest, chunked, &mut framed);
    if let Err(error) = ended {
        spool.store(context, request, &framed).await?;
        let _ = output.write(&spool.memory[spool.sent..]).await;
        return Err(coding_failed(context, request, &error));
    }
    finish(context, request, &mut framed);
    spool.store(context, request, &framed).await
}

/// The upstream's trailers (a gRPC answer's) go into the response's trailer section,
/// without the fields `*_hide_header` hides; they are written with the body's end.
#[cold]
#[inline(never)]
fn pass_trailers(
    context: &BodyContext<'_>,
    request: &mut Request<'_>,
    body: &mut UpstreamBody<'_>,
) {
    let Some(mut trailers) = body.take_trailers() else {
        return;
    };
    let proxy = &context.location.settings.proxy;
    trailers.retain(|(name, _)| !crate::modules::proxy::response::is_hidden(proxy, name));
    request.response.trailers = trailers;
}

fn end_attempt(request: &mut Request<'_>, attempt: usize, received: u64) {
    if let Some(entry) = request.upstream.attempts.get_mut(attempt) {
        entry.response_length = received;
        entry.response_time = Some(runtime::clock::since(entry.started));
    }
}
