//! Request bodies: framing state, discarding a body nobody reads so that the next request
//! on the connection starts at the right byte, and reading a body into memory or a
//! temporary file for the handlers that need it.

pub mod failure;
pub mod reader;
pub(crate) mod relay;
pub mod temp;

use http1::RequestError;
use http1::chunked::ChunkedDecoder;
use http1::request::BodyFraming;

/// Part of the input that belonged to the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Input bytes that were body (payload and chunk framing).
    pub consumed: usize,
    /// The payload bytes among them.
    pub payload: std::ops::Range<usize>,
}

/// How much of the request body is still to come.
#[derive(Debug, Default)]
pub enum BodyState {
    #[default]
    Done,
    Length {
        remaining: u64,
    },
    Chunked(ChunkedDecoder),
}

impl BodyState {
    pub fn new(framing: BodyFraming) -> BodyState {
        match framing {
            BodyFraming::None | BodyFraming::Length(0) => BodyState::Done,
            BodyFraming::Length(length) => BodyState::Length { remaining: length },
            BodyFraming::Chunked => BodyState::Chunked(ChunkedDecoder::new()),
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, BodyState::Done)
    }

    /// Decodes the body bytes at the front of `data`: how many input bytes belong to the
    /// body and which of them are payload (chunk framing excluded). Call again with the
    /// rest of the input until it is consumed or the body is done.
    pub fn next(&mut self, data: &[u8]) -> Result<Piece, RequestError> {
        match self {
            BodyState::Done => Ok(Piece {
                consumed: 0,
                payload: 0..0,
            }),
            BodyState::Length { remaining } => {
                let taken = (*remaining).min(data.len() as u64) as usize;
                *remaining -= taken as u64;
                if *remaining == 0 {
                    *self = BodyState::Done;
                }
                Ok(Piece {
                    consumed: taken,
                    payload: 0..taken,
                })
            }
            BodyState::Chunked(decoder) => {
                let decoded = decoder.decode(data)?;
                if decoded.done {
                    *self = BodyState::Done;
                }
                Ok(Piece {
                    consumed: decoded.consumed,
                    payload: decoded.data,
                })
            }
        }
    }

    /// Consumes body bytes from the front of `data` and drops them. Returns how many bytes
    /// belonged to the body; bytes after the body's end are left for the next request.
    pub(crate) fn discard(&mut self, data: &[u8]) -> Result<usize, RequestError> {
        match self {
            BodyState::Done => Ok(0),
            BodyState::Length { remaining } => {
                let taken = (*remaining).min(data.len() as u64);
                *remaining -= taken;
                if *remaining == 0 {
                    *self = BodyState::Done;
                }
                Ok(taken as usize)
            }
            BodyState::Chunked(decoder) => {
                let mut consumed = 0;
                while consumed < data.len() {
                    let decoded = decoder.decode(&data[consumed..])?;
                    consumed += decoded.consumed;
                    if decoded.done {
                        *self = BodyState::Done;
                        break;
                    }
                    if decoded.consumed == 0 {
                        break;
                    }
                }
                Ok(consumed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_bodies_stop_at_their_end() {
        let mut state = BodyState::new(BodyFraming::Length(5));
        assert_eq!(state.discard(b"abc").unwrap(), 3);
        assert!(!state.is_done());
        assert_eq!(state.discard(b"deGET /").unwrap(), 2);
        assert!(state.is_done());
        assert_eq!(state.discard(b"more").unwrap(), 0);
    }

    #[test]
    fn chunked_bodies_stop_after_the_last_chunk() {
        let mut state = BodyState::new(BodyFraming::Chunked);
        let input = b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        let consumed = state.discard(input).unwrap();
        assert_eq!(&input[consumed..], b"GET / HTTP/1.1\r\n");
        assert!(state.is_done());
    }

    #[test]
    fn chunked_bodies_across_reads() {
        let mut state = BodyState::new(BodyFraming::Chunked);
        let input = b"a\r\n0123456789\r\n0\r\n\r\n";
        let mut total = 0;
        for piece in input.chunks(3) {
            total += state.discard(piece).unwrap();
        }
        assert_eq!(total, input.len());
        assert!(state.is_done());
    }

    #[test]
    fn invalid_chunks_are_errors() {
        let mut state = BodyState::new(BodyFraming::Chunked);
        assert!(state.discard(b"zz\r\n").is_err());
    }
}
