//! Chunked request bodies (RFC 9112 §7.1), with nginx's `ngx_http_parse_chunked` limits.

use std::ops::Range;

use crate::error::RequestError;

/// The largest chunk size nginx accepts: it refuses another hex digit once the size exceeds
/// `NGX_MAX_OFF_T_VALUE / 16`, and checks that bound on the byte ending the size too.
const CHUNK_SIZE_MAX: u64 = (i64::MAX / 16) as u64;

/// A streaming decoder for a chunked body. Feed it the bytes that follow the head; it returns
/// one run of body bytes at a time and stops after the last chunk's trailer section, so
/// pipelined bytes after the body are left unconsumed.
///
/// Strictness follows current nginx (and RFC 9112): every line ends in CRLF (a bare LF is an
/// error), chunk sizes are hex without sign or prefix, and extensions (after `;`, space or
/// tab) and trailer fields are skipped unchecked up to their CRLF, unless the decoder keeps
/// them ([`ChunkedDecoder::keeping_trailers`]).
#[derive(Clone, Debug, Default)]
pub struct ChunkedDecoder {
    state: State,
    /// Size of the chunk being read; while in `Data`, the bytes of it still to come.
    size: u64,
    /// Body bytes consumed so far, to report where an error happened.
    offset: u64,
    /// The trailer section's lines, each ended by LF, when they are kept.
    trailers: Option<Box<KeptTrailers>>,
}

/// The trailer lines a decoder keeps, and how many bytes they may take.
#[derive(Clone, Debug, Default)]
struct KeptTrailers {
    lines: Vec<u8>,
    limit: usize,
}

/// A trailer field: its name and its value without the surrounding white space.
pub type TrailerField = (Vec<u8>, Vec<u8>);

/// The result of one [`ChunkedDecoder::decode`] call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Bytes of the input used, framing and data.
    pub consumed: usize,
    /// Body bytes within `input[..consumed]`; may be empty.
    pub data: Range<usize>,
    /// The last chunk and the trailer section have been read.
    pub done: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Waiting for the first hex digit of a chunk size.
    #[default]
    SizeStart,
    Size,
    Extension,
    /// Got the CR ending a chunk-size line.
    SizeLf,
    Data,
    /// Waiting for the CR after chunk data.
    DataCr,
    DataLf,
    LastExtension,
    LastSizeLf,
    /// At the start of a trailer line (or the final empty line).
    Trailer,
    TrailerLf,
    TrailerField,
    TrailerFieldLf,
    Done,
}

impl ChunkedDecoder {
    pub fn new() -> ChunkedDecoder {
        ChunkedDecoder::default()
    }

    /// A decoder that keeps the trailer section (up to `limit` bytes; more is an error)
    /// for [`ChunkedDecoder::trailers`].
    pub fn keeping_trailers(limit: usize) -> ChunkedDecoder {
        ChunkedDecoder {
            trailers: Some(Box::new(KeptTrailers {
                lines: Vec::new(),
                limit,
            })),
            ..ChunkedDecoder::default()
        }
    }

    /// Whether the decoder keeps the trailer section.
    pub fn keeps_trailers(&self) -> bool {
        self.trailers.is_some()
    }

    /// The trailer fields of a body decoded to its end by a decoder that keeps them, in
    /// order; `None` for a line that is not a field (`name: value`, the name a token).
    pub fn trailers(&self) -> Option<Vec<TrailerField>> {
        let Some(kept) = &self.trailers else {
            return Some(Vec::new());
        };
        let mut fields = Vec::new();
        for line in kept.lines.split(|&byte| byte == b'\n') {
            if line.is_empty() {
                continue;
            }
            let colon = line.iter().position(|&byte| byte == b':')?;
            let name = &line[..colon];
            if name.is_empty() || !name.iter().all(|&byte| is_tchar(byte)) {
                return None;
            }
            let value = line[colon + 1..].trim_ascii();
            fields.push((name.to_vec(), value.to_vec()));
        }
        Some(fields)
    }

