//! The client side of one HTTP/2 connection as a state machine, for a proxy talking to an
//! HTTP/2 upstream (gRPC, `proxy_http_version 2`): [`ClientConnection::new`] queues the
//! preface and our SETTINGS, [`ClientConnection::open_stream`] sends a request head,
//! [`ClientConnection::send_data`] and [`ClientConnection::send_trailers`] queue the rest of
//! the request, [`ClientConnection::receive`] turns the server's bytes into
//! [`ClientEvent`]s, and [`ClientConnection::flush`] frames queued DATA within both
//! windows. The caller writes [`ClientConnection::output`] and reports it with
//! [`ClientConnection::advance_output`].
//!
//! It shares the server role's frames, HPACK, windows and stream states. What it does by
//! itself: SETTINGS (ours, the server's and both ACKs), PING answers, both flow-control
//! windows (a stream's and the connection's credit is given back as the caller consumes
//! DATA), HEADERS and CONTINUATION in both directions, interim (1xx) heads, trailers,
//! RST_STREAM and GOAWAY (streams the server did not process are reset with
//! REFUSED_STREAM so the caller may retry them). It never reads the clock: timeouts are
//! the caller's.
//!
//! Memory is bounded by [`ClientConfig`]: the header block being assembled, the decoded
//! head, the control frames waiting to be written (a server that floods SETTINGS or PING
//! while we cannot write is cut off), and what the caller queues.

use std::collections::{BTreeMap, VecDeque};

use crate::error::{Error, ErrorCode, Reason};
use crate::flow::{RecvWindow, SendWindow};
use crate::frame::{self, Frame, FrameHeader, HEADER_LEN, Setting, settings};
use crate::hpack::{self, FieldList, HeaderField};
use crate::limits::Flood;
use crate::stream::{State, Transition};

/// Ended streams whose late RST_STREAM still reaches the caller.
const CLOSED_KEPT: usize = 8;

/// Streams opened before the server's SETTINGS say its limit (RFC 9113 §5.1.2 leaves it
/// open; 100 is what it recommends a server allow at least).
const STREAMS_BEFORE_SETTINGS: u32 = 100;

/// What a client connection announces and enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// SETTINGS_INITIAL_WINDOW_SIZE we announce: how much of a response body the server
    /// may send before the caller consumes it. At least 65,535 (see `new`).
    pub stream_window: u32,
    /// The connection's receive window, raised from 65,535 at the start.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE we announce.
    pub max_frame_size: u32,
    /// The largest header block (HEADERS and its CONTINUATION frames) before decoding.
    pub header_block_max: usize,
    /// The most CONTINUATION frames one header block may take.
    pub continuations_max: u32,
    /// The largest name or value, and the largest list, of a decoded head (nginx's
    /// `grpc_buffer_size` bounds the head it reads).
    pub field_max: usize,
    pub header_list_max: usize,
    /// Control frames (SETTINGS and PING answers, WINDOW_UPDATE, RST_STREAM) waiting in
    /// the output: past this the server floods us.
    pub pending_control_max: usize,
    /// The largest DATA frame we send.
    pub chunk_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE we announce (sent when not the default 4,096): the
    /// dynamic table the server's encoder may use, and the most a size update may ask.
    pub header_table_size: u32,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            stream_window: 64 * 1024,
            connection_window: frame::MAX_WINDOW,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            header_block_max: 64 * 1024,
            continuations_max: 64,
            field_max: 8 * 1024,
            header_list_max: 32 * 1024,
            pending_control_max: 1024,
            chunk_size: 16 * 1024,
            header_table_size: hpack::table::DEFAULT_SIZE as u32,
        }
    }
}

/// Which head a HEADERS block was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadKind {
    /// An interim response (1xx; 101 is refused, RFC 9113 §8.6): the final one follows.
    Interim,
    /// The response head.
    Response,
    /// The trailers, which end the stream.
    Trailers,
}

