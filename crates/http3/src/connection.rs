//! The server side of one HTTP/3 connection as a state machine. The caller runs QUIC: it
//! hands over stream data with [`Connection::receive`] (and resets with
//! [`Connection::stream_reset`]), takes [`Event`]s with [`Connection::poll_event`], answers
//! with the `send_*` calls, and writes what [`Connection::poll_output`] gives to the QUIC
//! streams it names.
//!
//! The connection opens the server's three unidirectional streams itself, with the first
//! three server-initiated unidirectional ids: [`CONTROL_STREAM_ID`],
//! [`ENCODER_STREAM_ID`] and [`DECODER_STREAM_ID`]; the caller opens them in that order
//! before anything else. It reads the client's control and QPACK streams, keeps QPACK in
//! step both ways, parks request streams blocked on dynamic table entries and takes them
//! up again when the entries arrive, and applies the limits of [`Config`]. What it leaves
//! to the caller: what a request means (pseudo-header checks are the caller's), timeouts,
//! QUIC flow control and the socket.

use std::collections::{BTreeMap, VecDeque};

use crate::error::{Code, Error};
use crate::frame::{self, Settings};
use crate::qpack::{Decoder, DecoderSettings, Encoder};
use crate::{FieldList, HeaderField, varint};

mod receive;

/// The server's control stream: the first server-initiated unidirectional stream.
pub const CONTROL_STREAM_ID: u64 = 3;
/// The server's QPACK encoder stream.
pub const ENCODER_STREAM_ID: u64 = 7;
/// The server's QPACK decoder stream.
pub const DECODER_STREAM_ID: u64 = 11;

/// What the connection announces and enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY: how large the client may make the dynamic table
    /// our decoder keeps for it.
    pub qpack_max_table_capacity: u64,
    /// SETTINGS_QPACK_BLOCKED_STREAMS: how many request streams may wait for entries.
    pub qpack_blocked_streams: u64,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the largest request head or trailer section,
    /// decoded; also the largest HEADERS frame read. Past it the request is refused.
    pub max_field_section_size: u64,
    /// How much of the client's dynamic table our encoder uses for responses (at most what
    /// the client allows); 0 keeps responses to the static table and literals.
    pub encoder_table_capacity: u64,
    /// Request streams open at once (nginx's `http3_max_concurrent_streams`); QUIC's
    /// stream limit should say the same, this is the codec's own bound.
    pub max_request_streams: usize,
    /// Bytes of one request stream held while its head is incomplete or blocked (nginx's
    /// `http3_stream_buffer_size`).
    pub stream_buffer_size: usize,
    /// The largest SETTINGS or other control frame read.
    pub max_control_frame: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            qpack_max_table_capacity: 4096,
            qpack_blocked_streams: 16,
            max_field_section_size: 64 * 1024,
            encoder_table_capacity: 0,
            max_request_streams: 128,
            stream_buffer_size: 64 * 1024,
            max_control_frame: 16 * 1024,
        }
    }
}

/// What the client did, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A request head, or with `trailers` the trailer section.
    Headers {
        stream_id: u64,
        /// The fields as decoded: `http2::request::parse` makes a request head of them
        /// (HTTP/3's rules for heads are HTTP/2's, RFC 9114 §4.3), and
        /// `http2::request::check_trailers` checks trailers.
        fields: FieldList,
        trailers: bool,
        /// The HEADERS frame's payload length, as it arrived (for `$request_length`).
        section_len: usize,
    },
    /// Request body bytes, as they arrive.
    Data { stream_id: u64, data: Vec<u8> },
    /// The request stream ended cleanly after its head, body and trailers.
    Finished { stream_id: u64 },
    /// The client reset the stream, or the connection refused it (a stream error, already
    /// answered with RESET_STREAM and STOP_SENDING): stop working on it.
    Aborted { stream_id: u64, code: Code },
    /// The client is going away (its GOAWAY carries a push id, and Portico never pushes).
    GoAway { id: u64 },
}

/// What to write to QUIC, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Bytes for a stream (opening it first if it is one of the server's unidirectional
    /// ones); `fin` ends its sending side.
    Data {
        stream_id: u64,
        data: Vec<u8>,
        fin: bool,
    },
    /// Abort the stream both ways: RESET_STREAM for what we send and STOP_SENDING for
    /// what we receive, with `code`.
    Reset { stream_id: u64, code: Code },
    /// Abort only the receiving side (STOP_SENDING): a unidirectional stream of a type we
    /// do not read.
    StopSending { stream_id: u64, code: Code },
}

/// Why a `send_*` call could not be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// No such request stream: never opened, aborted, or finished both ways.
    StreamGone,
    /// The response was already ended.
    StreamEnded,
    /// The connection failed: close it.
    ConnectionFailed,
    /// The fields count for more than the client's SETTINGS_MAX_FIELD_SECTION_SIZE
    /// (RFC 9114 §4.2.2); nothing was sent.
    FieldSectionTooLarge,
}

