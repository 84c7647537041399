//! A body made of pieces of memory and of one file, optionally recoded by the charset
//! filter: what the range filter makes of a `multipart/byteranges` response and the
//! charset filter of a recoded one. Each file piece is read on the pool as it is sent.

use std::io;

use crate::kernel::file::io::FileBody;
use crate::kernel::request::Request;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::{Body, BodyContext, Output, finish};
use crate::kernel::send::file::{CacheFirst, read_file};
use crate::kernel::send::framing::{CHUNK_END, Framing};
use crate::kernel::send::turn::Turn;

/// File pieces are read from the pool in reads of at most this size.
const READ_BYTES_MAX: usize = 256 * 1024;

/// Reads of a recoded body: the size of nginx's output buffers (`output_buffers 2 32k`),
/// which the charset filter recodes one at a time. Recoding to UTF-8 passes a buffer whose
/// every byte maps to one byte unchanged, so the buffers must be nginx's for the same bytes.
const RECODED_READ_BYTES_MAX: usize = 32 * 1024;

/// One piece of the body.
#[derive(Clone, Debug)]
pub enum Piece<'a> {
    Bytes(Bytes<'a>),
    /// Bytes of [`Pieces::file`], by absolute offset in the file.
    File {
        offset: u64,
        len: u64,
    },
}

impl Piece<'_> {
    fn len(&self) -> u64 {
        match self {
            Piece::Bytes(bytes) => bytes.len() as u64,
            Piece::File { len, .. } => *len,
        }
    }
}

/// A recoding of a body's bytes, applied buffer by buffer as the body goes out (the
/// charset filter's).
pub trait Recode: std::fmt::Debug {
    /// Whether the recoded body may differ in length from the original.
    fn changes_length(&self) -> bool;
    /// Appends the recoding of the body's next buffer to `out`.
    fn recode(&mut self, input: &[u8], out: &mut Vec<u8>);
}

/// The pieces, the file they may refer to, and the recoder they go through.
#[derive(Debug, Default)]
pub struct Pieces<'a> {
    pub file: Option<FileBody>,
    pub pieces: Vec<Piece<'a>>,
    pub recoder: Option<Box<dyn Recode>>,
}

impl<'a> Pieces<'a> {
    /// Any body as pieces.
    pub(crate) fn from_body(body: Body<'a>) -> Pieces<'a> {
        match body {
            Body::Empty => Pieces::default(),
            Body::Bytes(bytes) => Pieces {
                pieces: vec![Piece::Bytes(bytes)],
                ..Pieces::default()
            },
            Body::File(file) => Pieces {
                pieces: vec![Piece::File {
                    offset: file.offset,
                    len: file.len,
                }],
                file: Some(file),
                recoder: None,
            },
            Body::Pieces(pieces) => pieces,
            // `send_response` keeps proxied bodies away from the filters that make pieces.
            Body::Upstream(_) => Pieces::default(),
        }
    }

    /// The length when it is known before sending: not after a recoding that may change it.
    pub fn len(&self) -> Option<u64> {
        if self
            .recoder
            .as_ref()
            .is_some_and(|recoder| recoder.changes_length())
        {
            return None;
        }
        Some(self.pieces.iter().map(Piece::len).sum())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The pieces that hold bytes `start..end` of the body.
    pub fn slice(&self, start: u64, end: u64) -> Vec<Piece<'a>> {
        let mut sliced = Vec::new();
        let mut position = 0;
        for piece in &self.pieces {
            let (piece_start, piece_end) = (position, position + piece.len());
            position = piece_end;
            let (from, to) = (start.max(piece_start), end.min(piece_end));
            if from >= to {
                continue;
            }
            let (skip, take) = (from - piece_start, to - from);
            sliced.push(match piece {
                Piece::Bytes(bytes) => {
                    let range = skip as usize..(skip + take) as usize;
                    Piece::Bytes(match bytes {
                        Bytes::Borrowed(slice) => Bytes::Borrowed(&slice[range]),
                        Bytes::Owned(vec) => Bytes::Owned(vec[range].to_vec()),
                        Bytes::Shared(shared) => Bytes::Owned(shared[range].to_vec()),
                        Bytes::Part(shared, start, _) => Bytes::Part(
                            std::sync::Arc::clone(shared),
                            start + range.start as u32,
                            start + range.end as u32,
                        ),
                    })
                }
                Piece::File { offset, .. } => Piece::File {
                    offset: offset + skip,
                    len: take,
                },
            });
        }
        sliced
    }
}

/// Writes the pieces after the head. Memory pieces gather behind what is pending; before
/// each file read the pending bytes go out (one chunk when chunked), so a multipart body
/// is framed as nginx frames it: the first part's head, then each part's data with the
/// next part's head.
pub(super) async fn send_pieces(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    mut body: Pieces<'_>,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let mut writer = PieceWriter {
        chunked: context.framing == Framing::Chunked,
        pending: Vec::new(),
        recoder: body.recoder.take(),
    };
    let read_max = match writer.recoder {
        Some(_) => RECODED_READ_BYTES_MAX,
        None => READ_BYTES_MAX,
    };
    let mut turn = Turn::new();
    let mut cache_first = CacheFirst::for_body(context);
    for piece in std::mem::take(&mut body.pieces) {
        match piece {
            Piece::Bytes(bytes) => writer.push(bytes.as_slice()),
            Piece::File { offset, len } => {
                let Some(file) = &body.file else {
                    return Err(io::Error::other("file piece without a file"));
                };
                let end = offset + len;
                let mut at = offset;
                while at < end {
                    writer.flush(output, head).await?;
                    let take = (end - at).min(read_max as u64) as usize;
                    let data =
                        read_file(context, file, at, Vec::new(), take, &mut cache_first).await?;
                    writer.push(&data);
                    at += take as u64;
                    turn.after_piece().await;
                }
            }
        }
    }
    writer.flush(output, head).await?;
    finish(context, request, head);
    if head.is_empty() {
        return Ok(());
    }
    output.write(head).await
}

