//! A minimal client for the connection's tests: it writes frames as bytes and reads the
//! connection's output back into frames.

use super::{Config, Connection, Event, PREFACE};
use crate::error::{Error, ErrorCode};
use crate::frame::{self, Frame, FrameHeader, Setting};
use crate::hpack::{self, DecodeLimits, HeaderField};

/// A frame read from the output, owning its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedFrame {
    pub header: FrameHeader,
    pub payload: Vec<u8>,
}

impl OwnedFrame {
    pub fn parsed(&self) -> Frame<'_> {
        frame::parse(&self.header, &self.payload).expect("the connection writes valid frames")
    }
}

pub struct Client {
    pub connection: Connection,
    encoder: hpack::Encoder,
    pub decoder: hpack::Decoder,
}

pub fn get(path: &str) -> Vec<HeaderField> {
    [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "localhost"),
        (":path", path),
    ]
    .iter()
    .map(|&(name, value)| HeaderField::new(name, value))
    .collect()
}

impl Client {
    /// A connection past the preface and SETTINGS exchange, its output drained.
    pub fn new(config: Config) -> Self {
        let mut client = Self::raw(config);
        let mut bytes = PREFACE.to_vec();
        Frame::Settings {
            ack: false,
            params: &[],
        }
        .write(&mut bytes);
        // A client acknowledges the server's SETTINGS: its stream window applies.
        Frame::Settings {
            ack: true,
            params: &[],
        }
        .write(&mut bytes);
        client.send(&bytes).expect("handshake");
        client.take_frames();
        client
    }

    pub fn raw(config: Config) -> Self {
        Self {
            connection: Connection::new(config),
            encoder: hpack::Encoder::new(),
            decoder: hpack::Decoder::new(4096),
        }
    }

    /// Feeds bytes; all of them must be taken.
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let used = self.connection.receive(bytes)?;
        assert_eq!(used, bytes.len(), "whole frames are consumed");
        Ok(())
    }

    pub fn frame(&mut self, frame: Frame<'_>) -> Result<(), Error> {
        let mut bytes = Vec::new();
        frame.write(&mut bytes);
        self.send(&bytes)
    }

    pub fn settings(&mut self, settings: &[Setting]) -> Result<(), Error> {
        let mut params = Vec::new();
        for setting in settings {
            setting.write(&mut params);
        }
        self.frame(Frame::Settings {
            ack: false,
            params: &params,
        })
    }

    pub fn block(&mut self, fields: &[HeaderField]) -> Vec<u8> {
        let mut block = Vec::new();
        self.encoder.encode(fields, &mut block);
        block
    }

    pub fn headers(
        &mut self,
        stream_id: u32,
        fields: &[HeaderField],
        end_stream: bool,
    ) -> Result<(), Error> {
        let fragment = self.block(fields);
        let frame = Frame::Headers {
            stream_id,
            priority: None,
            fragment: &fragment,
            padding: None,
            end_stream,
            end_headers: true,
        };
        self.frame(frame)
    }

    pub fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.connection.poll_event()).collect()
    }

    /// Reads and drains the output.
    pub fn take_frames(&mut self) -> Vec<OwnedFrame> {
        let output = self.connection.output_to_vec();
        self.connection.advance_output(output.len());
        let mut frames = Vec::new();
        let mut rest = &output[..];
        while let Some(header_bytes) = rest.first_chunk::<{ frame::HEADER_LEN }>() {
            let header = FrameHeader::parse(header_bytes);
            let end = frame::HEADER_LEN + header.length as usize;
            frames.push(OwnedFrame {
                header,
                payload: rest[frame::HEADER_LEN..end].to_vec(),
            });
            rest = &rest[end..];
        }
        assert!(rest.is_empty(), "the output holds whole frames");
        frames
    }

    /// Decodes a header block the connection sent.
    pub fn decode(&mut self, block: &[u8]) -> Vec<(String, String)> {
        let limits = DecodeLimits {
            max_field_size: usize::MAX,
            max_list_size: usize::MAX,
        };
        let decoded = self
            .decoder
            .decode(block, limits)
            .expect("the connection's HPACK decodes");
        decoded
            .fields
            .iter()
            .map(|field| {
                (
                    String::from_utf8_lossy(field.name).into(),
                    String::from_utf8_lossy(field.value).into(),
                )
            })
            .collect()
    }
}

/// The code of the GOAWAY among `frames`, if any.
pub fn goaway(frames: &[OwnedFrame]) -> Option<(u32, ErrorCode)> {
    frames.iter().find_map(|owned| match owned.parsed() {
        Frame::GoAway {
            last_stream_id,
            code,
            ..
        } => Some((last_stream_id, code)),
        _ => None,
    })
}

/// The RST_STREAM frames among `frames`.
pub fn resets(frames: &[OwnedFrame]) -> Vec<(u32, ErrorCode)> {
    frames
        .iter()
        .filter_map(|owned| match owned.parsed() {
            Frame::RstStream { stream_id, code } => Some((stream_id, code)),
            _ => None,
        })
        .collect()
}

/// The DATA frames among `frames` as (stream, length, end_stream).
pub fn data(frames: &[OwnedFrame]) -> Vec<(u32, usize, bool)> {
    frames
        .iter()
        .filter_map(|owned| match owned.parsed() {
            Frame::Data {
                stream_id,
                data,
                end_stream,
                ..
            } => Some((stream_id, data.len(), end_stream)),
            _ => None,
        })
        .collect()
}
