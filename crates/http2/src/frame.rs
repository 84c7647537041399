//! Frames (RFC 9113 §4 and §6): the 9-byte header, each type's payload parsed into a
//! [`Frame`] that borrows the input, and the same frames written back.
//!
//! [`parse`] checks everything a single frame can be checked for by itself (lengths, stream 0
//! or not, padding, SETTINGS values) and says whether a failure is a connection or a stream
//! error as §6 says; what depends on the connection's state (stream states, windows, the
//! open header block) is `connection`'s job.

use crate::error::{Error, ErrorCode, Reason};

pub mod settings;

pub use settings::{Setting, SettingsIter};

/// Bytes in a frame header.
pub const HEADER_LEN: usize = 9;
/// The smallest SETTINGS_MAX_FRAME_SIZE, and its default (§6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// The largest SETTINGS_MAX_FRAME_SIZE (2^24-1).
pub const MAX_FRAME_SIZE_LIMIT: u32 = (1 << 24) - 1;
/// The largest flow-control window (2^31-1, §6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The initial flow-control window before SETTINGS change it (§6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest stream identifier.
pub const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// The frame types of §6; other values are extension frames, which are ignored (§4.1).
pub mod kind {
    /// DATA (§6.1).
    pub const DATA: u8 = 0x0;
    /// HEADERS (§6.2).
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY (§6.3, RFC 7540 §6.3).
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM (§6.4).
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS (§6.5).
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE (§6.6).
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING (§6.7).
    pub const PING: u8 = 0x6;
    /// GOAWAY (§6.8).
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE (§6.9).
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION (§6.10).
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags (§6); a flag not defined for a type is ignored.
pub mod flag {
    /// DATA, HEADERS: the last frame the sender sends on the stream.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the header block ends here.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE: a pad length byte and padding are present.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: a dependency and weight are present.
    pub const PRIORITY: u8 = 0x20;
}

/// A frame header (§4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// The payload's length.
    pub length: u32,
    /// The frame type (see [`kind`]).
    pub kind: u8,
    /// The flags (see [`flag`]).
    pub flags: u8,
    /// The stream, with the reserved bit cleared (it is ignored on receipt).
    pub stream_id: u32,
}

impl FrameHeader {
    /// Reads a header from its 9 bytes.
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> Self {
        let length = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]);
        let stream_id =
            u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & MAX_STREAM_ID;
        Self {
            length,
            kind: bytes[3],
            flags: bytes[4],
            stream_id,
        }
    }

    /// Appends the 9 bytes of this header to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The 9 bytes of this header.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        debug_assert!(self.length <= MAX_FRAME_SIZE_LIMIT);
        let [_, length @ ..] = self.length.to_be_bytes();
        let [id0, id1, id2, id3] = (self.stream_id & MAX_STREAM_ID).to_be_bytes();
        let [l0, l1, l2] = length;
        [l0, l1, l2, self.kind, self.flags, id0, id1, id2, id3]
    }

    pub(crate) fn has(&self, bit: u8) -> bool {
        self.flags & bit != 0
    }
}

/// A stream's priority as RFC 7540 §5.3 defines it (HEADERS and PRIORITY frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrioritySpec {
    /// The stream this one depends on (0 for the root).
    pub dependency: u32,
    /// Whether this stream becomes the dependency's only child.
    pub exclusive: bool,
    /// The weight, 1 to 256 (the wire carries it minus one).
    pub weight: u16,
}

impl PrioritySpec {
    /// The priority a stream has when nothing says otherwise (RFC 7540 §5.3.5).
    pub const DEFAULT: Self = Self {
        dependency: 0,
        exclusive: false,
        weight: 16,
    };

