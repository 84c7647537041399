//! A proxied response's body: read from the upstream connection as its framing says
//! (length, chunked, or until close), written to the client in the client's framing, and
//! the connection kept for reuse when the body ended exactly where the framing said.

use std::time::{Duration, Instant};

use http1::chunked::ChunkedDecoder;
use runtime::Stream;

use crate::kernel::request::Request;
use crate::kernel::upstream::{Group, Selected};
use crate::modules::proxy::Proxy;
use crate::modules::proxy::cache::store::Keeper;
use crate::modules::proxy::exchange::{read_timed, read_timed_appending, read_timed_spare};
use crate::modules::proxy::failure::{Action, Failure, Fault};
use crate::modules::proxy::gateway::response::{FastcgiBody, StderrLog};
use crate::modules::proxy::grpc::body::GrpcBody;
use crate::modules::proxy::memcached::response::Trailer;
use crate::modules::proxy::response::{InvalidHead, UpstreamFraming};
use cgi::fastcgi::ResponseEvent;

/// A buffer this many times larger than one read (`proxy_buffers`) is not read into: it
/// is given up for one of the read's size.
const READ_ROOM_MAX_TIMES: usize = 4;

/// Gives the peer's connection count back when the response is done with.
pub struct Release<'a> {
    pub group: &'a Group,
    pub selected: Selected,
    /// `sticky learn`: the session the answer created, bound when the body has ended.
    pub learned: Option<Box<crate::modules::proxy::sticky::Learned>>,
    /// When the try started: `least_time last_byte` counts its time when the body ends.
    pub started: Instant,
}

impl Release<'_> {
    /// Counts bytes read from the peer in its counters.
    fn note_received(&self, received: u64) {
        if received > 0 {
            self.group.note_bytes(self.selected, 0, received);
        }
    }
}

/// Where a connection goes back when its response's body ended cleanly.
pub struct Keepalive<'a> {
    /// The group, with its `keepalive` settings.
    pub group: &'a Group,
    /// When the connection was opened, and the requests it has carried.
    pub opened: Instant,
    pub requests: u64,
    /// What the connection was opened for (`keepalive::Idle::purpose`).
    pub purpose: u64,
}

/// What a response's body starts from.
pub struct BodyStart<'a> {
    pub stream: Stream,
    /// The buffer the head was read into; the body's first bytes follow the head at
    /// `position`.
    pub input: Vec<u8>,
    pub position: usize,
    pub framing: UpstreamFraming,
    /// `proxy_read_timeout`.
    pub read_timeout: Duration,
    /// How much to read at once (`proxy_buffers`).
    pub read_size: u64,
    pub keepalive: Option<Keepalive<'a>>,
    pub selected: Selected,
    pub release: Option<Release<'a>>,
    /// The request's entry in `$upstream_*`.
    pub attempt: usize,
    /// Where the body is stored as it passes, when the cache keeps it.
    pub(crate) cache: Option<Box<Keeper>>,
    /// `proxy_limit_rate`: bytes per second read from the upstream; 0 is no limit.
    pub limit_rate: u64,
    /// A FastCGI answer: the body is in its records (the framing is then `Close`).
    pub(crate) gateway: Option<Box<FastcgiBody>>,
    /// Where its stderr (or memcached's bad trailer) is logged.
    pub(crate) stderr_log: Option<Box<StderrLog<'a>>>,
    /// A memcached value: `\r\nEND\r\n` follows its bytes.
    pub(crate) trailer: Option<Trailer>,
    /// A gRPC answer: the body is its stream's DATA (the framing is then `Close`).
    pub(crate) grpc: Option<Box<GrpcBody>>,
}

/// A piece of the body read by [`UpstreamBody::next_detached`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BodyRead {
    /// More of the body follows.
    pub more: bool,
    /// Bytes read from the connection.
    pub received: u64,
}

