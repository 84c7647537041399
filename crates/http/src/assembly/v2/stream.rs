//! One HTTP/2 stream's request: its head made into a [`Request`] (an HTTP/1.1 head built
//! from the fields, read by the HTTP/1 parser with the server's rules, its protocol then
//! written as `HTTP/2.0`), the phases run as for any request, and the response sent
//! through a [`StreamSink`] that turns the head the header filter wrote into HEADERS and
//! the body into DATA under flow control.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::time::Instant;

use bytes::Bytes;
use http2::ErrorCode;
use http2::hpack::HeaderField;
use http2::request::RequestHead;
use logging::Level;

use crate::assembly::stream_head::{StreamProtocol, read_head, refusal, status_digits};
use crate::assembly::v2::body::StreamFeed;
use crate::assembly::v2::connection::{Shared, remove_inbox};
use crate::assembly::{phases, send};
use crate::kernel::body::BodyState;
use crate::kernel::client::{BodySource, Client, FramedSink, ReadAhead, ResponseSink};
use crate::kernel::conf::AddressConf;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::FieldList;
use crate::kernel::special::Reply;
use crate::kernel::worker::HttpWorker;

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
    /// Requests of finished streams, kept with their buffers for the next streams. Boxed:
    /// a stream's future holds a pointer to its request, not the request.
    #[allow(clippy::vec_box)]
    pub(crate) spare_requests: &'a RefCell<Vec<Box<Request<'a>>>>,
}

/// Finished streams' requests a connection keeps for its next streams.
const SPARE_REQUESTS_MAX: usize = 16;

impl Started<'_> {
    /// A refused head is logged at `info`, as nginx logs it, in the default server's log.
    pub(crate) fn log_malformed(&self, message: &str) {
        crate::assembly::stream_head::log_malformed(self.worker, self.info, self.address, message);
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
    let spare = started.spare_requests.borrow_mut().pop();
    let mut request = spare.unwrap_or_else(|| {
        let mut request = Box::<Request>::default();
        // `reset` sets what a new request starts with (the internal redirects allowed).
        request.reset();
        request
    });
    request.started = Some(Instant::now());
    request.keepalive = true;
    let conf = worker.conf();
    let default_server = conf.server(started.address.default_server);
    let refused = head.and_then(|head| {
        if let Some(message) = refusal(&head, body) {
            started.log_malformed(&message);
            return Err(400);
        }
        let stream = StreamProtocol {
            protocol: b"HTTP/2.0",
            address: started.address,
            serves: |server, address| server.v2.enable || address.http2,
        };
        let read = read_head(worker, &stream, info, &mut request, &head, body);
        // The request keeps what it needs in its own buffer: the decoded list goes back
        // to the connection for the next header block.
        started
            .shared
            .h2
            .borrow_mut()
            .recycle_fields(head.into_fields());
        read
    });
    // The body's bytes are added as the body reader takes them.
    request.length = block_len as u64;
    let mut read_ahead = ReadAhead::unallocated();
    let feed = StreamFeed {
        shared: started.shared,
        stream_id,
    };
    let mut body_state = BodyState::Done;
    // A request still running when `worker_shutdown_timeout` passes stops here and is
    // logged (499 if no answer was begun), as nginx logs the requests it cuts.
    let _cuttable = worker.cuttable_request();
    let mut logged = false;
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
                state: RefCell::new(SinkState::AwaitingHead),
                head_bytes: std::cell::Cell::new(0),
                trailers_may_follow: std::cell::Cell::new(false),
            };
            let sent = match reply {
                // A body that stopped past `client_body_timeout`: nginx resets the stream.
                Reply::Respond(_) if request.response.status == 408 => {
                    Err(io::ErrorKind::TimedOut.into())
                }
                Reply::Respond(body) => {
                    send::send_framed_response(
                        worker,
                        info,
                        ResponseSink::framed(started.socket, &sink),
                        &mut request,
                        body,
                        BodySource::framed(started.socket, &mut read_ahead, &feed),
                        &mut body_state,
                    )
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
            let inbox = remove_inbox(started.shared, stream_id);
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
                crate::kernel::request_log::log(
                    worker,
                    info,
                    &request,
                    Level::Info,
                    format_args!(
                        "client timed out (110: Connection timed out) while sending response to client"
                    ),
                );
            }
            request.sent.header_bytes = sink.head_bytes.get();
            // Logged once the response is out, then what runs after it (mirrors,
            // `post_action`, a background cache refresh), as over HTTP/1.
            send::log_request_info(worker, info, &request);
            logged = true;
            if phases::has_work_after_response(worker, &request) {
                started.shared.after_response.borrow_mut().push(stream_id);
                let mut source = BodySource::framed(started.socket, &mut read_ahead, &feed);
                let after = phases::after_response(worker, info, &mut source, &mut request);
                Box::pin(after).await;
            }
        };
        // The connection sets `cut` when the worker cuts its requests, and polls every
        // stream then.
        let mut served = std::pin::pin!(served);
        std::future::poll_fn(|context| {
            if served.as_mut().poll(context).is_ready() {
                return std::task::Poll::Ready(false);
            }
            if started.shared.cut.get() {
                return std::task::Poll::Ready(true);
            }
            std::task::Poll::Pending
        })
        .await
    };
    if cut {
        if request.response.status == 0 {
            request.response.status = 499;
        }
        started
            .shared
            .reset_stream(stream_id, ErrorCode::INTERNAL_ERROR);
    }
    if !logged {
        send::log_request_info(worker, info, &request);
    }
    let mut after_response = started.shared.after_response.borrow_mut();
    after_response.retain(|&id| id != stream_id);
    // What the request holds (a `limit_conn` count) is let go here, as when it is dropped.
    request.reset();
    let mut spare = started.spare_requests.borrow_mut();
    if spare.len() < SPARE_REQUESTS_MAX {
        spare.push(request);
    }
}