/// What the server did, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// A head of a stream's response. `status` is the `:status` of an interim or final
    /// head (0 for trailers); `fields` hold every field as it came, pseudo-fields too.
    Headers {
        stream_id: u32,
        kind: HeadKind,
        status: u16,
        fields: FieldList,
        end_stream: bool,
    },
    /// Response body bytes. The caller gives the window back with
    /// [`ClientConnection::release`] as it consumes them.
    Data {
        stream_id: u32,
        data: Vec<u8>,
        end_stream: bool,
    },
    /// The stream was reset: by the server (`by_peer`), by a stream error of the server's
    /// we answered with RST_STREAM, or because a GOAWAY left it unprocessed
    /// (REFUSED_STREAM, safe to retry). The server's RST_STREAM for a stream that had just
    /// ended both ways is told too (it may still say NO_ERROR, or an error).
    Reset {
        stream_id: u32,
        code: ErrorCode,
        by_peer: bool,
        /// What the server did wrong, for a reset of ours.
        reason: Option<Reason>,
    },
    /// The server is going away: streams up to `last_stream_id` go on, no new ones open.
    GoAway {
        last_stream_id: u32,
        code: ErrorCode,
        debug: Vec<u8>,
    },
}

/// Why a stream could not be opened or written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientSendError {
    /// The stream was reset or has ended both ways, or never existed.
    StreamGone,
    /// We already ended our side of the stream.
    StreamEnded,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS is reached: wait for a stream to end.
    TooManyStreams,
    /// GOAWAY came, the connection failed, or stream ids ran out: open a new connection.
    ConnectionClosing,
}

/// One stream of ours.
#[derive(Clone, Debug)]
struct ClientStream {
    state: State,
    send_window: SendWindow,
    recv_window: RecvWindow,
    /// Request body bytes queued and not yet framed.
    queued: VecDeque<u8>,
    /// Our side ends after the queued bytes (and the trailers).
    end_queued: bool,
    trailers: Option<Vec<HeaderField>>,
    /// The final response head has come (DATA may follow).
    head_received: bool,
}

/// A header block being assembled.
#[derive(Clone, Debug)]
struct OpenBlock {
    stream_id: u32,
    bytes: Vec<u8>,
    end_stream: bool,
    continuations: u32,
}

/// The client side of one HTTP/2 connection.
#[derive(Debug)]
pub struct ClientConnection {
    config: ClientConfig,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    streams: BTreeMap<u32, ClientStream>,
    /// The id the next stream gets (odd, §5.1.1).
    next_stream_id: u32,
    block: Option<OpenBlock>,
    events: VecDeque<ClientEvent>,
    output: Vec<u8>,
    /// Control frames in `output` not yet written.
    pending_control: usize,
    send_window: SendWindow,
    recv_window: RecvWindow,
    peer_stream_window: u32,
    peer_max_frame_size: u32,
    peer_max_streams: u32,
    /// The server's first frame, its SETTINGS, has come.
    peer_settings: bool,
    /// GOAWAY came (its last stream id), or we sent one.
    goaway_received: Option<u32>,
    failed: bool,
    /// The streams that ended last (both sides), newest last: a RST_STREAM the server
    /// sends for one of them still reaches the caller, which may count it an error.
    closed: VecDeque<u32>,
}