/// The body of a proxied response.
pub struct UpstreamBody<'a> {
    /// `None` once the connection went back to the keep-alive cache.
    stream: Option<Stream>,
    /// Bytes read from the upstream and not yet decoded.
    input: Vec<u8>,
    position: usize,
    /// The end of the bytes read in `input` (beyond it, room for the next read).
    end: usize,
    framing: UpstreamFraming,
    remaining: u64,
    decoder: ChunkedDecoder,
    read_timeout: Duration,
    /// How much to read from the upstream at once (`proxy_buffers`).
    read_size: usize,
    /// Where the connection goes back when the body ends cleanly.
    keepalive: Option<Keepalive<'a>>,
    selected: Selected,
    release: Option<Release<'a>>,
    /// The request's entry in `$upstream_*`.
    attempt: usize,
    cache: Option<Box<Keeper>>,
    limit_rate: u64,
    /// When the first body read waited, and the bytes read since (for the rate).
    read_since: Option<(u64, u64)>,
    gateway: Option<Box<FastcgiBody>>,
    stderr_log: Option<Box<StderrLog<'a>>>,
    trailer: Option<Trailer>,
    grpc: Option<Box<GrpcBody>>,
}

impl std::fmt::Debug for UpstreamBody<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamBody")
            .field("framing", &self.framing)
            .finish_non_exhaustive()
    }
}

impl Drop for UpstreamBody<'_> {
    fn drop(&mut self) {
        crate::modules::proxy::exchange::give_buffer(std::mem::take(&mut self.input));
        if self.grpc.is_some() {
            self.cancel_grpc();
        }
        if let Some(release) = self.release.take() {
            let now = runtime::clock::monotonic();
            if let Some(learned) = release.learned {
                learned.commit(now);
            }
            if release.group.measures_time() == Some(upstream::server_line::TimeMeasure::LastByte) {
                let took = now.saturating_duration_since(release.started);
                release.group.note_time(release.selected, took, now);
            }
            release.group.release(release.selected, false, now);
        }
    }
}