    fn parse(bytes: &[u8]) -> Self {
        let word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        Self {
            dependency: word & MAX_STREAM_ID,
            exclusive: word >> 31 == 1,
            weight: u16::from(bytes[4]) + 1,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        debug_assert!((1..=256).contains(&self.weight));
        let exclusive = if self.exclusive { 1 << 31 } else { 0 };
        out.extend_from_slice(&(self.dependency & MAX_STREAM_ID | exclusive).to_be_bytes());
        out.push(u8::try_from(self.weight.clamp(1, 256) - 1).unwrap_or(u8::MAX));
    }
}

/// A parsed frame; slices borrow the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA. `padding` is the pad length when PADDED was set.
    Data {
        stream_id: u32,
        data: &'a [u8],
        padding: Option<u8>,
        end_stream: bool,
    },
    /// HEADERS: the first fragment of a header block.
    Headers {
        stream_id: u32,
        priority: Option<PrioritySpec>,
        fragment: &'a [u8],
        padding: Option<u8>,
        end_stream: bool,
        end_headers: bool,
    },
    /// PRIORITY.
    Priority {
        stream_id: u32,
        priority: PrioritySpec,
    },
    /// RST_STREAM.
    RstStream { stream_id: u32, code: ErrorCode },
    /// SETTINGS; `params` holds whole 6-byte parameters, read with [`Frame::settings`].
    Settings { ack: bool, params: &'a [u8] },
    /// PUSH_PROMISE (only a server sends it; a server receiving one fails the connection).
    PushPromise {
        stream_id: u32,
        promised_id: u32,
        fragment: &'a [u8],
        padding: Option<u8>,
        end_headers: bool,
    },
    /// PING.
    Ping { ack: bool, payload: [u8; 8] },
    /// GOAWAY.
    GoAway {
        last_stream_id: u32,
        code: ErrorCode,
        debug: &'a [u8],
    },
    /// WINDOW_UPDATE; stream 0 is the connection's window.
    WindowUpdate { stream_id: u32, increment: u32 },
    /// CONTINUATION: a further fragment of a header block.
    Continuation {
        stream_id: u32,
        fragment: &'a [u8],
        end_headers: bool,
    },
    /// A frame of a type this crate does not know, to be ignored.
    Unknown {
        kind: u8,
        flags: u8,
        stream_id: u32,
        payload: &'a [u8],
    },
}

/// How much of a DATA frame counts against flow control: the whole payload (§6.9.1).
pub fn data_flow_len(data: &[u8], padding: Option<u8>) -> u32 {
    let padded = padding.map_or(0, |pad| usize::from(pad) + 1);
    u32::try_from(data.len() + padded).unwrap_or(u32::MAX)
}

fn connection_error(code: ErrorCode, reason: Reason) -> Error {
    Error::connection(code, reason)
}

fn frame_size(header: &FrameHeader) -> Error {
    connection_error(
        ErrorCode::FRAME_SIZE_ERROR,
        Reason::BadFrameLength {
            kind: header.kind,
            length: header.length,
        },
    )
}

fn need_stream(header: &FrameHeader) -> Result<(), Error> {
    if header.stream_id == 0 {
        return Err(connection_error(
            ErrorCode::PROTOCOL_ERROR,
            Reason::StreamIdZero { kind: header.kind },
        ));
    }
    Ok(())
}

fn need_connection(header: &FrameHeader) -> Result<(), Error> {
    if header.stream_id != 0 {
        return Err(connection_error(
            ErrorCode::PROTOCOL_ERROR,
            Reason::StreamIdNonZero { kind: header.kind },
        ));
    }
    Ok(())
}

/// Splits off the pad length byte and the padding (§6.1): a pad length not less than the
/// rest of the payload is a connection error of type PROTOCOL_ERROR.
fn unpad<'a>(header: &FrameHeader, payload: &'a [u8]) -> Result<(&'a [u8], Option<u8>), Error> {
    if !header.has(flag::PADDED) {
        return Ok((payload, None));
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(frame_size(header));
    };
    let Some(end) = rest.len().checked_sub(usize::from(pad)) else {
        return Err(connection_error(
            ErrorCode::PROTOCOL_ERROR,
            Reason::PaddingTooLong,
        ));
    };
    Ok((&rest[..end], Some(pad)))
}

