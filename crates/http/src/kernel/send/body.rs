//! Writing a response after its head is built: the body (bytes, a file, or pieces),
//! framed as chunks when the response is chunked, the trailer section, all under
//! `send_timeout` and `limit_rate` (nginx's write filter).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use runtime::Clock;

use crate::kernel::client::ResponseSink;
use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::send::framing::{CHUNK_END, Framing};
use crate::kernel::send::head::write_last_chunk;
use crate::kernel::send::rate::RateLimit;
use crate::kernel::worker::HttpWorker;

/// Where the body comes from.
#[derive(Debug, Default)]
pub enum Body<'a> {
    #[default]
    Empty,
    Bytes(crate::kernel::response::Bytes<'a>),
    /// A file opened by the static handler, read on the thread pool as it is sent.
    File(crate::kernel::file::io::FileBody),
    /// A proxied response's body, read from the upstream as it is sent.
    Upstream(Box<dyn StreamedBody<'a> + 'a>),
    /// Pieces of memory and of a file, possibly recoded on the way: what the range filter
    /// (`multipart/byteranges`) and the charset filter make of a body.
    Pieces(crate::kernel::send::pieces::Pieces<'a>),
}

impl Body<'_> {
    /// The length when it is known before sending.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    pub fn len(&self) -> Option<u64> {
        match self {
            Body::Empty => Some(0),
            Body::Bytes(bytes) => Some(bytes.len() as u64),
            Body::File(file) => Some(file.len),
            Body::Upstream(_) => None,
            Body::Pieces(pieces) => pieces.len(),
        }
    }
}

/// Bodies up to this size (in memory, or small files) are copied behind the head and sent
/// with it in one `write`.
pub(super) const INLINE_BODY_BYTES_MAX: usize = 16 * 1024;

/// Writes the bytes of one response to the client.
pub struct Output<'c> {
    pub sink: ResponseSink<'c>,
    clock: &'c Clock,
    pub send_timeout: Duration,
    limit: Option<Limiter>,
    /// Bytes written for this response: head, framing, body and trailers (nginx's
    /// `c->sent`, which `limit_rate` counts and `$bytes_sent` reports).
    pub sent: u64,
}

/// A rate limit and the pause it imposes before the next write.
struct Limiter {
    rate: RateLimit,
    delayed_until: Option<tokio::time::Instant>,
}

/// Sleeps until `until`, unless the client closes its connection first: a response held
/// back by `limit_rate` ends when nobody waits for it, as nginx's read-side check ends it
/// (the connection then leaves `stub_status`'s writing figure at once).
async fn pause_until(sink: ResponseSink<'_>, until: tokio::time::Instant) -> io::Result<()> {
    // A framed stream's socket is its connection's, which watches the client itself.
    if sink.is_framed() {
        tokio::time::sleep_until(until).await;
        return Ok(());
    }
    let socket = sink.socket();
    tokio::select! {
        () = tokio::time::sleep_until(until) => Ok(()),
        () = client_closed(socket) => Err(io::ErrorKind::ConnectionReset.into()),
    }
}

