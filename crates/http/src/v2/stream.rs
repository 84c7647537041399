//! One HTTP/2 stream's request: its head made into a [`Request`] (an HTTP/1.1 head built
//! from the fields, read by the HTTP/1 parser with the server's rules, its protocol then
//! written as `HTTP/2.0`), the phases run as for any request, and the response sent
//! through a [`StreamSink`] that turns the head the header filter wrote into HEADERS and
//! the body into DATA under flow control.

use std::cell::RefCell;
use std::io;
use std::time::Instant;

use bytes::Bytes;
use http1::request::Progress;
use http2::ErrorCode;
use http2::hpack::HeaderField;
use http2::request::RequestHead;
use logging::Level;

use crate::body::BodyState;
use crate::client::{BodySource, Client, FramedSink, ReadAhead, ResponseSink};
use crate::conf::AddressConf;
use crate::phases;
use crate::request::{ConnectionInfo, Request};
use crate::send;
use crate::special::Reply;
use crate::v2::body::StreamFeed;
use crate::v2::connection::Shared;
use crate::worker::HttpWorker;

/// Body bytes a stream may have queued and not yet framed before its writer waits.
const QUEUED_MAX: usize = 64 * 1024;

/// What a stream whose windows let it send less than [`QUEUED_MAX`] may queue, at least:
/// a client that holds a stream's window shut then makes its writer hold one file piece
/// (`output_buffers`), not a second one read behind it, as nginx holds
/// (`bench/h2_attack.sh`, "held").
const QUEUED_STALLED_MIN: usize = 32 * 1024;

/// What the stream may have queued: [`QUEUED_MAX`], or as much as its windows allow now,
/// but not less than [`QUEUED_STALLED_MIN`].
fn queued_max(h2: &http2::connection::Connection, stream_id: u32) -> usize {
    let capacity = usize::try_from(h2.send_capacity(stream_id)).unwrap_or(usize::MAX);
    capacity.clamp(QUEUED_STALLED_MIN, QUEUED_MAX)
}

/// What every stream of a connection borrows.
#[derive(Clone)]
pub(crate) struct Started<'a> {
    pub(crate) worker: &'a HttpWorker,
    pub(crate) address: &'a AddressConf,
    pub(crate) info: &'a ConnectionInfo,
    pub(crate) socket: &'a runtime::Stream,
    pub(crate) shared: &'a Shared,
}

impl Started<'_> {
    /// A refused head is logged at `info`, as nginx logs it, in the default server's log.
    pub(crate) fn log_malformed(&self, message: &str) {
        let conf = self.worker.conf();
        let request = Request {
            location: Some(conf.server(self.address.default_server).location),
            ..Request::default()
        };
        crate::request::log(
            self.worker,
            self.info,
            &request,
            Level::Info,
            format_args!("{message}"),
        );
    }
}

/// A stream's request as its head (and body) came in.
pub(crate) struct Opened {
    pub(crate) stream_id: u32,
    /// `$connection_requests` of this request.
    pub(crate) requests: u64,
    /// `Err(status)` for a head refused before it became a request.
    pub(crate) head: Result<RequestHead, u16>,
    /// The header block's encoded size (`$request_length` counts it, as nginx's does).
    pub(crate) block_len: usize,
    /// The request has a body (HEADERS came without END_STREAM): it arrives in the
    /// stream's inbox while the request runs.
    pub(crate) body: bool,
}

