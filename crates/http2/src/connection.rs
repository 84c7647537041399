//! The server side of one HTTP/2 connection as a state machine: [`Connection::receive`]
//! takes bytes and turns them into [`Event`]s; the `send_*` calls and
//! [`Connection::flush`] put frames into the output, which the caller writes and reports
//! with [`Connection::advance_output`].
//!
//! What the connection does by itself: the preface and SETTINGS exchange (with ACK), PING
//! answers, HPACK in both directions, stream states, both flow-control windows, the
//! priority tree and the send order of DATA, GOAWAY and RST_STREAM for the errors of RFC
//! 9113, and the flood limits of [`crate::limits`]. What it leaves to the caller: what a
//! request means (see [`crate::request`]), timeouts (it never reads the clock), and the
//! socket.

use std::collections::{BTreeMap, VecDeque};
use std::io::IoSlice;

use crate::error::{Error, ErrorCode, Reason};
use crate::flow::{RecvWindow, SendWindow};
use crate::frame::{self, Frame, PrioritySpec, Setting, settings};
use crate::hpack::{self, DecodeLimits};
use crate::limits::{Counters, Flood, Limits, PRIORITY_PER_STREAM};
use crate::output::Output;
use crate::priority::PriorityTree;
use crate::queue::DataQueue;
use crate::stream::{State, Transition};

mod receive;
mod send;

/// The client connection preface (§3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What a connection announces and enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The limits and flood defences.
    pub limits: Limits,
    /// SETTINGS_INITIAL_WINDOW_SIZE we announce: how much of a request body a client may
    /// send before the caller consumes it (nginx's `http2_body_preread_size`).
    pub stream_window: u32,
    /// The connection's receive window, raised from 65,535 by a WINDOW_UPDATE at the start.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE we announce.
    pub max_frame_size: u32,
    /// The largest DATA frame we send (nginx's `http2_chunk_size`).
    pub chunk_size: u32,
    /// Output beyond which `flush` stops adding DATA until the caller writes.
    pub output_high_water: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            stream_window: 65_536,
            connection_window: frame::MAX_WINDOW,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            chunk_size: 8 * 1024,
            output_high_water: 64 * 1024,
        }
    }
}

/// What the client did, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A request head (or, with `trailers`, a trailer section). A field or a list past the
    /// limits ends the connection instead (ENHANCE_YOUR_CALM, as nginx ends it).
    Headers {
        stream_id: u32,
        fields: hpack::FieldList,
        end_stream: bool,
        trailers: bool,
        /// The header block's size as it arrived, HPACK-encoded (nginx's
        /// `$request_length` counts it).
        block_len: usize,
    },
    /// Request body bytes. The caller gives the window back with [`Connection::release`]
    /// as it consumes them.
    Data {
        stream_id: u32,
        data: Vec<u8>,
        end_stream: bool,
    },
    /// The client reset the stream, or the connection did (a stream error): stop working on
    /// it.
    Reset {
        stream_id: u32,
        code: ErrorCode,
        by_peer: bool,
    },
    /// The client is going away; streams above `last_stream_id` were not processed by it.
    GoAway {
        last_stream_id: u32,
        code: ErrorCode,
    },
}

/// Why a `send_*` call could not be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The stream is closed or was reset (an [`Event::Reset`] said so), or never existed.
    StreamGone,
    /// The stream already sent END_STREAM.
    StreamEnded,
    /// The connection is closing after a connection error or GOAWAY of ours.
    ConnectionClosing,
}

/// Where the input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the 24 bytes of the preface.
    Preface,
    /// Frames.
    Frames,
    /// A connection error was sent: nothing more is read.
    Failed,
}

/// A header block being assembled from HEADERS and CONTINUATION frames.
#[derive(Clone, Debug)]
struct OpenBlock {
    stream_id: u32,
    bytes: Vec<u8>,
    end_stream: bool,
    continuations: u32,
}

/// One open or half-closed stream.
#[derive(Clone, Debug)]
struct Stream {
    state: State,
    send_window: SendWindow,
    recv_window: RecvWindow,
    /// DATA bytes queued by the caller and not yet framed.
    queued: DataQueue,
    /// The caller ended its side: END_STREAM goes with the last queued byte (or trailers).
    end_queued: bool,
    /// Trailers to send after the queued bytes.
    trailers: Option<hpack::FieldList>,
    /// The largest DATA frame of this stream (`Config::chunk_size` unless the caller set
    /// its own: nginx's `http2_chunk_size` is the location's).
    chunk_size: u32,
    /// RST_STREAM to send once the response has ended (see `reset_after_response`).
    reset_after: Option<ErrorCode>,
}

