//! Encoding header blocks (RFC 7541 §6) for the peer's decoder.

use std::collections::HashMap;
use std::hash::BuildHasher;

use super::table::{self, DynamicTable};
use super::{HeaderField, entry_size, huffman, integer};

/// Fields larger than this are never added to the dynamic table: one would push out many
/// small, often repeated entries. Nor is `grpc-timeout`, whose value is the time a call
/// has left, new for every call.
const INDEX_SIZE_MAX: usize = 512;

/// The sending side of one connection's HPACK context.
#[derive(Clone, Debug)]
pub struct Encoder {
    table: DynamicTable,
    /// Where the table's entries are, by field and by name.
    index: TableIndex,
    /// A size change to announce at the start of the next block (§4.2, §6.3).
    size_update: Option<usize>,
    /// The last head encoded without a change to the table, for the next one that is
    /// the same.
    repeat: Repeat,
}

/// A head and its header block, while encoding the same fields again gives the same block:
/// no entry has been added to the table since (the block added none either) and no size
/// change is waiting. Responses of one location mostly repeat their heads field for
/// field (`date` changes once a second): comparing the fields costs a fraction of
/// looking each up in the tables.
#[derive(Clone, Debug, Default)]
struct Repeat {
    /// The names and values, one after another.
    bytes: Vec<u8>,
    /// Each field's name and value lengths.
    lengths: Vec<(usize, usize)>,
    block: Vec<u8>,
    /// The count of entries inserted when the block was encoded; `None`: nothing kept.
    inserted: Option<u64>,
}

/// Heads larger than this are not kept for a repeat.
const REPEAT_BYTES_MAX: usize = 1024;

impl Repeat {
    /// Whether `fields` are the kept head's, field for field.
    fn matches<'a>(&self, fields: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> bool {
        let mut at = 0;
        let mut count = 0;
        for (name, value) in fields {
            let Some(&(name_len, value_len)) = self.lengths.get(count) else {
                return false;
            };
            if name.len() != name_len || value.len() != value_len {
                return false;
            }
            let kept = &self.bytes[at..at + name_len + value_len];
            if kept[..name_len] != *name || kept[name_len..] != *value {
                return false;
            }
            at += name_len + value_len;
            count += 1;
        }
        count == self.lengths.len()
    }

    fn keep<'a>(
        &mut self,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        block: &[u8],
        inserted: u64,
    ) {
        self.inserted = None;
        self.bytes.clear();
        self.lengths.clear();
        for (name, value) in fields {
            if self.bytes.len() + name.len() + value.len() > REPEAT_BYTES_MAX {
                return;
            }
            self.bytes.extend_from_slice(name);
            self.bytes.extend_from_slice(value);
            self.lengths.push((name.len(), value.len()));
        }
        self.block.clear();
        self.block.extend_from_slice(block);
        self.inserted = Some(inserted);
    }
}

/// The dynamic table's entries found by hash rather than by a walk over them (a table of
/// short responses' fields holds dozens of entries, most of them old `date` values, and
/// every field of every head was compared with each).
///
/// Each entry inserted gets the next sequence number; the newest's position is 0, so an
/// entry's position is the count inserted minus its number. The maps keep the newest
/// number of each field and of each name. Evicted entries are not taken out: the table
/// evicts the oldest first, so a number whose position is past the table's end has no
/// copy left, and one within it is compared with the entry there (a hash may collide).
#[derive(Clone, Debug, Default)]
struct TableIndex {
    hasher: foldhash::fast::RandomState,
    fields: HashMap<u64, u64, NoHash>,
    names: HashMap<u64, u64, NoHash>,
    inserted: u64,
}

/// The keys are hashes already.
#[derive(Clone, Copy, Debug, Default)]
struct NoHash;

impl BuildHasher for NoHash {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

impl TableIndex {
    fn keys(&self, name: &[u8], value: &[u8]) -> (u64, u64) {
        (
            self.hasher.hash_one((name, value)),
            self.hasher.hash_one(name),
        )
    }

    /// The position of the entry numbered `number`, if the table still holds it.
    fn position(&self, table: &DynamicTable, number: u64) -> Option<usize> {
        let position = usize::try_from(self.inserted - number).ok()?;
        (position < table.len()).then_some(position)
    }

    /// As [`DynamicTable::find`].
    fn find(
        &self,
        table: &DynamicTable,
        (field_key, name_key): (u64, u64),
        name: &[u8],
        value: &[u8],
    ) -> (Option<usize>, Option<usize>) {
        let exact = self
            .fields
            .get(&field_key)
            .and_then(|&number| self.position(table, number))
            .filter(|&position| table.get(position) == Some((name, value)));
        if exact.is_some() {
            return (exact, exact);
        }
        let named = self
            .names
            .get(&name_key)
            .and_then(|&number| self.position(table, number))
            .filter(|&position| table.get(position).is_some_and(|(entry, _)| entry == name));
        (None, named)
    }

    /// Records the entry just inserted at the table's front.
    fn inserted(&mut self, table: &DynamicTable, (field_key, name_key): (u64, u64)) {
        self.inserted += 1;
        self.fields.insert(field_key, self.inserted);
        self.names.insert(name_key, self.inserted);
        // Numbers of evicted entries pile up: past a bound, the maps are made again from
        // what the table holds.
        if self.fields.len() > 2 * table.len() + 64 {
            self.rebuild(table);
        }
    }