/// Resolves when the client has closed its side (or the socket failed); never while it
/// only sent more (a pipelined request), which stays for later.
async fn client_closed(socket: &runtime::Stream) {
    loop {
        if socket.readable().await.is_err() {
            return;
        }
        match socket.peek_closed() {
            Ok(true) => return,
            Ok(false) => std::future::pending::<()>().await,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

impl<'c> Output<'c> {
    pub fn new(
        sink: ResponseSink<'c>,
        clock: &'c Clock,
        send_timeout: Duration,
        limit: Option<RateLimit>,
    ) -> Output<'c> {
        Output {
            sink,
            clock,
            send_timeout,
            limit: limit.map(|rate| Limiter {
                rate,
                delayed_until: None,
            }),
            sent: 0,
        }
    }

    /// How many bytes may be written now; with a rate limit this first waits (on tokio
    /// timers) until at least one may, or fails when the client closes meanwhile.
    pub(crate) async fn allowance(&mut self) -> io::Result<u64> {
        let Some(limiter) = &mut self.limit else {
            return Ok(u64::MAX);
        };
        loop {
            if let Some(until) = limiter.delayed_until.take() {
                pause_until(self.sink, until).await?;
            }
            let now_second = self.clock.wall().unix_seconds;
            let allowance = limiter.rate.allowance(now_second, self.sent);
            if allowance > 0 {
                return Ok(allowance.unsigned_abs());
            }
            let wait = limiter.rate.wait(allowance);
            limiter.delayed_until = Some(tokio::time::Instant::now() + wait);
        }
    }

    /// Writes all of `bytes`, in as many pieces as the rate limit needs. Error-log lines
    /// this worker queued are written first (nginx writes them before it sends more), so a
    /// client that got the bytes finds the lines about them, unless the log writer is
    /// stalled or slow (`log_buffers::log_written`); with none pending this costs one
    /// atomic load.
    pub async fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let urgent = logging::writer::urgent_written();
        if !urgent.is_done() {
            crate::kernel::log_buffers::log_written(urgent).await;
        }
        while !bytes.is_empty() {
            let allowed = self.allowance().await?;
            let take =
                usize::try_from(allowed).map_or(bytes.len(), |allowed| allowed.min(bytes.len()));
            self.sink
                .write_all_timed(&bytes[..take], self.send_timeout)
                .await?;
            self.record(take);
            bytes = &bytes[take..];
        }
        Ok(())
    }

    /// Writes all of `bytes` as [`write`](Self::write) does; an HTTP/2 stream frames the
    /// buffer itself rather than a copy of it.
    pub async fn write_shared(&mut self, mut bytes: Bytes) -> io::Result<()> {
        while !bytes.is_empty() {
            let allowed = self.allowance().await?;
            let take =
                usize::try_from(allowed).map_or(bytes.len(), |allowed| allowed.min(bytes.len()));
            let piece = bytes.split_to(take);
            self.sink
                .write_all_shared_timed(piece, self.send_timeout)
                .await?;
            self.record(take);
        }
        Ok(())
    }

    /// Writes what the socket and the rate limit take now, without waiting; returns how
    /// many bytes went out (0 when the socket is full or the rate limit says wait).
    pub(crate) fn try_write_now(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut take = bytes.len();
        if let Some(limiter) = &self.limit {
            if limiter
                .delayed_until
                .is_some_and(|until| until > tokio::time::Instant::now())
            {
                return Ok(0);
            }
            let allowance = limiter
                .rate
                .allowance(self.clock.wall().unix_seconds, self.sent);
            if allowance <= 0 {
                return Ok(0);
            }
            take =
                usize::try_from(allowance.unsigned_abs()).map_or(take, |allowed| allowed.min(take));
        }
        if take == 0 {
            return Ok(0);
        }
        match self.sink.try_write(&bytes[..take]) {
            Ok(written) => {
                self.record(written);
                Ok(written)
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(error) => Err(error),
        }
    }

    /// Writes what the socket takes now with `MSG_MORE` ([`runtime::Stream::try_write_more`]),
    /// when the caller sends more on this thread at once; 0 under a rate limit, on a framed
    /// stream or a TLS connection, when the socket is full, or while error-log lines wait
    /// to be written first ([`write`](Self::write) sees to those).
    pub(crate) fn try_write_more(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.limit.is_some()
            || self.sink.is_framed()
            || !logging::writer::urgent_written().is_done()
        {
            return Ok(0);
        }
        match self.sink.socket().try_write_more(bytes) {
            Ok(written) => {
                self.record(written);
                Ok(written)
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(error) => Err(error),
        }
    }

    /// Waits until a write may make progress: the rate limit's pause over and the socket
    /// writable, the latter within `send_timeout`. Dropping the wait loses nothing.
    pub async fn ready(&mut self) -> io::Result<()> {
        if let Some(limiter) = &mut self.limit {
            let until = match limiter.delayed_until {
                Some(until) => Some(until),
                None => {
                    let allowance = limiter
                        .rate
                        .allowance(self.clock.wall().unix_seconds, self.sent);
                    (allowance <= 0)
                        .then(|| tokio::time::Instant::now() + limiter.rate.wait(allowance))
                }
            };
            if let Some(until) = until {
                limiter.delayed_until = Some(until);
                pause_until(self.sink, until).await?;
                limiter.delayed_until = None;
                return Ok(());
            }
        }
        match tokio::time::timeout(self.send_timeout, self.sink.writable()).await {
            Ok(result) => result,
            Err(_) => Err(io::ErrorKind::TimedOut.into()),
        }
    }

    /// Counts `written` bytes as sent, for `limit_rate` and `$bytes_sent`.
    pub fn record(&mut self, written: usize) {
        let before = self.sent;
        self.sent += written as u64;
        if let Some(limiter) = &mut self.limit {
            let pause = limiter.rate.pause_after(before, self.sent);
            if !pause.is_zero() {
                limiter.delayed_until = Some(tokio::time::Instant::now() + pause);
            }
        }
    }
}

/// What the body writer needs to know about the response besides its body.
pub struct BodyContext<'r> {
    pub worker: &'r HttpWorker,
    pub connection: &'r ConnectionInfo,
    pub location: &'r Location,
    pub framing: Framing,
    /// Whether the response has a head only (HEAD, 204, 304).
    pub header_only: bool,
    /// Whether `add_trailer` applies to the response.
    pub expect_trailers: bool,
    /// The codings (gunzip, recoding, gzip) a streamed body goes through on the way;
    /// its sender takes them.
    pub coding: std::cell::Cell<crate::kernel::send::coding::Coding>,
}

/// A body its module streams itself (the proxy's, read from the upstream as it is sent):
/// the send path hands it the response's context, the writer and the head to send first.
pub trait StreamedBody<'a>: std::fmt::Debug {
    fn send<'s, 'o>(
        self: Box<Self>,
        context: &'s BodyContext<'s>,
        output: &'s mut Output<'o>,
        request: &'s mut Request<'a>,
        head: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<()>> + 's>>
    where
        'a: 's,
        'o: 's;

    /// Whether the body goes through the codings the filters choose (gunzip, recoding,
    /// gzip) from [`BodyContext::coding`]; a body that cannot is left uncoded and the
    /// filters leave its head alone.
    fn takes_codings(&self) -> bool {
        true
    }

    /// Whether trailers may come with the body's end (a gRPC server's).
    fn may_have_trailers(&self) -> bool {
        false
    }

    /// The body as pieces taken one at a time, for a filter or a subrequest that takes it
    /// in rather than sending it; `None` when this body cannot be taken so.
    fn into_pulled(self: Box<Self>) -> Option<Box<dyn super::pull::PulledBody<'a> + 'a>> {
        None
    }
}

/// Writes `head` (the response head, possibly empty for HTTP/0.9) and the body.
pub(crate) async fn send(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    body: Body<'_>,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    if context.header_only {
        return output.write(head).await;
    }
    match body {
        Body::Empty => send_bytes(context, output, request, b"", head).await,
        Body::Bytes(bytes) => send_bytes(context, output, request, bytes.as_slice(), head).await,
        Body::File(file) => {
            let sent = super::file::send_file(context, output, request, file, head).await;
            if let Err(error) = &sent {
                super::file::log_file_failure(context, request, error);
            }
            sent
        }
        // The assembly sends proxied bodies itself (`send_response`).
        Body::Upstream(_) => Ok(()),
        Body::Pieces(pieces) => {
            let sent = super::pieces::send_pieces(context, output, request, pieces, head).await;
            if let Err(error) = &sent {
                super::file::log_file_failure(context, request, error);
            }
            sent
        }
    }
}

/// A body held in memory: small ones go out with the head in one write.
async fn send_bytes(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    data: &[u8],
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let chunked = context.framing == Framing::Chunked;
    if chunked && !data.is_empty() {
        http1::response::write_chunk_header(head, data.len());
    }
    if data.len() <= INLINE_BODY_BYTES_MAX {
        head.extend_from_slice(data);
        if chunked && !data.is_empty() {
            head.extend_from_slice(CHUNK_END);
        }
        finish(context, request, head);
        return output.write(head).await;
    }
    output.write(head).await?;
    output.write(data).await?;
    head.clear();
    if chunked {
        head.extend_from_slice(CHUNK_END);
    }
    finish(context, request, head);
    output.write(head).await
}

/// The end of the body: nginx's trailers filter runs (its fields exist for
/// `$sent_trailer_NAME` whether or not they can be sent), and a chunked response gets its
/// last chunk with them.
pub fn finish(context: &BodyContext<'_>, request: &mut Request<'_>, out: &mut Vec<u8>) {
    if context.expect_trailers {
        request.response.trailers_added = true;
    }
    if context.framing == Framing::Chunked {
        write_last_chunk(
            context.worker,
            context.connection,
            request,
            context.location,
            out,
        );
    }
}