/// Where a request stream's input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RequestPhase {
    /// Before the request head.
    Head,
    /// After the head: DATA, or HEADERS for trailers.
    Body,
    /// After trailers: only frames of unknown types may follow.
    Trailers,
    /// The stream ended and [`Event::Finished`] was given.
    Done,
}

/// The frame whose payload is being read without being buffered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Payload {
    /// DATA bytes still to come.
    Data(u64),
    /// Bytes of an unknown frame still to skip.
    Skip(u64),
}

/// One client-initiated bidirectional stream.
#[derive(Clone, Debug)]
struct RequestStream {
    phase: RequestPhase,
    /// Bytes received and not yet parsed.
    buffer: Vec<u8>,
    payload: Option<Payload>,
    /// A HEADERS frame's field section waiting for dynamic table entries, and its length.
    blocked: Option<Vec<u8>>,
    fin: bool,
    response_ended: bool,
}

impl RequestStream {
    fn new() -> Self {
        Self {
            phase: RequestPhase::Head,
            buffer: Vec::new(),
            payload: None,
            blocked: None,
            fin: false,
            response_ended: false,
        }
    }
}

/// What a client's unidirectional stream turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UniKind {
    /// Its type has not fully arrived.
    Unknown,
    /// The control stream; `settings` once its SETTINGS frame was read.
    Control {
        settings: bool,
    },
    Encoder,
    Decoder,
    /// A type we do not read: its data is dropped.
    Ignored,
}

#[derive(Clone, Debug)]
struct UniStream {
    kind: UniKind,
    buffer: Vec<u8>,
    skip: u64,
}

/// The server side of one connection.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    decoder: Decoder,
    encoder: Encoder,
    peer_settings: Option<Settings>,
    uni: BTreeMap<u64, UniStream>,
    requests: BTreeMap<u64, RequestStream>,
    /// The lowest request stream id not yet opened; an id below it that is not in
    /// `requests` is a stream already done or refused.
    next_request: u64,
    /// The first request stream id our GOAWAY refuses.
    goaway_sent: Option<u64>,
    peer_goaway: Option<u64>,
    max_push_id: Option<u64>,
    failed: Option<Error>,
    events: VecDeque<Event>,
    output: VecDeque<Output>,
}

impl Connection {
    /// A connection that has queued its control stream (with SETTINGS) and its QPACK
    /// streams' types.
    pub fn new(config: Config) -> Self {
        let decoder = Decoder::new(DecoderSettings {
            max_table_capacity: config.qpack_max_table_capacity,
            max_blocked_streams: config.qpack_blocked_streams,
            max_field_section_size: config.max_field_section_size,
        });
        let mut connection = Self {
            config,
            decoder,
            encoder: Encoder::new(0),
            peer_settings: None,
            uni: BTreeMap::new(),
            requests: BTreeMap::new(),
            next_request: 0,
            goaway_sent: None,
            peer_goaway: None,
            max_push_id: None,
            failed: None,
            events: VecDeque::new(),
            output: VecDeque::new(),
        };
        let mut control = Vec::new();
        varint::encode(frame::STREAM_CONTROL, &mut control);
        Settings {
            qpack_max_table_capacity: config.qpack_max_table_capacity,
            qpack_blocked_streams: config.qpack_blocked_streams,
            max_field_section_size: Some(config.max_field_section_size),
        }
        .encode(&mut control);
        connection.write(CONTROL_STREAM_ID, control, false);
        connection.write(
            ENCODER_STREAM_ID,
            vec![frame::STREAM_QPACK_ENCODER as u8],
            false,
        );
        connection.write(
            DECODER_STREAM_ID,
            vec![frame::STREAM_QPACK_DECODER as u8],
            false,
        );
        connection
    }

    pub fn config(&self) -> Config {
        self.config
    }

    /// The client's SETTINGS, once its control stream delivered them.
    pub fn peer_settings(&self) -> Option<Settings> {
        self.peer_settings
    }

    /// Request streams open now.
    pub fn open_requests(&self) -> usize {
        self.requests.len()
    }