    fn rebuild(&mut self, table: &DynamicTable) {
        self.fields.clear();
        self.names.clear();
        // Oldest first, so that the newest copy of a field or name is the one kept.
        for position in (0..table.len()).rev() {
            if let Some((name, value)) = table.get(position) {
                let number = self.inserted - position as u64;
                let (field_key, name_key) = self.keys(name, value);
                self.fields.insert(field_key, number);
                self.names.insert(name_key, number);
            }
        }
    }
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
            index: TableIndex::default(),
            size_update: None,
            repeat: Repeat::default(),
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

    /// Appends the representation of a decoded or assembled list's fields.
    pub fn encode_list(&mut self, fields: &super::FieldList, out: &mut Vec<u8>) {
        if let Some(size) = self.size_update.take() {
            integer::encode(size as u64, 5, 0x20, out);
        }
        for field in fields.iter() {
            self.field(field.name, field.value, field.sensitive, out);
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

    /// As [`encode_pairs`](Self::encode_pairs), for fields that may be looked at twice:
    /// a head that repeats the last one encoded, while the tables have not changed since,
    /// is the same block again, copied rather than encoded.
    pub fn encode_pairs_repeated<'a, I>(&mut self, fields: I, out: &mut Vec<u8>)
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
        I::IntoIter: Clone,
    {
        let fields = fields.into_iter();
        let inserted = self.index.inserted;
        if self.size_update.is_none()
            && self.repeat.inserted == Some(inserted)
            && self.repeat.matches(fields.clone())
        {
            out.extend_from_slice(&self.repeat.block);
            return;
        }
        let size_update = self.size_update.is_some();
        let start = out.len();
        self.encode_pairs(fields.clone(), out);
        if size_update || self.index.inserted != inserted {
            // The next head, the same or not, is encoded against other tables.
            self.repeat.inserted = None;
        } else {
            self.repeat.keep(fields, &out[start..], inserted);
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
        let keys = self.index.keys(name, value);
        let (dynamic_exact, dynamic_name) = self.index.find(&self.table, keys, name, value);
        debug_assert_eq!(
            (dynamic_exact, dynamic_name),
            self.table.find(name, value),
            "the index and a walk over the table disagree"
        );
        if let Some(position) = dynamic_exact.filter(|_| !sensitive) {
            integer::encode((position + 62) as u64, 7, 0x80, out);
            return;
        }
        let name_index = static_name
            .or(dynamic_name.map(|position| position + 62))
            .unwrap_or(0);
        let index_it = !sensitive
            && entry_size(name, value) <= INDEX_SIZE_MAX.min(self.table.max_size())
            && name != b"grpc-timeout";
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
            self.index.inserted(&self.table, keys);
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

#[cfg(test)]
mod tests {
    use super::*;

    type Head = Vec<(&'static [u8], &'static [u8])>;

    fn head(date: &'static [u8], length: &'static [u8]) -> Head {
        vec![
            (b":status", b"200"),
            (b"server", b"portico"),
            (b"date", date),
            (b"content-type", b"text/plain"),
            (b"content-length", length),
        ]
    }

    #[test]
    fn grpc_timeout_is_never_added_to_the_table() {
        let mut encoder = Encoder::new();
        let mut decoder = super::super::Decoder::new(table::DEFAULT_SIZE);
        let limits = super::super::DecodeLimits {
            max_field_size: 4096,
            max_list_size: 4096,
        };
        for timeout in [&b"19999876u"[..], b"19999850u"] {
            let mut block = Vec::new();
            encoder.encode_pairs([(&b"grpc-timeout"[..], timeout)], &mut block);
            assert_eq!(encoder.table.len(), 0);
            let decoded = decoder.decode(&block, limits).expect("a valid block");
            let field = decoded.fields.get(0).expect("one field");
            assert_eq!((field.name, field.value), (&b"grpc-timeout"[..], timeout));
        }
    }

    #[test]
    fn a_repeated_head_is_the_block_a_fresh_encoding_makes() {
        let heads = [
            head(b"Mon, 30 Nov 2026 01:00:00 GMT", b"11"),
            head(b"Mon, 30 Nov 2026 01:00:00 GMT", b"11"),
            head(b"Mon, 30 Nov 2026 01:00:00 GMT", b"11"),
            head(b"Mon, 30 Nov 2026 01:00:01 GMT", b"11"),
            head(b"Mon, 30 Nov 2026 01:00:01 GMT", b"11"),
            head(b"Mon, 30 Nov 2026 01:00:01 GMT", b"12"),
            head(b"Mon, 30 Nov 2026 01:00:01 GMT", b"11"),
            head(b"Mon, 30 Nov 2026 01:00:01 GMT", b"11"),
            // One field fewer, then the same again.
            head(b"Mon, 30 Nov 2026 01:00:01 GMT", b"11")[..4].to_vec(),
            head(b"Mon, 30 Nov 2026 01:00:01 GMT", b"11"),
        ];
        let mut repeating = Encoder::new();
        let mut fresh = Encoder::new();
        let mut repeats = 0;
        for (step, fields) in heads.iter().chain(heads.iter()).enumerate() {
            if step == heads.len() {
                // A size change between two equal heads: announced, and the tables differ.
                repeating.set_peer_max_size(256);
                fresh.set_peer_max_size(256);
            }
            let kept = repeating.repeat.inserted == Some(repeating.index.inserted);
            let mut mine = Vec::new();
            repeating.encode_pairs_repeated(fields.iter().copied(), &mut mine);
            let mut theirs = Vec::new();
            fresh.encode_pairs(fields.iter().copied(), &mut theirs);
            assert_eq!(mine, theirs, "head {step}");
            if kept && repeating.repeat.matches(fields.iter().copied()) {
                repeats += 1;
            }
        }
        assert!(repeats >= 4, "{repeats} heads repeated");
    }
}