    /// The last chunk and trailer section have been decoded.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from the start of `input` until a run of body bytes is found, the body ends or
    /// the input runs out. Call again with the unconsumed rest (and more bytes as they
    /// arrive) until `consumed == input.len()` or `done`.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, RequestError> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Done => break,
                State::Data => {
                    let available = (input.len() - pos) as u64;
                    // Bounded by `input.len() - pos`, so it fits in usize.
                    let take = self.size.min(available) as usize;
                    self.size -= take as u64;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                    self.offset += take as u64;
                    let data = pos..pos + take;
                    return Ok(Decoded {
                        consumed: pos + take,
                        data,
                        done: false,
                    });
                }
                _ => {
                    if let Err(()) = self.step(input[pos]) {
                        return Err(RequestError::InvalidChunkedBody {
                            offset: self.offset,
                        });
                    }
                    pos += 1;
                    self.offset += 1;
                }
            }
        }
        Ok(Decoded {
            consumed: pos,
            data: pos..pos,
            done: self.is_done(),
        })
    }

    /// Feeds one framing byte.
    fn step(&mut self, byte: u8) -> Result<(), ()> {
        self.state = match self.state {
            State::SizeStart => {
                self.size = u64::from(hex_digit(byte).ok_or(())?);
                State::Size
            }
            State::Size => {
                if self.size > CHUNK_SIZE_MAX {
                    return Err(());
                }
                if let Some(digit) = hex_digit(byte) {
                    self.size = self.size * 16 + u64::from(digit);
                    State::Size
                } else {
                    let last = self.size == 0;
                    match (byte, last) {
                        (b'\r', false) => State::SizeLf,
                        (b'\r', true) => State::LastSizeLf,
                        (b';' | b' ' | b'\t', false) => State::Extension,
                        (b';' | b' ' | b'\t', true) => State::LastExtension,
                        _ => return Err(()),
                    }
                }
            }
            State::Extension | State::LastExtension => match byte {
                b'\r' if self.state == State::Extension => State::SizeLf,
                b'\r' => State::LastSizeLf,
                b'\n' => return Err(()),
                _ => self.state,
            },
            State::SizeLf => expect_lf(byte, State::Data)?,
            State::DataCr => expect(byte, b'\r', State::DataLf)?,
            State::DataLf => expect_lf(byte, State::SizeStart)?,
            State::LastSizeLf => expect_lf(byte, State::Trailer)?,
            State::Trailer => match byte {
                b'\r' => State::TrailerLf,
                b'\n' => return Err(()),
                _ => {
                    self.keep(byte)?;
                    State::TrailerField
                }
            },
            State::TrailerLf => expect_lf(byte, State::Done)?,
            State::TrailerField => match byte {
                b'\r' => State::TrailerFieldLf,
                b'\n' => return Err(()),
                _ => {
                    self.keep(byte)?;
                    State::TrailerField
                }
            },
            State::TrailerFieldLf => {
                self.keep(b'\n')?;
                expect_lf(byte, State::Trailer)?
            }
            // `decode` handles data and never steps once done.
            State::Data | State::Done => return Err(()),
        };
        Ok(())
    }
}

impl ChunkedDecoder {
    /// Keeps a byte of a trailer line, when the decoder keeps them.
    fn keep(&mut self, byte: u8) -> Result<(), ()> {
        let Some(kept) = self.trailers.as_deref_mut() else {
            return Ok(());
        };
        if kept.lines.len() >= kept.limit {
            return Err(());
        }
        kept.lines.push(byte);
        Ok(())
    }
}

fn expect_lf(byte: u8, next: State) -> Result<State, ()> {
    expect(byte, b'\n', next)
}

fn expect(byte: u8, wanted: u8, next: State) -> Result<State, ()> {
    if byte == wanted { Ok(next) } else { Err(()) }
}

/// A character of a field name (RFC 9110 §5.6.2).
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