impl<'a> UpstreamBody<'a> {
    pub fn new(start: BodyStart<'a>) -> UpstreamBody<'a> {
        UpstreamBody {
            stream: Some(start.stream),
            end: start.input.len(),
            input: start.input,
            position: start.position,
            remaining: match start.framing {
                UpstreamFraming::Length(length) => length,
                _ => 0,
            },
            framing: start.framing,
            decoder: ChunkedDecoder::new(),
            read_timeout: start.read_timeout,
            read_size: usize::try_from(start.read_size)
                .unwrap_or(64 * 1024)
                .clamp(4096, 1 << 20),
            keepalive: start.keepalive,
            selected: start.selected,
            release: start.release,
            attempt: start.attempt,
            cache: start.cache,
            limit_rate: start.limit_rate,
            read_since: None,
            gateway: start.gateway,
            stderr_log: start.stderr_log,
            trailer: start.trailer,
            grpc: start.grpc,
        }
    }

    /// The bytes of the body not yet passed on, when its length is known.
    pub fn length_left(&self) -> Option<u64> {
        match self.framing {
            UpstreamFraming::Length(_) => Some(self.remaining),
            _ => None,
        }
    }

    /// Whether the whole body has been read.
    pub fn is_done(&self) -> bool {
        match self.framing {
            UpstreamFraming::None => true,
            UpstreamFraming::Length(_) => self.remaining == 0 && !self.trailer_pending(),
            UpstreamFraming::Chunked => false,
            // An HTTP/2 stream that ended with its head (a HEAD's answer, a 304).
            UpstreamFraming::Close => self.grpc_finished(),
        }
    }

    /// An HTTP/2 stream whose whole answer has been taken: its end came, no DATA waits,
    /// and no read input is left undecoded.
    fn grpc_finished(&self) -> bool {
        self.position == self.end
            && self
                .grpc
                .as_deref()
                .is_some_and(|grpc| grpc.is_finished() && grpc.input.is_empty())
    }

    /// Appends the next body bytes to `out`; `Ok(false)` once the body has ended.
    /// Decodes what was already read first, and reads from the upstream only when nothing
    /// is left (when `may_wait` is false, only what the connection already holds is read,
    /// and `Ok(true)` with nothing added says the next read would wait).
    pub async fn next(
        &mut self,
        out: &mut Vec<u8>,
        may_wait: bool,
        request: &mut Request<'_>,
    ) -> Result<bool, Failure> {
        let mut received = 0;
        let result = self.next_counted(out, may_wait, &mut received).await;
        self.log_stderr(request);
        if let Some(attempt) = request.upstream.attempts.get_mut(self.attempt) {
            attempt.bytes_received += received;
        }
        if let Some(release) = &self.release {
            release.note_received(received);
        }
        result
    }

    /// memcached's trailer is still to be read.
    fn trailer_pending(&self) -> bool {
        self.trailer.is_some_and(|trailer| !trailer.is_done())
    }

    /// Logs the stderr a FastCGI application sent with the body since the last call, or
    /// memcached's invalid trailer.
    #[inline]
    pub(crate) fn log_stderr(&mut self, request: &Request<'_>) {
        // Only FastCGI and memcached bodies have a log for these: one test for the rest.
        if self.stderr_log.is_some() {
            self.log_stderr_now(request);
        }
    }

    #[inline(never)]
    fn log_stderr_now(&mut self, request: &Request<'_>) {
        if let (Some(trailer), Some(log)) = (self.trailer.as_mut(), &self.stderr_log)
            && trailer.invalid
            && !trailer.logged
        {
            trailer.logged = true;
            log.write_message(request, format_args!("memcached sent invalid trailer"));
        }
        if let (Some(gateway), Some(log)) = (self.gateway.as_deref_mut(), &self.stderr_log)
            && !gateway.stderr.is_empty()
        {
            log.write(request, std::mem::take(&mut gateway.stderr));
        }
    }

    /// [`UpstreamBody::next`], waiting as needed, for a caller that counts the bytes
    /// received itself: whether more follows, and the bytes read from the connection.
    /// Dropping it while it waits loses nothing. A FastCGI body's stderr waits for
    /// [`UpstreamBody::log_stderr`].
    pub(crate) async fn next_detached(&mut self, out: &mut Vec<u8>) -> Result<BodyRead, Failure> {
        let mut received = 0;
        let result = self.next_counted(out, true, &mut received).await;
        if let Some(release) = &self.release {
            release.note_received(received);
        }
        Ok(BodyRead {
            more: result?,
            received,
        })
    }

    async fn next_counted(
        &mut self,
        out: &mut Vec<u8>,
        may_wait: bool,
        received: &mut u64,
    ) -> Result<bool, Failure> {
        loop {
            if let Some(more) = self.decode(out)? {
                if !more {
                    return Ok(false);
                }
                if !out.is_empty() {
                    return Ok(true);
                }
            }
            // Without waiting, only what the socket already holds is read (no system call
            // when the last read emptied it); a rate limit reads only when waiting.
            if !may_wait && (self.limit_rate != 0 || self.stream.is_none()) {
                return Ok(true);
            }
            if let Some(read) = self.read_into_out(out, may_wait).await {
                let count = read.map_err(|error| Failure::io(error, Action::ReadingBody, true))?;
                return match count {
                    None => Ok(true),
                    Some(0) => Err(Failure::upstream(Fault::Closed, Action::ReadingBody, true)),
                    Some(count) => {
                        *received += count as u64;
                        if let Some((_, read)) = &mut self.read_since {
                            *read += count as u64;
                        }
                        self.remaining -= count as u64;
                        Ok(self.remaining > 0 || self.trailer_pending())
                    }
                };
            }
            // Everything read was decoded: the buffer starts over, and is read into as it
            // is (a buffer used again is not zeroed first), one `proxy_buffers` at least.
            self.position = 0;
            self.end = 0;
            self.input.clear();
            if self.input.capacity() > READ_ROOM_MAX_TIMES * self.read_size {
                self.input = Vec::new();
            }
            self.input.reserve(self.read_size);
            let count = if may_wait && self.grpc.as_deref().is_some_and(GrpcBody::takes_relayed) {
                // A bidirectional call: the client's next bytes may come first.
                match self.read_or_relay().await {
                    Some(read) => read,
                    None => continue,
                }
            } else if may_wait {
                let allowed = self.pace().await;
                let Some(stream) = &self.stream else {
                    return Ok(false);
                };
                if allowed < self.input.capacity() {
                    // The rate allows less than the buffer holds.
                    self.input.resize(allowed, 0);
                    let count = read_timed(stream, &mut self.input, self.read_timeout).await;
                    self.input.truncate(*count.as_ref().unwrap_or(&0));
                    count
                } else {
                    read_timed_spare(stream, &mut self.input, self.read_timeout).await
                }
            } else {
                let Some(stream) = &self.stream else {
                    return Ok(true);
                };
                match stream.try_read_spare(&mut self.input) {
                    Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                        return Ok(true);
                    }
                    result => result,
                }
            }
            .map_err(|error| Failure::io(error, Action::ReadingBody, true))?;
            self.end = count;
            *received += count as u64;
            if let Some((_, read)) = &mut self.read_since {
                *read += count as u64;
            }
            if count == 0 {
                if let Some(gateway) = &self.gateway {
                    let error = gateway.reader.finish().err();
                    return match error {
                        None => Ok(false),
                        Some(error) => Err(Failure::upstream(
                            Fault::InvalidHead(InvalidHead(error.to_string())),
                            Action::ReadingBody,
                            true,
                        )),
                    };
                }
                if self.grpc.is_some() {
                    // The stream had not ended (its end is seen before the next read).
                    return Err(Failure::upstream(Fault::Closed, Action::ReadingBody, true));
                }
                return match self.framing {
                    UpstreamFraming::Close => Ok(false),
                    _ => Err(Failure::upstream(Fault::Closed, Action::ReadingBody, true)),
                };
            }
        }
    }