/// Runs one stream's request to its end.
pub(crate) async fn run_stream(started: Started<'_>, opened: Opened) {
    let Opened {
        stream_id,
        requests,
        head,
        block_len,
        body,
    } = opened;
    let worker = started.worker;
    let mut info = started.info.clone();
    info.requests = requests;
    let info = &info;
    let mut request = Request::default();
    // `reset` sets what a new request starts with (the internal redirects allowed).
    request.reset();
    request.started = Some(Instant::now());
    request.keepalive = true;
    let conf = worker.conf();
    let default_server = conf.server(started.address.default_server);
    let refused = head.and_then(|head| {
        if let Some(message) = refusal(&head, body) {
            started.log_malformed(&message);
            return Err(400);
        }
        let (bytes, added) = http1_head(&head, body);
        read_head(worker, &started, info, &mut request, bytes, added)
    });
    // The body's bytes are added as the body reader takes them.
    request.length = block_len as u64;
    let mut read_ahead = ReadAhead::new(0);
    let feed = StreamFeed {
        shared: started.shared,
        stream_id,
    };
    let mut body_state = BodyState::Done;
    // A request still running when `worker_shutdown_timeout` passes stops here and is
    // logged (499 if no answer was begun), as nginx logs the requests it cuts.
    let _cuttable = worker.cuttable_request();
    let cut = {
        let served = async {
            let reply = match refused {
                Err(status) => {
                    request.server = Some(started.address.default_server);
                    request.location = Some(default_server.location);
                    let client = Client {
                        info,
                        source: BodySource::framed(started.socket, &mut read_ahead, &feed),
                        body: &mut body_state,
                    };
                    phases::run_error(worker, client, &mut request, status).await
                }
                Ok(()) => {
                    body_state = BodyState::new(request.info.framing);
                    let client = Client {
                        info,
                        source: BodySource::framed(started.socket, &mut read_ahead, &feed),
                        body: &mut body_state,
                    };
                    phases::run(worker, client, &mut request).await
                }
            };
            // `http2_chunk_size` is the location's that answers.
            let answering = request.location.unwrap_or(default_server.location);
            let chunk_size = conf.location(answering).settings.v2.chunk_size;
            started
                .shared
                .h2
                .borrow_mut()
                .set_chunk_size(stream_id, chunk_size);
            let sink = StreamSink {
                shared: started.shared,
                stream_id,
                state: RefCell::new(SinkState::Head(Vec::new())),
            };
            let sent = match reply {
                // A body that stopped past `client_body_timeout`: nginx resets the stream.
                Reply::Respond(_) if request.response.status == 408 => {
                    Err(io::ErrorKind::TimedOut.into())
                }
                Reply::Respond(body) => {
                    let mut out = Vec::new();
                    let response = ResponseSink::framed(started.socket, &sink);
                    send::send_response_to(worker, info, response, &mut out, &mut request, body)
                        .await
                }
                // A request that timed out (408) is reset as a protocol error, as nginx does.
                Reply::Close if request.response.status == 408 => {
                    Err(io::ErrorKind::TimedOut.into())
                }
                Reply::Close => Err(io::ErrorKind::ConnectionAborted.into()),
            };
            // A body nobody read to its end: the stream is reset with NO_ERROR once the response
            // is out, as nginx does (RFC 9113 §8.1), and what still comes is dropped.
            let inbox = started.shared.inboxes.borrow_mut().remove(&stream_id);
            if inbox.is_some_and(|inbox| !inbox.ended) {
                started
                    .shared
                    .h2
                    .borrow_mut()
                    .reset_after_response(stream_id, ErrorCode::NO_ERROR);
            }
            match sent {
                Ok(()) => sink.finish(),
                Err(error) => {
                    let code = if error.kind() == io::ErrorKind::TimedOut {
                        ErrorCode::PROTOCOL_ERROR
                    } else {
                        ErrorCode::INTERNAL_ERROR
                    };
                    started.shared.h2.borrow_mut().reset(stream_id, code);
                }
            }
            started.shared.wake.notify_one();
            // The request lasts until its response is framed (what it holds, a `limit_conn`
            // count, is held until then, as nginx holds it), within `send_timeout`.
            let send_timeout = conf.location(answering).settings.core.send_timeout;
            if !sink.drained(send_timeout).await {
                started
                    .shared
                    .reset_stream(stream_id, ErrorCode::INTERNAL_ERROR);
                crate::request::log(
                    worker,
                    info,
                    &request,
                    Level::Info,
                    format_args!(
                        "client timed out (110: Connection timed out) while sending response to client"
                    ),
                );
            }
        };
        tokio::select! {
            biased;
            () = served => false,
            () = worker.requests_cut() => true,
        }
    };
    if cut {
        if request.response.status == 0 {
            request.response.status = 499;
        }
        started
            .shared
            .reset_stream(stream_id, ErrorCode::INTERNAL_ERROR);
    }
    send::log_request_info(worker, info, &request);
}

