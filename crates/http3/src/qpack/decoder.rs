//! The decoding side: field sections in, fields out; encoder-stream instructions applied to
//! the dynamic table; decoder-stream instructions out.

use std::collections::BTreeMap;

use http2::hpack::FieldList;

use super::table::{DynamicTable, Entry};
use super::wire::{decode_integer, decode_string, encode_integer};
use super::{Cause, QpackError, entry_size, static_table};

/// What the decoder announces, and so enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecoderSettings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY: the most the peer's encoder may set the table to.
    pub max_table_capacity: u64,
    /// SETTINGS_QPACK_BLOCKED_STREAMS: how many streams may wait for entries at once.
    pub max_blocked_streams: u64,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the most a decoded section may count (names,
    /// values and 32 per field).
    pub max_field_section_size: u64,
}

/// What decoding a field section gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The fields, in order (in the list `http2::request::parse` checks a request head
    /// in), and the size they count for.
    Fields { fields: FieldList, size: u64 },
    /// The section refers to entries not yet received: call again with the same section
    /// once [`Decoder::receive_encoder_stream`] names the stream as unblocked.
    Blocked { required_insert_count: u64 },
}

/// The decoder of one connection.
#[derive(Clone, Debug)]
pub struct Decoder {
    settings: DecoderSettings,
    table: DynamicTable,
    /// Encoder-stream bytes of an instruction not yet complete.
    partial: Vec<u8>,
    /// Blocked streams and the Insert Count each waits for.
    blocked: BTreeMap<u64, u64>,
    /// The Insert Count the peer's encoder knows we reached (by our acknowledgments and
    /// increments).
    acknowledged: u64,
    /// Decoder-stream bytes not yet taken.
    instructions: Vec<u8>,
}

impl Decoder {
    pub fn new(settings: DecoderSettings) -> Self {
        Self {
            settings,
            table: DynamicTable::default(),
            partial: Vec::new(),
            blocked: BTreeMap::new(),
            acknowledged: 0,
            instructions: Vec::new(),
        }
    }

    pub fn settings(&self) -> DecoderSettings {
        self.settings
    }

    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// The streams blocked now.
    pub fn blocked_streams(&self) -> usize {
        self.blocked.len()
    }

    /// The longest string an instruction may carry: an entry holds at most the capacity,
    /// and Huffman coding makes a byte at most 30 bits long.
    fn string_limit(&self) -> u64 {
        self.settings.max_table_capacity.saturating_mul(4) + 64
    }

    /// Applies encoder-stream bytes; returns the streams that were blocked and can now be
    /// decoded, in stream order.
    pub fn receive_encoder_stream(&mut self, input: &[u8]) -> Result<Vec<u64>, QpackError> {
        let mut pending = std::mem::take(&mut self.partial);
        pending.extend_from_slice(input);
        let mut consumed = 0;
        while let Some(used) = self.instruction(&pending[consumed..])? {
            consumed += used;
        }
        pending.drain(..consumed);
        // An instruction still incomplete is bounded by its strings' limit.
        if pending.len() as u64 > 2 * self.string_limit() + 32 {
            return Err(QpackError::EncoderStream(Cause::StringTooLong {
                length: pending.len() as u64,
            }));
        }
        self.partial = pending;
        let insert_count = self.table.insert_count();
        let unblocked: Vec<u64> = self
            .blocked
            .iter()
            .filter(|&(_, &required)| required <= insert_count)
            .map(|(&stream_id, _)| stream_id)
            .collect();
        for stream_id in &unblocked {
            self.blocked.remove(stream_id);
        }
        Ok(unblocked)
    }