    /// The rest of a body of known length read from the socket straight into `out`, when
    /// nothing read before is left to decode, no rate applies and `out` has room for a
    /// whole read or for the rest of the body: the bytes are not copied from the input
    /// buffer (64 KiB per response in `bench/cache.sh` b4). `None` when this does not
    /// apply; otherwise the bytes read (0 when the upstream closed), or `None` inside when
    /// the read would wait and `may_wait` is false. At most the body's remaining length
    /// is read: bytes past it are never the client's (they stay in the socket, where the
    /// keep-alive cache finds them before it hands the connection out again).
    async fn read_into_out(
        &mut self,
        out: &mut Vec<u8>,
        may_wait: bool,
    ) -> Option<std::io::Result<Option<usize>>> {
        let room = out.capacity() - out.len();
        let left = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        if !matches!(self.framing, UpstreamFraming::Length(_))
            || self.remaining == 0
            || self.limit_rate != 0
            || self.position != self.end
            || room < self.read_size.min(left)
        {
            return None;
        }
        let stream = self.stream.as_ref()?;
        let max = left.min(room);
        Some(if may_wait {
            read_timed_appending(stream, out, max, self.read_timeout)
                .await
                .map(Some)
        } else {
            match stream.try_read_appending(out, max) {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
                result => result.map(Some),
            }
        })
    }