/// The bytes between reads, recoded, and how they are framed.
struct PieceWriter {
    chunked: bool,
    pending: Vec<u8>,
    recoder: Option<Box<dyn Recode>>,
}

impl PieceWriter {
    fn push(&mut self, data: &[u8]) {
        match &mut self.recoder {
            Some(recoder) => recoder.recode(data, &mut self.pending),
            None => self.pending.extend_from_slice(data),
        }
    }

    /// Writes the pending bytes, behind the head while it has not gone out.
    async fn flush(&mut self, output: &mut Output<'_>, head: &mut Vec<u8>) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut buffer = std::mem::take(head);
        if self.chunked {
            http1::response::write_chunk_header(&mut buffer, self.pending.len());
        }
        buffer.extend_from_slice(&self.pending);
        if self.chunked {
            buffer.extend_from_slice(CHUNK_END);
        }
        self.pending.clear();
        output.write(&buffer).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cross_pieces() {
        let pieces = Pieces {
            pieces: vec![
                Piece::Bytes(Bytes::Borrowed(b"head")),
                Piece::File {
                    offset: 100,
                    len: 10,
                },
                Piece::Bytes(Bytes::Owned(b"tail".to_vec())),
            ],
            ..Pieces::default()
        };
        assert_eq!(pieces.len(), Some(18));
        let sliced = pieces.slice(2, 16);
        assert_eq!(sliced.len(), 3);
        assert!(matches!(&sliced[0], Piece::Bytes(bytes) if bytes.as_slice() == b"ad"));
        assert!(matches!(
            sliced[1],
            Piece::File {
                offset: 100,
                len: 10
            }
        ));
        assert!(matches!(&sliced[2], Piece::Bytes(bytes) if bytes.as_slice() == b"ta"));
        let inside = pieces.slice(5, 7);
        assert!(matches!(
            inside[..],
            [Piece::File {
                offset: 101,
                len: 2
            }]
        ));
        assert!(pieces.slice(7, 7).is_empty());
    }

    #[test]
    fn a_slice_of_a_part_is_a_narrower_part() {
        let stored: std::sync::Arc<[u8]> = std::sync::Arc::from(&b"xxheadyy"[..]);
        let pieces = Pieces {
            pieces: vec![Piece::Bytes(Bytes::Part(stored, 2, 6))],
            ..Pieces::default()
        };
        let sliced = pieces.slice(1, 3);
        assert!(matches!(&sliced[..], [Piece::Bytes(Bytes::Part(_, 3, 5))]));
        assert!(matches!(&sliced[0], Piece::Bytes(bytes) if bytes.as_slice() == b"ea"));
    }
}