    /// Applies the instruction at the start of `input`; the bytes it took, or `None` when
    /// it is not complete.
    fn instruction(&mut self, input: &[u8]) -> Result<Option<usize>, QpackError> {
        let error = QpackError::EncoderStream;
        let Some(&first) = input.first() else {
            return Ok(None);
        };
        let limit = self.string_limit();
        let entry = if first & 0x80 != 0 {
            // Insert With Name Reference (§4.3.2).
            let Some((index, used)) = decode_integer(input, 6).map_err(error)? else {
                return Ok(None);
            };
            let Some((value, value_used)) =
                decode_string(&input[used..], 7, limit).map_err(error)?
            else {
                return Ok(None);
            };
            let name = if first & 0x40 != 0 {
                static_table::get(index)
                    .ok_or(error(Cause::BadStaticIndex { index }))?
                    .0
                    .to_vec()
            } else {
                self.relative_entry(index)?.name.clone()
            };
            (Entry { name, value }, used + value_used)
        } else if first & 0x40 != 0 {
            // Insert With Literal Name (§4.3.3).
            let Some((name, used)) = decode_string(input, 5, limit).map_err(error)? else {
                return Ok(None);
            };
            let Some((value, value_used)) =
                decode_string(&input[used..], 7, limit).map_err(error)?
            else {
                return Ok(None);
            };
            (Entry { name, value }, used + value_used)
        } else if first & 0x20 != 0 {
            // Set Dynamic Table Capacity (§4.3.1).
            let Some((capacity, used)) = decode_integer(input, 5).map_err(error)? else {
                return Ok(None);
            };
            if capacity > self.settings.max_table_capacity {
                return Err(error(Cause::CapacityTooLarge { capacity }));
            }
            self.table.set_capacity(capacity as usize);
            return Ok(Some(used));
        } else {
            // Duplicate (§4.3.4).
            let Some((index, used)) = decode_integer(input, 5).map_err(error)? else {
                return Ok(None);
            };
            (self.relative_entry(index)?.clone(), used)
        };
        let (entry, used) = entry;
        let size = entry.size() as u64;
        if !self.table.insert(entry) {
            return Err(error(Cause::EntryTooLarge { size }));
        }
        Ok(Some(used))
    }

    /// The entry an encoder instruction's relative index names (§3.2.5).
    fn relative_entry(&self, index: u64) -> Result<&Entry, QpackError> {
        self.table
            .insert_count()
            .checked_sub(index + 1)
            .and_then(|absolute| self.table.get(absolute))
            .ok_or(QpackError::EncoderStream(Cause::BadDynamicIndex { index }))
    }

    /// The Required Insert Count an encoded one stands for (§4.5.1.1).
    fn required_insert_count(&self, encoded: u64) -> Result<u64, Cause> {
        if encoded == 0 {
            return Ok(0);
        }
        let bad = Cause::BadRequiredInsertCount { encoded };
        let max_entries = self.settings.max_table_capacity / 32;
        let full_range = 2 * max_entries;
        if encoded > full_range {
            return Err(bad);
        }
        let max_value = self.table.insert_count() + max_entries;
        let max_wrapped = (max_value / full_range) * full_range;
        let mut required = max_wrapped + encoded - 1;
        if required > max_value {
            if required <= full_range {
                return Err(bad);
            }
            required -= full_range;
        }
        if required == 0 {
            return Err(bad);
        }
        Ok(required)
    }

    /// Decodes one complete field section of `stream_id`.
    pub fn decode_section(
        &mut self,
        stream_id: u64,
        section: &[u8],
    ) -> Result<Decoded, QpackError> {
        let error = QpackError::Section;
        let truncated = error(Cause::Truncated);
        let (encoded, used) = decode_integer(section, 8)
            .map_err(error)?
            .ok_or(truncated)?;
        let required = self.required_insert_count(encoded).map_err(error)?;
        let mut rest = &section[used..];
        let negative = rest.first().is_some_and(|&byte| byte & 0x80 != 0);
        let (delta, used) = decode_integer(rest, 7).map_err(error)?.ok_or(truncated)?;
        rest = &rest[used..];
        let base = if negative {
            required.checked_sub(delta + 1)
        } else {
            required.checked_add(delta)
        }
        .ok_or(error(Cause::BadBase))?;
        if required > self.table.insert_count() {
            if !self.blocked.contains_key(&stream_id)
                && self.blocked.len() as u64 >= self.settings.max_blocked_streams
            {
                return Err(error(Cause::TooManyBlockedStreams));
            }
            self.blocked.insert(stream_id, required);
            return Ok(Decoded::Blocked {
                required_insert_count: required,
            });
        }
        let mut fields = FieldList::with_capacity(16, section.len() * 2);
        let mut size = 0u64;
        let limit = self.settings.max_field_section_size;
        while !rest.is_empty() {
            let (used, field_size) = self.field_line(rest, required, base, &mut fields)?;
            rest = &rest[used..];
            size += field_size as u64;
            if size > limit {
                return Err(error(Cause::FieldSectionTooLarge));
            }
        }
        self.blocked.remove(&stream_id);
        if required > 0 {
            encode_integer(stream_id, 7, 0x80, &mut self.instructions);
            self.acknowledged = self.acknowledged.max(required);
        }
        Ok(Decoded::Fields { fields, size })
    }