fn word(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// Parses one frame's payload. `payload.len()` must equal `header.length`; the caller has
/// already refused a length above the SETTINGS_MAX_FRAME_SIZE it announced.
pub fn parse<'a>(header: &FrameHeader, payload: &'a [u8]) -> Result<Frame<'a>, Error> {
    debug_assert_eq!(usize::try_from(header.length).ok(), Some(payload.len()));
    let stream_id = header.stream_id;
    match header.kind {
        kind::DATA => {
            need_stream(header)?;
            let (data, padding) = unpad(header, payload)?;
            Ok(Frame::Data {
                stream_id,
                data,
                padding,
                end_stream: header.has(flag::END_STREAM),
            })
        }
        kind::HEADERS => {
            need_stream(header)?;
            let (mut fragment, padding) = unpad(header, payload)?;
            let mut priority = None;
            if header.has(flag::PRIORITY) {
                if fragment.len() < 5 {
                    return Err(frame_size(header));
                }
                priority = Some(PrioritySpec::parse(fragment));
                fragment = &fragment[5..];
            }
            let end_stream = header.has(flag::END_STREAM);
            let end_headers = header.has(flag::END_HEADERS);
            Ok(Frame::Headers {
                stream_id,
                priority,
                fragment,
                padding,
                end_stream,
                end_headers,
            })
        }
        kind::PRIORITY => {
            need_stream(header)?;
            if payload.len() != 5 {
                // §6.3: a stream error, as PRIORITY changes no connection state.
                let reason = Reason::BadFrameLength {
                    kind: header.kind,
                    length: header.length,
                };
                return Err(Error::stream(
                    stream_id,
                    ErrorCode::FRAME_SIZE_ERROR,
                    reason,
                ));
            }
            Ok(Frame::Priority {
                stream_id,
                priority: PrioritySpec::parse(payload),
            })
        }
        kind::RST_STREAM => {
            need_stream(header)?;
            if payload.len() != 4 {
                return Err(frame_size(header));
            }
            Ok(Frame::RstStream {
                stream_id,
                code: ErrorCode(word(payload)),
            })
        }
        kind::SETTINGS => parse_settings(header, payload),
        kind::PUSH_PROMISE => {
            need_stream(header)?;
            let (fragment, padding) = unpad(header, payload)?;
            if fragment.len() < 4 {
                return Err(frame_size(header));
            }
            let promised_id = word(fragment) & MAX_STREAM_ID;
            let end_headers = header.has(flag::END_HEADERS);
            Ok(Frame::PushPromise {
                stream_id,
                promised_id,
                fragment: &fragment[4..],
                padding,
                end_headers,
            })
        }
        kind::PING => {
            need_connection(header)?;
            let Ok(payload) = <[u8; 8]>::try_from(payload) else {
                return Err(frame_size(header));
            };
            Ok(Frame::Ping {
                ack: header.has(flag::ACK),
                payload,
            })
        }
        kind::GOAWAY => {
            need_connection(header)?;
            if payload.len() < 8 {
                return Err(frame_size(header));
            }
            let last_stream_id = word(payload) & MAX_STREAM_ID;
            Ok(Frame::GoAway {
                last_stream_id,
                code: ErrorCode(word(&payload[4..])),
                debug: &payload[8..],
            })
        }
        kind::WINDOW_UPDATE => {
            if payload.len() != 4 {
                return Err(frame_size(header));
            }
            let increment = word(payload) & MAX_WINDOW;
            if increment == 0 {
                let reason = Reason::ZeroWindowIncrement;
                return Err(match stream_id {
                    0 => connection_error(ErrorCode::PROTOCOL_ERROR, reason),
                    _ => Error::stream(stream_id, ErrorCode::PROTOCOL_ERROR, reason),
                });
            }
            Ok(Frame::WindowUpdate {
                stream_id,
                increment,
            })
        }
        kind::CONTINUATION => {
            need_stream(header)?;
            Ok(Frame::Continuation {
                stream_id,
                fragment: payload,
                end_headers: header.has(flag::END_HEADERS),
            })
        }
        other => Ok(Frame::Unknown {
            kind: other,
            flags: header.flags,
            stream_id,
            payload,
        }),
    }
}

fn parse_settings<'a>(header: &FrameHeader, payload: &'a [u8]) -> Result<Frame<'a>, Error> {
    need_connection(header)?;
    let ack = header.has(flag::ACK);
    if (ack && !payload.is_empty()) || !payload.len().is_multiple_of(6) {
        return Err(frame_size(header));
    }
    for setting in SettingsIter::new(payload) {
        setting.validate()?;
    }
    Ok(Frame::Settings {
        ack,
        params: payload,
    })
}

