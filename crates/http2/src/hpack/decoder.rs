//! Decoding a header block (RFC 7541 §3, §6).

use super::table::{self, DynamicTable};
use super::{FieldList, HpackError, huffman, integer};

/// The limits one header block is decoded under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// The largest name, and the largest value, of one field (nginx checks each against
    /// `large_client_header_buffers`' size).
    pub max_field_size: usize,
    /// The largest header list, fields counted as name + value, as nginx counts it against
    /// `large_client_header_buffers` (number times size); not RFC 9113 §6.5.2's + 32.
    pub max_list_size: usize,
}

/// A decoded header block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The fields, in order, up to the first that broke a limit.
    pub fields: FieldList,
    /// The whole list's size as the block describes it, all fields counted.
    pub list_size: usize,
    /// The largest single field (name plus value) in the block.
    pub largest_field: usize,
    /// The first limit broken, if one was: `fields` is then incomplete.
    pub over_limit: Option<Limit>,
}

/// A limit of [`DecodeLimits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// A name or a value longer than `max_field_size`.
    Field,
    /// The list longer than `max_list_size`.
    List,
}

/// The receiving side of one connection's HPACK context.
#[derive(Clone, Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// The SETTINGS_HEADER_TABLE_SIZE in force: a size update above it is an error.
    size_allowed: usize,
    /// Counts the changes to the table (entries added, size updates).
    changes: u64,
    /// The last block decoded without a change to the table, and what it decoded to.
    repeat: Repeat,
}

/// A header block and its decoded list, while decoding the same bytes again gives the
/// same list: the table has not changed since (the block changed nothing either). A
/// client that sends the same request again (an API client, a gRPC client calling one
/// method, a health check) sends the same block once its fields are in the table.
#[derive(Clone, Debug, Default)]
struct Repeat {
    block: Vec<u8>,
    decoded: Decoded,
    limits: Option<DecodeLimits>,
    /// The table's change count when the block was decoded; `None`: nothing kept.
    changes: Option<u64>,
}

/// Blocks longer than this, or decoding to more bytes than twice this, are not kept.
const REPEAT_BLOCK_MAX: usize = 512;

impl Decoder {
    /// A decoder whose peer may use a table of up to `size_allowed` bytes.
    pub fn new(size_allowed: usize) -> Self {
        Self {
            table: DynamicTable::new(size_allowed),
            size_allowed,
            changes: 0,
            repeat: Repeat::default(),
        }
    }

    /// The dynamic table, for tests and accounting.
    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// Decodes a complete header block. An error leaves the context unusable: the caller
    /// ends the connection with COMPRESSION_ERROR.
    pub fn decode(&mut self, block: &[u8], limits: DecodeLimits) -> Result<Decoded, HpackError> {
        self.decode_into(block, limits, FieldList::new())
    }

    /// As [`Self::decode`], into `fields` (an empty list whose memory is reused).
    pub fn decode_into(
        &mut self,
        block: &[u8],
        limits: DecodeLimits,
        mut fields: FieldList,
    ) -> Result<Decoded, HpackError> {
        let changes = self.changes;
        let repeat = &self.repeat;
        if repeat.changes == Some(changes) && repeat.limits == Some(limits) && repeat.block == block
        {
            fields.copy_from(&repeat.decoded.fields);
            return Ok(Decoded {
                fields,
                ..repeat.decoded
            });
        }
        let decoded = self.decode_fresh(block, limits, fields)?;
        let keep = self.changes == changes
            && block.len() <= REPEAT_BLOCK_MAX
            && decoded.fields.bytes_len() <= 2 * REPEAT_BLOCK_MAX
            && decoded.over_limit.is_none();
        let repeat = &mut self.repeat;
        repeat.changes = None;
        if keep {
            repeat.block.clear();
            repeat.block.extend_from_slice(block);
            repeat.decoded.fields.copy_from(&decoded.fields);
            repeat.decoded.list_size = decoded.list_size;
            repeat.decoded.largest_field = decoded.largest_field;
            repeat.decoded.over_limit = None;
            repeat.limits = Some(limits);
            repeat.changes = Some(changes);
        }
        Ok(decoded)
    }