/// Why nginx refuses a head with 400 before it becomes a request, in its words: a
/// `host` that differs from `:authority`, a `content-length` on a request without a body.
/// (A body that is not its `content-length` fails as it is read.)
fn refusal(head: &RequestHead, body: bool) -> Option<String> {
    let value = |name: &[u8]| {
        head.fields
            .iter()
            .find(|field| field.name == name)
            .map(|field| field.value.as_slice())
    };
    if let (Some(authority), Some(host)) = (&head.authority, value(b"host"))
        && !authority.eq_ignore_ascii_case(host)
    {
        return Some("client sent \":authority\" and \"host\" headers that differ".to_owned());
    }
    let declared: u64 = std::str::from_utf8(value(b"content-length")?)
        .ok()?
        .parse()
        .ok()?;
    (!body && declared > 0).then(|| {
        format!(
            "client prematurely closed stream: only 0 out of {declared} bytes of request body \
             received"
        )
    })
}

/// The HTTP/1.1 head the request's fields make: the request line from `:method` and
/// `:path`, `Host` from `:authority` when no `host` field was sent, and for a body without
/// `content-length`, `transfer-encoding: chunked` (its DATA frames are read as chunks).
/// Also returns how many lines it added that the client did not send (`max_headers`
/// counts the client's fields only).
fn http1_head(head: &RequestHead, body: bool) -> (Vec<u8>, usize) {
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(&head.method);
    bytes.push(b' ');
    bytes.extend_from_slice(head.path.as_deref().unwrap_or(b"*"));
    bytes.extend_from_slice(b" HTTP/1.1\r\n");
    let has_host = head.fields.iter().any(|field| field.name == b"host");
    let mut added = 0;
    if let (Some(authority), false) = (&head.authority, has_host) {
        push_field(&mut bytes, b"host", authority);
        added += 1;
    }
    let mut has_length = false;
    for field in &head.fields {
        // A request without a body has none, whatever it says (a non-zero one is refused).
        if field.name == b"content-length" {
            if !body {
                continue;
            }
            has_length = true;
        }
        push_field(&mut bytes, &field.name, &field.value);
    }
    if body && !has_length {
        push_field(&mut bytes, b"transfer-encoding", b"chunked");
        added += 1;
    }
    bytes.extend_from_slice(b"\r\n");
    (bytes, added)
}

fn push_field(bytes: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(b": ");
    bytes.extend_from_slice(value);
    bytes.extend_from_slice(b"\r\n");
}

