//! One HTTP/3 request stream: its head made into a [`Request`] (`stream_head`, as for
//! HTTP/2), the phases run as for any request, and the response sent through a
//! [`StreamSink`] that turns the head the header filter wrote into a HEADERS frame and
//! the body into DATA frames, waiting while QUIC's flow control holds its earlier bytes.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http2::request::RequestHead;
use http3::HeaderField;
use logging::Level;
use quic::ConnectionId;

use crate::assembly::stream_head::{StreamProtocol, read_head, refusal, status_digits};
use crate::assembly::v3::body::StreamFeed;
use crate::assembly::v3::socket::{Connection, SocketState, abort, address_conf, request_ended};
use crate::assembly::{phases, send};
use crate::kernel::body::BodyState;
use crate::kernel::client::{BodySource, Client, FramedSink, ReadAhead, ResponseSink};
use crate::kernel::request::Request;
use crate::kernel::response::FieldList;
use crate::kernel::special::Reply;
use crate::kernel::worker::HttpWorker;

/// Body bytes a stream may have handed to QUIC and not yet had taken by its flow
/// control before its writer waits.
const QUEUED_MAX: usize = 64 * 1024;

/// A stream's request as its head came in.
pub(crate) struct Opened {
    pub(crate) stream_id: u64,
    /// `$connection_requests` of this request.
    pub(crate) requests: u64,
    /// `Err(status)` for a head refused before it became a request.
    pub(crate) head: Result<RequestHead, u16>,
    /// The HEADERS frame's size (`$request_length` counts it).
    pub(crate) section_len: usize,
    /// Notified when the client resets the stream: the request stops and is logged.
    pub(crate) reset: Rc<tokio::sync::Notify>,
}

/// Runs one stream's request to its end.
pub(crate) async fn run_request(
    worker: Rc<HttpWorker>,
    state: Rc<SocketState>,
    conn: Rc<Connection>,
    opened: Opened,
) {
    let worker = &*worker;
    let Opened {
        stream_id,
        requests,
        head,
        section_len,
        reset,
    } = opened;
    let conf = worker.conf();
    let Some(address) = address_conf(conf, state.socket_index) else {
        return;
    };
    let mut info = conn.info.clone();
    info.requests = requests;
    // A client that migrated is seen at its new address from the request after the
    // datagram that moved it.
    let remote = state.driver.endpoint().request_address(conn.id);
    if let Some(remote) = remote {
        info.socket_peer = runtime::PeerAddress::Inet(remote);
        info.peer.set(info.socket_peer);
    }
    let info = &info;
    // The head and its end may arrive in one turn without a DATA frame: then there is no
    // body (an empty DATA frame makes an empty body). A head whose stream is still open
    // may be followed by one (read to the stream's end without a
    // `content-length`, as nginx reads it).
    let body = !state
        .inboxes
        .borrow()
        .get(&(conn.id, stream_id))
        .is_some_and(|inbox| inbox.ended && !inbox.data_seen);
    let mut request = Box::<Request>::default();
    request.reset();
    request.started = Some(Instant::now());
    request.keepalive = true;
    let default_server = conf.server(address.default_server);
    let stream = StreamProtocol {
        protocol: b"HTTP/3.0",
        address,
        serves: |server, _| server.v3.enable,
    };
    let refused = head.and_then(|head| {
        if let Some(message) = refusal(&head, body) {
            crate::assembly::stream_head::log_malformed(worker, info, address, &message);
            return Err(400);
        }
        read_head(worker, &stream, info, &mut request, &head, body)
    });
    request.length = section_len as u64;
    let mut read_ahead = ReadAhead::unallocated();
    let feed = StreamFeed {
        state: &state,
        connection: conn.id,
        stream_id,
    };
    let mut body_state = BodyState::Done;
    let _cuttable = worker.cuttable_request();
    let mut logged = false;
    let sink = StreamSink {
        state: &state,
        connection: conn.id,
        stream_id,
        phase: RefCell::new(SinkState::AwaitingHead),
        head_bytes: Cell::new(0),
        trailers_may_follow: Cell::new(false),
    };
    let cut = {
        let served = async {
            let reply = match refused {
                Err(status) => {
                    request.server = Some(address.default_server);
                    request.location = Some(default_server.location);
                    let client = Client {
                        info,
                        source: BodySource::framed(&conn.presence, &mut read_ahead, &feed),
                        body: &mut body_state,
                    };
                    phases::run_error(worker, client, &mut request, status).await
                }
                Ok(()) => {
                    body_state = BodyState::new(request.info.framing);
                    let client = Client {
                        info,
                        source: BodySource::framed(&conn.presence, &mut read_ahead, &feed),
                        body: &mut body_state,
                    };
                    phases::run(worker, client, &mut request).await
                }
            };
            let answering = request.location.unwrap_or(default_server.location);
            let sent = match reply {
                Reply::Respond(_) if request.response.status == 408 => {
                    Err(io::ErrorKind::TimedOut.into())
                }
                Reply::Respond(body) => {
                    send::send_framed_response(
                        worker,
                        info,
                        ResponseSink::framed(&conn.presence, &sink),
                        &mut request,
                        body,
                        BodySource::framed(&conn.presence, &mut read_ahead, &feed),
                        &mut body_state,
                    )
                    .await
                }
                Reply::Close if request.response.status == 408 => {
                    Err(io::ErrorKind::TimedOut.into())
                }
                Reply::Close => Err(io::ErrorKind::ConnectionAborted.into()),
            };
            match sent {
                Ok(()) => {
                    sink.finish();
                    // A body nobody read to its end: the client is told to stop sending it
                    // (STOP_SENDING, H3_NO_ERROR), as nginx does.
                    let ended = state
                        .inboxes
                        .borrow()
                        .get(&(conn.id, stream_id))
                        .is_none_or(|inbox| inbox.ended);
                    if !ended {
                        state.driver.endpoint().stop_reading(conn.id, stream_id);
                    }
                }
                Err(_) => abort(&state, conn.id, stream_id, http3::Code::InternalError),
            }
            state.driver.wake();
            // The request lasts until QUIC has taken its response, within `send_timeout`.
            let send_timeout = conf.location(answering).settings.core.send_timeout;
            if !sink.drained(send_timeout).await {
                abort(&state, conn.id, stream_id, http3::Code::InternalError);
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
            send::log_request_info(worker, info, &request);
            logged = true;
            if phases::has_work_after_response(worker, &request) {
                let mut source = BodySource::framed(&conn.presence, &mut read_ahead, &feed);
                let after = phases::after_response(worker, info, &mut source, &mut request);
                Box::pin(after).await;
            }
        };
        tokio::select! {
            biased;
            () = served => Ended::Served,
            () = reset.notified() => Ended::Reset,
            () = worker.requests_cut() => Ended::Cut,
        }
    };
    // A request the client reset, or that `worker_shutdown_timeout` cut, is logged with
    // 499 if no answer was begun, as nginx logs it.
    if cut != Ended::Served && request.response.status == 0 {
        request.response.status = 499;
    }
    if cut == Ended::Cut {
        abort(&state, conn.id, stream_id, http3::Code::InternalError);
    }
    if !logged {
        send::log_request_info(worker, info, &request);
    }
    request_ended(&state, conn.id, stream_id);
    request.reset();
}

/// How a request's task ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ended {
    Served,
    /// The client reset the stream.
    Reset,
    /// `worker_shutdown_timeout` passed.
    Cut,
}

