//! The records a responder answers with, decoded from bytes as they arrive.

use super::record::{HEADER_LEN, RecordHeader, RecordType, VERSION_1};
use crate::error::RecordError;

/// Bytes of END_REQUEST's body (`FCGI_EndRequestBody`, §5.5).
const END_REQUEST_BODY_LEN: usize = 8;

/// What a piece of the answer said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Bytes of the STDOUT stream, borrowed from the input; never empty. One record's
    /// content may come as several events when the input is split inside it.
    Stdout(&'a [u8]),
    /// An empty STDOUT record: the application's stdout is over.
    StdoutEnd,
    /// Bytes of the STDERR stream, borrowed from the input; never empty. An empty STDERR
    /// record (the end of stderr) makes no event, as nginx gives it no meaning.
    Stderr(&'a [u8]),
    /// END_REQUEST, its padding read: the request is over and nothing more is decoded.
    EndRequest(EndRequest),
}

/// END_REQUEST's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndRequest {
    /// The application's exit status (a CGI program's), which nginx ignores.
    pub app_status: u32,
    pub protocol_status: ProtocolStatus,
}

/// How the application ended the request (§5.5). nginx ignores it: the response already
/// read is what the client gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolStatus {
    RequestComplete,
    /// The application cannot take a second request on this connection.
    CantMpxConn,
    /// The application is out of some resource.
    Overloaded,
    /// The application does not play the role asked for.
    UnknownRole,
    /// A status the specification does not define, as it arrived.
    Other(u8),
}

impl ProtocolStatus {
    fn from_u8(byte: u8) -> ProtocolStatus {
        match byte {
            0 => ProtocolStatus::RequestComplete,
            1 => ProtocolStatus::CantMpxConn,
            2 => ProtocolStatus::Overloaded,
            3 => ProtocolStatus::UnknownRole,
            other => ProtocolStatus::Other(other),
        }
    }
}

/// Decodes one request's answer: the records of `request_id`, checked byte by byte in the
/// order nginx checks them, so that an error does not depend on where the input was split.
/// After an error nothing more is decoded: the connection must be closed.
#[derive(Clone, Debug)]
pub struct Decoder {
    request_id: u16,
    state: State,
}

#[derive(Clone, Debug)]
enum State {
    /// `filled` bytes of a record header have arrived.
    Header {
        bytes: [u8; HEADER_LEN],
        filled: usize,
    },
    /// Inside a STDOUT or STDERR record's content.
    Stream {
        kind: StreamKind,
        remaining: usize,
        padding: usize,
    },
    /// Inside END_REQUEST's body.
    EndRequestBody {
        bytes: [u8; END_REQUEST_BODY_LEN],
        filled: usize,
        padding: usize,
    },
    /// Inside a record's padding; `end` is set when the record was END_REQUEST.
    Padding {
        remaining: usize,
        end: Option<EndRequest>,
    },
    Ended,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamKind {
    Stdout,
    Stderr,
}

const AWAITING_HEADER: State = State::Header {
    bytes: [0; HEADER_LEN],
    filled: 0,
};

impl Decoder {
    pub fn new(request_id: u16) -> Decoder {
        Decoder {
            request_id,
            state: AWAITING_HEADER,
        }
    }

    /// Decodes from the start of `input`: returns how many bytes were used and the event
    /// they completed. `None` means the input was used up without completing one (call
    /// again with more), or the request has ended ([`Decoder::is_ended`]): bytes after
    /// END_REQUEST are never used, and a kept-alive connection that has some cannot be
    /// reused.
    pub fn decode<'a>(
        &mut self,
        input: &'a [u8],
    ) -> Result<(usize, Option<Event<'a>>), RecordError> {
        let mut used = 0;
        while used < input.len() {
            let rest = &input[used..];
            let state = std::mem::replace(&mut self.state, State::Failed);
            let (taken, event) = match state {
                State::Header { bytes, filled } => self.read_header(bytes, filled, rest)?,
                State::Stream {
                    kind,
                    remaining,
                    padding,
                } => self.read_stream(kind, remaining, padding, rest),
                State::EndRequestBody {
                    bytes,
                    filled,
                    padding,
                } => self.read_end_request(bytes, filled, padding, rest),
                State::Padding { remaining, end } => self.read_padding(remaining, end, rest),
                State::Ended | State::Failed => {
                    self.state = state;
                    return Ok((used, None));
                }
            };
            debug_assert!(taken > 0, "every state uses at least one byte");
            used += taken;
            if event.is_some() {
                return Ok((used, event));
            }
        }
        Ok((used, None))
    }

    /// True once END_REQUEST and its padding have been read.
    pub fn is_ended(&self) -> bool {
        matches!(self.state, State::Ended)
    }

