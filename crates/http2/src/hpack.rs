//! HPACK (RFC 7541): the header compression of HTTP/2.
//!
//! [`Decoder`] turns a complete header block into fields and keeps the dynamic table in
//! step with the peer's encoder; [`Encoder`] writes fields for the peer's decoder. The
//! pieces are the prefixed integer codec ([`integer`]), the Huffman code of Appendix B
//! ([`huffman`]) and the static and dynamic tables ([`table`]).
//!
//! Limits (the HPACK bomb defence): the decoder takes a maximum for one field and for the
//! whole list, and stops keeping fields once past it while it still decodes the rest of
//! the block, so that its dynamic table stays in step; the connection then decides (it
//! ends, as nginx's does). [`BlockScan`] reads the integers of a block still arriving, so
//! that one too long is refused before its frame is complete.

use std::fmt;

pub mod huffman;
pub mod integer;
pub mod scan;
pub mod table;

mod decoder;
mod encoder;
mod list;

pub use decoder::{DecodeLimits, Decoded, Decoder, Limit};
pub use encoder::Encoder;
pub use list::{Field, FieldList};
pub use scan::BlockScan;

/// A header field as a header block carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderField {
    /// The name, as sent (HTTP/2 requires lower case; `request` checks it).
    pub name: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// Whether the field was sent as never indexed (§6.2.3), to be kept so when forwarded.
    pub sensitive: bool,
}

impl HeaderField {
    /// A field that may be indexed.
    pub fn new(name: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            sensitive: false,
        }
    }

    /// The size the field counts for in a table or a header list (§4.1).
    pub fn size(&self) -> usize {
        entry_size(&self.name, &self.value)
    }
}

/// The size of an entry: name and value lengths plus 32 (§4.1).
pub fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// Why a header block could not be decoded; each is a COMPRESSION_ERROR (§4.3 of RFC 9113).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpackError {
    /// The block ended inside a representation.
    Truncated,
    /// An integer above 2^32-1, or with more continuation bytes than that needs.
    IntegerOverflow,
    /// Index 0, or an index past the end of the tables.
    BadIndex { index: u64 },
    /// A dynamic table size update above the size the decoder allows.
    TableSizeTooLarge { size: u64 },
    /// A dynamic table size update after the first field of a block.
    LateTableSizeUpdate,
    /// Huffman data with the EOS symbol, or padding longer than 7 bits or not all ones.
    BadHuffman,
}

impl fmt::Display for HpackError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated => formatter.write_str("header block truncated"),
            Self::IntegerOverflow => formatter.write_str("integer too large"),
            Self::BadIndex { index } => write!(formatter, "invalid index {index}"),
            Self::TableSizeTooLarge { size } => {
                write!(formatter, "table size update to {size} above the limit")
            }
            Self::LateTableSizeUpdate => formatter.write_str("table size update after a field"),
            Self::BadHuffman => formatter.write_str("invalid Huffman encoding"),
        }
    }
}

impl std::error::Error for HpackError {}

#[cfg(test)]
mod tests;