impl ClientConnection {
    /// A connection to a server: the preface, our SETTINGS and the connection window's
    /// increase are in the output, to be written before anything else.
    pub fn new(config: ClientConfig) -> Self {
        let config = ClientConfig {
            stream_window: config
                .stream_window
                .clamp(frame::DEFAULT_WINDOW, frame::MAX_WINDOW),
            max_frame_size: config
                .max_frame_size
                .clamp(frame::DEFAULT_MAX_FRAME_SIZE, frame::MAX_FRAME_SIZE_LIMIT),
            ..config
        };
        let mut connection = Self {
            config,
            decoder: hpack::Decoder::new(config.header_table_size as usize),
            encoder: hpack::Encoder::new(),
            streams: BTreeMap::new(),
            next_stream_id: 1,
            block: None,
            events: VecDeque::new(),
            output: Vec::new(),
            pending_control: 0,
            send_window: SendWindow::new(frame::DEFAULT_WINDOW),
            recv_window: RecvWindow::new(
                frame::DEFAULT_WINDOW,
                config.connection_window.max(frame::DEFAULT_WINDOW),
            ),
            peer_stream_window: frame::DEFAULT_WINDOW,
            peer_max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            peer_max_streams: STREAMS_BEFORE_SETTINGS,
            peer_settings: false,
            goaway_received: None,
            failed: false,
            closed: VecDeque::new(),
        };
        connection
            .output
            .extend_from_slice(crate::connection::PREFACE);
        let mut params = Vec::with_capacity(24);
        for setting in [
            Setting {
                id: settings::ENABLE_PUSH,
                value: 0,
            },
            Setting {
                id: settings::INITIAL_WINDOW_SIZE,
                value: config.stream_window,
            },
            Setting {
                id: settings::MAX_FRAME_SIZE,
                value: config.max_frame_size,
            },
            Setting {
                id: settings::MAX_HEADER_LIST_SIZE,
                value: u32::try_from(config.header_list_max).unwrap_or(u32::MAX),
            },
        ] {
            setting.write(&mut params);
        }
        if config.header_table_size as usize != hpack::table::DEFAULT_SIZE {
            Setting {
                id: settings::HEADER_TABLE_SIZE,
                value: config.header_table_size,
            }
            .write(&mut params);
        }
        Frame::Settings {
            ack: false,
            params: &params,
        }
        .write(&mut connection.output);
        if let Some(increment) = connection.recv_window.release(0) {
            Frame::WindowUpdate {
                stream_id: 0,
                increment,
            }
            .write(&mut connection.output);
        }
        connection
    }

    /// Whether a stream may be opened now.
    pub fn can_open_stream(&self) -> bool {
        !self.failed
            && self.goaway_received.is_none()
            && self.next_stream_id <= frame::MAX_STREAM_ID
            && (self.streams.len() as u64) < u64::from(self.peer_max_streams)
    }

    /// Streams open or half-closed.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Sends a request head on a new stream; `end_stream` when the request has no body.
    /// Returns the stream's id.
    pub fn open_stream(
        &mut self,
        head: &[HeaderField],
        end_stream: bool,
    ) -> Result<u32, ClientSendError> {
        if self.failed
            || self.goaway_received.is_some()
            || self.next_stream_id > frame::MAX_STREAM_ID
        {
            return Err(ClientSendError::ConnectionClosing);
        }
        if self.streams.len() as u64 >= u64::from(self.peer_max_streams) {
            return Err(ClientSendError::TooManyStreams);
        }
        let stream_id = self.next_stream_id;
        self.next_stream_id += 2;
        self.write_head(stream_id, head, end_stream);
        let stream = ClientStream {
            state: if end_stream {
                State::HalfClosedLocal
            } else {
                State::Open
            },
            send_window: SendWindow::new(self.peer_stream_window),
            recv_window: RecvWindow::new(self.config.stream_window, self.config.stream_window),
            queued: VecDeque::new(),
            end_queued: end_stream,
            trailers: None,
            head_received: false,
        };
        self.streams.insert(stream_id, stream);
        Ok(stream_id)
    }

    /// Queues request body bytes; `end_stream` ends the request after them. They are
    /// framed by [`ClientConnection::flush`] as the windows allow.
    pub fn send_data(
        &mut self,
        stream_id: u32,
        data: &[u8],
        end_stream: bool,
    ) -> Result<(), ClientSendError> {
        let stream = self.writable(stream_id)?;
        stream.queued.extend(data);
        stream.end_queued = end_stream;
        Ok(())
    }