    fn read_header<'a>(
        &mut self,
        mut bytes: [u8; HEADER_LEN],
        mut filled: usize,
        rest: &[u8],
    ) -> Result<(usize, Option<Event<'a>>), RecordError> {
        let take = rest.len().min(HEADER_LEN - filled);
        for &byte in &rest[..take] {
            check_header_byte(filled, byte, self.request_id)?;
            bytes[filled] = byte;
            filled += 1;
        }
        if filled < HEADER_LEN {
            self.state = State::Header { bytes, filled };
            return Ok((take, None));
        }
        let header = RecordHeader::from_bytes(&bytes);
        let content_len = usize::from(header.content_len);
        let padding = usize::from(header.padding_len);
        let event = match RecordType::from_u8(header.record_type) {
            Some(RecordType::Stdout) if content_len == 0 => {
                self.after_content(padding, None);
                Some(Event::StdoutEnd)
            }
            Some(RecordType::Stderr) if content_len == 0 => self.after_content(padding, None),
            Some(record_type @ (RecordType::Stdout | RecordType::Stderr)) => {
                let kind = match record_type {
                    RecordType::Stdout => StreamKind::Stdout,
                    _ => StreamKind::Stderr,
                };
                self.state = State::Stream {
                    kind,
                    remaining: content_len,
                    padding,
                };
                None
            }
            Some(RecordType::EndRequest) if content_len == END_REQUEST_BODY_LEN => {
                self.state = State::EndRequestBody {
                    bytes: [0; END_REQUEST_BODY_LEN],
                    filled: 0,
                    padding,
                };
                None
            }
            Some(RecordType::EndRequest) => {
                return Err(RecordError::EndRequestLength {
                    content_len: header.content_len,
                });
            }
            // check_header_byte let no other type through; refuse it all the same.
            _ => {
                return Err(RecordError::InvalidRecordType {
                    record_type: header.record_type,
                });
            }
        };
        Ok((take, event))
    }

    fn read_stream<'a>(
        &mut self,
        kind: StreamKind,
        remaining: usize,
        padding: usize,
        rest: &'a [u8],
    ) -> (usize, Option<Event<'a>>) {
        let take = rest.len().min(remaining);
        if take == remaining {
            self.after_content(padding, None);
        } else {
            self.state = State::Stream {
                kind,
                remaining: remaining - take,
                padding,
            };
        }
        let piece = &rest[..take];
        let event = match kind {
            StreamKind::Stdout => Event::Stdout(piece),
            StreamKind::Stderr => Event::Stderr(piece),
        };
        (take, Some(event))
    }

    fn read_end_request<'a>(
        &mut self,
        mut bytes: [u8; END_REQUEST_BODY_LEN],
        filled: usize,
        padding: usize,
        rest: &[u8],
    ) -> (usize, Option<Event<'a>>) {
        let take = rest.len().min(END_REQUEST_BODY_LEN - filled);
        bytes[filled..filled + take].copy_from_slice(&rest[..take]);
        if filled + take < END_REQUEST_BODY_LEN {
            self.state = State::EndRequestBody {
                bytes,
                filled: filled + take,
                padding,
            };
            return (take, None);
        }
        let end = EndRequest {
            app_status: u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            protocol_status: ProtocolStatus::from_u8(bytes[4]),
        };
        (take, self.after_content(padding, Some(end)))
    }

    fn read_padding<'a>(
        &mut self,
        remaining: usize,
        end: Option<EndRequest>,
        rest: &[u8],
    ) -> (usize, Option<Event<'a>>) {
        let take = rest.len().min(remaining);
        (take, self.after_content(remaining - take, end))
    }

    /// Moves past a record's content: into its padding, or, with none left, to the next
    /// record or (after END_REQUEST) to the end, which is the only transition that makes
    /// an event.
    fn after_content<'a>(&mut self, padding: usize, end: Option<EndRequest>) -> Option<Event<'a>> {
        if padding > 0 {
            self.state = State::Padding {
                remaining: padding,
                end,
            };
            return None;
        }
        match end {
            Some(end) => {
                self.state = State::Ended;
                Some(Event::EndRequest(end))
            }
            None => {
                self.state = AWAITING_HEADER;
                None
            }
        }
    }
}

/// Checks header byte `index` as nginx does as it arrives: the version, then the type
/// (what an application may send a web server), then the request id, high byte first.
fn check_header_byte(index: usize, byte: u8, request_id: u16) -> Result<(), RecordError> {
    let [id_high, id_low] = request_id.to_be_bytes();
    match index {
        0 if byte != VERSION_1 => Err(RecordError::UnsupportedVersion { version: byte }),
        1 if !matches!(
            RecordType::from_u8(byte),
            Some(RecordType::Stdout | RecordType::Stderr | RecordType::EndRequest)
        ) =>
        {
            Err(RecordError::InvalidRecordType { record_type: byte })
        }
        2 if byte != id_high => Err(RecordError::RequestIdHighByte { byte }),
        3 if byte != id_low => Err(RecordError::RequestIdLowByte { byte }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
