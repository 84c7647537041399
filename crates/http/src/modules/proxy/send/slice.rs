//! Sending a sliced response (`slice`): the first slice's body, then each following
//! slice fetched as the one before it is out, through the proxy (and the cache) as its own
//! request with its own `$slice_range`, cut to what the client asked for. A slice that does
//! not fit (another status, range, total or ETag) ends the response with nginx's error.
//!
//! Slices before the client's range are not fetched, and one that is fetched but not sent
//! (the first, when `If-Range` made it start at 0) is still read to its end, so that its
//! cache entry is written. A small response (head and body within nginx's
//! `postpone_output` of 1460 bytes) is gathered whole before anything is written, so that a
//! slice that does not fit ends it with nothing sent, as nginx's postponed output does.

use std::future::Future;
use std::io;
use std::pin::Pin;

use logging::Level;

use crate::kernel::client::{BodySource, Client, ReadAhead};
use crate::kernel::conf::LocationId;
use crate::kernel::request::Request;
use crate::kernel::request_log::log;
use crate::kernel::send::body::{Body, BodyContext, Output, StreamedBody};
use crate::kernel::send::pull::{PulledBody, Puller};
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::handler::{ProxyOutcome, proxy_one};
use crate::modules::proxy::slice::parse_content_range;

/// A response made of slices.
pub(crate) struct SliceBody<'a> {
    pub worker: &'a HttpWorker,
    pub location_id: LocationId,
    pub size: u64,
    pub total: u64,
    /// The first slice's ETag: every slice must have the same.
    pub etag: Option<Vec<u8>>,
    /// The first slice's body, not sent yet.
    pub first: Option<Body<'a>>,
    pub first_start: u64,
}

impl std::fmt::Debug for SliceBody<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SliceBody")
            .field("size", &self.size)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl<'a> StreamedBody<'a> for SliceBody<'a> {
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
        Box::pin(send_slices(context, output, request, *self, head))
    }

    /// Each slice is sent as it comes; nothing codes the whole.
    fn takes_codings(&self) -> bool {
        false
    }

    /// The slices one after another for a filter (sub_filter, SSI) that takes the body in.
    fn into_pulled(self: Box<Self>) -> Option<Box<dyn PulledBody<'a> + 'a>> {
        let end = self.total;
        PulledSlices::new(*self, 0, end).map(|pulled| Box::new(pulled) as Box<dyn PulledBody<'a>>)
    }
}

/// A head and body up to this size are held until the whole response is made (nginx's
/// default `postpone_output`).
const POSTPONE_OUTPUT_BYTES: u64 = 1460;

/// The slices from the first one's start to `end`, piece by piece; with `low` past the
/// first slice, the first is read and left out and the next one is the slice that holds
/// `low` (see [`PulledSlices::start`]).
struct PulledSlices<'a> {
    body: SliceBody<'a>,
    part: Puller<'a>,
    /// The first slice is read to its end and left out.
    discard: bool,
    /// Where the next slice starts.
    next: u64,
    end: u64,
}

impl<'a> PulledSlices<'a> {
    fn new(mut body: SliceBody<'a>, low: u64, end: u64) -> Option<PulledSlices<'a>> {
        let part = Puller::new(body.first.take()?)?;
        let mut next = body.first_start + body.size.min(body.total - body.first_start);
        let discard = next <= low;
        if discard {
            next = low / body.size * body.size;
        }
        Some(PulledSlices {
            body,
            part,
            discard,
            next,
            end,
        })
    }

    /// Where the bytes this gives start in the whole body.
    fn start(&self) -> u64 {
        if self.discard {
            self.next
        } else {
            self.body.first_start
        }
    }
}

impl<'a> PulledBody<'a> for PulledSlices<'a> {
    fn next<'s>(
        &'s mut self,
        context: &'s BodyContext<'s>,
        socket: &'s runtime::Stream,
        request: &'s mut Request<'a>,
        out: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<bool>> + 's>>
    where
        'a: 's,
    {
        Box::pin(async move {
            loop {
                if self.discard {
                    let mut left_out = Vec::new();
                    while self
                        .part
                        .next(context, socket, request, &mut left_out)
                        .await?
                    {
                        left_out.clear();
                    }
                    self.discard = false;
                } else if self.part.next(context, socket, request, out).await? {
                    return Ok(true);
                }
                if self.next >= self.end {
                    return Ok(false);
                }
                let len = self.body.size.min(self.body.total - self.next);
                let (status, length) = (request.response.status, request.response.content_length);
                let part = fetch(context, socket, request, &self.body, self.next, len).await;
                request.response.status = status;
                request.response.content_length = length;
                self.part = Puller::new(part?)
                    .ok_or_else(|| io::Error::other("a slice cannot be taken in"))?;
                self.next += len;
                if !out.is_empty() {
                    return Ok(true);
                }
            }
        })
    }
}