    /// Queues the request's trailers: they end the request after the queued bytes.
    pub fn send_trailers(
        &mut self,
        stream_id: u32,
        trailers: Vec<HeaderField>,
    ) -> Result<(), ClientSendError> {
        let stream = self.writable(stream_id)?;
        stream.trailers = Some(trailers);
        stream.end_queued = true;
        Ok(())
    }

    /// Bytes queued on a stream and not yet framed (the caller's back-pressure).
    pub fn queued(&self, stream_id: u32) -> usize {
        self.streams
            .get(&stream_id)
            .map_or(0, |stream| stream.queued.len())
    }

    /// Resets a stream (the client went away: CANCEL). Unknown streams are ignored.
    pub fn reset(&mut self, stream_id: u32, code: ErrorCode) {
        if self.streams.remove(&stream_id).is_some() && !self.failed {
            self.write_control(Frame::RstStream { stream_id, code });
        }
    }

    /// Gives back `bytes` of a stream's DATA the caller consumed.
    pub fn release(&mut self, stream_id: u32, bytes: u32) {
        if let Some(increment) = self.recv_window.release(bytes) {
            self.write_control(Frame::WindowUpdate {
                stream_id: 0,
                increment,
            });
        }
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        if !stream.state.can_receive() {
            return;
        }
        if let Some(increment) = stream.recv_window.release(bytes) {
            self.write_control(Frame::WindowUpdate {
                stream_id,
                increment,
            });
        }
    }

    /// Ends the connection gracefully: GOAWAY with `code`; no stream opens after it.
    pub fn go_away(&mut self, code: ErrorCode) {
        if self.failed {
            return;
        }
        self.goaway_received.get_or_insert(0);
        self.write_control(Frame::GoAway {
            last_stream_id: 0,
            code,
            debug: &[],
        });
    }

    /// The next event, in the order the server's frames came.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// The bytes to write.
    pub fn output(&self) -> &[u8] {
        &self.output
    }

    /// Whether there is something to write.
    pub fn wants_write(&self) -> bool {
        !self.output.is_empty()
    }

    /// `written` bytes of the output went out.
    pub fn advance_output(&mut self, written: usize) {
        let written = written.min(self.output.len());
        self.output.drain(..written);
        if self.output.is_empty() {
            self.pending_control = 0;
        }
    }

    /// Whether the connection failed (a connection error, ours or the server's): only the
    /// output is left to write.
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Frames what the windows allow of the queued request bodies, and the trailers of
    /// the bodies that are all sent.
    pub fn flush(&mut self) {
        if self.failed {
            return;
        }
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for stream_id in ids {
            self.flush_stream(stream_id);
        }
    }

    fn flush_stream(&mut self, stream_id: u32) {
        let max = self.peer_max_frame_size.min(self.config.chunk_size).max(1);
        loop {
            let Some(stream) = self.streams.get_mut(&stream_id) else {
                return;
            };
            if !stream.state.can_send() {
                return;
            }
            let queued = u32::try_from(stream.queued.len()).unwrap_or(u32::MAX);
            let ends_with_data = stream.end_queued && stream.trailers.is_none();
            if queued == 0 {
                if !stream.end_queued {
                    return;
                }
                if let Some(trailers) = stream.trailers.take() {
                    self.write_head(stream_id, &trailers, true);
                } else {
                    Frame::Data {
                        stream_id,
                        data: &[],
                        padding: None,
                        end_stream: true,
                    }
                    .write(&mut self.output);
                }
                self.local_end(stream_id);
                return;
            }
            let allowed = queued
                .min(max)
                .min(stream.send_window.available())
                .min(self.send_window.available());
            if allowed == 0 {
                return;
            }
            stream.send_window.consume(allowed);
            self.send_window.consume(allowed);
            let piece: Vec<u8> = stream.queued.drain(..allowed as usize).collect();
            let end_stream = ends_with_data && stream.queued.is_empty();
            Frame::Data {
                stream_id,
                data: &piece,
                padding: None,
                end_stream,
            }
            .write(&mut self.output);
            if end_stream {
                self.local_end(stream_id);
                return;
            }
        }
    }

