//! Reading: request streams (§4.1's frame sequence), the client's control stream (§6.2.1)
//! and its QPACK streams, and the unblocking of streams that waited for table entries.

use super::{Connection, Event, Output, Payload, RequestPhase, RequestStream, UniKind, UniStream};
use crate::error::{Code, Error, Reason};
use crate::frame::{self, Header, Settings};
use crate::qpack::{Cause, Decoded, Encoder, QpackError};
use crate::varint;

fn unexpected(frame_type: u64) -> Error {
    Error::new(
        Code::FrameUnexpected,
        Reason::UnexpectedFrame { frame_type },
    )
}

/// Frame types that never belong on a request stream sent by a client.
fn forbidden_on_request(frame_type: u64) -> bool {
    matches!(
        frame_type,
        frame::CANCEL_PUSH
            | frame::SETTINGS
            | frame::GOAWAY
            | frame::MAX_PUSH_ID
            | frame::PUSH_PROMISE
    ) || frame::HTTP2_ONLY.contains(&frame_type)
}

/// The first `take` bytes of `buffer`, moved out with as little copying as can be: the
/// whole buffer when it is all payload (the usual case: body bytes are then copied once,
/// from QUIC's chunk into the buffer), else whichever part is smaller is copied.
fn take_front(buffer: &mut Vec<u8>, take: usize) -> Vec<u8> {
    if take == buffer.len() {
        std::mem::take(buffer)
    } else if take * 2 >= buffer.len() {
        let rest = buffer.split_off(take);
        std::mem::replace(buffer, rest)
    } else {
        buffer.drain(..take).collect()
    }
}

