//! What the server sends: each frame checked against the connection's state and turned
//! into events, answers (SETTINGS and PING ACKs) or errors.

use super::{ClientConnection, ClientEvent, HeadKind, OpenBlock};
use crate::error::{Error, ErrorCode, Reason};
use crate::frame::{self, Frame, settings};
use crate::hpack::{DecodeLimits, FieldList};
use crate::limits::Flood;

impl ClientConnection {
    pub(super) fn on_frame(&mut self, frame: Frame<'_>) -> Result<(), Error> {
        if !self.peer_settings {
            let Frame::Settings { ack: false, .. } = frame else {
                let kind = frame_kind(&frame);
                return Err(Error::connection(
                    ErrorCode::PROTOCOL_ERROR,
                    Reason::SettingsExpected { kind },
                ));
            };
            self.peer_settings = true;
            // The server's limit, unless its SETTINGS give one, is none.
            self.peer_max_streams = u32::MAX;
        }
        if let Some(block) = &self.block
            && !matches!(frame, Frame::Continuation { stream_id, .. } if stream_id == block.stream_id)
        {
            return Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::ContinuationExpected,
            ));
        }
        match frame {
            Frame::Settings { ack: true, .. } => Ok(()),
            Frame::Settings { ack: false, .. } => self.on_settings(&frame),
            Frame::Ping {
                ack: false,
                payload,
            } => {
                self.write_control(Frame::Ping { ack: true, payload });
                Ok(())
            }
            Frame::Ping { ack: true, .. } | Frame::Priority { .. } | Frame::Unknown { .. } => {
                Ok(())
            }
            Frame::GoAway {
                last_stream_id,
                code,
                debug,
            } => {
                self.on_goaway(last_stream_id, code, debug);
                Ok(())
            }
            Frame::WindowUpdate {
                stream_id,
                increment,
            } => self.on_window_update(stream_id, increment),
            Frame::RstStream { stream_id, code } => self.on_reset(stream_id, code),
            Frame::PushPromise { .. } => Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::PushPromise,
            )),
            Frame::Headers {
                stream_id,
                fragment,
                end_stream,
                end_headers,
                ..
            } => {
                self.check_stream(stream_id, frame::kind::HEADERS)?;
                let block = OpenBlock {
                    stream_id,
                    bytes: fragment.to_vec(),
                    end_stream,
                    continuations: 0,
                };
                self.on_block_piece(block, end_headers)
            }
            Frame::Continuation {
                fragment,
                end_headers,
                ..
            } => {
                let Some(mut block) = self.block.take() else {
                    return Err(Error::connection(
                        ErrorCode::PROTOCOL_ERROR,
                        Reason::UnexpectedContinuation,
                    ));
                };
                block.continuations += 1;
                if block.continuations > self.config.continuations_max {
                    return Err(Error::connection(
                        ErrorCode::ENHANCE_YOUR_CALM,
                        Reason::Flood(Flood::Continuation),
                    ));
                }
                block.bytes.extend_from_slice(fragment);
                self.on_block_piece(block, end_headers)
            }
            Frame::Data {
                stream_id,
                data,
                padding,
                end_stream,
            } => self.on_data(
                stream_id,
                data,
                frame::data_flow_len(data, padding),
                end_stream,
            ),
        }
    }

    fn on_settings(&mut self, frame: &Frame<'_>) -> Result<(), Error> {
        for setting in frame.settings() {
            match setting.id {
                settings::HEADER_TABLE_SIZE => {
                    self.encoder
                        .set_peer_max_size(usize::try_from(setting.value).unwrap_or(usize::MAX));
                }
                settings::ENABLE_PUSH if setting.value != 0 => {
                    // A server never sends it as 1 (§6.5.2).
                    return Err(Error::connection(
                        ErrorCode::PROTOCOL_ERROR,
                        Reason::BadSetting {
                            id: setting.id,
                            value: setting.value,
                        },
                    ));
                }
                settings::MAX_CONCURRENT_STREAMS => self.peer_max_streams = setting.value,
                settings::INITIAL_WINDOW_SIZE => {
                    let delta = i64::from(setting.value) - i64::from(self.peer_stream_window);
                    self.peer_stream_window = setting.value;
                    for stream in self.streams.values_mut() {
                        stream.send_window.adjust(delta).map_err(|_| {
                            Error::connection(ErrorCode::FLOW_CONTROL_ERROR, Reason::WindowOverflow)
                        })?;
                    }
                }
                settings::MAX_FRAME_SIZE => self.peer_max_frame_size = setting.value,
                _ => {}
            }
        }
        self.write_control(Frame::Settings {
            ack: true,
            params: &[],
        });
        Ok(())
    }

    fn on_goaway(&mut self, last_stream_id: u32, code: ErrorCode, debug: &[u8]) {
        self.goaway_received = Some(last_stream_id);
        let refused: Vec<u32> = self
            .streams
            .range(last_stream_id.saturating_add(1)..)
            .map(|(id, _)| *id)
            .collect();
        for stream_id in refused {
            self.streams.remove(&stream_id);
            self.events.push_back(ClientEvent::Reset {
                stream_id,
                code: ErrorCode::REFUSED_STREAM,
                by_peer: true,
                reason: None,
            });
        }
        self.events.push_back(ClientEvent::GoAway {
            last_stream_id,
            code,
            debug: debug.to_vec(),
        });
    }

    fn on_window_update(&mut self, stream_id: u32, increment: u32) -> Result<(), Error> {
        if stream_id == 0 {
            return self.send_window.adjust(i64::from(increment)).map_err(|_| {
                Error::connection(ErrorCode::FLOW_CONTROL_ERROR, Reason::WindowOverflow)
            });
        }
        self.check_idle(stream_id, frame::kind::WINDOW_UPDATE)?;
        if let Some(stream) = self.streams.get_mut(&stream_id)
            && stream.send_window.adjust(i64::from(increment)).is_err()
        {
            return Err(Error::stream(
                stream_id,
                ErrorCode::FLOW_CONTROL_ERROR,
                Reason::WindowOverflow,
            ));
        }
        Ok(())
    }

    fn on_reset(&mut self, stream_id: u32, code: ErrorCode) -> Result<(), Error> {
        self.check_idle(stream_id, frame::kind::RST_STREAM)?;
        if self.streams.remove(&stream_id).is_some() || self.closed.contains(&stream_id) {
            self.events.push_back(ClientEvent::Reset {
                stream_id,
                code,
                by_peer: true,
                reason: None,
            });
        }
        Ok(())
    }

    /// A frame on a stream we never opened (an even id, or one not yet given) is a
    /// connection error (§5.1).
    fn check_idle(&self, stream_id: u32, kind: u8) -> Result<(), Error> {
        if stream_id.is_multiple_of(2) || stream_id >= self.next_stream_id {
            return Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::IdleStream { kind },
            ));
        }
        Ok(())
    }

    /// HEADERS or DATA: on a stream we opened; one already closed or reset is answered
    /// per §5.1 by the caller of this check.
    fn check_stream(&self, stream_id: u32, kind: u8) -> Result<(), Error> {
        if stream_id.is_multiple_of(2) {
            return Err(Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                Reason::BadStreamId { stream_id },
            ));
        }
        self.check_idle(stream_id, kind)
    }

    fn on_block_piece(&mut self, block: OpenBlock, end_headers: bool) -> Result<(), Error> {
        if block.bytes.len() > self.config.header_block_max {
            return Err(Error::connection(
                ErrorCode::ENHANCE_YOUR_CALM,
                Reason::HeaderBlockTooLarge,
            ));
        }
        if !end_headers {
            self.block = Some(block);
            return Ok(());
        }
        // Every block is decoded, even a reset stream's, to keep the table in step.
        let limits = DecodeLimits {
            max_field_size: self.config.field_max,
            max_list_size: self.config.header_list_max,
        };
        let decoded = self.decoder.decode(&block.bytes, limits).map_err(|error| {
            Error::connection(ErrorCode::COMPRESSION_ERROR, Reason::Compression(error))
        })?;
        let stream_id = block.stream_id;
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            // A stream we reset or that ended: its frames may still be in flight.
            return Ok(());
        };
        if !stream.state.can_receive() {
            return Err(Error::stream(
                stream_id,
                ErrorCode::STREAM_CLOSED,
                Reason::ClosedStream {
                    kind: frame::kind::HEADERS,
                },
            ));
        }
        if let Some(limit) = decoded.over_limit {
            return Err(Error::stream(
                stream_id,
                ErrorCode::PROTOCOL_ERROR,
                Reason::HeaderTooLarge(limit),
            ));
        }
        let (kind, status) = if stream.head_received {
            if !block.end_stream {
                return Err(Error::stream(
                    stream_id,
                    ErrorCode::PROTOCOL_ERROR,
                    Reason::TrailersWithoutEndStream,
                ));
            }
            (HeadKind::Trailers, 0)
        } else {
            let status = response_status(&decoded.fields).ok_or(Error::stream(
                stream_id,
                ErrorCode::PROTOCOL_ERROR,
                Reason::BadStatus,
            ))?;
            if status == 101 {
                // No upgrade in HTTP/2 (RFC 9113 §8.6).
                return Err(Error::stream(
                    stream_id,
                    ErrorCode::PROTOCOL_ERROR,
                    Reason::BadStatus,
                ));
            }
            if status < 200 {
                if block.end_stream {
                    return Err(Error::stream(
                        stream_id,
                        ErrorCode::PROTOCOL_ERROR,
                        Reason::BadStatus,
                    ));
                }
                (HeadKind::Interim, status)
            } else {
                stream.head_received = true;
                (HeadKind::Response, status)
            }
        };
        self.events.push_back(ClientEvent::Headers {
            stream_id,
            kind,
            status,
            fields: decoded.fields,
            end_stream: block.end_stream,
        });
        if block.end_stream {
            self.remote_end(stream_id);
        }
        Ok(())
    }

    fn on_data(
        &mut self,
        stream_id: u32,
        data: &[u8],
        flow_len: u32,
        end_stream: bool,
    ) -> Result<(), Error> {
        self.check_stream(stream_id, frame::kind::DATA)?;
        if !self.recv_window.receive(flow_len) {
            return Err(Error::connection(
                ErrorCode::FLOW_CONTROL_ERROR,
                Reason::WindowExceeded,
            ));
        }
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            // A stream we reset: its credit goes back to the connection at once.
            self.release(stream_id, flow_len);
            return Ok(());
        };
        let refuse = |reason| Err(Error::stream(stream_id, ErrorCode::PROTOCOL_ERROR, reason));
        if !stream.state.can_receive() {
            self.release(stream_id, flow_len);
            return Err(Error::stream(
                stream_id,
                ErrorCode::STREAM_CLOSED,
                Reason::ClosedStream {
                    kind: frame::kind::DATA,
                },
            ));
        }
        if !stream.head_received {
            self.release(stream_id, flow_len);
            return refuse(Reason::UnexpectedData);
        }
        if !stream.recv_window.receive(flow_len) {
            self.release(stream_id, flow_len);
            return Err(Error::stream(
                stream_id,
                ErrorCode::FLOW_CONTROL_ERROR,
                Reason::WindowExceeded,
            ));
        }
        // Padding counts against the windows but is never the caller's: it goes back now.
        let padding = flow_len.saturating_sub(u32::try_from(data.len()).unwrap_or(u32::MAX));
        if padding > 0 {
            self.release(stream_id, padding);
        }
        self.events.push_back(ClientEvent::Data {
            stream_id,
            data: data.to_vec(),
            end_stream,
        });
        if end_stream {
            self.remote_end(stream_id);
        }
        Ok(())
    }
}