    /// Reads frames from `input`; returns the bytes used (a frame not yet whole is left).
    /// A connection error queues GOAWAY and is returned; nothing more is read after it.
    pub fn receive(&mut self, input: &[u8]) -> Result<usize, Error> {
        if self.failed {
            return Ok(input.len());
        }
        let mut used = 0;
        while input.len() - used >= HEADER_LEN {
            let header = FrameHeader::parse(
                input[used..used + HEADER_LEN]
                    .try_into()
                    .expect("the slice is HEADER_LEN bytes"),
            );
            if header.length > self.config.max_frame_size {
                return Err(self.fail(Error::connection(
                    ErrorCode::FRAME_SIZE_ERROR,
                    Reason::FrameTooLarge {
                        length: header.length,
                    },
                )));
            }
            let end = used + HEADER_LEN + header.length as usize;
            if input.len() < end {
                break;
            }
            let payload = &input[used + HEADER_LEN..end];
            used = end;
            let result = frame::parse(&header, payload).and_then(|frame| self.on_frame(frame));
            match result {
                Ok(()) => {}
                Err(Error::Stream {
                    stream_id,
                    code,
                    reason,
                }) => self.stream_error(stream_id, code, reason),
                Err(error) => return Err(self.fail(error)),
            }
            if self.pending_control > self.config.pending_control_max {
                return Err(self.fail(Error::connection(
                    ErrorCode::ENHANCE_YOUR_CALM,
                    Reason::Flood(Flood::ControlFrames),
                )));
            }
        }
        Ok(used)
    }

    /// A stream error of the server's: RST_STREAM, and the caller hears of it.
    fn stream_error(&mut self, stream_id: u32, code: ErrorCode, reason: Reason) {
        self.reset(stream_id, code);
        self.events.push_back(ClientEvent::Reset {
            stream_id,
            code,
            by_peer: false,
            reason: Some(reason),
        });
    }

    /// A connection error: GOAWAY is the last frame, the streams are dropped.
    fn fail(&mut self, error: Error) -> Error {
        if !self.failed {
            self.write_control(Frame::GoAway {
                last_stream_id: 0,
                code: error.code(),
                debug: &[],
            });
            self.failed = true;
            self.streams.clear();
        }
        error
    }

    fn remote_end(&mut self, stream_id: u32) {
        self.transition(stream_id, |state| state.remote_end());
    }

    fn local_end(&mut self, stream_id: u32) {
        self.transition(stream_id, |state| state.local_end());
    }

    fn transition(&mut self, stream_id: u32, end: impl FnOnce(State) -> Transition) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        match end(stream.state) {
            Transition::To(state) => stream.state = state,
            Transition::Closed => {
                self.streams.remove(&stream_id);
                if self.closed.len() == CLOSED_KEPT {
                    self.closed.pop_front();
                }
                self.closed.push_back(stream_id);
            }
        }
    }

    fn writable(&mut self, stream_id: u32) -> Result<&mut ClientStream, ClientSendError> {
        if self.failed {
            return Err(ClientSendError::ConnectionClosing);
        }
        let stream = self
            .streams
            .get_mut(&stream_id)
            .ok_or(ClientSendError::StreamGone)?;
        if stream.end_queued || !stream.state.can_send() {
            return Err(ClientSendError::StreamEnded);
        }
        Ok(stream)
    }

    fn write_head(&mut self, stream_id: u32, fields: &[HeaderField], end_stream: bool) {
        let mut block = Vec::new();
        self.encoder.encode(fields, &mut block);
        frame::write_header_block(
            &mut self.output,
            stream_id,
            &block,
            end_stream,
            self.peer_max_frame_size,
        );
    }

    fn write_control(&mut self, frame: Frame<'_>) {
        frame.write(&mut self.output);
        self.pending_control += 1;
    }
}

mod receive;

#[cfg(test)]
mod tests;
