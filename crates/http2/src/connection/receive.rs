//! Reading: the preface, then frames, each checked against the connection's state.

use super::{Connection, Event, OpenBlock, PREFACE, Phase, SPARE_BLOCK_MAX, Stream};
use crate::error::{Error, ErrorCode, Reason};
use crate::flow::{RecvWindow, SendWindow};
use crate::frame::{self, Frame, FrameHeader, PrioritySpec, settings};
use crate::hpack::{BlockScan, HpackError};
use crate::limits::Flood;
use crate::stream::{State, Transition};

impl Connection {
    /// Reads as many whole frames of `input` as there are; returns the bytes used (the
    /// caller keeps the rest and presents it again with more). Events are then ready from
    /// [`poll_event`](Self::poll_event). A connection error is returned once, after GOAWAY
    /// went into the output: the caller writes it and closes.
    pub fn receive(&mut self, input: &[u8]) -> Result<usize, Error> {
        self.counters.new_streams = 0;
        // Window updates and settings may let a stream send again.
        self.nothing_to_frame = false;
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match self.phase {
                Phase::Failed => return Ok(input.len()),
                Phase::Preface => {
                    let compared = rest.len().min(PREFACE.len());
                    if rest[..compared] != PREFACE[..compared] {
                        self.fail(Error::connection(
                            ErrorCode::PROTOCOL_ERROR,
                            Reason::BadPreface,
                        ))?;
                    }
                    if compared < PREFACE.len() {
                        return Ok(used);
                    }
                    used += PREFACE.len();
                    // As nginx, any frame may come first: `Test::Nginx::HTTP2` sends none of its own
                    // SETTINGS (RFC 9113 §3.4 wants one), and nginx's tests expect answers.
                    self.phase = Phase::Frames;
                }
                Phase::Frames => {
                    let Some(header_bytes) = rest.first_chunk::<{ frame::HEADER_LEN }>() else {
                        return Ok(used);
                    };
                    let header = FrameHeader::parse(header_bytes);
                    if header.length > self.config.max_frame_size {
                        let reason = Reason::FrameTooLarge {
                            length: header.length,
                        };
                        self.fail(Error::connection(ErrorCode::FRAME_SIZE_ERROR, reason))?;
                    }
                    self.refuse_early(&header)?;
                    if header.kind == frame::kind::PUSH_PROMISE {
                        // Refused on its header, as nginx does, without waiting for a
                        // payload that may never come.
                        let reason = Reason::PushPromise;
                        self.fail(Error::connection(ErrorCode::PROTOCOL_ERROR, reason))?;
                    }
                    let end = frame::HEADER_LEN + header.length as usize;
                    let Some(payload) = rest.get(frame::HEADER_LEN..end) else {
                        let arrived = &rest[frame::HEADER_LEN..];
                        if let Err(error) = self.scan_partial_block(&header, arrived) {
                            self.fail(error)?;
                        }
                        return Ok(used);
                    };
                    used += end;
                    let result =
                        frame::parse(&header, payload).and_then(|parsed| self.frame(parsed));
                    if let Err(error) = result {
                        self.fail(error)?;
                    }
                }
            }
        }
    }

    fn frame(&mut self, parsed: Frame<'_>) -> Result<(), Error> {
        if let Some(block) = &self.block {
            // §6.10: only CONTINUATION frames of the same stream until END_HEADERS.
            let continues = matches!(parsed, Frame::Continuation { stream_id, .. } if stream_id == block.stream_id);
            if !continues {
                return Err(Error::connection(
                    ErrorCode::PROTOCOL_ERROR,
                    Reason::ContinuationExpected,
                ));
            }
        }
        match parsed {
            Frame::Data {
                stream_id,
                data,
                padding,
                end_stream,
            } => self.data(stream_id, data, padding, end_stream),
            Frame::Headers {
                stream_id,
                priority,
                fragment,
                end_stream,
                end_headers,
                ..
            } => self.headers(stream_id, priority, fragment, end_stream, end_headers),
            Frame::Continuation {
                stream_id,
                fragment,
                end_headers,
            } => self.continuation(stream_id, fragment, end_headers),
            Frame::Priority {
                stream_id,
                priority,
            } => {
                if self
                    .counters
                    .count(Flood::Priority, &self.config.limits)
                    .is_err()
                {
                    return self.flood(Flood::Priority);
                }
                self.prioritize(stream_id, priority)
            }
            Frame::RstStream { stream_id, code } => self.rst_stream(stream_id, code),
            Frame::Settings { ack, params } => self.settings(ack, params),
            Frame::PushPromise { .. } => Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::PushPromise,
            )),
            Frame::Ping { ack, payload } => {
                if !ack {
                    self.count_control_frame()?;
                    Frame::Ping { ack: true, payload }.write(self.output.frames());
                }
                Ok(())
            }
            Frame::GoAway {
                last_stream_id,
                code,
                ..
            } => {
                self.events.push_back(Event::GoAway {
                    last_stream_id,
                    code,
                });
                Ok(())
            }
            Frame::WindowUpdate {
                stream_id,
                increment,
            } => self.window_update(stream_id, increment),
            Frame::Unknown { .. } => Ok(()),
        }
    }

    /// Whether a stream id names an idle stream: above every stream the client opened.
    fn is_idle(&self, stream_id: u32) -> bool {
        stream_id > self.last_stream_id
    }

    fn data(
        &mut self,
        stream_id: u32,
        data: &[u8],
        padding: Option<u8>,
        end_stream: bool,
    ) -> Result<(), Error> {
        let kind = frame::kind::DATA;
        if self.is_idle(stream_id) {
            return Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::IdleStream { kind },
            ));
        }
        let flow_len = frame::data_flow_len(data, padding);
        if !self.recv_window.receive(flow_len) {
            return Err(Error::connection(
                ErrorCode::FLOW_CONTROL_ERROR,
                Reason::WindowExceeded,
            ));
        }
        if data.is_empty()
            && !end_stream
            && self
                .counters
                .count(Flood::EmptyFrames, &self.config.limits)
                .is_err()
        {
            return self.flood(Flood::EmptyFrames);
        }
        let receiving = self
            .streams
            .get(&stream_id)
            .is_some_and(|stream| stream.state.can_receive());
        if !receiving {
            // The bytes will never be consumed: the connection window gets them back now.
            self.release_connection(flow_len);
            if self.reset_by_us.contains(&stream_id) {
                // Sent before the client saw our RST_STREAM.
                return Ok(());
            }
            return Err(Error::stream(
                stream_id,
                ErrorCode::STREAM_CLOSED,
                Reason::ClosedStream { kind },
            ));
        }
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return Ok(());
        };
        if !stream.recv_window.receive(flow_len) {
            self.release_connection(flow_len);
            return Err(Error::stream(
                stream_id,
                ErrorCode::FLOW_CONTROL_ERROR,
                Reason::WindowExceeded,
            ));
        }
        // Padding is never consumed by the caller: give it back at once.
        let padded = flow_len - u32::try_from(data.len()).unwrap_or(flow_len);
        if padded > 0 {
            self.release(stream_id, padded);
        }
        self.events.push_back(Event::Data {
            stream_id,
            data: data.to_vec(),
            end_stream,
        });
        if end_stream {
            self.end_remote(stream_id);
        }
        Ok(())
    }

    fn end_remote(&mut self, stream_id: u32) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        match stream.state.remote_end() {
            Transition::To(state) => stream.state = state,
            Transition::Closed => self.close(stream_id),
        }
    }

    fn headers(
        &mut self,
        stream_id: u32,
        priority: Option<PrioritySpec>,
        fragment: &[u8],
        end_stream: bool,
        end_headers: bool,
    ) -> Result<(), Error> {
        // A new block: the scan of its partial frames starts over on the whole block.
        self.block_scan = BlockScan::default();
        if let Some(priority) = priority {
            self.prioritize(stream_id, priority)?;
        }
        if fragment.is_empty()
            && !end_headers
            && self
                .counters
                .count(Flood::EmptyFrames, &self.config.limits)
                .is_err()
        {
            return self.flood(Flood::EmptyFrames);
        }
        self.check_block_size(fragment.len())?;
        let mut bytes = std::mem::take(&mut self.spare_block);
        bytes.clear();
        bytes.extend_from_slice(fragment);
        let block = OpenBlock {
            stream_id,
            bytes,
            end_stream,
            continuations: 0,
        };
        if end_headers {
            return self.header_block(block);
        }
        self.block = Some(block);
        Ok(())
    }

    /// Looks through the header block a HEADERS or CONTINUATION frame that has arrived in
    /// part carries (with what earlier frames of the block brought), so that an integer
    /// too long is refused now, as nginx refuses it, not when the frame is complete. A
    /// frame the complete path would refuse anyway is left to it.
    fn scan_partial_block(&mut self, header: &FrameHeader, arrived: &[u8]) -> Result<(), Error> {
        let length = header.length as usize;
        let (held, fragment_start, pad_len) = match (header.kind, &self.block) {
            (frame::kind::HEADERS, None) => {
                let opens = self.is_idle(header.stream_id) && header.stream_id % 2 == 1;
                if !opens && !self.streams.contains_key(&header.stream_id) {
                    return Ok(());
                }
                let padded = header.has(frame::flag::PADDED);
                let pad_len = match (padded, arrived.first()) {
                    (false, _) => 0,
                    (true, Some(&pad_len)) => usize::from(pad_len),
                    (true, None) => return Ok(()),
                };
                let priority = if header.has(frame::flag::PRIORITY) {
                    5
                } else {
                    0
                };
                (&[][..], usize::from(padded) + priority, pad_len)
            }
            (frame::kind::CONTINUATION, Some(block)) if block.stream_id == header.stream_id => {
                (block.bytes.as_slice(), 0, 0)
            }
            _ => return Ok(()),
        };
        let Some(fragment_len) = length.checked_sub(fragment_start + pad_len) else {
            return Ok(());
        };
        let fragment_end = (fragment_start + fragment_len).min(arrived.len());
        let fragment = arrived
            .get(fragment_start..fragment_end)
            .unwrap_or_default();
        let declared = held.len() + fragment_len;
        let Err(error) = self.block_scan.advance(held, fragment, declared) else {
            return Ok(());
        };
        // The block opens a stream: GOAWAY names it, as for a block that fails to decode.
        if self.is_idle(header.stream_id) {
            self.last_stream_id = header.stream_id;
        }
        Err(Error::connection(
            ErrorCode::COMPRESSION_ERROR,
            Reason::Compression(error),
        ))
    }

    /// Refuses a frame on its header when its payload could never be accepted, so that a
    /// large `max_frame_size` (nginx announces 2^24-1) never makes the caller hold more
    /// than the limits allow: a header block past `header_block_max`, DATA past the
    /// connection's window, any other frame past the default frame size.
    fn refuse_early(&mut self, header: &FrameHeader) -> Result<(), Error> {
        let length = header.length as usize;
        let refused = match header.kind {
            frame::kind::HEADERS | frame::kind::CONTINUATION => self.check_block_size(length),
            frame::kind::DATA if header.length > self.recv_window.available() => Err(
                Error::connection(ErrorCode::FLOW_CONTROL_ERROR, Reason::WindowExceeded),
            ),
            frame::kind::DATA => Ok(()),
            _ if header.length > frame::DEFAULT_MAX_FRAME_SIZE => Err(Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                Reason::FrameTooLarge {
                    length: header.length,
                },
            )),
            _ => Ok(()),
        };
        match refused {
            Ok(()) => Ok(()),
            Err(error) => self.fail(error),
        }
    }

    fn check_block_size(&self, more: usize) -> Result<(), Error> {
        let had = self.block.as_ref().map_or(0, |block| block.bytes.len());
        if had + more > self.config.limits.header_block_max {
            return Err(Error::connection(
                ErrorCode::ENHANCE_YOUR_CALM,
                Reason::HeaderBlockTooLarge,
            ));
        }
        Ok(())
    }

    fn continuation(
        &mut self,
        stream_id: u32,
        fragment: &[u8],
        end_headers: bool,
    ) -> Result<(), Error> {
        if self.block.is_none() {
            return Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::UnexpectedContinuation,
            ));
        }
        if fragment.is_empty()
            && !end_headers
            && self
                .counters
                .count(Flood::EmptyFrames, &self.config.limits)
                .is_err()
        {
            return self.flood(Flood::EmptyFrames);
        }
        self.check_block_size(fragment.len())?;
        let Some(mut block) = self.block.take() else {
            return Ok(());
        };
        debug_assert_eq!(block.stream_id, stream_id);
        block.continuations += 1;
        if block.continuations > self.config.limits.continuations_max {
            return self.flood(Flood::Continuation);
        }
        block.bytes.extend_from_slice(fragment);
        if end_headers {
            return self.header_block(block);
        }
        self.block = Some(block);
        Ok(())
    }

    /// A complete header block: decoded first in every case, as HPACK state must follow
    /// every block (§4.3), then applied to its stream. A block that opens a stream counts
    /// as processed even if it fails to decode (GOAWAY names it, as nginx's does).
    fn header_block(&mut self, block: OpenBlock) -> Result<(), Error> {
        self.block_scan = BlockScan::default();
        let stream_id = block.stream_id;
        let block_len = block.bytes.len();
        let existing = self.streams.contains_key(&stream_id);
        if !existing {
            if !self.is_idle(stream_id) || stream_id.is_multiple_of(2) {
                // A closed stream, or an id a client may not use.
                let reason = Reason::BadStreamId { stream_id };
                return Err(Error::connection(ErrorCode::PROTOCOL_ERROR, reason));
            }
            self.last_stream_id = stream_id;
        }
        let list = self.spare_lists.pop().unwrap_or_default();
        let decoded = self
            .decoder
            .decode_into(&block.bytes, self.decode_limits(), list);
        if block.bytes.capacity() <= SPARE_BLOCK_MAX {
            self.spare_block = block.bytes;
        }
        let decoded = decoded.map_err(|error| {
            // A representation cut off by the end of the block: nginx calls it a size error.
            let code = match error {
                HpackError::Truncated => ErrorCode::FRAME_SIZE_ERROR,
                _ => ErrorCode::COMPRESSION_ERROR,
            };
            Error::connection(code, Reason::Compression(error))
        })?;
        // nginx ends the connection when a field or the list is past its limits.
        if let Some(limit) = decoded.over_limit {
            let reason = Reason::HeaderTooLarge(limit);
            return Err(Error::connection(ErrorCode::ENHANCE_YOUR_CALM, reason));
        }
        let (fields, end_stream) = (decoded.fields, block.end_stream);
        if let Some(stream) = self.streams.get(&stream_id) {
            if !stream.state.can_receive() {
                let reason = Reason::ClosedStream {
                    kind: frame::kind::HEADERS,
                };
                return Err(Error::stream(stream_id, ErrorCode::STREAM_CLOSED, reason));
            }
            if !end_stream {
                let reason = Reason::TrailersWithoutEndStream;
                return Err(Error::stream(stream_id, ErrorCode::PROTOCOL_ERROR, reason));
            }
            self.events.push_back(Event::Headers {
                stream_id,
                fields,
                end_stream,
                trailers: true,
                block_len,
            });
            self.end_remote(stream_id);
            return Ok(());
        }
        if self.goaway_sent.is_some_and(|last| stream_id > last) {
            return Ok(());
        }
        self.open_stream(stream_id, fields, end_stream, block_len)
    }

    fn open_stream(
        &mut self,
        stream_id: u32,
        fields: crate::hpack::FieldList,
        end_stream: bool,
        block_len: usize,
    ) -> Result<(), Error> {
        let limits = self.config.limits;
        self.counters.new_streams += 1;
        let too_many = self.streams.len() >= limits.max_concurrent_streams as usize
            || self.counters.new_streams > limits.new_streams_per_receive;
        if too_many {
            self.counters.streams_refused += 1;
            return Err(Error::stream(
                stream_id,
                ErrorCode::REFUSED_STREAM,
                Reason::TooManyStreams,
            ));
        }
        self.counters.streams_opened += 1;
        self.allow_priority_frames();
        // Until the client acknowledges our SETTINGS it may count on the default window
        // (§6.9.2): a request with a body is refused when ours is smaller, as nginx
        // refuses it, so that no stream starts with a window the client does not know.
        let window = self.config.stream_window;
        if !self.settings_acked && !end_stream && window < frame::DEFAULT_WINDOW {
            self.counters.streams_refused += 1;
            return Err(Error::stream(
                stream_id,
                ErrorCode::REFUSED_STREAM,
                Reason::SettingsNotAcknowledged,
            ));
        }
        let stream = Stream {
            state: if end_stream {
                State::HalfClosedRemote
            } else {
                State::Open
            },
            send_window: SendWindow::new(self.peer_stream_window),
            recv_window: RecvWindow::new(window, window),
            queued: Default::default(),
            end_queued: false,
            trailers: None,
            chunk_size: self.config.chunk_size,
            reset_after: None,
        };
        let stream = self.boxed_stream(stream);
        self.streams.insert(stream_id, stream);
        self.tree.open(stream_id);
        self.events.push_back(Event::Headers {
            stream_id,
            fields,
            end_stream,
            trailers: false,
            block_len,
        });
        Ok(())
    }

    fn rst_stream(&mut self, stream_id: u32, code: ErrorCode) -> Result<(), Error> {
        if self.is_idle(stream_id) {
            let reason = Reason::IdleStream {
                kind: frame::kind::RST_STREAM,
            };
            return Err(Error::connection(ErrorCode::PROTOCOL_ERROR, reason));
        }
        let Some(stream) = self.streams.remove(&stream_id) else {
            return Ok(());
        };
        let can_send = stream.state.can_send();
        self.retire(stream);
        self.tree.close(stream_id);
        self.events.push_back(Event::Reset {
            stream_id,
            code,
            by_peer: true,
        });
        // A stream reset before its response ended is what CVE-2023-44487 repeats.
        if can_send
            && self
                .counters
                .count(Flood::RapidReset, &self.config.limits)
                .is_err()
        {
            return self.flood(Flood::RapidReset);
        }
        Ok(())
    }

    fn settings(&mut self, ack: bool, params: &[u8]) -> Result<(), Error> {
        if ack {
            self.settings_acked = true;
            return Ok(());
        }
        for setting in frame::SettingsIter::new(params) {
            match setting.id {
                settings::HEADER_TABLE_SIZE => {
                    self.encoder.set_peer_max_size(setting.value as usize);
                }
                settings::INITIAL_WINDOW_SIZE => {
                    // §6.9.2: the change applies to every stream's send window.
                    let delta = i64::from(setting.value) - i64::from(self.peer_stream_window);
                    self.peer_stream_window = setting.value;
                    for stream in self.streams.values_mut() {
                        if stream.send_window.adjust(delta).is_err() {
                            return Err(Error::connection(
                                ErrorCode::FLOW_CONTROL_ERROR,
                                Reason::WindowOverflow,
                            ));
                        }
                    }
                }
                settings::MAX_FRAME_SIZE => self.peer_max_frame_size = setting.value,
                _ => {}
            }
        }
        self.count_control_frame()?;
        Frame::Settings {
            ack: true,
            params: &[],
        }
        .write(self.output.frames());
        Ok(())
    }

    /// Counts a SETTINGS or PING frame, which asks for an answer, against both of their
    /// limits: answers not written yet, and frames beyond the responses sent.
    fn count_control_frame(&mut self) -> Result<(), Error> {
        let limits = self.config.limits;
        for flood in [Flood::ControlFrames, Flood::ControlFramesBeyondResponses] {
            if self.counters.count(flood, &limits).is_err() {
                return self.flood(flood);
            }
        }
        Ok(())
    }

    fn window_update(&mut self, stream_id: u32, increment: u32) -> Result<(), Error> {
        if stream_id == 0 {
            return self.send_window.adjust(i64::from(increment)).map_err(|_| {
                Error::connection(ErrorCode::FLOW_CONTROL_ERROR, Reason::WindowOverflow)
            });
        }
        if self.is_idle(stream_id) {
            let reason = Reason::IdleStream {
                kind: frame::kind::WINDOW_UPDATE,
            };
            return Err(Error::connection(ErrorCode::PROTOCOL_ERROR, reason));
        }
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return Ok(());
        };
        stream
            .send_window
            .adjust(i64::from(increment))
            .map_err(|_| {
                Error::stream(
                    stream_id,
                    ErrorCode::FLOW_CONTROL_ERROR,
                    Reason::WindowOverflow,
                )
            })
    }
}