/// Streams reset by us whose late DATA is ignored.
const RESETS_REMEMBERED: usize = 16;

/// Closed streams' state kept for the next streams, at most.
const SPARE_STREAMS_MAX: usize = 16;

/// A retired stream keeps its queue's buffer up to this size.
const SPARE_QUEUE_MAX: usize = 16 * 1024;

/// Field lists given back and kept, at most, and the largest buffer one may keep.
const SPARE_LISTS_MAX: usize = 16;
const SPARE_LIST_BYTES_MAX: usize = 8 * 1024;

/// The largest header block buffer kept for the next block.
const SPARE_BLOCK_MAX: usize = 4096;

/// The server side of one HTTP/2 connection.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    /// The streams we reset last, newest last (see `reset_stream`).
    reset_by_us: VecDeque<u32>,
    phase: Phase,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    /// Boxed, so that the map moves pointers, and kept for the next streams when they
    /// close (see `retire`).
    streams: BTreeMap<u32, Box<Stream>>,
    /// Closed streams' state, cleared, with its queue's memory, for the next streams.
    /// Boxed as the map holds them: a stream moves between the two without a copy.
    #[allow(clippy::vec_box)]
    spare_streams: Vec<Box<Stream>>,
    tree: PriorityTree,
    block: Option<OpenBlock>,
    /// Where the look through the header block arriving in part has reached.
    block_scan: hpack::BlockScan,
    events: VecDeque<Event>,
    /// The header block being encoded, kept with its memory between heads.
    encoded: Vec<u8>,
    /// The buffer of the last header block assembled, kept for the next one.
    spare_block: Vec<u8>,
    /// Decoded field lists the caller gave back ([`Connection::recycle_fields`]).
    spare_lists: Vec<hpack::FieldList>,
    /// Scratch space of `flush`: the streams ready to frame, and their ranks.
    frame_order: Vec<u32>,
    frame_ranks: Vec<(usize, f64, u32)>,
    output: Output,
    send_window: SendWindow,
    recv_window: RecvWindow,
    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE and SETTINGS_MAX_FRAME_SIZE.
    peer_stream_window: u32,
    peer_max_frame_size: u32,
    /// The highest stream id the client opened (or tried to).
    last_stream_id: u32,
    /// Set once we sent GOAWAY: streams above it are ignored.
    goaway_sent: Option<u32>,
    /// The client acknowledged our SETTINGS (our stream window applies from then on).
    settings_acked: bool,
    /// The last `flush` found no stream with a frame to write, and nothing that could
    /// change that (queued data, input with window updates) has happened since: the next
    /// `flush` returns at once instead of looking at every stream again.
    nothing_to_frame: bool,
    counters: Counters,
}

impl Connection {
    /// A connection that has accepted a client: our SETTINGS (and the connection window's
    /// increase) are already in the output.
    pub fn new(config: Config) -> Self {
        let limits = config.limits;
        let mut connection = Self {
            config,
            phase: Phase::Preface,
            decoder: hpack::Decoder::new(hpack::table::DEFAULT_SIZE),
            encoder: hpack::Encoder::new(),
            streams: BTreeMap::new(),
            spare_streams: Vec::new(),
            reset_by_us: VecDeque::new(),
            tree: PriorityTree::new(limits.priority_nodes_retained),
            block: None,
            block_scan: hpack::BlockScan::default(),
            events: VecDeque::new(),
            encoded: Vec::new(),
            spare_block: Vec::new(),
            spare_lists: Vec::new(),
            frame_order: Vec::new(),
            frame_ranks: Vec::new(),
            output: Output::default(),
            send_window: SendWindow::new(65_535),
            recv_window: RecvWindow::new(65_535, config.connection_window.max(65_535)),
            peer_stream_window: 65_535,
            peer_max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            last_stream_id: 0,
            goaway_sent: None,
            settings_acked: false,
            nothing_to_frame: false,
            counters: Counters::default(),
        };
        let mut params = Vec::new();
        Setting {
            id: settings::MAX_CONCURRENT_STREAMS,
            value: limits.max_concurrent_streams,
        }
        .write(&mut params);
        Setting {
            id: settings::INITIAL_WINDOW_SIZE,
            value: config.stream_window,
        }
        .write(&mut params);
        Setting {
            id: settings::MAX_FRAME_SIZE,
            value: config.max_frame_size,
        }
        .write(&mut params);
        Frame::Settings {
            ack: false,
            params: &params,
        }
        .write(connection.output.frames());
        if let Some(increment) = connection.recv_window.release(0) {
            Frame::WindowUpdate {
                stream_id: 0,
                increment,
            }
            .write(connection.output.frames());
        }
        connection
    }