async fn send_slices<'a>(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'a>,
    mut body: SliceBody<'a>,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    if context.header_only {
        output.write(head).await?;
        head.clear();
        return Ok(());
    }
    let (low, high) = request.response.body_window.unwrap_or((0, body.total));
    // The client's response as the log will see it; each slice's own head overwrites it.
    let status = request.response.status;
    let length = request.response.content_length;
    if head.len() as u64 + (high - low) <= POSTPONE_OUTPUT_BYTES {
        let gathered = gather(context, output, request, body, (low, high), head).await;
        request.response.status = status;
        request.response.content_length = length;
        return gathered;
    }
    output.write(head).await?;
    head.clear();
    let mut start = body.first_start;
    while start < high {
        let len = body.size.min(body.total - start);
        let part = match body.first.take() {
            Some(part) => part,
            None => fetch(context, output.sink.socket(), request, &body, start, len).await?,
        };
        let sent = send_part(context, output, request, part, start, len, (low, high)).await;
        request.response.status = status;
        request.response.content_length = length;
        sent?;
        start += len;
        // nginx moves on to the slice that holds the client's range.
        if start < low {
            start = low / body.size * body.size;
        }
    }
    Ok(())
}

/// A small response: every slice it needs taken in, then the head and the client's part
/// written at once; a slice that does not fit leaves nothing written.
async fn gather<'a>(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'a>,
    body: SliceBody<'a>,
    (low, high): (u64, u64),
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let Some(mut pulled) = PulledSlices::new(body, low, high) else {
        return Err(io::Error::other("a slice cannot be taken in"));
    };
    let start = pulled.start();
    let mut whole = Vec::new();
    while pulled
        .next(context, output.sink.socket(), request, &mut whole)
        .await?
    {}
    let from = usize::try_from(low - start)
        .unwrap_or(usize::MAX)
        .min(whole.len());
    let to = usize::try_from(high - start)
        .unwrap_or(usize::MAX)
        .min(whole.len());
    head.extend_from_slice(&whole[from..to.max(from)]);
    output.write(head).await?;
    head.clear();
    Ok(())
}

/// The slice at `start` through the proxy, checked against the first one.
async fn fetch<'a>(
    context: &BodyContext<'_>,
    socket: &runtime::Stream,
    request: &mut Request<'a>,
    body: &SliceBody<'a>,
    start: u64,
    len: u64,
) -> io::Result<Body<'a>> {
    let mut read_ahead = ReadAhead::new(0);
    let mut state = crate::kernel::body::BodyState::Done;
    let mut client = Client {
        info: context.connection,
        source: BodySource::http1(socket, &mut read_ahead),
        body: &mut state,
    };
    let last = start + len - 1;
    request.upstream.slice = Some((start, last));
    request.response.clear();
    let outcome = proxy_one(body.worker, &mut client, request, body.location_id).await;
    let failed = |request: &Request<'_>, message: String| {
        log(
            body.worker,
            context.connection,
            request,
            Level::Error,
            format_args!("{message}"),
        );
        io::Error::other(message)
    };
    let ProxyOutcome::Respond(part) = outcome else {
        return Err(failed(request, "missing slice response".to_owned()));
    };
    let response = &request.response;
    if response.status != 206 {
        let message = format!(
            "unexpected status code {} in slice response",
            response.status
        );
        return Err(failed(request, message));
    }
    if response.etag != body.etag {
        return Err(failed(
            request,
            "etag mismatch in slice response".to_owned(),
        ));
    }
    let Some(range) = response
        .content_range
        .as_deref()
        .and_then(parse_content_range)
    else {
        return Err(failed(
            request,
            "invalid range in slice response".to_owned(),
        ));
    };
    if range.total != body.total {
        return Err(failed(
            request,
            "invalid range in slice response".to_owned(),
        ));
    }
    if range.first != start || range.last != last {
        let message = format!(
            "unexpected range in slice response: {}-{}, expected: {start}-{last}",
            range.first, range.last
        );
        return Err(failed(request, message));
    }
    Ok(part)
}

/// Sends what the client wants of one slice (`window` is the client's part of the whole
/// body).
async fn send_part<'a>(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'a>,
    part: Body<'a>,
    start: u64,
    len: u64,
    window: (u64, u64),
) -> io::Result<()> {
    let from = window.0.max(start) - start;
    let to = window.1.min(start + len).saturating_sub(start);
    if from >= to {
        // Read to its end all the same, so that its cache entry is written.
        if let Body::Upstream(streamed) = part {
            request.response.body_window = Some((0, 0));
            let mut none = Vec::new();
            return streamed.send(context, output, request, &mut none).await;
        }
        return Ok(());
    }
    let mut none = Vec::new();
    match part {
        Body::File(mut file) => {
            file.offset += from;
            file.len = to - from;
            crate::kernel::send::body::send(context, output, request, Body::File(file), &mut none)
                .await
        }
        Body::Bytes(bytes) => {
            let bytes = bytes.as_slice();
            let end = (to as usize).min(bytes.len());
            output.write(&bytes[(from as usize).min(end)..end]).await
        }
        Body::Upstream(streamed) => {
            request.response.body_window = Some((from, to));
            streamed.send(context, output, request, &mut none).await
        }
        Body::Empty | Body::Pieces(_) => Err(io::Error::other("empty slice response")),
    }
}