    /// Appends one field line representation (§4.5.2 to §4.5.6); returns the bytes it took
    /// and the size the field counts for.
    fn field_line(
        &self,
        input: &[u8],
        required: u64,
        base: u64,
        fields: &mut FieldList,
    ) -> Result<(usize, usize), QpackError> {
        let error = QpackError::Section;
        let truncated = error(Cause::Truncated);
        let string_limit = self.settings.max_field_section_size.saturating_mul(4);
        let first = input[0];
        let integer = |prefix_bits| -> Result<(u64, usize), QpackError> {
            decode_integer(input, prefix_bits)
                .map_err(error)?
                .ok_or(truncated)
        };
        let string = |at: usize, prefix_bits| -> Result<(Vec<u8>, usize), QpackError> {
            decode_string(&input[at..], prefix_bits, string_limit)
                .map_err(error)?
                .ok_or(truncated)
        };
        let mut push = |name: &[u8], value: &[u8], sensitive: bool, used: usize| {
            fields.push(name, value, sensitive);
            (used, entry_size(name, value))
        };
        if first & 0x80 != 0 {
            // Indexed Field Line.
            let (index, used) = integer(6)?;
            if first & 0x40 != 0 {
                let (name, value) =
                    static_table::get(index).ok_or(error(Cause::BadStaticIndex { index }))?;
                Ok(push(name, value, false, used))
            } else {
                let absolute = base.checked_sub(index + 1);
                let entry = self.dynamic(absolute, required, index)?;
                Ok(push(&entry.name, &entry.value, false, used))
            }
        } else if first & 0x40 != 0 {
            // Literal Field Line With Name Reference.
            let (index, used) = integer(4)?;
            let (value, value_used) = string(used, 7)?;
            let name = if first & 0x10 != 0 {
                static_table::get(index)
                    .ok_or(error(Cause::BadStaticIndex { index }))?
                    .0
            } else {
                let absolute = base.checked_sub(index + 1);
                &self.dynamic(absolute, required, index)?.name[..]
            };
            Ok(push(name, &value, first & 0x20 != 0, used + value_used))
        } else if first & 0x20 != 0 {
            // Literal Field Line With Literal Name.
            let (name, used) = string(0, 3)?;
            let (value, value_used) = string(used, 7)?;
            Ok(push(&name, &value, first & 0x10 != 0, used + value_used))
        } else if first & 0x10 != 0 {
            // Indexed Field Line With Post-Base Index.
            let (index, used) = integer(4)?;
            let entry = self.dynamic(base.checked_add(index), required, index)?;
            Ok(push(&entry.name, &entry.value, false, used))
        } else {
            // Literal Field Line With Post-Base Name Reference.
            let (index, used) = integer(3)?;
            let (value, value_used) = string(used, 7)?;
            let entry = self.dynamic(base.checked_add(index), required, index)?;
            Ok(push(
                &entry.name,
                &value,
                first & 0x08 != 0,
                used + value_used,
            ))
        }
    }

    /// A dynamic entry a field line refers to: inserted, not evicted, and below the
    /// section's Required Insert Count (§2.2.3).
    fn dynamic(
        &self,
        absolute: Option<u64>,
        required: u64,
        index: u64,
    ) -> Result<&Entry, QpackError> {
        absolute
            .filter(|&absolute| absolute < required)
            .and_then(|absolute| self.table.get(absolute))
            .ok_or(QpackError::Section(Cause::BadDynamicIndex { index }))
    }

    /// The stream was reset or abandoned before its sections were all decoded: forget it,
    /// and tell the encoder its references are gone (§4.4.2; not needed when the table can
    /// hold nothing).
    pub fn cancel_stream(&mut self, stream_id: u64) {
        self.blocked.remove(&stream_id);
        if self.settings.max_table_capacity > 0 {
            encode_integer(stream_id, 6, 0x40, &mut self.instructions);
        }
    }

    /// The decoder-stream bytes to send: acknowledgments and cancellations in order, then
    /// one Insert Count Increment for the entries received that nothing acknowledged yet.
    pub fn take_instructions(&mut self) -> Vec<u8> {
        let insert_count = self.table.insert_count();
        if insert_count > self.acknowledged {
            encode_integer(
                insert_count - self.acknowledged,
                6,
                0x00,
                &mut self.instructions,
            );
            self.acknowledged = insert_count;
        }
        std::mem::take(&mut self.instructions)
    }
}