/// Where the sink is in the response.
enum SinkState {
    /// The header filter has not given the head yet.
    AwaitingHead,
    /// The head is in and not sent yet (it goes with the first body bytes or the end),
    /// with its `content-length`, when it has one.
    HeadReady(FieldList, Option<u64>),
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
    /// The HEADERS frame's size once the head is encoded (`$bytes_sent` counts it).
    head_bytes: std::cell::Cell<u64>,
    /// Trailers may follow the body: its last bytes leave the stream open.
    trailers_may_follow: std::cell::Cell<bool>,
}

impl StreamSink<'_> {
    /// Ends the stream: the head alone with END_STREAM when there was no body, else an
    /// empty DATA frame with it after the queued body.
    fn finish(&self) {
        let state = std::mem::replace(&mut *self.state.borrow_mut(), SinkState::Ended);
        let mut h2 = self.shared.h2.borrow_mut();
        let _ = match state {
            SinkState::HeadReady(fields, _) => {
                let sent = send_head(&mut h2, self.stream_id, &fields, true);
                self.recycle(fields);
                self.count_head(sent)
            }
            SinkState::AwaitingHead => {
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
        let mut deadline = None;
        loop {
            let progress = self.shared.progress.notified();
            let framed_next = {
                let h2 = self.shared.h2.borrow();
                let queued = h2.queued(self.stream_id);
                if queued == 0 {
                    return true;
                }
                queued <= usize::try_from(h2.send_capacity(self.stream_id)).unwrap_or(0)
            };
            if framed_next {
                // The windows let all of it go: the connection's next turn frames it and
                // writes, or, if the socket takes nothing, closes the connection after its
                // own `send_timeout`; no timer of the stream's is needed for that.
                progress.await;
                continue;
            }
            let deadline = *deadline.get_or_insert_with(|| tokio::time::Instant::now() + timeout);
            if tokio::time::timeout_at(deadline, progress).await.is_err() {
                return false;
            }
        }
    }

    /// Takes what it can of the body bytes `bytes`, queued on the stream, copied, or with
    /// `shared` (the same bytes) by reference; the head goes first.
    fn take(&self, bytes: &[u8], shared: Option<&Bytes>) -> io::Result<usize> {
        let mut state = self.state.borrow_mut();
        let mut h2 = self.shared.h2.borrow_mut();
        let queued = h2.queued(self.stream_id);
        let queued_max = queued_max(&h2, self.stream_id);
        if queued >= queued_max {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        if let SinkState::HeadReady(_, length) = &*state {
            let length = *length;
            if let SinkState::HeadReady(fields, _) =
                std::mem::replace(&mut *state, SinkState::Body(length))
            {
                let sent = send_head(&mut h2, self.stream_id, &fields, false);
                self.recycle(fields);
                self.count_head(sent).map_err(|_| Self::gone())?;
            }
        }
        let take = bytes.len().min(queued_max - queued);
        let (left, last) = match &*state {
            SinkState::Body(Some(left)) => {
                let left = left.saturating_sub(take as u64);
                (Some(left), left == 0 && !self.trailers_may_follow.get())
            }
            SinkState::Body(None) => (None, false),
            SinkState::Ended | SinkState::AwaitingHead | SinkState::HeadReady(..) => {
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

    /// Counts an encoded head for `$bytes_sent`: its block and the HEADERS frame's header,
    /// as nginx counts the frame.
    fn count_head(
        &self,
        sent: Result<usize, http2::connection::SendError>,
    ) -> Result<(), http2::connection::SendError> {
        let block = sent?;
        self.head_bytes.set((block + 9) as u64);
        Ok(())
    }

    /// Keeps an encoded head's field list for the connection's next head.
    fn recycle(&self, mut fields: FieldList) {
        const KEPT_MAX: usize = 8;
        let mut spare = self.shared.spare_fields.borrow_mut();
        if spare.len() < KEPT_MAX {
            fields.clear();
            spare.push(fields);
        }
    }

    fn gone() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "stream closed")
    }
}

/// HPACK-encodes a response head (`:status` first) into a HEADERS frame of the stream;
/// returns the header block's size.
fn send_head(
    h2: &mut http2::connection::Connection,
    stream_id: u32,
    fields: &FieldList,
    end_stream: bool,
) -> Result<usize, http2::connection::SendError> {
    let status = status_digits(fields.status);
    let pairs = std::iter::once((&b":status"[..], &status[..])).chain(fields.iter());
    h2.send_header_pairs(stream_id, pairs, end_stream)
}

impl FramedSink for StreamSink<'_> {
    fn spare_fields(&self) -> FieldList {
        let spare = self.shared.spare_fields.borrow_mut().pop();
        spare.unwrap_or_else(|| FieldList::with_capacity(256, 12))
    }

    fn head(&self, fields: FieldList) -> usize {
        let length = fields
            .get(b"content-length")
            .and_then(|value| std::str::from_utf8(value).ok()?.parse().ok());
        let mut state = self.state.borrow_mut();
        if matches!(&*state, SinkState::AwaitingHead) {
            *state = SinkState::HeadReady(fields, length);
        }
        0
    }

    fn trailers(&self, fields: FieldList) {
        let mut state = self.state.borrow_mut();
        let mut h2 = self.shared.h2.borrow_mut();
        if let SinkState::HeadReady(head, _) = &*state {
            let _ = self.count_head(send_head(&mut h2, self.stream_id, head, false));
        }
        if !matches!(&*state, SinkState::Ended) {
            let _ = if fields.is_empty() {
                h2.send_data(self.stream_id, &[], true)
            } else {
                h2.send_trailer_pairs(self.stream_id, fields.iter())
            };
        }
        *state = SinkState::Ended;
        self.shared.wake.notify_one();
    }

    fn trailers_may_follow(&self) {
        self.trailers_may_follow.set(true);
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

fn field(name: &[u8], value: &[u8]) -> HeaderField {
    HeaderField {
        name: name.to_vec(),
        value: value.to_vec(),
        sensitive: false,
    }
}