/// The `:status` of a response head: three digits, the head's only pseudo-field (and
/// before the others).
fn response_status(fields: &FieldList) -> Option<u16> {
    let mut status = None;
    let mut regular = false;
    for field in fields.iter() {
        if field.name.first() != Some(&b':') {
            regular = true;
            continue;
        }
        if regular || field.name != b":status" || status.is_some() {
            return None;
        }
        let value = field.value;
        if value.len() != 3 || !value.iter().all(u8::is_ascii_digit) {
            return None;
        }
        status = std::str::from_utf8(value).ok()?.parse().ok();
    }
    status.filter(|status| *status >= 100)
}

fn frame_kind(frame: &Frame<'_>) -> u8 {
    match frame {
        Frame::Data { .. } => frame::kind::DATA,
        Frame::Headers { .. } => frame::kind::HEADERS,
        Frame::Priority { .. } => frame::kind::PRIORITY,
        Frame::RstStream { .. } => frame::kind::RST_STREAM,
        Frame::Settings { .. } => frame::kind::SETTINGS,
        Frame::PushPromise { .. } => frame::kind::PUSH_PROMISE,
        Frame::Ping { .. } => frame::kind::PING,
        Frame::GoAway { .. } => frame::kind::GOAWAY,
        Frame::WindowUpdate { .. } => frame::kind::WINDOW_UPDATE,
        Frame::Continuation { .. } => frame::kind::CONTINUATION,
        Frame::Unknown { kind, .. } => *kind,
    }
}