    /// Decodes buffered input into `out`: `Some(false)` at the body's end, `Some(true)` when
    /// input remains or output was produced, `None` when the input is used up.
    fn decode(&mut self, out: &mut Vec<u8>) -> Result<Option<bool>, Failure> {
        if self.gateway.is_some() {
            return self.decode_records(out);
        }
        if self.grpc.is_some() {
            return self.decode_grpc(out);
        }
        let input = &self.input[self.position..self.end];
        match self.framing {
            UpstreamFraming::None => Ok(Some(false)),
            UpstreamFraming::Length(_) => {
                if self.remaining == 0 {
                    let Some(trailer) = &mut self.trailer else {
                        return Ok(Some(false));
                    };
                    self.position += trailer.take(input);
                    return Ok(if trailer.is_done() { Some(false) } else { None });
                }
                if input.is_empty() {
                    return Ok(None);
                }
                let take = (self.remaining).min(input.len() as u64) as usize;
                out.extend_from_slice(&input[..take]);
                self.position += take;
                self.remaining -= take as u64;
                Ok(Some(self.remaining > 0 || self.trailer_pending()))
            }
            UpstreamFraming::Close => {
                if input.is_empty() {
                    return Ok(None);
                }
                out.extend_from_slice(input);
                self.position = self.end;
                Ok(Some(true))
            }
            UpstreamFraming::Chunked => {
                let mut offset = 0;
                while offset < input.len() {
                    let decoded = self.decoder.decode(&input[offset..]).map_err(|_| {
                        Failure::upstream(Fault::InvalidChunkedBody, Action::ReadingBody, true)
                    })?;
                    let data = decoded.data.start + offset..decoded.data.end + offset;
                    out.extend_from_slice(&input[data]);
                    offset += decoded.consumed;
                    if decoded.done {
                        self.position += offset;
                        self.framing = UpstreamFraming::None;
                        if self.decoder.keeps_trailers() && self.decoder.trailers().is_none() {
                            return Err(invalid_trailer());
                        }
                        return Ok(Some(false));
                    }
                    if decoded.consumed == 0 {
                        break;
                    }
                }
                self.position += offset;
                Ok(if out.is_empty() { None } else { Some(true) })
            }
        }
    }

    /// [`UpstreamBody::decode`] of a FastCGI answer: STDOUT records' content into `out`,
    /// STDERR kept for the log, END_REQUEST the end (the framing is `None` after it).
    fn decode_records(&mut self, out: &mut Vec<u8>) -> Result<Option<bool>, Failure> {
        let Some(gateway) = self.gateway.as_deref_mut() else {
            return Ok(None);
        };
        if !gateway.pending.is_empty() {
            let pending = std::mem::take(&mut gateway.pending);
            gateway.take_body(out, &pending);
        }
        if self.framing == UpstreamFraming::None {
            return Ok(Some(false));
        }
        if gateway.ended_short {
            return Err(Failure::upstream(Fault::Closed, Action::ReadingBody, true));
        }
        loop {
            let input = &self.input[self.position..self.end];
            let (taken, event) = gateway.reader.read(input).map_err(|error| {
                Failure::upstream(
                    Fault::InvalidHead(InvalidHead(error.to_string())),
                    Action::ReadingBody,
                    true,
                )
            })?;
            self.position += taken;
            match event {
                Some(ResponseEvent::Body(piece)) => gateway.take_body(out, piece),
                Some(ResponseEvent::Stderr(piece)) => gateway.stderr.push(piece.to_vec()),
                Some(ResponseEvent::End(_)) => {
                    if gateway.remaining.is_some_and(|left| left > 0) {
                        // Short of its length: what came goes out first, then the failure.
                        gateway.ended_short = true;
                        if out.is_empty() {
                            return Err(Failure::upstream(
                                Fault::Closed,
                                Action::ReadingBody,
                                true,
                            ));
                        }
                        return Ok(Some(true));
                    }
                    self.framing = UpstreamFraming::None;
                    return Ok(Some(false));
                }
                Some(ResponseEvent::Head { .. }) => {}
                None => return Ok(if out.is_empty() { None } else { Some(true) }),
            }
        }
    }

