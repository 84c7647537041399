//! Writing: response heads, DATA in priority order under both windows, trailers, resets,
//! and the window credit given back for consumed request bodies.

use bytes::Bytes;

use super::{Connection, Phase, SendError, Stream};
use crate::error::ErrorCode;
use crate::frame::{self, Frame, FrameHeader};
use crate::hpack::{FieldList, HeaderField};
use crate::output::INLINE_DATA_MAX;

impl Connection {
    fn sendable(&self, stream_id: u32) -> Result<(), SendError> {
        if self.phase == Phase::Failed {
            return Err(SendError::ConnectionClosing);
        }
        match self.streams.get(&stream_id) {
            None => Err(SendError::StreamGone),
            Some(stream) if !stream.state.can_send() || stream.end_queued => {
                Err(SendError::StreamEnded)
            }
            Some(_) => Ok(()),
        }
    }

    /// Sends a response head (`:status` first) at once: HEADERS are not flow-controlled.
    /// With `end_stream` the response has no body.
    pub fn send_headers(
        &mut self,
        stream_id: u32,
        fields: &[HeaderField],
        end_stream: bool,
    ) -> Result<(), SendError> {
        self.sendable(stream_id)?;
        let mut block = std::mem::take(&mut self.encoded);
        block.clear();
        self.encoder.encode(fields, &mut block);
        self.write_head_block(stream_id, &block, end_stream);
        self.encoded = block;
        Ok(())
    }