/// Where the sink is in the response.
enum SinkState {
    AwaitingHead,
    /// The head is in and not sent yet (it goes with the first body bytes or the end),
    /// with its `content-length`, when it has one.
    HeadReady(FieldList, Option<u64>),
    /// Sending the body; the bytes still to come when the length is known (the last
    /// ones end the stream).
    Body(Option<u64>),
    Ended,
}

/// The response side of one stream.
struct StreamSink<'a> {
    state: &'a SocketState,
    connection: ConnectionId,
    stream_id: u64,
    phase: RefCell<SinkState>,
    /// The head's field bytes once sent (`$bytes_sent` counts them).
    head_bytes: Cell<u64>,
    trailers_may_follow: Cell<bool>,
}

impl StreamSink<'_> {
    /// Ends the stream: the head alone when there was no body, else an empty DATA end.
    fn finish(&self) {
        let phase = std::mem::replace(&mut *self.phase.borrow_mut(), SinkState::Ended);
        let mut endpoint = self.state.driver.endpoint();
        let _ = match phase {
            SinkState::HeadReady(fields, _) => self.send_head(&mut endpoint, &fields, true),
            SinkState::AwaitingHead => {
                let fields = [field(b":status", b"500")];
                endpoint.send_headers(self.connection, self.stream_id, &fields, true)
            }
            SinkState::Body(_) => endpoint.send_data(self.connection, self.stream_id, &[], true),
            SinkState::Ended => Ok(()),
        };
    }

    /// Sends the head, `:status` first, names in lower case (RFC 9114 §4.2).
    fn send_head(
        &self,
        endpoint: &mut quic::Endpoint,
        fields: &FieldList,
        end: bool,
    ) -> Result<(), quic::SendError> {
        let status = status_digits(fields.status);
        let mut head = Vec::with_capacity(fields.iter().count() + 1);
        head.push(field(b":status", &status));
        let mut bytes = 0;
        for (name, value) in fields.iter() {
            bytes += name.len() + value.len() + 4;
            head.push(HeaderField {
                name: name.to_ascii_lowercase(),
                value: value.to_vec(),
                sensitive: false,
            });
        }
        self.head_bytes.set(bytes as u64 + 13);
        endpoint.send_headers(self.connection, self.stream_id, &head, end)
    }

    /// Waits until QUIC has taken the stream's queued bytes (or the connection is gone);
    /// `false` when `timeout` passed first.
    async fn drained(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let progress = self.state.driver.progress();
            {
                let endpoint = self.state.driver.endpoint();
                let queued = endpoint.unsent_stream_bytes(self.connection, self.stream_id);
                if queued == 0 || !endpoint.is_open(self.connection) {
                    return true;
                }
            }
            if tokio::time::timeout_at(deadline, progress).await.is_err() {
                return false;
            }
        }
    }

    fn take(&self, bytes: &[u8]) -> io::Result<usize> {
        let mut phase = self.phase.borrow_mut();
        let mut endpoint = self.state.driver.endpoint();
        if !endpoint.is_open(self.connection) {
            return Err(gone());
        }
        let queued = endpoint.unsent_stream_bytes(self.connection, self.stream_id);
        if queued >= QUEUED_MAX {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        if let SinkState::HeadReady(_, length) = &*phase {
            let length = *length;
            if let SinkState::HeadReady(fields, _) =
                std::mem::replace(&mut *phase, SinkState::Body(length))
            {
                self.send_head(&mut endpoint, &fields, false)
                    .map_err(|_| gone())?;
            }
        }
        let take = bytes.len().min(QUEUED_MAX - queued);
        let (left, last) = match &*phase {
            SinkState::Body(Some(left)) => {
                let left = left.saturating_sub(take as u64);
                (Some(left), left == 0 && !self.trailers_may_follow.get())
            }
            SinkState::Body(None) => (None, false),
            SinkState::Ended | SinkState::AwaitingHead | SinkState::HeadReady(..) => {
                return Err(gone());
            }
        };
        endpoint
            .send_data(self.connection, self.stream_id, &bytes[..take], last)
            .map_err(|_| gone())?;
        *phase = if last {
            SinkState::Ended
        } else {
            SinkState::Body(left)
        };
        self.state.driver.wake();
        Ok(take)
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "stream closed")
}