    /// [`UpstreamBody::decode`] of a gRPC answer: the bytes read go to the stream's
    /// connection, its DATA into `out` (the window given back), and what the connection
    /// has to say goes out at once; the stream's end is the body's.
    #[cold]
    #[inline(never)]
    fn decode_grpc(&mut self, out: &mut Vec<u8>) -> Result<Option<bool>, Failure> {
        let Some(grpc) = self.grpc.as_deref_mut() else {
            return Ok(None);
        };
        if self.position < self.end {
            grpc.receive(&self.input[self.position..self.end]);
            self.position = self.end;
        }
        grpc.relay_body().map_err(relay_failure)?;
        if grpc.broken.is_some() && !grpc.pass_partial {
            // `proxy_http_version 2`: DATA that came with the failure is not passed on.
            grpc.pending.clear();
        }
        grpc.drain_into(out);
        if let Some(stream) = &self.stream {
            grpc.write_now(stream)
                .map_err(|error| Failure::io(error, Action::ReadingBody, true))?;
        }
        if let Some(message) = &grpc.broken {
            if !out.is_empty() {
                // What came goes out first, then the failure.
                return Ok(Some(true));
            }
            return Err(Failure::upstream(
                Fault::InvalidHead(InvalidHead(message.clone())),
                Action::ReadingBody,
                true,
            ));
        }
        if grpc.is_finished() {
            self.framing = UpstreamFraming::None;
            return Ok(Some(false));
        }
        Ok(if out.is_empty() { None } else { Some(true) })
    }

    /// Waits for the upstream's next bytes (read into the input, as any read of the body)
    /// or for the client's next relayed bytes or room to write what the stream has queued
    /// (`None`: the caller goes round again). Boxed and out of line: only a bidirectional
    /// gRPC call waits here.
    #[cold]
    #[inline(never)]
    fn read_or_relay(
        &mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<std::io::Result<usize>>> + '_>>
    {
        Box::pin(async move {
            let (Some(stream), Some(grpc)) = (&self.stream, self.grpc.as_deref()) else {
                return Some(Ok(0));
            };
            let relay = std::rc::Rc::clone(grpc.relay.as_ref()?);
            let wants_write = grpc.h2.wants_write();
            tokio::select! {
                biased;
                read = read_timed_spare(stream, &mut self.input, self.read_timeout) => Some(read),
                () = relay.arrived() => None,
                _ = stream.writable(), if wants_write => None,
            }
        })
    }

    /// A gRPC stream left before its end (the client went away) is cancelled with
    /// RST_STREAM before the connection closes, so the server stops the call. Out of line:
    /// every proxied body's drop passes here.
    #[cold]
    #[inline(never)]
    fn cancel_grpc(&mut self) {
        if let (Some(grpc), Some(stream)) = (self.grpc.as_deref_mut(), &self.stream) {
            grpc.cancel(stream);
        }
    }

    /// `proxy_pass_trailers on`: a chunked body's trailer section is kept and passed on;
    /// it may take `proxy_buffer_size` bytes, as the head.
    #[inline]
    pub(crate) fn keep_trailers(&mut self, proxy: &Proxy) {
        if proxy.pass_trailers && self.framing == UpstreamFraming::Chunked {
            self.keep_trailers_up_to(proxy.buffer_size);
        }
    }

    #[cold]
    #[inline(never)]
    fn keep_trailers_up_to(&mut self, limit: u64) {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        self.decoder = ChunkedDecoder::keeping_trailers(limit);
    }

    /// Whether the body's trailers are passed on (a gRPC answer's, or a chunked body's
    /// with `proxy_pass_trailers on`).
    pub(crate) fn carries_trailers(&self) -> bool {
        self.grpc.as_deref().is_some_and(|grpc| grpc.pass_trailers) || self.decoder.keeps_trailers()
    }

    /// The trailers the upstream sent after the body, once; `None` for a body whose
    /// trailers are not passed on.
    pub(crate) fn take_trailers(&mut self) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        if self.decoder.keeps_trailers() {
            let fields = self.decoder.trailers().unwrap_or_default();
            self.decoder = ChunkedDecoder::new();
            return Some(fields);
        }
        self.grpc
            .as_deref_mut()
            .filter(|grpc| grpc.pass_trailers)
            .map(GrpcBody::take_trailers)
    }

