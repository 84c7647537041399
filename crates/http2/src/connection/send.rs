//! Writing: response heads, DATA in priority order under both windows, trailers, resets,
//! and the window credit given back for consumed request bodies.

use super::{Connection, Phase, SendError};
use crate::error::ErrorCode;
use crate::frame::{self, Frame};
use crate::hpack::HeaderField;

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
        let mut block = Vec::new();
        self.encoder.encode(fields, &mut block);
        frame::write_header_block(
            &mut self.output,
            stream_id,
            &block,
            end_stream,
            self.peer_max_frame_size,
        );
        if end_stream {
            if let Some(stream) = self.streams.get_mut(&stream_id) {
                stream.end_queued = true;
            }
            self.end_local(stream_id);
        }
        Ok(())
    }

    /// Queues body bytes; [`flush`](Self::flush) frames them as the windows allow. With
    /// `end_stream` these are the last. The caller bounds what it queues by
    /// [`queued`](Self::queued).
    pub fn send_data(
        &mut self,
        stream_id: u32,
        data: &[u8],
        end_stream: bool,
    ) -> Result<(), SendError> {
        self.sendable(stream_id)?;
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.queued.extend(data);
            stream.end_queued = end_stream;
        }
        Ok(())
    }

    /// Queues trailers after the body queued so far; they end the stream.
    pub fn send_trailers(
        &mut self,
        stream_id: u32,
        fields: Vec<HeaderField>,
    ) -> Result<(), SendError> {
        self.sendable(stream_id)?;
        if let Some(stream) = self.streams.get_mut(&stream_id) {
            stream.trailers = Some(fields);
            stream.end_queued = true;
        }
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
            .write(&mut self.output);
        }
    }

    pub(super) fn release_connection(&mut self, bytes: u32) {
        if let Some(increment) = self.recv_window.release(bytes) {
            Frame::WindowUpdate {
                stream_id: 0,
                increment,
            }
            .write(&mut self.output);
        }
    }

    /// Frames queued DATA (and trailers) into the output: the stream the priority tree puts
    /// first, one frame at a time, within both windows, the peer's frame size and
    /// `chunk_size`, until the output reaches its high-water mark or nothing can go.
    pub fn flush(&mut self) {
        if self.phase == Phase::Failed {
            return;
        }
        while self.output.len() < self.config.output_high_water {
            let connection_window = self.send_window.available();
            let ready = self.streams.iter().filter_map(|(&stream_id, stream)| {
                let finishing =
                    stream.queued.is_empty() && stream.end_queued && stream.state.can_send();
                let has_window = stream.send_window.available() > 0 && connection_window > 0;
                (finishing || (!stream.queued.is_empty() && has_window)).then_some(stream_id)
            });
            let Some(stream_id) = self.tree.first(ready) else {
                return;
            };
            self.write_data_frame(stream_id, connection_window);
        }
    }

    fn write_data_frame(&mut self, stream_id: u32, connection_window: u32) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        let chunk = stream.chunk_size.min(self.peer_max_frame_size).max(1);
        let window = stream
            .send_window
            .available()
            .min(connection_window)
            .min(chunk);
        let length = stream.queued.len().min(window as usize);
        let last = length == stream.queued.len() && stream.end_queued;
        let trailers = if last { stream.trailers.take() } else { None };
        let data: Vec<u8> = stream.queued.drain(..length).collect();
        let sent = u32::try_from(length).unwrap_or(0);
        stream.send_window.consume(sent);
        self.send_window.consume(sent);
        let end_stream = last && trailers.is_none();
        if length > 0 || end_stream {
            Frame::Data {
                stream_id,
                data: &data,
                padding: None,
                end_stream,
            }
            .write(&mut self.output);
        }
        if let Some(fields) = trailers {
            // Encoded now, not when queued: HPACK blocks must be encoded in wire order.
            let mut block = Vec::new();
            self.encoder.encode(&fields, &mut block);
            frame::write_header_block(
                &mut self.output,
                stream_id,
                &block,
                true,
                self.peer_max_frame_size,
            );
        }
        if last {
            self.end_local(stream_id);
        }
    }
}
