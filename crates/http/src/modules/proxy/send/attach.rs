//! A response read from a cache entry while another request still writes it (streaming
//! waiters, `proxy_cache_lock` with a `Content-Length`): the body is read from the fill's
//! temporary file as far as it is written, on the cache's pool, and the reader waits for
//! the fill's next progress in between, without polling. A single range (`Range`, a
//! slice) is read from where it starts, as soon as the fill has written it. A fill that
//! ends short does not cut the response: it is finished from a fetch of its own
//! (`proxy::cache::resume`).

use std::fs::File;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use cache::{Fill, FillState};

use crate::kernel::file::io::FileIo;
use crate::kernel::request::Request;
use crate::kernel::send::body::{BodyContext, Output, StreamedBody};
use crate::kernel::send::compress::Coder;
use crate::kernel::send::pull::PulledBody;

/// Bytes read from the temporary file at once.
const READ_BYTES_MAX: u64 = 256 * 1024;

/// The body of a response attached to a running fill.
pub struct AttachedBody {
    pub fill: Arc<Fill>,
    /// A readable handle on the fill's temporary file (the file stays readable after its
    /// rename into place).
    pub file: Arc<File>,
    /// Where the body starts and ends in the file.
    pub start: u64,
    pub end: u64,
    pub io: FileIo,
    /// How long the fill may make no progress: a little longer than its upstream's
    /// `proxy_read_timeout`, so that a stalled upstream fails the fill first (and the
    /// response is resumed) rather than this wait.
    pub stall_timeout: Duration,
    /// The stored response's status, which a resumed response's new answer must have.
    pub status: u16,
}

impl std::fmt::Debug for AttachedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttachedBody")
            .field("start", &self.start)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl<'a> StreamedBody<'a> for AttachedBody {
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
        Box::pin(send_attached(context, output, request, *self, head))
    }

    fn into_pulled(self: Box<Self>) -> Option<Box<dyn PulledBody<'a> + 'a>> {
        let body = *self;
        Some(Box::new(AttachedPull {
            states: body.fill.subscribe(),
            offset: body.start,
            body,
        }))
    }
}

/// An attached body taken in piece by piece (a response resumed from another fill reads
/// it so): each piece is what the fill has written beyond the last, waited for.
struct AttachedPull {
    body: AttachedBody,
    states: tokio::sync::watch::Receiver<FillState>,
    offset: u64,
}

impl<'a> PulledBody<'a> for AttachedPull {
    fn next<'s>(
        &'s mut self,
        context: &'s BodyContext<'s>,
        _socket: &'s runtime::Stream,
        _request: &'s mut Request<'a>,
        out: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<bool>> + 's>>
    where
        'a: 's,
    {
        Box::pin(async move {
            let end = self.body.end;
            while self.offset < end {
                let available = match *self.states.borrow_and_update() {
                    FillState::Streaming { written, .. } => written.min(end),
                    FillState::Committed { .. } => end,
                    FillState::Pending => self.offset,
                    FillState::Failed | FillState::NotCacheable => {
                        return Err(io::Error::other("the cache fill this response read ended"));
                    }
                };
                if available > self.offset {
                    let len = (available - self.offset).min(READ_BYTES_MAX);
                    let data = read(context, &self.body, self.offset, len).await?;
                    if data.is_empty() {
                        return Err(io::Error::other(
                            "the cache fill's file is shorter than written",
                        ));
                    }
                    self.offset += data.len() as u64;
                    out.extend_from_slice(&data);
                    return Ok(self.offset < end);
                }
                let changed = self.states.changed();
                match tokio::time::timeout(self.body.stall_timeout, changed).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) if matches!(*self.states.borrow(), FillState::Committed { .. }) => {}
                    Ok(Err(_)) => {
                        return Err(io::Error::other("the cache fill this response read ended"));
                    }
                    Err(_) => return Err(io::ErrorKind::TimedOut.into()),
                }
            }
            Ok(false)
        })
    }
}

async fn send_attached(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    body: AttachedBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    output.write(head).await?;
    head.clear();
    if context.header_only {
        return Ok(());
    }
    let mut coder = Coder::new(context, context.coding.take(), Vec::new());
    let mut states = body.fill.subscribe();
    // The single range the range filter (or the slice module) chose: only that part of the
    // file is read, once the fill has written it.
    let (mut offset, end) = match request.response.body_window {
        Some((low, high)) => (
            body.start.saturating_add(low).min(body.end),
            body.start.saturating_add(high).min(body.end),
        ),
        None => (body.start, body.end),
    };
    let window = (offset - body.start, end - body.start);
    while offset < end {
        let state = *states.borrow_and_update();
        let available = match state {
            FillState::Streaming { written, .. } => written.min(end),
            FillState::Committed { .. } => end,
            FillState::Pending => offset,
            FillState::Failed | FillState::NotCacheable => {
                return resume(context, output, request, &body, coder, window, offset).await;
            }
        };
        if available > offset {
            let len = (available - offset).min(READ_BYTES_MAX);
            let data = read(context, &body, offset, len).await?;
            if data.is_empty() {
                return Err(io::Error::other(
                    "the cache fill's file is shorter than written",
                ));
            }
            offset += data.len() as u64;
            coder.code(context, output, request, &data).await?;
            continue;
        }
        coder.flush(output).await?;
        match tokio::time::timeout(body.stall_timeout, states.changed()).await {
            Ok(Ok(())) => {}
            // The fill is gone: its last state says whether everything was written.
            Ok(Err(_)) if matches!(*states.borrow(), FillState::Committed { .. }) => {}
            Ok(Err(_)) => {
                return resume(context, output, request, &body, coder, window, offset).await;
            }
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        }
    }
    coder.finish(context, output, request).await
}

/// The fill ended short at file offset `offset`: the rest from a fetch of this request's
/// own.
async fn resume(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    body: &AttachedBody,
    mut coder: Coder,
    window: (u64, u64),
    offset: u64,
) -> io::Result<()> {
    coder.flush(output).await?;
    let at = crate::modules::proxy::cache::resume::Resume {
        old: &body.file,
        io: &body.io,
        body_start: body.start,
        body_len: body.end - body.start,
        status: body.status,
        window,
        sent: offset - body.start,
    };
    crate::modules::proxy::cache::resume::finish(context, output, request, coder, at).await
}

/// Reads `len` bytes at `offset` where the cache's reads run.
async fn read(
    context: &BodyContext<'_>,
    body: &AttachedBody,
    offset: u64,
    len: u64,
) -> io::Result<Vec<u8>> {
    let file = Arc::clone(&body.file);
    let path = std::path::Path::new("cache fill");
    let work = move || {
        let mut buffer = vec![0u8; len as usize];
        let mut filled = 0;
        while filled < buffer.len() {
            match std::os::unix::fs::FileExt::read_at(
                &*file,
                &mut buffer[filled..],
                offset + filled as u64,
            ) {
                Ok(0) => break,
                Ok(read) => filled += read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        buffer.truncate(filled);
        Ok(buffer)
    };
    crate::modules::proxy::cache::run_read(context.worker, &body.io, path, work)
        .await
        .map_err(|error| io::Error::other(error.message))?
}