    /// `proxy_limit_rate`: how many bytes the next read may take, after waiting (on a timer)
    /// until there is at least one. As nginx counts, the rate allows `rate` bytes for each
    /// wall-clock second begun since the first read: one second's worth at once, the next
    /// when the clock's second changes. `usize::MAX` without a limit.
    async fn pace(&mut self) -> usize {
        if self.limit_rate == 0 {
            return usize::MAX;
        }
        let rate = u128::from(self.limit_rate);
        let second = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs())
        };
        let (first, read) = *self.read_since.get_or_insert((second(), 0));
        loop {
            let seconds = u128::from(second().saturating_sub(first)) + 1;
            let allowed = rate * seconds;
            let read = u128::from(read);
            if allowed > read {
                return usize::try_from(allowed - read).unwrap_or(usize::MAX);
            }
            // nginx waits as long as the excess takes at the rate, then looks again.
            let wait = (read - allowed) * 1000 / rate + 1;
            tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap_or(1000))).await;
        }
    }

    /// The body ended where its framing said: the connection may serve another request.
    pub fn finish(mut self) {
        // Stray bytes after the body's end mean the connection cannot be trusted.
        let ended = match self.framing {
            UpstreamFraming::None => true,
            UpstreamFraming::Length(_) => {
                self.remaining == 0 && self.trailer.is_none_or(|trailer| trailer.is_whole())
            }
            UpstreamFraming::Chunked => false,
            UpstreamFraming::Close => self.grpc_finished(),
        };
        let clean = ended && self.position == self.end;
        if !clean {
            return;
        }
        let Some(keepalive) = self.keepalive.take() else {
            return;
        };
        // A gRPC connection is kept with its HTTP/2 state, when the stream ended cleanly
        // and nothing of the connection's is left to read or write.
        let state = match self.grpc.take() {
            None => None,
            Some(grpc) => match idle_state(grpc) {
                Some(state) => Some(state),
                None => return,
            },
        };
        let Some(stream) = self.stream.take() else {
            return;
        };
        let idle = crate::kernel::upstream::keepalive::Idle {
            stream,
            opened: keepalive.opened,
            requests: keepalive.requests,
            purpose: keepalive.purpose,
            state,
        };
        keepalive
            .group
            .put_idle(self.selected, idle, runtime::clock::monotonic());
    }

    /// The cache's writer, for the code that passes the body on.
    pub(crate) fn take_cache_writer(&mut self) -> Option<Box<Keeper>> {
        self.cache.take()
    }

    pub(crate) fn attempt(&self) -> usize {
        self.attempt
    }
}

/// A chunked body's trailer section that is not fields (`proxy_pass_trailers on`).
#[cold]
fn invalid_trailer() -> Failure {
    Failure::upstream(Fault::InvalidChunkedBody, Action::ReadingBody, true)
}

/// [`GrpcBody::into_idle_state`], out of line: every proxied body's end passes by.
#[cold]
#[inline(never)]
fn idle_state(grpc: Box<GrpcBody>) -> Option<Box<dyn std::any::Any + Send>> {
    grpc.into_idle_state()
}

/// Logs a failure of the upstream while its body was being passed on.
pub(crate) fn log_failure(
    worker: &crate::kernel::worker::HttpWorker,
    connection: &crate::kernel::request::ConnectionInfo,
    request: &Request<'_>,
    failure: &Failure,
) {
    crate::kernel::request_log::log(
        worker,
        connection,
        request,
        failure.level(),
        format_args!("{failure}"),
    );
}

/// The failure of a try whose client's relayed body failed.
#[cold]
fn relay_failure(failure: crate::kernel::body::relay::RelayFailure) -> Failure {
    use crate::kernel::body::relay::RelayFailure;
    match failure {
        RelayFailure::Read(read) => crate::modules::proxy::outgoing::body_read_failure(read),
        RelayFailure::Invalid => Failure::client(Fault::ClientInvalidBody, Action::StreamingBody),
    }
}