    /// As [`send_headers`](Self::send_headers), for fields given as name and value (names
    /// in lower case), none of them never-indexed: a head passed on without building
    /// a [`HeaderField`] for each. Returns the size of the header block.
    pub fn send_header_pairs<'f, I>(
        &mut self,
        stream_id: u32,
        fields: I,
        end_stream: bool,
    ) -> Result<usize, SendError>
    where
        I: IntoIterator<Item = (&'f [u8], &'f [u8])>,
        I::IntoIter: Clone,
    {
        self.sendable(stream_id)?;
        let mut block = std::mem::take(&mut self.encoded);
        block.clear();
        self.encoder.encode_pairs_repeated(fields, &mut block);
        self.write_head_block(stream_id, &block, end_stream);
        let len = block.len();
        self.encoded = block;
        Ok(len)
    }

    fn write_head_block(&mut self, stream_id: u32, block: &[u8], end_stream: bool) {
        self.pay_back_control_frame();
        frame::write_header_block(
            self.output.frames(),
            stream_id,
            block,
            end_stream,
            self.peer_max_frame_size,
        );
        if end_stream {
            if let Some(stream) = self.streams.get_mut(&stream_id) {
                stream.end_queued = true;
            }
            self.end_local(stream_id);
        }
    }

    /// Queues a copy of body bytes; [`flush`](Self::flush) frames them as the windows
    /// allow. With `end_stream` these are the last. The caller bounds what it queues by
    /// [`queued`](Self::queued).
    pub fn send_data(
        &mut self,
        stream_id: u32,
        data: &[u8],
        end_stream: bool,
    ) -> Result<(), SendError> {
        self.sendable(stream_id)?;
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.queued.push_copy(data);
            stream.end_queued = end_stream;
        }
        self.nothing_to_frame = false;
        Ok(())
    }

    /// Queues body bytes without copying them: the DATA frames cut from `data` point into
    /// it until they are written. Otherwise as [`send_data`](Self::send_data).
    pub fn send_data_shared(
        &mut self,
        stream_id: u32,
        data: Bytes,
        end_stream: bool,
    ) -> Result<(), SendError> {
        self.sendable(stream_id)?;
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.queued.push(data);
            stream.end_queued = end_stream;
        }
        self.nothing_to_frame = false;
        Ok(())
    }

    /// Queues trailers after the body queued so far; they end the stream.
    pub fn send_trailers(
        &mut self,
        stream_id: u32,
        fields: Vec<HeaderField>,
    ) -> Result<(), SendError> {
        self.queue_trailers(stream_id, fields.into())
    }

    /// As [`send_trailers`](Self::send_trailers), for fields given as name and value
    /// (names in lower case), none of them never-indexed: copied into one buffer, not a
    /// pair of allocations per field.
    pub fn send_trailer_pairs<'f>(
        &mut self,
        stream_id: u32,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) -> Result<(), SendError> {
        self.sendable(stream_id)?;
        let mut list = self.spare_lists.pop().unwrap_or_default();
        for (name, value) in fields {
            list.push(name, value, false);
        }
        self.queue_trailers(stream_id, list)
    }

    fn queue_trailers(&mut self, stream_id: u32, fields: FieldList) -> Result<(), SendError> {
        self.sendable(stream_id)?;
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.trailers = Some(fields);
            stream.end_queued = true;
        }
        self.nothing_to_frame = false;
        Ok(())
    }

    /// Resets the stream with `code` once its response has ended (at once if it has), as
    /// nginx ends a stream whose request body nobody read with NO_ERROR (RFC 9113 §8.1).
    pub fn reset_after_response(&mut self, stream_id: u32, code: ErrorCode) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        if stream.state.can_send() {
            stream.reset_after = Some(code);
        } else {
            self.reset(stream_id, code);
        }
    }

    /// Sets the largest DATA frame of a stream (at least 1 byte).
    pub fn set_chunk_size(&mut self, stream_id: u32, chunk_size: u32) {
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.chunk_size = chunk_size.max(1);
        }
    }

    /// Bytes queued on a stream and not yet framed (0 for a stream that is gone).
    pub fn queued(&self, stream_id: u32) -> usize {
        self.streams
            .get(&stream_id)
            .map_or(0, |stream| stream.queued.len())
    }

    /// What the windows let a stream send now.
    pub fn send_capacity(&self, stream_id: u32) -> u32 {
        let stream = self
            .streams
            .get(&stream_id)
            .map_or(0, |stream| stream.send_window.available());
        stream.min(self.send_window.available())
    }

    /// Resets a stream (the caller gave up on it, or answers a bad request so).
    pub fn reset(&mut self, stream_id: u32, code: ErrorCode) {
        if self.phase == Phase::Failed {
            return;
        }
        self.reset_stream(stream_id, code);
        self.close(stream_id);
    }

    /// Gives back `bytes` of a request body the caller consumed: WINDOW_UPDATE frames go out
    /// once half a window is owed.
    pub fn release(&mut self, stream_id: u32, bytes: u32) {
        self.release_connection(bytes);
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        // A stream whose body has ended needs no more window.
        if !stream.state.can_receive() {
            return;
        }
        if let Some(increment) = stream.recv_window.release(bytes) {
            Frame::WindowUpdate {
                stream_id,
                increment,
            }
            .write(self.output.frames());
        }
    }

    /// Lets the client send up to `window` bytes of the stream's body ahead of the caller
    /// (never fewer than the window announced in SETTINGS): for a body that is read whole
    /// before the request goes on, as nginx opens the window for one it buffers. The
    /// increase goes out as a WINDOW_UPDATE at once.
    pub fn widen_window(&mut self, stream_id: u32, window: u32) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        if !stream.state.can_receive() {
            return;
        }
        stream.recv_window.widen(window.min(frame::MAX_WINDOW));
        if let Some(increment) = stream.recv_window.release(0) {
            Frame::WindowUpdate {
                stream_id,
                increment,
            }
            .write(self.output.frames());
        }
    }

    /// A response frame went out: it pays back one SETTINGS or PING frame (see
    /// `Limits::control_frames_max`), so a client that pings while it downloads, as gRPC
    /// clients measure the link, is never cut off for it.
    fn pay_back_control_frame(&mut self) {
        self.counters.control_frames = self.counters.control_frames.saturating_sub(1);
    }

    pub(super) fn release_connection(&mut self, bytes: u32) {
        if let Some(increment) = self.recv_window.release(bytes) {
            Frame::WindowUpdate {
                stream_id: 0,
                increment,
            }
            .write(self.output.frames());
        }
    }

    /// Frames queued DATA (and trailers) into the output: the stream the priority tree puts
    /// first, one frame at a time, within both windows, the peer's frame size and
    /// `chunk_size`, until the output reaches its high-water mark or nothing can go.
    pub fn flush(&mut self) {
        if self.phase == Phase::Failed || self.nothing_to_frame {
            return;
        }
        let mut order = std::mem::take(&mut self.frame_order);
        let mut ranks = std::mem::take(&mut self.frame_ranks);
        'choose: while self.output.len() < self.config.output_high_water {
            order.clear();
            order.extend(
                self.streams
                    .iter()
                    .filter(|(_, stream)| self.ready_to_frame(stream))
                    .map(|(&stream_id, _)| stream_id),
            );
            if order.is_empty() {
                self.nothing_to_frame = true;
                break;
            }
            // The streams in the order the tree puts them, ranked once: framing never makes
            // a stream ready, and the order holds until a node leaves the tree (a closed
            // stream pruned moves its children up), when the rest are ranked again.
            self.tree.order(&mut order, &mut ranks);
            let ranked = self.tree.changes();
            for &stream_id in &order {
                loop {
                    let ready = self
                        .streams
                        .get(&stream_id)
                        .is_some_and(|stream| self.ready_to_frame(stream));
                    if !ready {
                        break;
                    }
                    self.write_data_frame(stream_id);
                    if self.output.len() >= self.config.output_high_water {
                        break 'choose;
                    }
                }
                if self.tree.changes() != ranked {
                    continue 'choose;
                }
            }
        }
        self.frame_order = order;
        self.frame_ranks = ranks;
    }

    /// Whether a stream has a DATA frame (or its end) to write now.
    fn ready_to_frame(&self, stream: &Stream) -> bool {
        let finishing = stream.queued.is_empty() && stream.end_queued && stream.state.can_send();
        let has_window = stream.send_window.available() > 0 && self.send_window.available() > 0;
        finishing || (!stream.queued.is_empty() && has_window)
    }

    fn write_data_frame(&mut self, stream_id: u32) {
        let connection_window = self.send_window.available();
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        let chunk = stream.chunk_size.min(self.peer_max_frame_size).max(1);
        let window = stream
            .send_window
            .available()
            .min(connection_window)
            .min(chunk);
        // The frame's length is the windows' and the frame size's to say, not where the
        // queued buffers end: nginx sends the same frames whatever its buffers were, and
        // nginx-tests count them (h2_priority.t, h2.t "multiple SETTINGS").
        let length = stream.queued.len().min(window as usize);
        let last = length == stream.queued.len() && stream.end_queued;
        let trailers = if last { stream.trailers.take() } else { None };
        let sent = u32::try_from(length).unwrap_or(0);
        stream.send_window.consume(sent);
        self.send_window.consume(sent);
        let end_stream = last && trailers.is_none();
        if length > 0 || end_stream {
            self.counters.control_frames = self.counters.control_frames.saturating_sub(1);
            let header = FrameHeader {
                length: sent,
                kind: frame::kind::DATA,
                flags: if end_stream {
                    frame::flag::END_STREAM
                } else {
                    0
                },
                stream_id,
            };
            let queued = &mut stream.queued;
            // A small payload of copied bytes is copied into the output as it is, without
            // making a shared buffer of them first.
            if length <= INLINE_DATA_MAX
                && let Some(copied) = queued.copied_only()
            {
                self.output
                    .push_data_copied(header.to_bytes(), &copied[..length]);
                queued.consume_copied(length);
            } else {
                self.push_queued(header, length, stream_id);
            }
        }
        if let Some(fields) = trailers {
            // Encoded now, not when queued: HPACK blocks must be encoded in wire order.
            let mut block = std::mem::take(&mut self.encoded);
            block.clear();
            self.encoder.encode_list(&fields, &mut block);
            self.recycle_fields(fields);
            frame::write_header_block(
                self.output.frames(),
                stream_id,
                &block,
                true,
                self.peer_max_frame_size,
            );
            self.encoded = block;
        }
        if last {
            self.end_local(stream_id);
        }
    }

    /// Frames `length` bytes of a stream's queue, its buffers referred to, not copied.
    fn push_queued(&mut self, header: FrameHeader, length: usize, stream_id: u32) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        let queued = &mut stream.queued;
        let mut left = length;
        // Each part is the rest of one queued buffer or the start of the next.
        let parts = std::iter::from_fn(|| {
            let part = (left > 0).then(|| queued.take(left))?;
            left -= part.len();
            (!part.is_empty()).then_some(part)
        });
        self.output.push_data(header.to_bytes(), parts);
    }
}
