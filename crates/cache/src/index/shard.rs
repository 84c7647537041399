//! The inside of one shard: its map from MD5 to slab slot, the slab of nodes and the
//! intrusive LRU list (`prev`/`next` slot numbers, head = most recently used).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use super::Snapshot;
use crate::fill::{Fill, FillState};
use crate::key::{Md5Hasher, md5_bits};

/// The end of a list.
pub(super) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(super) struct UpdateMark {
    pub(super) id: u64,
    pub(super) started: Instant,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Tombstone {
    pub(super) uniq: u64,
    pub(super) fs_size: u64,
    /// An [`Unlink`] for it is in the queue.
    pub(super) queued: bool,
}

#[derive(Debug)]
pub(super) struct Node {
    pub(super) md5: [u8; 16],
    /// Counted in `count` and linked in the LRU.
    pub(super) live: bool,
    pub(super) exists: bool,
    pub(super) uses: u32,
    pub(super) valid_sec: i64,
    pub(super) error: u16,
    pub(super) uniq: u64,
    pub(super) body_start: u16,
    pub(super) fs_size: u64,
    /// The file's store time, whole seconds since the epoch (0: unknown).
    pub(super) written: u64,
    pub(super) expire: Instant,
    /// LRU age across shards: larger is more recent.
    pub(super) stamp: u64,
    pub(super) updating: Option<UpdateMark>,
    pub(super) fill: Option<Arc<Fill>>,
    pub(super) fills_active: u16,
    pub(super) renaming: u16,
    pub(super) tombstone: Option<Tombstone>,
    pub(super) unlinking: bool,
    /// Its md5 waits in the shard's `changed` list for the journal.
    pub(super) changed: bool,
    pub(super) prev: u32,
    pub(super) next: u32,
}

impl Node {
    pub(super) fn new(md5: [u8; 16], expire: Instant) -> Node {
        Node {
            md5,
            live: true,
            exists: false,
            uses: 0,
            valid_sec: 0,
            error: 0,
            uniq: 0,
            body_start: 0,
            fs_size: 0,
            written: 0,
            expire,
            stamp: 0,
            updating: None,
            fill: None,
            fills_active: 0,
            renaming: 0,
            tombstone: None,
            unlinking: false,
            changed: false,
            prev: NIL,
            next: NIL,
        }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            exists: self.exists,
            uses: self.uses,
            valid_sec: self.valid_sec,
            error: self.error,
            uniq: self.uniq,
            body_start: self.body_start,
            fs_size: self.fs_size,
            updating: self.updating.is_some(),
            fill: self
                .fill
                .as_ref()
                .filter(|fill| !matches!(fill.state(), FillState::Failed))
                .cloned(),
        }
    }

    pub(super) fn unused(&self) -> bool {
        !self.live
            && self.tombstone.is_none()
            && self.fills_active == 0
            && self.renaming == 0
            && self.updating.is_none()
            && !self.unlinking
    }
}

/// A map key hashed by its first eight bytes (it is already an MD5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Md5Key([u8; 16]);

impl Hash for Md5Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(md5_bits(&self.0));
    }
}

/// One shard: map, slab and LRU list.
#[derive(Debug)]
pub(super) struct Shard {
    pub(super) map: HashMap<Md5Key, u32, BuildHasherDefault<Md5Hasher>>,
    pub(super) nodes: Vec<Node>,
    pub(super) free: Vec<u32>,
    pub(super) head: u32,
    pub(super) tail: u32,
    /// Keys changed since the manager last wrote the journal (each once).
    pub(super) changed: Vec<[u8; 16]>,
    /// `changed` outgrew its limit and was dropped: the journal has a gap.
    pub(super) overflow: bool,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard {
            map: HashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            changed: Vec::new(),
            overflow: false,
        }
    }
}

impl Shard {
    pub(super) fn find(&self, md5: &[u8; 16]) -> Option<usize> {
        self.map.get(&Md5Key(*md5)).map(|&slot| slot as usize)
    }

    /// Stores a live node at the LRU head.
    pub(super) fn insert(&mut self, node: Node) -> usize {
        let md5 = node.md5;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.nodes[slot as usize] = node;
                slot as usize
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        let index = u32::try_from(slot).expect("more than 2^32 entries in a shard");
        self.map.insert(Md5Key(md5), index);
        self.push_head(slot);
        slot
    }

    /// Notes a change of the node at `slot` for the journal, once until the manager takes
    /// the list. Past `limit` keys the list is dropped and the gap noted instead.
    pub(super) fn mark_changed(&mut self, slot: usize, limit: usize) {
        let node = &mut self.nodes[slot];
        if node.changed || self.overflow {
            return;
        }
        if self.changed.len() >= limit {
            self.changed = Vec::new();
            self.overflow = true;
            return;
        }
        node.changed = true;
        self.changed.push(node.md5);
    }

    pub(super) fn free_if_unused(&mut self, slot: usize) {
        if self.nodes[slot].unused() {
            self.map.remove(&Md5Key(self.nodes[slot].md5));
            self.nodes[slot].fill = None;
            self.free.push(slot as u32);
        }
    }

    pub(super) fn push_head(&mut self, slot: usize) {
        let index = slot as u32;
        self.nodes[slot].prev = NIL;
        self.nodes[slot].next = self.head;
        if self.head != NIL {
            self.nodes[self.head as usize].prev = index;
        } else {
            self.tail = index;
        }
        self.head = index;
    }

    pub(super) fn unlink_lru(&mut self, slot: usize) {
        let (prev, next) = (self.nodes[slot].prev, self.nodes[slot].next);
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
        self.nodes[slot].prev = NIL;
        self.nodes[slot].next = NIL;
    }

    pub(super) fn move_to_head(&mut self, slot: usize) {
        if self.head != slot as u32 {
            self.unlink_lru(slot);
            self.push_head(slot);
        }
    }
}