impl Connection {
    /// Takes bytes QUIC delivered on `stream_id`, in order, with `fin` when they end the
    /// stream. An error is a connection error: close the QUIC connection with its code.
    pub fn receive(&mut self, stream_id: u64, data: &[u8], fin: bool) -> Result<(), Error> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let result = match stream_id % 4 {
            0 => self.receive_request(stream_id, data, fin),
            2 => self.receive_uni(stream_id, data, fin),
            // Server-initiated ids: QUIC forbids a client to use them.
            _ => Err(Error::new(
                Code::StreamCreationError,
                Reason::BadStream { stream_id },
            )),
        };
        self.flush_qpack();
        result.map_err(|error| self.fail(error))
    }

    /// The client reset `stream_id` (RESET_STREAM) or asked us to stop sending on it
    /// (STOP_SENDING) with the application error `code`: the request is aborted. Resetting
    /// the control or a QPACK stream is a connection error.
    pub fn stream_reset(&mut self, stream_id: u64, code: u64) -> Result<(), Error> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        if stream_id % 4 == 2 {
            let kind = self.uni.get(&stream_id).map(|stream| stream.kind);
            if let Some(UniKind::Control { .. } | UniKind::Encoder | UniKind::Decoder) = kind {
                let reason = Reason::CriticalStreamClosed { stream_id };
                return Err(self.fail(Error::new(Code::ClosedCriticalStream, reason)));
            }
            self.uni.remove(&stream_id);
            return Ok(());
        }
        if let Some(stream) = self.requests.remove(&stream_id) {
            if stream.phase != RequestPhase::Done {
                self.decoder.cancel_stream(stream_id);
                self.flush_qpack();
            }
            let code = Code::from_value(code);
            self.events.push_back(Event::Aborted { stream_id, code });
        }
        Ok(())
    }

    fn receive_request(&mut self, stream_id: u64, data: &[u8], fin: bool) -> Result<(), Error> {
        if !self.requests.contains_key(&stream_id) {
            if stream_id < self.next_request {
                // A stream already done or refused: QUIC delivers nothing more for it
                // unless it was refused, and then its bytes are dropped.
                return Ok(());
            }
            self.open_requests_through(stream_id);
            if !self.requests.contains_key(&stream_id) {
                return Ok(());
            }
        }
        let stream = self
            .requests
            .get_mut(&stream_id)
            .expect("the stream was found or opened above");
        stream.buffer.extend_from_slice(data);
        stream.fin |= fin;
        self.process_request(stream_id)
    }

    /// Opens request streams up to `stream_id`: in QUIC, a stream's first data opens the
    /// streams of its type below it too (RFC 9000 §3.2), whose own data may come later.
    /// Each past the open-stream limit or our GOAWAY is refused. A QUIC peer cannot skip
    /// more ids than its stream limit; past that many the lower ones are not looked at.
    fn open_requests_through(&mut self, stream_id: u64) {
        let span = 4 * self.config.max_request_streams as u64;
        let mut candidate = self.next_request.max(stream_id.saturating_sub(span));
        self.next_request = stream_id + 4;
        while candidate <= stream_id {
            let after_goaway = self.goaway_sent.is_some_and(|limit| candidate >= limit);
            if after_goaway || self.requests.len() >= self.config.max_request_streams {
                let code = Code::RequestRejected;
                self.output.push_back(Output::Reset {
                    stream_id: candidate,
                    code,
                });
            } else {
                self.requests.insert(candidate, RequestStream::new());
            }
            candidate += 4;
        }
    }

    /// Reads as many frames of a request stream as its buffer holds.
    fn process_request(&mut self, stream_id: u64) -> Result<(), Error> {
        loop {
            let Some(stream) = self.requests.get_mut(&stream_id) else {
                return Ok(());
            };
            if stream.blocked.is_some() {
                if stream.buffer.len() > self.config.stream_buffer_size {
                    self.stream_error(stream_id, Code::ExcessiveLoad);
                }
                return Ok(());
            }
            if let Some(payload) = stream.payload {
                let (Payload::Data(remaining) | Payload::Skip(remaining)) = payload;
                if stream.buffer.is_empty() {
                    return self.request_input_ended(stream_id);
                }
                let take = remaining.min(stream.buffer.len() as u64) as usize;
                let left = remaining - take as u64;
                stream.payload = match payload {
                    _ if left == 0 => None,
                    Payload::Data(_) => Some(Payload::Data(left)),
                    Payload::Skip(_) => Some(Payload::Skip(left)),
                };
                if let Payload::Data(_) = payload {
                    let data = take_front(&mut stream.buffer, take);
                    self.events.push_back(Event::Data { stream_id, data });
                } else {
                    stream.buffer.drain(..take);
                }
                continue;
            }
            let Some((header, used)) = Header::parse(&stream.buffer) else {
                return self.request_input_ended(stream_id);
            };
            match header.frame_type {
                frame::DATA => {
                    if stream.phase != RequestPhase::Body {
                        return Err(unexpected(frame::DATA));
                    }
                    stream.buffer.drain(..used);
                    stream.payload = (header.length > 0).then_some(Payload::Data(header.length));
                    if header.length == 0 {
                        // An empty DATA frame still says the request has a body (nginx
                        // then sends an upstream `Content-Length: 0`).
                        let data = Vec::new();
                        self.events.push_back(Event::Data { stream_id, data });
                    }
                }
                frame::HEADERS => {
                    if !matches!(stream.phase, RequestPhase::Head | RequestPhase::Body) {
                        return Err(unexpected(frame::HEADERS));
                    }
                    if header.length > self.config.max_field_section_size {
                        self.stream_error(stream_id, Code::ExcessiveLoad);
                        return Ok(());
                    }
                    let end = used + header.length as usize;
                    if stream.buffer.len() < end {
                        return self.request_input_ended(stream_id);
                    }
                    let section = stream.buffer[used..end].to_vec();
                    stream.buffer.drain(..end);
                    self.decode_head(stream_id, section)?;
                }
                frame_type if forbidden_on_request(frame_type) => {
                    return Err(unexpected(frame_type));
                }
                _ => {
                    stream.buffer.drain(..used);
                    stream.payload = (header.length > 0).then_some(Payload::Skip(header.length));
                }
            }
        }
    }

    /// The buffer holds no whole frame: if the stream ended, the request ends (or was
    /// truncated); if not, the buffer must stay within its limit.
    fn request_input_ended(&mut self, stream_id: u64) -> Result<(), Error> {
        let Some(stream) = self.requests.get_mut(&stream_id) else {
            return Ok(());
        };
        if !stream.fin {
            if stream.buffer.len() > self.config.stream_buffer_size {
                self.stream_error(stream_id, Code::ExcessiveLoad);
            }
            return Ok(());
        }
        if !stream.buffer.is_empty() || stream.payload.is_some() {
            return Err(Error::new(Code::FrameError, Reason::TruncatedFrame));
        }
        match stream.phase {
            RequestPhase::Head => self.stream_error(stream_id, Code::RequestIncomplete),
            RequestPhase::Body | RequestPhase::Trailers => {
                stream.phase = RequestPhase::Done;
                let response_ended = stream.response_ended;
                self.events.push_back(Event::Finished { stream_id });
                if response_ended {
                    self.requests.remove(&stream_id);
                }
            }
            RequestPhase::Done => {}
        }
        Ok(())
    }

    /// Decodes a HEADERS frame's field section: a head, trailers, or a stream parked until
    /// the entries it needs arrive.
    fn decode_head(&mut self, stream_id: u64, section: Vec<u8>) -> Result<(), Error> {
        match self.decoder.decode_section(stream_id, &section) {
            Ok(Decoded::Fields { fields, .. }) => {
                let stream = self
                    .requests
                    .get_mut(&stream_id)
                    .expect("only open streams are decoded");
                let trailers = stream.phase == RequestPhase::Body;
                stream.phase = if trailers {
                    RequestPhase::Trailers
                } else {
                    RequestPhase::Body
                };
                stream.blocked = None;
                self.events.push_back(Event::Headers {
                    stream_id,
                    fields,
                    trailers,
                    section_len: section.len(),
                });
                Ok(())
            }
            Ok(Decoded::Blocked { .. }) => {
                if let Some(stream) = self.requests.get_mut(&stream_id) {
                    stream.blocked = Some(section);
                }
                Ok(())
            }
            Err(QpackError::Section(Cause::FieldSectionTooLarge)) => {
                self.stream_error(stream_id, Code::ExcessiveLoad);
                Ok(())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Streams the encoder stream unblocked: decode their parked sections, then read on.
    fn unblock(&mut self, stream_ids: Vec<u64>) -> Result<(), Error> {
        for stream_id in stream_ids {
            let section = self
                .requests
                .get_mut(&stream_id)
                .and_then(|stream| stream.blocked.take());
            if let Some(section) = section {
                self.decode_head(stream_id, section)?;
                self.process_request(stream_id)?;
            }
        }
        Ok(())
    }

    fn receive_uni(&mut self, stream_id: u64, data: &[u8], fin: bool) -> Result<(), Error> {
        let stream = self.uni.entry(stream_id).or_insert(UniStream {
            kind: UniKind::Unknown,
            buffer: Vec::new(),
            skip: 0,
        });
        let kind = stream.kind;
        let critical_closed = Error::new(
            Code::ClosedCriticalStream,
            Reason::CriticalStreamClosed { stream_id },
        );
        match kind {
            UniKind::Ignored => {
                if fin {
                    self.uni.remove(&stream_id);
                }
                Ok(())
            }
            UniKind::Encoder => {
                let unblocked = self.decoder.receive_encoder_stream(data)?;
                self.unblock(unblocked)?;
                if fin { Err(critical_closed) } else { Ok(()) }
            }
            UniKind::Decoder => {
                self.encoder.receive_decoder_stream(data)?;
                if fin { Err(critical_closed) } else { Ok(()) }
            }
            UniKind::Control { .. } => {
                stream.buffer.extend_from_slice(data);
                self.process_control(stream_id)?;
                if fin { Err(critical_closed) } else { Ok(()) }
            }
            UniKind::Unknown => {
                stream.buffer.extend_from_slice(data);
                let Some((stream_type, used)) = varint::decode(&stream.buffer) else {
                    if fin {
                        self.uni.remove(&stream_id);
                    }
                    return Ok(());
                };
                let rest = stream.buffer.split_off(used);
                stream.buffer.clear();
                let kind = match stream_type {
                    frame::STREAM_CONTROL => UniKind::Control { settings: false },
                    frame::STREAM_QPACK_ENCODER => UniKind::Encoder,
                    frame::STREAM_QPACK_DECODER => UniKind::Decoder,
                    frame::STREAM_PUSH => {
                        // Only servers push (§6.2.2).
                        let reason = Reason::BadStream { stream_id };
                        return Err(Error::new(Code::StreamCreationError, reason));
                    }
                    _ => UniKind::Ignored,
                };
                let duplicate = kind != UniKind::Ignored
                    && self.uni.values().any(|other| {
                        std::mem::discriminant(&other.kind) == std::mem::discriminant(&kind)
                    });
                if duplicate {
                    let reason = Reason::DuplicateStream { stream_type };
                    return Err(Error::new(Code::StreamCreationError, reason));
                }
                if kind == UniKind::Ignored {
                    let code = Code::StreamCreationError;
                    self.output
                        .push_back(Output::StopSending { stream_id, code });
                }
                if let Some(stream) = self.uni.get_mut(&stream_id) {
                    stream.kind = kind;
                }
                self.receive_uni(stream_id, &rest, fin)
            }
        }
    }

    /// Reads the frames of the client's control stream.
    fn process_control(&mut self, stream_id: u64) -> Result<(), Error> {
        loop {
            let Some(stream) = self.uni.get_mut(&stream_id) else {
                return Ok(());
            };
            if stream.skip > 0 {
                let take = stream.skip.min(stream.buffer.len() as u64);
                stream.buffer.drain(..take as usize);
                stream.skip -= take;
                if stream.skip > 0 {
                    return Ok(());
                }
                continue;
            }
            let Some((header, used)) = Header::parse(&stream.buffer) else {
                return Ok(());
            };
            let settings_seen = stream.kind == UniKind::Control { settings: true };
            if !settings_seen && header.frame_type != frame::SETTINGS {
                return Err(Error::new(Code::MissingSettings, Reason::MissingSettings));
            }
            match header.frame_type {
                frame::SETTINGS if settings_seen => return Err(unexpected(frame::SETTINGS)),
                frame::SETTINGS | frame::GOAWAY | frame::MAX_PUSH_ID | frame::CANCEL_PUSH => {
                    if header.length > self.config.max_control_frame {
                        let reason = Reason::FrameTooLarge {
                            frame_type: header.frame_type,
                            length: header.length,
                        };
                        return Err(Error::new(Code::ExcessiveLoad, reason));
                    }
                    let end = used + header.length as usize;
                    if stream.buffer.len() < end {
                        return Ok(());
                    }
                    let payload = stream.buffer[used..end].to_vec();
                    stream.buffer.drain(..end);
                    if header.frame_type == frame::SETTINGS {
                        stream.kind = UniKind::Control { settings: true };
                    }
                    self.control_frame(header.frame_type, &payload)?;
                }
                frame::DATA | frame::HEADERS | frame::PUSH_PROMISE => {
                    return Err(unexpected(header.frame_type));
                }
                frame_type if frame::HTTP2_ONLY.contains(&frame_type) => {
                    return Err(unexpected(frame_type));
                }
                _ => {
                    stream.buffer.drain(..used);
                    stream.skip = header.length;
                }
            }
        }
    }

    fn control_frame(&mut self, frame_type: u64, payload: &[u8]) -> Result<(), Error> {
        if frame_type == frame::SETTINGS {
            let settings = Settings::parse(payload).map_err(|reason| match reason {
                Reason::BadSetting { .. } => Error::new(Code::SettingsError, reason),
                _ => Error::new(Code::FrameError, reason),
            })?;
            self.peer_settings = Some(settings);
            self.encoder = Encoder::new(settings.qpack_max_table_capacity);
            let capacity = self
                .config
                .encoder_table_capacity
                .min(settings.qpack_max_table_capacity);
            if capacity > 0 {
                self.encoder
                    .set_capacity(capacity)
                    .expect("an empty table takes any capacity up to the maximum");
            }
            return Ok(());
        }
        let id = frame::parse_id(frame_type, payload)
            .map_err(|reason| Error::new(Code::FrameError, reason))?;
        let bad_id = Error::new(Code::IdError, Reason::BadId { id });
        match frame_type {
            frame::GOAWAY => {
                if self.peer_goaway.is_some_and(|previous| id > previous) {
                    return Err(bad_id);
                }
                self.peer_goaway = Some(id);
                self.events.push_back(Event::GoAway { id });
            }
            frame::MAX_PUSH_ID => {
                if self.max_push_id.is_some_and(|previous| id < previous) {
                    return Err(bad_id);
                }
                self.max_push_id = Some(id);
            }
            _ => {
                // CANCEL_PUSH: Portico never pushes, but an id the client allowed is
                // still a valid one to cancel.
                if self.max_push_id.is_none_or(|max| id > max) {
                    return Err(bad_id);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::take_front;

    #[test]
    fn take_front_moves_copies_or_drains() {
        for (bytes, take) in [
            (&b"abcdef"[..], 6),
            (b"abcdef", 4),
            (b"abcdef", 1),
            (b"", 0),
        ] {
            let mut buffer = bytes.to_vec();
            let front = take_front(&mut buffer, take);
            assert_eq!(front, bytes[..take]);
            assert_eq!(buffer, bytes[take..]);
        }
    }
}