    /// The next event, in the order the client's frames arrived.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Fills `slices` with the bytes to write to the client, from the first, for one
    /// gathered write; returns how many it filled. DATA payloads are the buffers the caller
    /// queued, not copies.
    pub fn output_slices<'a>(&'a self, slices: &mut [IoSlice<'a>]) -> usize {
        self.output.slices(slices)
    }

    /// How many bytes there are to write.
    pub fn output_len(&self) -> usize {
        self.output.len()
    }

    /// The bytes to write, copied into one buffer (for tests, and callers that cannot
    /// gather).
    pub fn output_to_vec(&self) -> Vec<u8> {
        self.output.to_vec()
    }

    /// Whether there is output to write.
    pub fn wants_write(&self) -> bool {
        !self.output.is_empty()
    }

    /// The caller wrote `written` bytes of the output ([`Self::output_slices`]). Draining it
    /// fully resets the count of answers the client is owed (its reads keep up).
    pub fn advance_output(&mut self, written: usize) {
        self.output.advance(written.min(self.output.len()));
        // A buffer kept per open stream at most: the next requests' pieces reuse them, and
        // an idle connection holds none.
        self.output.keep_reclaimed(self.streams.len());
        if self.output.is_empty() {
            self.counters.pending_control = 0;
        }
    }

    /// An empty buffer that carried DATA the caller queued with
    /// [`send_data_shared`](Self::send_data_shared) and that is all written: reading the
    /// next pieces into it spares an allocation.
    pub fn take_reclaimed_buffer(&mut self) -> Option<Vec<u8>> {
        self.output.take_reclaimed()
    }

    /// The flood counters and stream counts, for metrics and tests.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// How many streams are open or half-closed.
    pub fn active_streams(&self) -> usize {
        self.streams.len()
    }

    /// The highest stream id the client opened.
    pub fn last_stream_id(&self) -> u32 {
        self.last_stream_id
    }

