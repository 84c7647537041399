//! The encoding side: fields in, field sections and encoder-stream instructions out;
//! decoder-stream instructions in.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use http2::hpack::HeaderField;

use super::table::{DynamicTable, Entry};
use super::wire::{decode_integer, encode_integer, encode_string};
use super::{Cause, QpackError, entry_size, static_table};

/// Why the encoder could not change its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// Making room would evict an entry the decoder has not acknowledged or that a section
    /// in flight refers to (§2.1.1).
    NoRoom,
    /// A capacity above the decoder's SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    AboveMaximum,
    /// No entry at that absolute index.
    NoEntry,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::NoRoom => "no evictable room in the dynamic table",
            Self::AboveMaximum => "capacity above the decoder's maximum",
            Self::NoEntry => "no such dynamic table entry",
        })
    }
}

impl std::error::Error for EncodeError {}

/// Writes one field section, representation by representation (§4.5). The writer knows
/// the section's Base; the Required Insert Count follows from the dynamic entries used.
#[derive(Clone, Debug)]
pub struct SectionWriter {
    max_entries: u64,
    base: u64,
    required: u64,
    references: Vec<u64>,
    huffman: bool,
    body: Vec<u8>,
}

impl SectionWriter {
    /// A writer for a decoder whose SETTINGS_QPACK_MAX_TABLE_CAPACITY is
    /// `decoder_max_capacity`, with the given Base.
    pub fn new(decoder_max_capacity: u64, base: u64, huffman: bool) -> Self {
        Self {
            max_entries: decoder_max_capacity / 32,
            base,
            required: 0,
            references: Vec::new(),
            huffman,
            body: Vec::new(),
        }
    }

    fn refer(&mut self, absolute: u64) {
        self.required = self.required.max(absolute + 1);
        self.references.push(absolute);
    }

    /// Indexed Field Line, static table.
    pub fn indexed_static(&mut self, index: u64) {
        encode_integer(index, 6, 0xc0, &mut self.body);
    }

    /// Indexed Field Line (relative) or With Post-Base Index, as the Base decides.
    pub fn indexed_dynamic(&mut self, absolute: u64) {
        if absolute < self.base {
            encode_integer(self.base - 1 - absolute, 6, 0x80, &mut self.body);
        } else {
            encode_integer(absolute - self.base, 4, 0x10, &mut self.body);
        }
        self.refer(absolute);
    }

    /// Literal Field Line With Name Reference, static table.
    pub fn literal_static_name(&mut self, index: u64, value: &[u8], sensitive: bool) {
        let never = if sensitive { 0x20 } else { 0 };
        encode_integer(index, 4, 0x50 | never, &mut self.body);
        encode_string(value, 7, 0, self.huffman, &mut self.body);
    }

    /// Literal Field Line With (Post-Base) Name Reference, dynamic table.
    pub fn literal_dynamic_name(&mut self, absolute: u64, value: &[u8], sensitive: bool) {
        if absolute < self.base {
            let never = if sensitive { 0x20 } else { 0 };
            encode_integer(self.base - 1 - absolute, 4, 0x40 | never, &mut self.body);
        } else {
            let never = if sensitive { 0x08 } else { 0 };
            encode_integer(absolute - self.base, 3, never, &mut self.body);
        }
        encode_string(value, 7, 0, self.huffman, &mut self.body);
        self.refer(absolute);
    }

    /// Literal Field Line With Literal Name.
    pub fn literal(&mut self, name: &[u8], value: &[u8], sensitive: bool) {
        let never = if sensitive { 0x10 } else { 0 };
        encode_string(name, 3, 0x20 | never, self.huffman, &mut self.body);
        encode_string(value, 7, 0, self.huffman, &mut self.body);
    }

    /// The Required Insert Count so far.
    pub fn required_insert_count(&self) -> u64 {
        self.required
    }

    /// The section: its prefix (§4.5.1), then the representations.
    pub fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body.len() + 4);
        if self.required == 0 {
            out.extend_from_slice(&[0, 0]);
        } else {
            debug_assert!(self.max_entries > 0, "a dynamic reference needs a table");
            let encoded = self.required % (2 * self.max_entries) + 1;
            encode_integer(encoded, 8, 0, &mut out);
            if self.base >= self.required {
                encode_integer(self.base - self.required, 7, 0, &mut out);
            } else {
                encode_integer(self.required - self.base - 1, 7, 0x80, &mut out);
            }
        }
        out.extend_from_slice(&self.body);
        out
    }
}

/// A section sent with dynamic references and not yet acknowledged.
#[derive(Clone, Debug)]
struct Outstanding {
    required: u64,
    references: Vec<u64>,
}

/// The longest decoder-stream instruction: a 62-bit integer takes 10 bytes.
const DECODER_INSTRUCTION_MAX: usize = 11;