pub(crate) fn field(name: &[u8], value: &[u8]) -> HeaderField {
    HeaderField {
        name: name.to_vec(),
        value: value.to_vec(),
        sensitive: false,
    }
}

impl FramedSink for StreamSink<'_> {
    fn head(&self, fields: FieldList) -> usize {
        let length = fields
            .get(b"content-length")
            .and_then(|value| std::str::from_utf8(value).ok()?.parse().ok());
        let mut phase = self.phase.borrow_mut();
        if matches!(&*phase, SinkState::AwaitingHead) {
            *phase = SinkState::HeadReady(fields, length);
        }
        0
    }

    fn trailers(&self, fields: FieldList) {
        let mut phase = self.phase.borrow_mut();
        let mut endpoint = self.state.driver.endpoint();
        if let SinkState::HeadReady(head, _) = &*phase {
            let _ = self.send_head(&mut endpoint, head, false);
        }
        if !matches!(&*phase, SinkState::Ended) {
            let _ = if fields.is_empty() {
                endpoint.send_data(self.connection, self.stream_id, &[], true)
            } else {
                let fields: Vec<HeaderField> = fields
                    .iter()
                    .map(|(name, value)| field(&name.to_ascii_lowercase(), value))
                    .collect();
                endpoint.send_trailers(self.connection, self.stream_id, &fields)
            };
        }
        *phase = SinkState::Ended;
        self.state.driver.wake();
    }

    fn trailers_may_follow(&self) {
        self.trailers_may_follow.set(true);
    }

    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        self.take(bytes)
    }

    fn try_write_shared(&self, bytes: &Bytes) -> io::Result<usize> {
        self.take(bytes)
    }

    fn writable(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = io::Result<()>> + '_>> {
        Box::pin(async move {
            loop {
                let progress = self.state.driver.progress();
                {
                    let endpoint = self.state.driver.endpoint();
                    if !endpoint.is_open(self.connection) {
                        return Err(gone());
                    }
                    if endpoint.unsent_stream_bytes(self.connection, self.stream_id) < QUEUED_MAX {
                        return Ok(());
                    }
                }
                progress.await;
            }
        })
    }
}