    /// Whether the connection failed or sent GOAWAY and has no stream left: the caller
    /// writes the output and closes.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Failed || (self.goaway_sent.is_some() && self.streams.is_empty())
    }

    /// The priority tree, for tests and the status page.
    pub fn priority_tree(&self) -> &PriorityTree {
        &self.tree
    }

    /// Sends GOAWAY with the last stream we processed: no new stream is accepted, open
    /// ones finish (graceful stop, `keepalive_requests`, `worker_shutdown_timeout`).
    pub fn go_away(&mut self, code: ErrorCode) {
        let last = self.last_stream_id;
        if self.goaway_sent.is_none_or(|sent| sent > last) {
            Frame::GoAway {
                last_stream_id: last,
                code,
                debug: &[],
            }
            .write(self.output.frames());
            self.goaway_sent = Some(last);
        }
    }

    /// Ends the connection for `error`: GOAWAY for a connection error; RST_STREAM and an
    /// [`Event::Reset`] for a stream error.
    fn fail(&mut self, error: Error) -> Result<(), Error> {
        match error {
            Error::Connection { code, .. } => {
                // Even after a graceful GOAWAY: the peer learns why the connection ends.
                let last_stream_id = self
                    .goaway_sent
                    .map_or(self.last_stream_id, |sent| sent.min(self.last_stream_id));
                Frame::GoAway {
                    last_stream_id,
                    code,
                    debug: &[],
                }
                .write(self.output.frames());
                self.goaway_sent = Some(last_stream_id);
                self.phase = Phase::Failed;
                self.streams.clear();
                Err(error)
            }
            Error::Stream {
                stream_id, code, ..
            } => {
                self.reset_stream(stream_id, code);
                if let Some(stream) = self.streams.remove(&stream_id) {
                    self.retire(stream);
                    self.tree.close(stream_id);
                    self.events.push_back(Event::Reset {
                        stream_id,
                        code,
                        by_peer: false,
                    });
                }
                Ok(())
            }
        }
    }

    fn flood(&self, flood: Flood) -> Result<(), Error> {
        Err(Error::connection(
            ErrorCode::ENHANCE_YOUR_CALM,
            Reason::Flood(flood),
        ))
    }

    fn decode_limits(&self) -> DecodeLimits {
        DecodeLimits {
            max_field_size: self.config.limits.field_max,
            max_list_size: self.config.limits.header_list_max,
        }
    }

    /// Closes a stream on our side after its END_STREAM, or drops it.
    fn end_local(&mut self, stream_id: u32) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        match stream.state.local_end() {
            Transition::To(state) => {
                stream.state = state;
                if let Some(code) = stream.reset_after.take() {
                    self.reset_stream(stream_id, code);
                    self.close(stream_id);
                }
            }
            Transition::Closed => self.close(stream_id),
        }
        // A response completed: it pays back one early reset (see `Limits::early_resets_max`).
        self.counters.early_resets = self.counters.early_resets.saturating_sub(1);
    }

    fn close(&mut self, stream_id: u32) {
        if let Some(stream) = self.streams.remove(&stream_id) {
            self.retire(stream);
            self.tree.close(stream_id);
        }
    }

    /// Keeps a closed stream's state, emptied, for a stream opened later: its queue's
    /// buffer then serves the next small response without an allocation.
    fn retire(&mut self, mut stream: Box<Stream>) {
        if self.spare_streams.len() >= SPARE_STREAMS_MAX {
            return;
        }
        stream.queued.clear();
        if stream.queued.capacity() > SPARE_QUEUE_MAX {
            stream.queued = DataQueue::default();
        }
        stream.trailers = None;
        self.spare_streams.push(stream);
    }

    /// A stream's state in a box, a retired one's if there is one (its queue kept).
    fn boxed_stream(&mut self, mut stream: Stream) -> Box<Stream> {
        match self.spare_streams.pop() {
            Some(mut spare) => {
                std::mem::swap(&mut spare.queued, &mut stream.queued);
                *spare = stream;
                spare
            }
            None => Box::new(stream),
        }
    }

    /// Gives back a field list an [`Event::Headers`] carried, once read: the next header
    /// block is decoded into its memory.
    pub fn recycle_fields(&mut self, mut fields: hpack::FieldList) {
        if self.spare_lists.len() < SPARE_LISTS_MAX
            && fields.capacity_bytes() <= SPARE_LIST_BYTES_MAX
        {
            fields.clear();
            self.spare_lists.push(fields);
        }
    }

    /// Sends RST_STREAM for a stream without touching its state. The stream is remembered
    /// among the last ones reset: DATA the client sent before it saw the reset is ignored
    /// (RFC 9113 §5.1), not answered with another RST_STREAM.
    fn reset_stream(&mut self, stream_id: u32, code: ErrorCode) {
        Frame::RstStream { stream_id, code }.write(self.output.frames());
        if !self.reset_by_us.contains(&stream_id) {
            if self.reset_by_us.len() == RESETS_REMEMBERED {
                self.reset_by_us.pop_front();
            }
            self.reset_by_us.push_back(stream_id);
        }
    }

    /// Priority from a HEADERS or PRIORITY frame. nginx (and so Portico) treats a stream
    /// that depends on itself as a connection error, as `h2_priority.t` checks.
    fn prioritize(&mut self, stream_id: u32, priority: PrioritySpec) -> Result<(), Error> {
        if priority.dependency == stream_id {
            return Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::SelfDependency,
            ));
        }
        self.tree.set(stream_id, priority);
        Ok(())
    }

    fn allow_priority_frames(&mut self) {
        let allowance = PRIORITY_PER_STREAM;
        self.counters.priority_frames = self.counters.priority_frames.saturating_sub(allowance);
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_client;
#[cfg(test)]
mod tests_data;
#[cfg(test)]
mod tests_limits;
#[cfg(test)]
mod tests_partial;