    /// The next thing the client did.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next thing to write.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.output.pop_front()
    }

    fn write(&mut self, stream_id: u64, data: Vec<u8>, fin: bool) {
        self.output.push_back(Output::Data {
            stream_id,
            data,
            fin,
        });
    }

    /// Queues what QPACK has for its streams.
    fn flush_qpack(&mut self) {
        let decoder = self.decoder.take_instructions();
        if !decoder.is_empty() {
            self.write(DECODER_STREAM_ID, decoder, false);
        }
        let encoder = self.encoder.take_instructions();
        if !encoder.is_empty() {
            self.write(ENCODER_STREAM_ID, encoder, false);
        }
    }

    fn fail(&mut self, error: Error) -> Error {
        self.failed = Some(error);
        error
    }

    /// Sends a response head (an interim one, or the final one), ending the response when
    /// `end` says so.
    pub fn send_headers(
        &mut self,
        stream_id: u64,
        fields: &[HeaderField],
        end: bool,
    ) -> Result<(), SendError> {
        self.check_sendable(stream_id)?;
        let limit = self
            .peer_settings
            .and_then(|settings| settings.max_field_section_size);
        let size: u64 = fields.iter().map(|field| field.size() as u64).sum();
        if limit.is_some_and(|limit| size > limit) {
            return Err(SendError::FieldSectionTooLarge);
        }
        let section = self.encoder.encode_section(stream_id, fields);
        // Entries inserted for later sections go out before the section that follows them.
        self.flush_qpack();
        let mut data = Vec::with_capacity(section.len() + 9);
        frame::Header::encode(frame::HEADERS, section.len() as u64, &mut data);
        data.extend_from_slice(&section);
        self.write(stream_id, data, end);
        if end {
            self.response_ended(stream_id);
        }
        Ok(())
    }

    /// Sends response body bytes in one DATA frame (none when `data` is empty).
    pub fn send_data(&mut self, stream_id: u64, data: &[u8], end: bool) -> Result<(), SendError> {
        self.check_sendable(stream_id)?;
        let mut framed = Vec::with_capacity(data.len() + 9);
        if !data.is_empty() {
            frame::Header::encode(frame::DATA, data.len() as u64, &mut framed);
            framed.extend_from_slice(data);
        }
        self.write(stream_id, framed, end);
        if end {
            self.response_ended(stream_id);
        }
        Ok(())
    }

    /// Sends the trailer section and ends the response.
    pub fn send_trailers(
        &mut self,
        stream_id: u64,
        fields: &[HeaderField],
    ) -> Result<(), SendError> {
        self.send_headers(stream_id, fields, true)
    }

    fn check_sendable(&self, stream_id: u64) -> Result<(), SendError> {
        if self.failed.is_some() {
            return Err(SendError::ConnectionFailed);
        }
        match self.requests.get(&stream_id) {
            None => Err(SendError::StreamGone),
            Some(stream) if stream.response_ended => Err(SendError::StreamEnded),
            Some(_) => Ok(()),
        }
    }

    fn response_ended(&mut self, stream_id: u64) {
        if let Some(stream) = self.requests.get_mut(&stream_id) {
            stream.response_ended = true;
            if stream.phase == RequestPhase::Done {
                self.requests.remove(&stream_id);
            }
        }
    }

    /// The response is complete and the rest of the request body is not wanted: the
    /// stream's reading side is stopped with H3_NO_ERROR (RFC 9114 §4.1.1) and its QPACK
    /// state cancelled; what still arrives on it is dropped. Nothing happens before the
    /// response has ended or once the request has.
    pub fn stop_reading(&mut self, stream_id: u64) {
        let Some(stream) = self.requests.get(&stream_id) else {
            return;
        };
        if stream.phase == RequestPhase::Done || !stream.response_ended {
            return;
        }
        self.requests.remove(&stream_id);
        self.decoder.cancel_stream(stream_id);
        self.flush_qpack();
        self.output.push_back(Output::StopSending {
            stream_id,
            code: Code::NoError,
        });
    }

    /// The caller gives up on a request (an error of its own, or the client went quiet):
    /// the stream is reset both ways with `code`.
    pub fn abort(&mut self, stream_id: u64, code: Code) {
        if let Some(stream) = self.requests.remove(&stream_id) {
            if stream.phase != RequestPhase::Done {
                self.decoder.cancel_stream(stream_id);
                self.flush_qpack();
            }
            self.output.push_back(Output::Reset { stream_id, code });
        }
    }

    /// Sends GOAWAY: requests already received are served, later ones are refused with
    /// H3_REQUEST_REJECTED. A second call may only lower the limit, so it repeats it.
    pub fn send_goaway(&mut self) {
        let next = self.next_request;
        let id = self.goaway_sent.map_or(next, |sent| sent.min(next));
        self.goaway_sent = Some(id);
        let mut data = Vec::new();
        frame::encode_id(frame::GOAWAY, id, &mut data);
        self.write(CONTROL_STREAM_ID, data, false);
    }

    /// Whether every request stream is done both ways (after GOAWAY: the connection may
    /// close with H3_NO_ERROR).
    pub fn is_idle(&self) -> bool {
        self.requests.is_empty()
    }

    /// Refuses a request stream: a stream error (§8).
    fn stream_error(&mut self, stream_id: u64, code: Code) {
        if let Some(stream) = self.requests.remove(&stream_id) {
            // A stream read to its end has no section left unread to cancel.
            let read_whole = stream.fin && stream.buffer.is_empty() && stream.blocked.is_none();
            if !read_whole {
                self.decoder.cancel_stream(stream_id);
            }
        }
        self.output.push_back(Output::Reset { stream_id, code });
        self.events.push_back(Event::Aborted { stream_id, code });
    }
}

#[cfg(test)]
mod tests;