/// Reads the built head into `request` with the default server's rules, chooses the
/// server by `Host`, and runs realip's post-read step. `Err` is the status to answer.
fn read_head(
    worker: &HttpWorker,
    started: &Started<'_>,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    bytes: Vec<u8>,
    added: usize,
) -> Result<(), u16> {
    let conf = worker.conf();
    let core = &conf.server(started.address.default_server).core;
    // HPACK's limits bounded the fields already; the head is read in one buffer.
    let mut limits = core.head_limits();
    limits.client_header_buffer_size = limits.client_header_buffer_size.max(bytes.len() + 1);
    limits.large_client_header_buffers.1 =
        limits.large_client_header_buffers.1.max(bytes.len() + 1);
    limits.max_headers = limits.max_headers.map(|max| max + added);
    let parsed = http1::request::parse_head(&bytes, &limits, &mut request.head);
    request.head_bytes = bytes;
    match parsed {
        Ok(Progress::Complete) => {}
        Ok(Progress::Partial) => return Err(400),
        Err(error) => return Err(error.status()),
    }
    // `$request` and `$server_protocol` say HTTP/2.0, as nginx's do (same length).
    if let Some(protocol) = request.head_bytes.get_mut(request.head.protocol.clone()) {
        protocol.copy_from_slice(b"HTTP/2.0");
    }
    http1::request::analyze(&request.head_bytes, &request.head, &mut request.info)
        .map_err(|error| error.status())?;
    let server = crate::request::select_server(worker, started.address, request);
    request.server = Some(server);
    // TLS's own refusals (a host other than SNI's with client certificates: 421).
    if let Some((status, message)) =
        crate::ssl::refusal(worker, (info, false), server, &request.info.host)
    {
        request.location = Some(conf.server(server).location);
        crate::request::log(
            worker,
            info,
            request,
            Level::Info,
            format_args!("{message}"),
        );
        return Err(status);
    }
    if !conf.server(server).v2.enable && !started.address.http2 {
        // The host names a server without HTTP/2: nginx answers 421.
        request.location = Some(conf.server(server).location);
        let message = "client attempted to request the server name different from the one that was negotiated";
        crate::request::log(
            worker,
            info,
            request,
            Level::Info,
            format_args!("{message}"),
        );
        return Err(421);
    }
    crate::realip::post_read(worker, server, info, request);
    request.uri.extend_from_slice(&request.head.uri);
    if let Some(args) = request.info.target.args.clone() {
        request.args.extend_from_slice(&request.head_bytes[args]);
    }
    Ok(())
}

/// Where the sink is in the response.
enum SinkState {
    /// Collecting the head the header filter writes.
    Head(Vec<u8>),
    /// The head is read and not sent yet (it goes with the first body bytes or the end):
    /// the HTTP/1 head with its field names in lower case, and its `content-length`, when
    /// it has one.
    HeadReady(Vec<u8>, Option<u64>),
    /// Sending the body; the bytes still to come when the length is known (the last
    /// ones carry END_STREAM, as nginx's last DATA frame does).
    Body(Option<u64>),
    /// END_STREAM is queued.
    Ended,
}

/// The response side of one stream.
struct StreamSink<'a> {
    shared: &'a Shared,
    stream_id: u32,
    state: RefCell<SinkState>,
}

