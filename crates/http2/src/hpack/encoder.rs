//! Encoding header blocks (RFC 7541 §6) for the peer's decoder.

use super::table::{self, DynamicTable};
use super::{HeaderField, entry_size, huffman, integer};

/// Fields larger than this are never added to the dynamic table: one would push out many
/// small, often repeated entries.
const INDEX_SIZE_MAX: usize = 512;

/// The sending side of one connection's HPACK context.
#[derive(Clone, Debug)]
pub struct Encoder {
    table: DynamicTable,
    /// A size change to announce at the start of the next block (§4.2, §6.3).
    size_update: Option<usize>,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    /// An encoder for a peer with the default table size.
    pub fn new() -> Self {
        Self {
            table: DynamicTable::new(table::DEFAULT_SIZE),
            size_update: None,
        }
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed; the encoder uses at most the default
    /// size, and announces its choice in the next block.
    pub fn set_peer_max_size(&mut self, peer_max: usize) {
        let size = peer_max.min(table::DEFAULT_SIZE);
        if size != self.table.max_size() || self.size_update.is_some() {
            // The smallest size set between two blocks must be announced first (§4.2); as
            // the encoder only ever shrinks below the default, the last value is that one.
            self.size_update = Some(size);
            self.table.set_max_size(size);
        }
    }

    /// Appends the representation of `fields` to `out`.
    pub fn encode<'a>(
        &mut self,
        fields: impl IntoIterator<Item = &'a HeaderField>,
        out: &mut Vec<u8>,
    ) {
        if let Some(size) = self.size_update.take() {
            integer::encode(size as u64, 5, 0x20, out);
        }
        for field in fields {
            self.field(&field.name, &field.value, field.sensitive, out);
        }
    }

    /// Appends the representation of fields given as name and value, none of them
    /// never-indexed (no [`HeaderField`] needs building for each).
    pub fn encode_pairs<'a>(
        &mut self,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        out: &mut Vec<u8>,
    ) {
        if let Some(size) = self.size_update.take() {
            integer::encode(size as u64, 5, 0x20, out);
        }
        for (name, value) in fields {
            self.field(name, value, false, out);
        }
    }

    /// Appends one field: an index when a table has it, else a literal. A block starts
    /// with [`encode`](Self::encode) or [`encode_pairs`](Self::encode_pairs), which
    /// announce a table size change first.
    pub fn field(&mut self, name: &[u8], value: &[u8], sensitive: bool, out: &mut Vec<u8>) {
        let (static_exact, static_name) = table::find_static(name, value);
        if let Some(index) = static_exact.filter(|_| !sensitive) {
            integer::encode(index as u64, 7, 0x80, out);
            return;
        }
        let (dynamic_exact, dynamic_name) = self.table.find(name, value);
        if let Some(position) = dynamic_exact.filter(|_| !sensitive) {
            integer::encode((position + 62) as u64, 7, 0x80, out);
            return;
        }
        let name_index = static_name
            .or(dynamic_name.map(|position| position + 62))
            .unwrap_or(0);
        let index_it =
            !sensitive && entry_size(name, value) <= INDEX_SIZE_MAX.min(self.table.max_size());
        let (prefix_bits, pattern) = match (index_it, sensitive) {
            (true, _) => (6, 0x40),
            (false, true) => (4, 0x10),
            (false, false) => (4, 0x00),
        };
        integer::encode(name_index as u64, prefix_bits, pattern, out);
        if name_index == 0 {
            string(name, out);
        }
        string(value, out);
        if index_it {
            self.table.insert(name, value);
        }
    }
}

/// Appends a string literal, Huffman-coded unless that is longer (§5.2).
fn string(value: &[u8], out: &mut Vec<u8>) {
    let coded = huffman::encoded_len(value);
    if coded <= value.len() {
        integer::encode(coded as u64, 7, 0x80, out);
        huffman::encode(value, out);
    } else {
        integer::encode(value.len() as u64, 7, 0x00, out);
        out.extend_from_slice(value);
    }
}
