//! The static table (RFC 7541 Appendix A) and the dynamic table (§2.3.2, §4).

use std::collections::VecDeque;

use super::entry_size;

/// The static table; index 1 is the first entry.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The default dynamic table size, SETTINGS_HEADER_TABLE_SIZE's initial value.
pub const DEFAULT_SIZE: usize = 4096;

/// A name and a value as the dynamic table keeps them.
type Entry = (Box<[u8]>, Box<[u8]>);

/// A dynamic table: newest entry first, evicted from the oldest end (§2.3.2, §4.4).
#[derive(Clone, Debug)]
pub struct DynamicTable {
    entries: VecDeque<Entry>,
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    /// An empty table of `max_size` bytes.
    pub fn new(max_size: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            size: 0,
            max_size,
        }
    }

    /// The sum of the entries' sizes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The current maximum size.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// How many entries the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Changes the maximum size, evicting as needed (§4.3).
    pub fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Adds an entry; one larger than the maximum size empties the table (§4.4).
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = entry_size(name, value);
        if size > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - size);
        self.entries.push_front((name.into(), value.into()));
        self.size += size;
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let Some((name, value)) = self.entries.pop_back() else {
                break;
            };
            self.size -= entry_size(&name, &value);
        }
        debug_assert!(self.size <= target || self.entries.is_empty());
    }

    /// The entry at a dynamic index, 0 being the newest.
    pub fn get(&self, position: usize) -> Option<(&[u8], &[u8])> {
        self.entries
            .get(position)
            .map(|(name, value)| (&name[..], &value[..]))
    }

    /// The positions of an entry with this name and value, and of one with this name.
    pub fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut name_only = None;
        for (position, (entry_name, entry_value)) in self.entries.iter().enumerate() {
            if &entry_name[..] == name {
                if &entry_value[..] == value {
                    return (Some(position), Some(position));
                }
                name_only.get_or_insert(position);
            }
        }
        (None, name_only)
    }
}

/// The entry at a 1-based index over the static then the dynamic table (§2.3.3).
pub fn lookup(dynamic: &DynamicTable, index: u64) -> Option<(&[u8], &[u8])> {
    let index = usize::try_from(index).ok()?;
    match index {
        0 => None,
        1..=61 => STATIC
            .get(index - 1)
            .map(|&(name, value)| (name.as_bytes(), value.as_bytes())),
        _ => dynamic.get(index - 62),
    }
}

/// The static index of an entry with this name and value, and of one with this name.
pub fn find_static(name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
    let mut name_only = None;
    for (position, &(entry_name, entry_value)) in STATIC.iter().enumerate() {
        if entry_name.as_bytes() == name {
            if entry_value.as_bytes() == value {
                return (Some(position + 1), Some(position + 1));
            }
            name_only.get_or_insert(position + 1);
        }
    }
    (None, name_only)
}