impl StreamSink<'_> {
    /// Ends the stream: the head alone with END_STREAM when there was no body, else an
    /// empty DATA frame with it after the queued body.
    fn finish(&self) {
        let state = std::mem::replace(&mut *self.state.borrow_mut(), SinkState::Ended);
        let mut h2 = self.shared.h2.borrow_mut();
        let _ = match state {
            SinkState::HeadReady(head, _) => {
                h2.send_header_pairs(self.stream_id, response_pairs(&head), true)
            }
            SinkState::Head(_) => {
                let fields = [field(b":status", b"500")];
                h2.send_headers(self.stream_id, &fields, true)
            }
            SinkState::Body(_) => h2.send_data(self.stream_id, &[], true),
            SinkState::Ended => Ok(()),
        };
    }

    /// Waits until the stream's queued body is framed (or the stream is gone); `false`
    /// when `timeout` passed first (a window the client keeps closed).
    async fn drained(&self, timeout: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let progress = self.shared.progress.notified();
            if self.shared.h2.borrow().queued(self.stream_id) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, progress).await.is_err() {
                return false;
            }
        }
    }

    /// Takes what it can of `bytes`: the head the header filter wrote, then body bytes
    /// queued on the stream, copied, or with `shared` (the same bytes) by reference.
    fn take(&self, bytes: &[u8], shared: Option<&Bytes>) -> io::Result<usize> {
        let mut state = self.state.borrow_mut();
        if let SinkState::Head(head) = &mut *state {
            let Some(end) = head_end(head, bytes)
                .or_else(|| memchr::memmem::find(bytes, b"\r\n\r\n").map(|at| at + 4))
            else {
                head.extend_from_slice(bytes);
                return Ok(bytes.len());
            };
            head.extend_from_slice(&bytes[..end]);
            lower_field_names(head);
            let length = response_pairs(head)
                .find(|(name, _)| *name == b"content-length")
                .and_then(|(_, value)| std::str::from_utf8(value).ok()?.parse().ok());
            let head = std::mem::take(head);
            *state = SinkState::HeadReady(head, length);
            if end == bytes.len() {
                return Ok(end);
            }
            drop(state);
            let rest = shared.map(|shared| shared.slice(end..));
            return self
                .take(&bytes[end..], rest.as_ref())
                .map(|written| end + written);
        }
        let mut h2 = self.shared.h2.borrow_mut();
        let queued = h2.queued(self.stream_id);
        let queued_max = queued_max(&h2, self.stream_id);
        if queued >= queued_max {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        if let SinkState::HeadReady(head, length) = &*state {
            h2.send_header_pairs(self.stream_id, response_pairs(head), false)
                .map_err(|_| Self::gone())?;
            *state = SinkState::Body(*length);
        }
        let take = bytes.len().min(queued_max - queued);
        let (left, last) = match &*state {
            SinkState::Body(Some(left)) => {
                let left = left.saturating_sub(take as u64);
                (Some(left), left == 0)
            }
            SinkState::Body(None) => (None, false),
            SinkState::Ended | SinkState::Head(_) | SinkState::HeadReady(..) => {
                return Err(Self::gone());
            }
        };
        let queued = match shared {
            Some(shared) => h2.send_data_shared(self.stream_id, shared.slice(..take), last),
            None => h2.send_data(self.stream_id, &bytes[..take], last),
        };
        queued.map_err(|_| Self::gone())?;
        let since_write = &self.shared.queued_since_write;
        since_write.set(since_write.get() + take);
        *state = if last {
            SinkState::Ended
        } else {
            SinkState::Body(left)
        };
        self.shared.wake.notify_one();
        Ok(take)
    }

    fn gone() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "stream closed")
    }
}

impl FramedSink for StreamSink<'_> {
    fn trailers(&self, last_chunk: &[u8]) {
        let fields = trailer_fields(last_chunk);
        let mut state = self.state.borrow_mut();
        let mut h2 = self.shared.h2.borrow_mut();
        if let SinkState::HeadReady(head, _) = &*state {
            let _ = h2.send_header_pairs(self.stream_id, response_pairs(head), false);
        }
        if !matches!(&*state, SinkState::Ended) {
            let _ = if fields.is_empty() {
                h2.send_data(self.stream_id, &[], true)
            } else {
                h2.send_trailers(self.stream_id, fields)
            };
        }
        *state = SinkState::Ended;
        self.shared.wake.notify_one();
    }

    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        self.take(bytes, None)
    }

    fn try_write_shared(&self, bytes: &Bytes) -> io::Result<usize> {
        self.take(bytes, Some(bytes))
    }

    fn spare_buffer(&self) -> Option<Vec<u8>> {
        self.shared.h2.borrow_mut().take_reclaimed_buffer()
    }

    fn writable(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = io::Result<()>> + '_>> {
        Box::pin(async move {
            loop {
                let progress = self.shared.progress.notified();
                {
                    let h2 = self.shared.h2.borrow();
                    if h2.queued(self.stream_id) < queued_max(&h2, self.stream_id) {
                        return Ok(());
                    }
                    if h2.is_done() {
                        return Err(Self::gone());
                    }
                }
                progress.await;
            }
        })
    }
}

/// Where the head ends when its blank line straddles two writes.
fn head_end(head: &[u8], bytes: &[u8]) -> Option<usize> {
    let tail = &head[head.len().saturating_sub(3)..];
    let mut joined = tail.to_vec();
    joined.extend_from_slice(&bytes[..bytes.len().min(3)]);
    memchr::memmem::find(&joined, b"\r\n\r\n").map(|at| at + 4 - tail.len())
}

fn field(name: &[u8], value: &[u8]) -> HeaderField {
    HeaderField {
        name: name.to_vec(),
        value: value.to_vec(),
        sensitive: false,
    }
}

