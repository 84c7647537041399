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

/// A name and a value as the dynamic table keeps them: one allocation, the name first,
/// and the name's length.
type Entry = (Box<[u8]>, usize);

fn split(entry: &Entry) -> (&[u8], &[u8]) {
    entry.0.split_at(entry.1)
}

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
        let mut bytes = Vec::with_capacity(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        self.entries
            .push_front((bytes.into_boxed_slice(), name.len()));
        self.size += size;
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let Some(entry) = self.entries.pop_back() else {
                break;
            };
            // Name and value together, and the 32 octets of overhead.
            self.size -= entry.0.len() + 32;
        }
        debug_assert!(self.size <= target || self.entries.is_empty());
    }

    /// The entry at a dynamic index, 0 being the newest.
    pub fn get(&self, position: usize) -> Option<(&[u8], &[u8])> {
        self.entries.get(position).map(split)
    }

    /// The positions of an entry with this name and value, and of one with this name.
    pub fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut name_only = None;
        for (position, (entry_name, entry_value)) in self.entries.iter().map(split).enumerate() {
            if entry_name == name {
                if entry_value == value {
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
    let Some((first, count)) = static_name(name) else {
        return (None, None);
    };
    // Entries of one name stand together in the table; the 1-based index is position + 1.
    let exact = STATIC[first..first + count]
        .iter()
        .position(|&(_, entry_value)| entry_value.as_bytes() == value)
        .map(|offset| first + offset + 1);
    (exact, Some(first + 1))
}

/// Where the static table's entries of `name` start (0-based) and how many there are: one
/// comparison of the length, then of the few names that have it, rather than a walk over
/// the 61 entries.
fn static_name(name: &[u8]) -> Option<(usize, usize)> {
    // A match on the length first: a match on byte strings alone compares with each arm
    // in turn.
    Some(match name.len() {
        3 => match name {
            b"age" => (20, 1),
            b"via" => (59, 1),
            _ => return None,
        },
        4 => match name {
            b"date" => (32, 1),
            b"etag" => (33, 1),
            b"from" => (36, 1),
            b"host" => (37, 1),
            b"link" => (44, 1),
            b"vary" => (58, 1),
            _ => return None,
        },
        5 => match name {
            b":path" => (3, 2),
            b"allow" => (21, 1),
            b"range" => (49, 1),
            _ => return None,
        },
        6 => match name {
            b"accept" => (18, 1),
            b"cookie" => (31, 1),
            b"expect" => (34, 1),
            b"server" => (53, 1),
            _ => return None,
        },
        7 => match name {
            b":method" => (1, 2),
            b":scheme" => (5, 2),
            b":status" => (7, 7),
            b"expires" => (35, 1),
            b"referer" => (50, 1),
            b"refresh" => (51, 1),
            _ => return None,
        },
        8 => match name {
            b"if-match" => (38, 1),
            b"if-range" => (41, 1),
            b"location" => (45, 1),
            _ => return None,
        },
        10 => match name {
            b":authority" => (0, 1),
            b"set-cookie" => (54, 1),
            b"user-agent" => (57, 1),
            _ => return None,
        },
        11 => match name {
            b"retry-after" => (52, 1),
            _ => return None,
        },
        12 => match name {
            b"content-type" => (30, 1),
            b"max-forwards" => (46, 1),
            _ => return None,
        },
        13 => match name {
            b"accept-ranges" => (17, 1),
            b"authorization" => (22, 1),
            b"cache-control" => (23, 1),
            b"content-range" => (29, 1),
            b"if-none-match" => (40, 1),
            b"last-modified" => (43, 1),
            _ => return None,
        },
        14 => match name {
            b"accept-charset" => (14, 1),
            b"content-length" => (27, 1),
            _ => return None,
        },
        15 => match name {
            b"accept-encoding" => (15, 1),
            b"accept-language" => (16, 1),
            _ => return None,
        },
        16 => match name {
            b"content-encoding" => (25, 1),
            b"content-language" => (26, 1),
            b"content-location" => (28, 1),
            b"www-authenticate" => (60, 1),
            _ => return None,
        },
        17 => match name {
            b"if-modified-since" => (39, 1),
            b"transfer-encoding" => (56, 1),
            _ => return None,
        },
        18 => match name {
            b"proxy-authenticate" => (47, 1),
            _ => return None,
        },
        19 => match name {
            b"content-disposition" => (24, 1),
            b"if-unmodified-since" => (42, 1),
            b"proxy-authorization" => (48, 1),
            _ => return None,
        },
        25 => match name {
            b"strict-transport-security" => (55, 1),
            _ => return None,
        },
        27 => match name {
            b"access-control-allow-origin" => (19, 1),
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod static_name_tests {
    use super::*;

    #[test]
    fn every_static_entry_is_found_by_its_name_and_value() {
        for (position, &(name, value)) in STATIC.iter().enumerate() {
            let (exact, name_only) = find_static(name.as_bytes(), value.as_bytes());
            assert_eq!(exact, Some(position + 1), "{name}: {value}");
            let first = STATIC.iter().position(|&(other, _)| other == name);
            assert_eq!(name_only, first.map(|at| at + 1), "{name}");
        }
        assert_eq!(find_static(b":status", b"201"), (None, Some(8)));
        assert_eq!(find_static(b"x-unknown", b""), (None, None));
    }
}
