//! QPACK (RFC 9204): the field compression of HTTP/3.
//!
//! [`Decoder`] turns encoded field sections into fields, keeps the dynamic table in step
//! with the peer's encoder stream, tracks the streams blocked on entries not yet received
//! (at most SETTINGS_QPACK_BLOCKED_STREAMS of them) and writes the decoder stream's
//! acknowledgements. [`Encoder`] writes field sections for the peer's decoder; it refers
//! only to dynamic entries the peer has acknowledged, so it never blocks a peer stream, and
//! it never evicts an entry a section in flight still refers to. [`SectionWriter`] writes
//! each representation by hand, for tests and for callers with their own policy.
//!
//! The pieces: prefixed integers and string literals ([`wire`]; the Huffman code is
//! HPACK's, shared from `portico-http2`), the static table of Appendix A ([`static_table`])
//! and the dynamic table ([`table`]).

use std::fmt;

pub mod static_table;
pub mod table;
pub mod wire;

mod decoder;
mod encoder;

pub use decoder::{Decoded, Decoder, DecoderSettings};
pub use encoder::{EncodeError, Encoder, SectionWriter};

use crate::error::Code;

/// The size an entry counts for in the dynamic table: name and value lengths plus 32
/// (§3.2.1).
pub fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// What was wrong in a field section or an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The input ended inside a representation or an instruction.
    Truncated,
    /// An integer above 2^62 - 1.
    IntegerOverflow,
    /// Huffman data with EOS, or bad padding.
    BadHuffman,
    /// A static index past the 99 entries.
    BadStaticIndex { index: u64 },
    /// A dynamic reference to an entry evicted, not yet inserted, or at or past the
    /// section's Required Insert Count.
    BadDynamicIndex { index: u64 },
    /// An Encoded Required Insert Count that no Required Insert Count maps to (§4.5.1.1).
    BadRequiredInsertCount { encoded: u64 },
    /// A Base below zero.
    BadBase,
    /// A section that would block one stream more than SETTINGS_QPACK_BLOCKED_STREAMS.
    TooManyBlockedStreams,
    /// A decoded field section larger than SETTINGS_MAX_FIELD_SECTION_SIZE (not a
    /// connection error: the connection refuses the one request).
    FieldSectionTooLarge,
    /// A Set Dynamic Table Capacity above SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    CapacityTooLarge { capacity: u64 },
    /// An insertion larger than the table's capacity.
    EntryTooLarge { size: u64 },
    /// A string longer than any entry could hold.
    StringTooLong { length: u64 },
    /// A Section Acknowledgment for a stream with no section outstanding.
    UnexpectedAcknowledgment { stream_id: u64 },
    /// An Insert Count Increment of zero or past the entries inserted.
    BadIncrement { increment: u64 },
}

impl fmt::Display for Cause {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated => formatter.write_str("truncated"),
            Self::IntegerOverflow => formatter.write_str("integer too large"),
            Self::BadHuffman => formatter.write_str("invalid Huffman encoding"),
            Self::BadStaticIndex { index } => write!(formatter, "invalid static index {index}"),
            Self::BadDynamicIndex { index } => {
                write!(formatter, "invalid dynamic index {index}")
            }
            Self::BadRequiredInsertCount { encoded } => {
                write!(formatter, "invalid encoded Required Insert Count {encoded}")
            }
            Self::BadBase => formatter.write_str("negative Base"),
            Self::TooManyBlockedStreams => formatter.write_str("too many blocked streams"),
            Self::FieldSectionTooLarge => formatter.write_str("field section too large"),
            Self::CapacityTooLarge { capacity } => {
                write!(formatter, "table capacity {capacity} above the maximum")
            }
            Self::EntryTooLarge { size } => write!(formatter, "entry of {size} too large"),
            Self::StringTooLong { length } => write!(formatter, "string of {length} too long"),
            Self::UnexpectedAcknowledgment { stream_id } => {
                write!(
                    formatter,
                    "unexpected acknowledgment for stream {stream_id}"
                )
            }
            Self::BadIncrement { increment } => {
                write!(formatter, "invalid insert count increment {increment}")
            }
        }
    }
}

/// A QPACK error and where it was found, which decides its code (§6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpackError {
    /// In a field section: QPACK_DECOMPRESSION_FAILED.
    Section(Cause),
    /// On the encoder stream: QPACK_ENCODER_STREAM_ERROR.
    EncoderStream(Cause),
    /// On the decoder stream: QPACK_DECODER_STREAM_ERROR.
    DecoderStream(Cause),
}

impl QpackError {
    pub fn code(self) -> Code {
        match self {
            Self::Section(_) => Code::QpackDecompressionFailed,
            Self::EncoderStream(_) => Code::QpackEncoderStreamError,
            Self::DecoderStream(_) => Code::QpackDecoderStreamError,
        }
    }

    pub fn cause(self) -> Cause {
        match self {
            Self::Section(cause) | Self::EncoderStream(cause) | Self::DecoderStream(cause) => cause,
        }
    }
}

impl fmt::Display for QpackError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Section(cause) => write!(formatter, "field section: {cause}"),
            Self::EncoderStream(cause) => write!(formatter, "encoder stream: {cause}"),
            Self::DecoderStream(cause) => write!(formatter, "decoder stream: {cause}"),
        }
    }
}

impl std::error::Error for QpackError {}

#[cfg(test)]
mod tests;