/// Lowers the field names of an HTTP/1 head or last chunk in place (HTTP/2 names are lower
/// case), so that its fields can be sent as they are, without a copy each.
fn lower_field_names(head: &mut [u8]) {
    for line in head.split_mut(|&byte| byte == b'\n').skip(1) {
        if let Some(colon) = line.iter().position(|&byte| byte == b':') {
            line[..colon].make_ascii_lowercase();
        }
    }
}

/// The HTTP/2 fields of an HTTP/1 response head whose names are in lower case
/// ([`lower_field_names`]): `:status`, then each field, without the connection-specific
/// ones (RFC 9113 §8.2.2).
fn response_pairs(head: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut lines = head.split(|&byte| byte == b'\n');
    let status = lines
        .next()
        .and_then(|line| line.get(9..12))
        .unwrap_or(b"500");
    std::iter::once((&b":status"[..], status)).chain(line_pairs(lines))
}

/// The trailer fields of an HTTP/1 last chunk (`0`, the field lines, the blank line).
fn trailer_fields(last_chunk: &[u8]) -> Vec<HeaderField> {
    let mut chunk = last_chunk.to_vec();
    lower_field_names(&mut chunk);
    line_pairs(chunk.split(|&byte| byte == b'\n').skip(1))
        .map(|(name, value)| field(name, value))
        .collect()
}

/// `name: value` lines (names already in lower case) as HTTP/2 fields, without the
/// connection-specific ones.
fn line_pairs<'b>(
    lines: impl Iterator<Item = &'b [u8]> + 'b,
) -> impl Iterator<Item = (&'b [u8], &'b [u8])> + 'b {
    lines.filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&byte| byte == b':')?;
        let name = &line[..colon];
        let value = line[colon + 1..].trim_ascii_start();
        let connection_specific = matches!(
            name,
            b"connection" | b"keep-alive" | b"transfer-encoding" | b"upgrade" | b"proxy-connection"
        );
        (!connection_specific).then_some((name, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_head_becomes_fields_without_connection_ones() {
        let mut head = b"HTTP/1.1 404 Not Found\r\nServer: portico\r\nContent-Length: 3\r\n\
            Connection: keep-alive\r\nX-A: B:C\r\n\r\n"
            .to_vec();
        lower_field_names(&mut head);
        let pairs: Vec<(&[u8], &[u8])> = response_pairs(&head).collect();
        let want: Vec<(&[u8], &[u8])> = vec![
            (b":status", b"404"),
            (b"server", b"portico"),
            (b"content-length", b"3"),
            (b"x-a", b"B:C"),
        ];
        assert_eq!(pairs, want);
    }

    #[test]
    fn trailers_become_fields_with_names_in_lower_case() {
        let fields = trailer_fields(b"0\r\nX-Checksum: AbC\r\nConnection: close\r\n\r\n");
        assert_eq!(fields, vec![field(b"x-checksum", b"AbC")]);
        assert!(trailer_fields(b"0\r\n\r\n").is_empty());
    }

    #[test]
    fn the_head_end_is_found_across_writes() {
        for split in 1..4 {
            let whole = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody";
            let at = 25 - 4 + split;
            let (first, second) = whole.split_at(at);
            assert_eq!(head_end(first, second), Some(25 - at), "split {split}");
        }
    }

    #[test]
    fn a_request_head_is_built_from_the_fields() {
        let head = RequestHead {
            method: b"POST".to_vec(),
            scheme: Some(b"http".to_vec()),
            authority: Some(b"example.com".to_vec()),
            path: Some(b"/a?b".to_vec()),
            fields: vec![field(b"content-length", b"9"), field(b"x-y", b"z")],
        };
        let (bytes, added) = http1_head(&head, true);
        assert_eq!(added, 1);
        assert_eq!(
            bytes,
            b"POST /a?b HTTP/1.1\r\nhost: example.com\r\ncontent-length: 9\r\nx-y: z\r\n\r\n"
        );
    }
}