impl Frame<'_> {
    /// The stream the frame is on (0 for the connection).
    pub fn stream_id(&self) -> u32 {
        match *self {
            Self::Data { stream_id, .. }
            | Self::Headers { stream_id, .. }
            | Self::Priority { stream_id, .. }
            | Self::RstStream { stream_id, .. }
            | Self::PushPromise { stream_id, .. }
            | Self::WindowUpdate { stream_id, .. }
            | Self::Continuation { stream_id, .. }
            | Self::Unknown { stream_id, .. } => stream_id,
            Self::Settings { .. } | Self::Ping { .. } | Self::GoAway { .. } => 0,
        }
    }

    /// The parameters of a SETTINGS frame (empty for any other frame).
    pub fn settings(&self) -> SettingsIter<'_> {
        match *self {
            Self::Settings { params, .. } => SettingsIter::new(params),
            _ => SettingsIter::new(&[]),
        }
    }

    /// Appends the frame, header and payload, to `out`. The caller keeps payloads within the
    /// peer's SETTINGS_MAX_FRAME_SIZE (header blocks are split by [`write_header_block`]).
    pub fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; HEADER_LEN]);
        let (kind, flags, stream_id) = self.write_payload(out);
        let length = u32::try_from(out.len() - start - HEADER_LEN).unwrap_or(u32::MAX);
        let header = FrameHeader {
            length,
            kind,
            flags,
            stream_id,
        };
        out[start..start + HEADER_LEN].copy_from_slice(&header.to_bytes());
    }

    fn write_payload(&self, out: &mut Vec<u8>) -> (u8, u8, u32) {
        let bit = |on: bool, value: u8| if on { value } else { 0 };
        match *self {
            Self::Data {
                stream_id,
                data,
                padding,
                end_stream,
            } => {
                write_padded(out, padding, |out| out.extend_from_slice(data));
                (
                    kind::DATA,
                    bit(end_stream, flag::END_STREAM) | bit(padding.is_some(), flag::PADDED),
                    stream_id,
                )
            }
            Self::Headers {
                stream_id,
                priority,
                fragment,
                padding,
                end_stream,
                end_headers,
            } => {
                write_padded(out, padding, |out| {
                    if let Some(priority) = priority {
                        priority.write(out);
                    }
                    out.extend_from_slice(fragment);
                });
                let flags = bit(end_stream, flag::END_STREAM)
                    | bit(end_headers, flag::END_HEADERS)
                    | bit(padding.is_some(), flag::PADDED)
                    | bit(priority.is_some(), flag::PRIORITY);
                (kind::HEADERS, flags, stream_id)
            }
            Self::Priority {
                stream_id,
                priority,
            } => {
                priority.write(out);
                (kind::PRIORITY, 0, stream_id)
            }
            Self::RstStream { stream_id, code } => {
                out.extend_from_slice(&code.0.to_be_bytes());
                (kind::RST_STREAM, 0, stream_id)
            }
            Self::Settings { ack, params } => {
                out.extend_from_slice(params);
                (kind::SETTINGS, bit(ack, flag::ACK), 0)
            }
            Self::PushPromise {
                stream_id,
                promised_id,
                fragment,
                padding,
                end_headers,
            } => {
                write_padded(out, padding, |out| {
                    out.extend_from_slice(&(promised_id & MAX_STREAM_ID).to_be_bytes());
                    out.extend_from_slice(fragment);
                });
                let flags =
                    bit(end_headers, flag::END_HEADERS) | bit(padding.is_some(), flag::PADDED);
                (kind::PUSH_PROMISE, flags, stream_id)
            }
            Self::Ping { ack, payload } => {
                out.extend_from_slice(&payload);
                (kind::PING, bit(ack, flag::ACK), 0)
            }
            Self::GoAway {
                last_stream_id,
                code,
                debug,
            } => {
                out.extend_from_slice(&(last_stream_id & MAX_STREAM_ID).to_be_bytes());
                out.extend_from_slice(&code.0.to_be_bytes());
                out.extend_from_slice(debug);
                (kind::GOAWAY, 0, 0)
            }
            Self::WindowUpdate {
                stream_id,
                increment,
            } => {
                out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
                (kind::WINDOW_UPDATE, 0, stream_id)
            }
            Self::Continuation {
                stream_id,
                fragment,
                end_headers,
            } => {
                out.extend_from_slice(fragment);
                (
                    kind::CONTINUATION,
                    bit(end_headers, flag::END_HEADERS),
                    stream_id,
                )
            }
            Self::Unknown {
                kind,
                flags,
                stream_id,
                payload,
            } => {
                out.extend_from_slice(payload);
                (kind, flags, stream_id)
            }
        }
    }
}

fn write_padded(out: &mut Vec<u8>, padding: Option<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    if let Some(pad) = padding {
        out.push(pad);
    }
    body(out);
    // Padding octets MUST be zero when sent (§6.1).
    out.resize(out.len() + usize::from(padding.unwrap_or(0)), 0);
}

/// Appends a header block as one HEADERS frame and as many CONTINUATION frames as
/// `max_frame_size` needs (§4.3: the block's frames are contiguous).
pub fn write_header_block(
    out: &mut Vec<u8>,
    stream_id: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    let chunk = usize::try_from(max_frame_size.max(DEFAULT_MAX_FRAME_SIZE)).unwrap_or(usize::MAX);
    let mut pieces = block.chunks(chunk);
    let first = pieces.next().unwrap_or(&[]);
    let mut rest = pieces.peekable();
    let end_headers = rest.peek().is_none();
    Frame::Headers {
        stream_id,
        priority: None,
        fragment: first,
        padding: None,
        end_stream,
        end_headers,
    }
    .write(out);
    while let Some(fragment) = rest.next() {
        let end_headers = rest.peek().is_none();
        Frame::Continuation {
            stream_id,
            fragment,
            end_headers,
        }
        .write(out);
    }
}

#[cfg(test)]
mod tests;
