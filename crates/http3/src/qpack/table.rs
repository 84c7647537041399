//! The dynamic table (RFC 9204 §3.2): entries in insertion order, each known by its
//! absolute index (0 for the first ever inserted), the oldest evicted first when an
//! insertion or a capacity change needs room.

use std::collections::VecDeque;

use super::entry_size;

/// One entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: Vec<u8>,
    pub value: Vec<u8>,
}

impl Entry {
    pub fn size(&self) -> usize {
        entry_size(&self.name, &self.value)
    }
}

/// The table as one side sees it.
#[derive(Clone, Debug, Default)]
pub struct DynamicTable {
    entries: VecDeque<Entry>,
    capacity: usize,
    size: usize,
    insert_count: u64,
}

impl DynamicTable {
    /// The number of entries ever inserted (the Insert Count).
    pub fn insert_count(&self) -> u64 {
        self.insert_count
    }

    /// The absolute index of the oldest entry still in the table.
    pub fn first_index(&self) -> u64 {
        self.insert_count - self.entries.len() as u64
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry at an absolute index, if it was inserted and not evicted.
    pub fn get(&self, absolute: u64) -> Option<&Entry> {
        let offset = absolute.checked_sub(self.first_index())?;
        self.entries.get(usize::try_from(offset).ok()?)
    }

    /// Entries from the oldest, with their absolute indices.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &Entry)> {
        let first = self.first_index();
        self.entries
            .iter()
            .enumerate()
            .map(move |(offset, entry)| (first + offset as u64, entry))
    }

    /// How many of the oldest entries must go for `room` bytes to fit under `capacity`;
    /// `None` when even an empty table is too small.
    pub fn evictions_for(&self, room: usize, capacity: usize) -> Option<usize> {
        if room > capacity {
            return None;
        }
        let mut size = self.size;
        let mut count = 0;
        while size + room > capacity {
            size -= self.entries[count].size();
            count += 1;
        }
        Some(count)
    }

    /// Sets the capacity, evicting what no longer fits.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.evict_to(capacity);
    }

    /// Inserts an entry, evicting the oldest as needed; `false` (and nothing changed) when
    /// the entry is larger than the capacity.
    pub fn insert(&mut self, entry: Entry) -> bool {
        let size = entry.size();
        if size > self.capacity {
            return false;
        }
        self.evict_to(self.capacity - size);
        self.size += size;
        self.entries.push_back(entry);
        self.insert_count += 1;
        true
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let evicted = self
                .entries
                .pop_front()
                .expect("a table with a positive size has an entry");
            self.size -= evicted.size();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, value: &str) -> Entry {
        Entry {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn insertion_evicts_the_oldest() {
        let mut table = DynamicTable::default();
        table.set_capacity(120);
        assert!(table.insert(entry("a", "1"))); // 34
        assert!(table.insert(entry("b", "22"))); // 35
        assert!(table.insert(entry("c", "333"))); // 36
        assert_eq!(table.size(), 105);
        assert_eq!(table.evictions_for(34, 120), Some(1));
        assert_eq!(table.evictions_for(70, 120), Some(2));
        assert!(table.insert(entry("d", "4")));
        assert_eq!(table.first_index(), 1);
        assert_eq!(table.get(0), None);
        assert_eq!(table.get(1), Some(&entry("b", "22")));
        assert_eq!(table.get(3), Some(&entry("d", "4")));
        assert_eq!(table.get(4), None);
        assert_eq!(table.insert_count(), 4);
        // Exactly the capacity fits; one byte more does not.
        assert!(table.insert(entry("e", &"x".repeat(120 - 33))));
        assert_eq!(table.len(), 1);
        assert!(!table.insert(entry("e", &"x".repeat(120 - 32))));
        assert_eq!(table.evictions_for(121, 120), None);
        table.set_capacity(0);
        assert!(table.is_empty());
        assert_eq!(table.size(), 0);
    }
}