/// The encoder of one connection.
#[derive(Clone, Debug)]
pub struct Encoder {
    table: DynamicTable,
    decoder_max_capacity: u64,
    huffman: bool,
    known_received: u64,
    /// Outstanding references per absolute index.
    references: BTreeMap<u64, u32>,
    /// Sections per stream, oldest first, awaiting a Section Acknowledgment.
    outstanding: BTreeMap<u64, VecDeque<Outstanding>>,
    instructions: Vec<u8>,
    partial: Vec<u8>,
}

impl Encoder {
    /// An encoder for a decoder that announced `decoder_max_capacity`; the table starts at
    /// capacity 0 (§3.2.3) until [`Encoder::set_capacity`].
    pub fn new(decoder_max_capacity: u64) -> Self {
        Self {
            table: DynamicTable::default(),
            decoder_max_capacity,
            huffman: true,
            known_received: 0,
            references: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            instructions: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// Whether strings are Huffman-coded when that is shorter (the default).
    pub fn set_huffman(&mut self, huffman: bool) {
        self.huffman = huffman;
    }

    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// The Known Received Count (§2.1.4).
    pub fn known_received_count(&self) -> u64 {
        self.known_received
    }

    /// Whether the oldest `count` entries may all be evicted.
    fn evictable(&self, count: usize) -> bool {
        self.table.iter().take(count).all(|(absolute, _)| {
            absolute < self.known_received && !self.references.contains_key(&absolute)
        })
    }

    /// Whether `size` more bytes fit after evicting only what may be evicted.
    fn room_for(&self, size: usize) -> bool {
        self.table
            .evictions_for(size, self.table.capacity())
            .is_some_and(|count| self.evictable(count))
    }

    /// Sets the table's capacity, with a Set Dynamic Table Capacity instruction.
    pub fn set_capacity(&mut self, capacity: u64) -> Result<(), EncodeError> {
        if capacity > self.decoder_max_capacity {
            return Err(EncodeError::AboveMaximum);
        }
        let capacity = capacity as usize;
        let evictions = self
            .table
            .evictions_for(0, capacity)
            .ok_or(EncodeError::NoRoom)?;
        if !self.evictable(evictions) {
            return Err(EncodeError::NoRoom);
        }
        encode_integer(capacity as u64, 5, 0x20, &mut self.instructions);
        self.table.set_capacity(capacity);
        Ok(())
    }

    /// Inserts a field, naming it by a static or dynamic reference where one has the name;
    /// returns the new entry's absolute index.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) -> Result<u64, EncodeError> {
        if !self.room_for(entry_size(name, value)) {
            return Err(EncodeError::NoRoom);
        }
        let out = &mut self.instructions;
        if let Some((index, _)) = static_table::find(name, value) {
            encode_integer(index, 6, 0xc0, out);
        } else if let Some((absolute, _)) = self.table.iter().rev().find(|(_, e)| e.name == name) {
            let relative = self.table.insert_count() - 1 - absolute;
            encode_integer(relative, 6, 0x80, out);
        } else {
            encode_string(name, 5, 0x40, self.huffman, out);
        }
        encode_string(value, 7, 0, self.huffman, out);
        let inserted = self.table.insert(Entry {
            name: name.to_vec(),
            value: value.to_vec(),
        });
        debug_assert!(inserted, "room_for checked the size");
        Ok(self.table.insert_count() - 1)
    }

    /// Inserts a copy of an existing entry (§4.3.4); returns the copy's absolute index.
    pub fn duplicate(&mut self, absolute: u64) -> Result<u64, EncodeError> {
        let entry = self
            .table
            .get(absolute)
            .ok_or(EncodeError::NoEntry)?
            .clone();
        if !self.room_for(entry.size()) {
            return Err(EncodeError::NoRoom);
        }
        let relative = self.table.insert_count() - 1 - absolute;
        encode_integer(relative, 5, 0x00, &mut self.instructions);
        self.table.insert(entry);
        Ok(self.table.insert_count() - 1)
    }

    /// A writer for a section with the Base at the current Insert Count.
    pub fn writer(&self) -> SectionWriter {
        SectionWriter::new(
            self.decoder_max_capacity,
            self.table.insert_count(),
            self.huffman,
        )
    }

    /// A writer for a section with the given Base.
    pub fn writer_with_base(&self, base: u64) -> SectionWriter {
        SectionWriter::new(self.decoder_max_capacity, base, self.huffman)
    }

    /// Finishes a section written for `stream_id`, keeping its dynamic references until
    /// the decoder acknowledges or cancels it.
    pub fn commit(&mut self, stream_id: u64, writer: SectionWriter) -> Vec<u8> {
        if writer.required > 0 {
            for &absolute in &writer.references {
                *self.references.entry(absolute).or_default() += 1;
            }
            self.outstanding
                .entry(stream_id)
                .or_default()
                .push_back(Outstanding {
                    required: writer.required,
                    references: writer.references.clone(),
                });
        }
        writer.finish()
    }

    /// Encodes `fields` for `stream_id`. Exact static matches are indexed; dynamic entries
    /// are used only once acknowledged, so the decoder never blocks on this section; fields
    /// worth keeping are inserted for later sections when the table has room; sensitive
    /// fields are literals marked never-indexed.
    pub fn encode_section(&mut self, stream_id: u64, fields: &[HeaderField]) -> Vec<u8> {
        let mut writer = self.writer();
        for field in fields {
            let (name, value) = (&field.name[..], &field.value[..]);
            let in_static = static_table::find(name, value);
            // An indexed line has no never-indexed bit: a sensitive field stays a literal
            // even where the static table holds it whole.
            if let (Some((index, true)), false) = (in_static, field.sensitive) {
                writer.indexed_static(index);
                continue;
            }
            if !field.sensitive {
                if let Some(absolute) =
                    self.acknowledged(|entry| entry.name == name && entry.value == value)
                {
                    writer.indexed_dynamic(absolute);
                    continue;
                }
                if self.worth_inserting(field) {
                    // For the next sections: this one does not wait for it.
                    let _ = self.insert(name, value);
                }
            }
            if let Some((index, _)) = in_static {
                writer.literal_static_name(index, value, field.sensitive);
            } else if let Some(absolute) = self.acknowledged(|entry| entry.name == name) {
                writer.literal_dynamic_name(absolute, value, field.sensitive);
            } else {
                writer.literal(name, value, field.sensitive);
            }
        }
        self.commit(stream_id, writer)
    }

    /// The newest acknowledged entry that `matches`.
    fn acknowledged(&self, matches: impl Fn(&Entry) -> bool) -> Option<u64> {
        self.table
            .iter()
            .rev()
            .find(|&(absolute, entry)| absolute < self.known_received && matches(entry))
            .map(|(absolute, _)| absolute)
    }

    /// Fields whose values change with every response are not worth a table entry; nor is
    /// one taking more than a quarter of the table.
    fn worth_inserting(&self, field: &HeaderField) -> bool {
        const VOLATILE: [&[u8]; 6] = [
            b"date",
            b"content-length",
            b"etag",
            b"last-modified",
            b"set-cookie",
            b"location",
        ];
        self.table.capacity() > 0
            && field.size() <= self.table.capacity() / 4
            && !VOLATILE.contains(&&field.name[..])
    }

    /// Applies decoder-stream bytes (§4.4).
    pub fn receive_decoder_stream(&mut self, input: &[u8]) -> Result<(), QpackError> {
        let error = QpackError::DecoderStream;
        let mut pending = std::mem::take(&mut self.partial);
        pending.extend_from_slice(input);
        let mut rest = &pending[..];
        while let Some(&first) = rest.first() {
            let prefix_bits = if first & 0x80 != 0 { 7 } else { 6 };
            let Some((value, used)) = decode_integer(rest, prefix_bits).map_err(error)? else {
                break;
            };
            rest = &rest[used..];
            if first & 0x80 != 0 {
                self.acknowledge_section(value)?;
            } else if first & 0x40 != 0 {
                self.cancel_stream(value);
            } else {
                let increment = value;
                let bad = error(Cause::BadIncrement { increment });
                let known = self.known_received.checked_add(increment).ok_or(bad)?;
                if increment == 0 || known > self.table.insert_count() {
                    return Err(bad);
                }
                self.known_received = known;
            }
        }
        if rest.len() > DECODER_INSTRUCTION_MAX {
            return Err(error(Cause::IntegerOverflow));
        }
        self.partial = rest.to_vec();
        Ok(())
    }

    fn acknowledge_section(&mut self, stream_id: u64) -> Result<(), QpackError> {
        let unexpected = QpackError::DecoderStream(Cause::UnexpectedAcknowledgment { stream_id });
        let sections = self.outstanding.get_mut(&stream_id).ok_or(unexpected)?;
        let section = sections.pop_front().ok_or(unexpected)?;
        if sections.is_empty() {
            self.outstanding.remove(&stream_id);
        }
        self.release(&section.references);
        self.known_received = self.known_received.max(section.required);
        Ok(())
    }

    fn cancel_stream(&mut self, stream_id: u64) {
        for section in self.outstanding.remove(&stream_id).unwrap_or_default() {
            self.release(&section.references);
        }
    }

    fn release(&mut self, references: &[u64]) {
        for absolute in references {
            if let Some(count) = self.references.get_mut(absolute) {
                *count -= 1;
                if *count == 0 {
                    self.references.remove(absolute);
                }
            }
        }
    }

    /// Whether an entry is blocking: not acknowledged or still referred to.
    pub fn is_blocking(&self, absolute: u64) -> bool {
        absolute >= self.known_received || self.references.contains_key(&absolute)
    }

    /// The encoder-stream bytes to send.
    pub fn take_instructions(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.instructions)
    }
}