    fn decode_fresh(
        &mut self,
        block: &[u8],
        limits: DecodeLimits,
        mut fields: FieldList,
    ) -> Result<Decoded, HpackError> {
        debug_assert!(fields.is_empty());
        // Room for what a block usually decodes to, so that the buffer grows at most once:
        // an index of one byte stands for a whole field (a browser's request of a few
        // hundred bytes arrives, after the first, as a few dozen), and a Huffman string
        // decodes to about 1.6 times its length.
        fields.reserve(16, 512 + block.len() * 2);
        let mut decoded = Decoded {
            fields,
            ..Decoded::default()
        };
        let mut rest = block;
        let mut seen_field = false;
        // Names and values, as the list limit counts them.
        let mut list_bytes = 0usize;
        while let Some(&first) = rest.first() {
            if first & 0xe0 == 0x20 {
                if seen_field {
                    return Err(HpackError::LateTableSizeUpdate);
                }
                let (size, used) = integer::decode(rest, 5)?;
                if size > self.size_allowed as u64 {
                    return Err(HpackError::TableSizeTooLarge { size });
                }
                self.table.set_max_size(size as usize);
                self.changes += 1;
                rest = &rest[used..];
                continue;
            }
            seen_field = true;
            let start = decoded.fields.bytes_mut().len();
            let (used, name_len, sensitive) = self.field(rest, decoded.fields.bytes_mut())?;
            rest = &rest[used..];
            let field_size = decoded.fields.bytes_mut().len() - start;
            let value_len = field_size - name_len;
            decoded.largest_field = decoded.largest_field.max(field_size);
            decoded.list_size = decoded.list_size.saturating_add(field_size + 32);
            list_bytes = list_bytes.saturating_add(field_size);
            if decoded.over_limit.is_none() {
                if name_len.max(value_len) > limits.max_field_size {
                    decoded.over_limit = Some(Limit::Field);
                } else if list_bytes > limits.max_list_size {
                    decoded.over_limit = Some(Limit::List);
                }
            }
            if decoded.over_limit.is_none() {
                decoded.fields.commit(start, name_len, sensitive);
            } else {
                decoded.fields.discard(start);
            }
        }
        Ok(decoded)
    }

    /// Decodes one field representation, appending its name and then its value to `out`;
    /// returns the bytes it took, the name's length and whether it is never indexed.
    fn field(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(usize, usize, bool), HpackError> {
        let first = input[0];
        let start = out.len();
        if first & 0x80 != 0 {
            let (index, used) = integer::decode(input, 7)?;
            let (name, value) =
                table::lookup(&self.table, index).ok_or(HpackError::BadIndex { index })?;
            out.extend_from_slice(name);
            out.extend_from_slice(value);
            return Ok((used, name.len(), false));
        }
        // Literal: with incremental indexing (01), never indexed (0001) or without (0000).
        let (prefix_bits, indexing, sensitive) = match first & 0xf0 {
            0x40..=0x70 => (6, true, false),
            0x10 => (4, false, true),
            _ => (4, false, false),
        };
        let (index, mut used) = integer::decode(input, prefix_bits)?;
        if index == 0 {
            used += string(&input[used..], out)?;
        } else {
            let (name, _) =
                table::lookup(&self.table, index).ok_or(HpackError::BadIndex { index })?;
            out.extend_from_slice(name);
        }
        let name_len = out.len() - start;
        used += string(&input[used..], out)?;
        if indexing {
            let (name, value) = out[start..].split_at(name_len);
            self.table.insert(name, value);
            self.changes += 1;
        }
        Ok((used, name_len, sensitive))
    }
}

/// Decodes a string literal (§5.2), appending it to `out`; returns the bytes it took.
fn string(input: &[u8], out: &mut Vec<u8>) -> Result<usize, HpackError> {
    let &first = input.first().ok_or(HpackError::Truncated)?;
    let (length, used) = integer::decode(input, 7)?;
    let end = usize::try_from(length)
        .ok()
        .and_then(|length| used.checked_add(length));
    let Some(raw) = end.and_then(|end| input.get(used..end)) else {
        return Err(HpackError::Truncated);
    };
    if first & 0x80 != 0 {
        huffman::decode(raw, out)?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(used + raw.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::Encoder;

    #[test]
    fn a_repeated_block_decodes_as_a_fresh_decoding_does() {
        let limits = DecodeLimits {
            max_field_size: 4096,
            max_list_size: 32 * 1024,
        };
        let request: [(&[u8], &[u8]); 5] = [
            (b":method", b"GET"),
            (b":path", b"/"),
            (b":scheme", b"http"),
            (b":authority", b"localhost:8080"),
            (b"user-agent", b"test/1.0"),
        ];
        let mut encoder = Encoder::new();
        let mut blocks = Vec::new();
        for round in 0..6 {
            let mut block = Vec::new();
            if round == 3 {
                // A size update makes the same fields another block, and changes the table.
                encoder.set_peer_max_size(64);
            }
            encoder.encode_pairs(request.iter().copied(), &mut block);
            blocks.push(block);
        }
        // The same bytes twice in a row, with a table change between them: the size update
        // the first carries.
        let update = blocks[3].clone();
        blocks.insert(4, update);
        let mut repeating = Decoder::new(4096);
        let mut fresh = Decoder::new(4096);
        let mut repeats = 0;
        for (step, block) in blocks.iter().enumerate() {
            let before = repeating.changes;
            let hit = repeating.repeat.changes == Some(before) && repeating.repeat.block == *block;
            let mine = repeating.decode(block, limits);
            let theirs = fresh.decode_fresh(block, limits, FieldList::new());
            assert_eq!(mine, theirs, "block {step}");
            repeats += usize::from(hit);
        }
        assert!(repeats >= 1, "{repeats} blocks repeated");
        assert_eq!(repeating.table().len(), fresh.table().len());
    }
}
