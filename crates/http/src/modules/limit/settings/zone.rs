//! The state a `limit_req_zone` or `limit_conn_zone` keeps: one entry per key, shared by
//! every worker of every generation that declares the zone, behind one lock as nginx's
//! shared zones are.
//!
//! A zone holds as many entries as nginx's would: [`Capacity`] counts pages and slots as
//! nginx's slab allocator hands them out for entries of nginx's size (the red-black tree
//! node, the module's node header and the key), so a zone of the same size fills at the
//! same number of keys.

use std::collections::HashMap;
use std::sync::Mutex;

/// The page size nginx's slab allocator works with on Linux.
const PAGE_SIZE: u64 = 4096;
/// The allocator's smallest slot is 8 bytes (shift 3); slots up to half a page.
const MIN_SHIFT: u32 = 3;
const PAGE_SHIFT: u32 = 12;
/// What the slab pool keeps before its pages: the pool header, one slot list head per slot
/// size and one statistics record per slot size (on 64-bit Linux).
const POOL_OVERHEAD: u64 = 200 + 9 * 24 + 9 * 32;
/// Each page's descriptor.
const PAGE_DESCRIPTOR: u64 = 24;
/// nginx's red-black tree node up to its `color` byte, where a module's node begins.
const RBTREE_NODE_HEAD: u64 = 32;
/// A `limit_req` node up to its key: color, a spare byte, the key length, the LRU links,
/// the time of the last request, the excess and the count of requests holding it.
pub const REQ_NODE_HEAD: u64 = RBTREE_NODE_HEAD + 48;
/// A `limit_conn` node up to its key: color, key length, the count.
pub const CONN_NODE_HEAD: u64 = RBTREE_NODE_HEAD + 4;
/// Where a zone's clock starts. nginx's millisecond clock is far from zero, and an entry
/// held for a later zone's verdict is stamped 0, so that its first accounting finds it
/// fully drained; a zone's clock starting here keeps that true.
const CLOCK_START_MS: u64 = 1 << 40;
/// nginx does not look further back than a minute when it frees idle entries.
const IDLE_MS: u64 = 60_000;

/// nginx's smallest shared zone for these modules: eight pages.
pub const MIN_ZONE_SIZE: u64 = 8 * PAGE_SIZE;

/// The pages of a zone and the slots taken in them, as nginx's slab allocator counts them.
#[derive(Debug)]
pub struct Capacity {
    pages_total: u64,
    /// Whole pages given to slot sizes and to large allocations.
    pages_used: u64,
    /// Slots taken, by slot shift (index `shift - MIN_SHIFT`).
    slots_used: [u64; (PAGE_SHIFT - MIN_SHIFT) as usize],
}

impl Capacity {
    /// A zone of `size` bytes, with nginx's own allocations in it: the tree root and the
    /// `log_ctx` text (` in limit_req zone "NAME"`).
    pub fn new(size: u64, root_size: u64, log_context_len: u64) -> Capacity {
        let usable = size.saturating_sub(POOL_OVERHEAD);
        let mut pages = usable / (PAGE_SIZE + PAGE_DESCRIPTOR);
        // The pages start at the first page boundary after their descriptors.
        let descriptors_end = POOL_OVERHEAD + pages * PAGE_DESCRIPTOR;
        let start = descriptors_end.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        pages = pages.min(size.saturating_sub(start) / PAGE_SIZE);
        let mut capacity = Capacity {
            pages_total: pages,
            pages_used: 0,
            slots_used: [0; (PAGE_SHIFT - MIN_SHIFT) as usize],
        };
        let root = capacity.allocate(root_size);
        let log_context = capacity.allocate(log_context_len);
        debug_assert!(
            root && log_context,
            "a zone of eight pages holds its own data"
        );
        capacity
    }

    /// Takes room for `size` bytes; false when nginx's allocator would fail.
    pub fn allocate(&mut self, size: u64) -> bool {
        match slot_shift(size) {
            None => {
                let pages = size.div_ceil(PAGE_SIZE);
                if self.pages_used + pages > self.pages_total {
                    return false;
                }
                self.pages_used += pages;
                true
            }
            Some(shift) => {
                let index = (shift - MIN_SHIFT) as usize;
                let per_page = PAGE_SIZE >> shift;
                let used = self.slots_used[index];
                if used.is_multiple_of(per_page) {
                    if self.pages_used == self.pages_total {
                        return false;
                    }
                    self.pages_used += 1;
                }
                self.slots_used[index] = used + 1;
                true
            }
        }
    }

    /// Gives back room taken for `size` bytes; a page whose slots are all free goes back
    /// to the zone (entries are assumed packed, the best case of nginx's allocator).
    pub fn free(&mut self, size: u64) {
        match slot_shift(size) {
            None => self.pages_used -= size.div_ceil(PAGE_SIZE),
            Some(shift) => {
                let index = (shift - MIN_SHIFT) as usize;
                let per_page = PAGE_SIZE >> shift;
                assert!(self.slots_used[index] > 0, "a slot freed twice");
                self.slots_used[index] -= 1;
                if self.slots_used[index].is_multiple_of(per_page) {
                    self.pages_used -= 1;
                }
            }
        }
    }
}

/// The slot size (as a shift) of an allocation, or `None` for one of whole pages.
fn slot_shift(size: u64) -> Option<u32> {
    if size > PAGE_SIZE / 2 {
        return None;
    }
    let shift = size.max(1).next_power_of_two().trailing_zeros();
    Some(shift.max(MIN_SHIFT))
}

/// One key's bucket.
#[derive(Debug)]
struct ReqEntry {
    /// Milliseconds on the zone's clock of the last accounted request.
    last: u64,
    /// Requests above the rate, in thousandths.
    excess: u64,
    /// Requests between their lookup in this zone and their accounting in the last zone.
    count: u32,
}

/// What a lookup in one zone found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Accounted (the last zone of the list): the request's excess.
    Accounted { excess: u64 },
    /// Over the burst: the excess it would have had.
    Busy { excess: u64 },
    /// Held for accounting once the last zone agreed.
    Held,
    /// The zone is full even after freeing its oldest entry.
    Full,
}

/// The buckets of one `limit_req_zone`.
#[derive(Debug)]
pub struct ReqZone {
    pub name: String,
    pub size: u64,
    /// The key as written, to compare with a reloaded configuration's.
    pub key_text: String,
    /// `CLOCK_MONOTONIC` milliseconds when the zone was made.
    epoch_ms: u64,
    state: Mutex<ReqState>,
}

/// The end of a link in the LRU list.
const NONE: usize = usize::MAX;

/// A zone's entries: a table from key to slot, and the slots linked from the most to the
/// least recently used, as nginx's LRU queue (moving an entry to the front is a few
/// stores, done on every request).
#[derive(Debug)]
struct ReqState {
    index: KeyIndex,
    slots: Vec<ReqSlot>,
    /// Slots of forgotten entries, reused first.
    free: Vec<usize>,
    newest: usize,
    oldest: usize,
    capacity: Capacity,
}

/// A zone's index from key to slot. foldhash, seeded at random per zone: a key costs a few
/// instructions to hash, where SipHash took a hundred on the path of every limited
/// request. Keys of up to 16 bytes (every `$binary_remote_addr`) are held as a number with
/// their length, so that finding one compares two words instead of calling `memcmp`.
#[derive(Debug, Default)]
struct KeyIndex {
    short: HashMap<(u128, u8), usize, foldhash::quality::RandomState>,
    long: HashMap<Box<[u8]>, usize, foldhash::quality::RandomState>,
}

/// The number a key of up to 16 bytes is held as, with its length.
fn short_key(key: &[u8]) -> Option<(u128, u8)> {
    // The two lengths of an address, without a `memcpy` call.
    if let Ok(v4) = <[u8; 4]>::try_from(key) {
        return Some((u128::from(u32::from_ne_bytes(v4)), 4));
    }
    if let Ok(v6) = <[u8; 16]>::try_from(key) {
        return Some((u128::from_ne_bytes(v6), 16));
    }
    let len = u8::try_from(key.len()).ok().filter(|len| *len <= 16)?;
    let mut bytes = [0u8; 16];
    for (byte, value) in bytes.iter_mut().zip(key) {
        *byte = *value;
    }
    Some((u128::from_ne_bytes(bytes), len))
}

impl KeyIndex {
    fn get(&self, key: &[u8]) -> Option<usize> {
        match short_key(key) {
            Some(short) => self.short.get(&short).copied(),
            None => self.long.get(key).copied(),
        }
    }

    fn insert(&mut self, key: &[u8], slot: usize) {
        match short_key(key) {
            Some(short) => self.short.insert(short, slot),
            None => self.long.insert(key.into(), slot),
        };
    }

    fn remove(&mut self, key: &[u8]) {
        match short_key(key) {
            Some(short) => self.short.remove(&short),
            None => self.long.remove(key),
        };
    }

    fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }
}

#[derive(Debug)]
struct ReqSlot {
    key: Box<[u8]>,
    entry: ReqEntry,
    newer: usize,
    older: usize,
}

impl ReqZone {
    pub fn new(name: &str, size: u64, key_text: &str) -> ReqZone {
        let log_context = format!(" in limit_req zone \"{name}\"").len() as u64 + 1;
        ReqZone {
            name: name.to_owned(),
            size,
            key_text: key_text.to_owned(),
            epoch_ms: runtime::sys::linux::monotonic_millis(),
            state: Mutex::new(ReqState {
                index: KeyIndex::default(),
                slots: Vec::new(),
                free: Vec::new(),
                newest: NONE,
                oldest: NONE,
                // The tree, its sentinel and the LRU queue head.
                capacity: Capacity::new(size, 80, log_context),
            }),
        }
    }

    /// Milliseconds since the zone was made: nginx's `ngx_current_msec` for this zone.
    pub fn now_ms(&self) -> u64 {
        CLOCK_START_MS + runtime::sys::linux::monotonic_millis().saturating_sub(self.epoch_ms)
    }

    /// How many keys the zone holds.
    pub fn len(&self) -> usize {
        self.lock().index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReqState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// nginx's lookup: the key's excess after the time since its last request drained it
    /// at `rate` (thousandths of a request per second), plus this request. Past `burst`
    /// (thousandths) the request is busy; otherwise the last zone of a list accounts it
    /// (`account`), earlier zones hold the entry until [`ReqZone::account`].
    pub fn lookup(&self, key: &[u8], rate: u64, burst: u64, account: bool, now: u64) -> Lookup {
        let mut state = self.lock();
        let state = &mut *state;
        if let Some(slot) = state.index.get(key) {
            state.move_to_front(slot);
            let entry = &mut state.slots[slot].entry;
            let elapsed = now.saturating_sub(entry.last);
            let excess = with_request(entry.excess, rate, elapsed);
            if excess > burst {
                return Lookup::Busy { excess };
            }
            if account {
                entry.excess = excess;
                if elapsed > 0 {
                    entry.last = now;
                }
                return Lookup::Accounted { excess };
            }
            entry.count += 1;
            return Lookup::Held;
        }
        let size = REQ_NODE_HEAD + key.len() as u64;
        state.expire(1, rate, now);
        if !state.capacity.allocate(size) {
            state.expire(0, rate, now);
            if !state.capacity.allocate(size) {
                return Lookup::Full;
            }
        }
        let (last, count) = if account { (now, 0) } else { (0, 1) };
        state.insert(
            key,
            ReqEntry {
                last,
                excess: 0,
                count,
            },
        );
        if account {
            Lookup::Accounted { excess: 0 }
        } else {
            Lookup::Held
        }
    }

    /// Accounts a request held by [`ReqZone::lookup`] once the last zone agreed, and
    /// returns the key's new excess.
    pub fn account(&self, key: &[u8], rate: u64, now: u64) -> u64 {
        let mut state = self.lock();
        let Some(slot) = state.index.get(key) else {
            return 0;
        };
        let entry = &mut state.slots[slot].entry;
        let elapsed = now.saturating_sub(entry.last);
        let excess = with_request(entry.excess, rate, elapsed);
        if elapsed > 0 {
            entry.last = now;
        }
        entry.excess = excess;
        entry.count = entry.count.saturating_sub(1);
        excess
    }

    /// Lets go of a held entry without accounting (a later zone refused the request).
    pub fn release(&self, key: &[u8]) {
        let mut state = self.lock();
        if let Some(slot) = state.index.get(key) {
            let entry = &mut state.slots[slot].entry;
            entry.count = entry.count.saturating_sub(1);
        }
    }
}

impl ReqState {
    /// nginx's expiry: from the oldest entry, stopping at one a request holds. With
    /// `forced == 0` the oldest goes whatever its state; then (and with `forced == 1`
    /// from the start) up to two more go if they were idle a minute and have drained.
    fn expire(&mut self, forced: u32, rate: u64, now: u64) {
        let mut round = forced;
        while round < 3 {
            let slot = self.oldest;
            if slot == NONE {
                return;
            }
            let entry = &self.slots[slot].entry;
            if entry.count > 0 {
                return;
            }
            if round != 0 {
                let elapsed = now.abs_diff(entry.last);
                if elapsed < IDLE_MS {
                    return;
                }
                if drained(entry.excess, rate, elapsed) > 0 {
                    return;
                }
            }
            round += 1;
            self.unlink(slot);
            let key = std::mem::take(&mut self.slots[slot].key);
            self.index.remove(&key);
            self.free.push(slot);
            self.capacity.free(REQ_NODE_HEAD + key.len() as u64);
        }
    }

    /// A new entry, the most recently used.
    fn insert(&mut self, key: &[u8], entry: ReqEntry) {
        let filled = ReqSlot {
            key: key.into(),
            entry,
            newer: NONE,
            older: NONE,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = filled;
                slot
            }
            None => {
                self.slots.push(filled);
                self.slots.len() - 1
            }
        };
        self.index.insert(key, slot);
        self.link_front(slot);
    }

    fn move_to_front(&mut self, slot: usize) {
        if self.newest != slot {
            self.unlink(slot);
            self.link_front(slot);
        }
    }

    fn unlink(&mut self, slot: usize) {
        let (newer, older) = (self.slots[slot].newer, self.slots[slot].older);
        match newer {
            NONE => self.newest = older,
            newer => self.slots[newer].older = older,
        }
        match older {
            NONE => self.oldest = newer,
            older => self.slots[older].newer = newer,
        }
    }

    fn link_front(&mut self, slot: usize) {
        let old_front = self.newest;
        self.slots[slot].newer = NONE;
        self.slots[slot].older = old_front;
        match old_front {
            NONE => self.oldest = slot,
            front => self.slots[front].newer = slot,
        }
        self.newest = slot;
    }
}

/// A key's excess with one more request, `elapsed` milliseconds after the last one:
/// drained at `rate`, the request's 1000 added, and only then floored at zero, as nginx
/// computes it (so a long pause leaves 0, not 1000).
fn with_request(excess: u64, rate: u64, elapsed: u64) -> u64 {
    // `excess - drain + 1000` floored at zero is `(excess + 1000) - drain` saturated; the
    // product fits a u64 but for entries idle for ages, which drain to zero anyway.
    let drain = rate
        .checked_mul(elapsed)
        .map_or(u64::MAX, |product| product / 1000);
    excess.saturating_add(1000).saturating_sub(drain)
}

/// An excess after `elapsed` milliseconds at `rate`, never below zero.
fn drained(excess: u64, rate: u64, elapsed: u64) -> u64 {
    let drain = u128::from(rate) * u128::from(elapsed) / 1000;
    u64::try_from(u128::from(excess).saturating_sub(drain)).unwrap_or(0)
}

/// The counts of one `limit_conn_zone`.
#[derive(Debug)]
pub struct ConnZone {
    pub name: String,
    pub size: u64,
    pub key_text: String,
    state: Mutex<ConnState>,
}

#[derive(Debug)]
struct ConnState {
    /// foldhash, as the `limit_req` zones.
    counts: HashMap<Box<[u8]>, u32, foldhash::quality::RandomState>,
    capacity: Capacity,
}

/// What taking a connection slot found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    Taken,
    /// The key has `limit` requests already.
    Limited,
    /// No room for a new key.
    Full,
}

impl ConnZone {
    pub fn new(name: &str, size: u64, key_text: &str) -> ConnZone {
        let log_context = format!(" in limit_conn_zone \"{name}\"").len() as u64 + 1;
        ConnZone {
            name: name.to_owned(),
            size,
            key_text: key_text.to_owned(),
            state: Mutex::new(ConnState {
                counts: HashMap::default(),
                // The tree and its sentinel.
                capacity: Capacity::new(size, 64, log_context),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ConnState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts one more request for `key` if it has fewer than `limit`.
    pub fn take(&self, key: &[u8], limit: u32) -> Take {
        let mut state = self.lock();
        if let Some(count) = state.counts.get_mut(key) {
            if *count >= limit {
                return Take::Limited;
            }
            *count += 1;
            return Take::Taken;
        }
        if !state.capacity.allocate(CONN_NODE_HEAD + key.len() as u64) {
            return Take::Full;
        }
        state.counts.insert(key.into(), 1);
        Take::Taken
    }

    /// One request for `key` ended; a key with none left is forgotten.
    pub fn give_back(&self, key: &[u8]) {
        let mut state = self.lock();
        let Some(count) = state.counts.get_mut(key) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            state.counts.remove(key);
            state.capacity.free(CONN_NODE_HEAD + key.len() as u64);
        }
    }

    /// The requests counted for `key`.
    pub fn count(&self, key: &[u8]) -> u32 {
        self.lock().counts.get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_megabyte_holds_about_eight_thousand_address_states() {
        let zone = ReqZone::new("one", 1024 * 1024, "$binary_remote_addr");
        // Once the zone is full, each new key frees the oldest: the count stops growing.
        let mut held = 0;
        for index in 0u32..20_000 {
            let found = zone.lookup(&index.to_be_bytes(), 1000, 0, true, 0);
            assert_eq!(found, Lookup::Accounted { excess: 0 });
            if zone.len() == held {
                break;
            }
            held = zone.len();
        }
        // 254 pages; one for the zone's name, 32 slots of 128 bytes in each other, one
        // slot for the tree.
        assert_eq!(held, 253 * 32 - 1);
    }

    /// A full zone frees its least recently used key: a key looked up again moves to the
    /// front, and freed slots are reused.
    #[test]
    fn a_full_zone_frees_the_least_recently_used_key() {
        // Five keys of a page each fit, as below.
        let zone = ReqZone::new("lru", MIN_ZONE_SIZE, "$k");
        let key = |name: u8| vec![name; 2100];
        for name in b'a'..=b'e' {
            assert_eq!(
                zone.lookup(&key(name), 1000, 0, true, 0),
                Lookup::Accounted { excess: 0 }
            );
        }
        // `a` is used again (a second later, drained), so `b` is now the oldest.
        let found = zone.lookup(&key(b'a'), 1000, 0, true, 1000);
        assert_eq!(found, Lookup::Accounted { excess: 0 });
        assert_eq!(
            zone.lookup(&key(b'f'), 1000, 0, true, 1000),
            Lookup::Accounted { excess: 0 }
        );
        assert_eq!(zone.len(), 5);
        // `a` is still known (its excess counts), `b` was freed (found anew, drained).
        assert_eq!(
            zone.lookup(&key(b'a'), 1000, 1000, true, 1000),
            Lookup::Accounted { excess: 1000 }
        );
        assert_eq!(zone.len(), 5);
        let state = zone.lock();
        assert_eq!(state.index.get(key(b'b').as_slice()), None);
        assert_eq!(state.slots.len(), 5, "the freed slot was reused");
    }

    /// Short keys are held as numbers with their length: an IPv4 address and a 16-byte key
    /// that starts with it, or a key with trailing zero bytes, are different keys.
    #[test]
    fn short_and_long_keys_are_told_apart() {
        let mut index = KeyIndex::default();
        let v4 = [127u8, 0, 0, 1];
        let mut v6 = [0u8; 16];
        v6[..4].copy_from_slice(&v4);
        let long = [7u8; 17];
        index.insert(&v4, 1);
        index.insert(&v6, 2);
        index.insert(&[127, 0, 0, 1, 0], 3);
        index.insert(&long, 4);
        index.insert(b"", 5);
        assert_eq!(index.get(&v4), Some(1));
        assert_eq!(index.get(&v6), Some(2));
        assert_eq!(index.get(&[127, 0, 0, 1, 0]), Some(3));
        assert_eq!(index.get(&long), Some(4));
        assert_eq!(index.get(b""), Some(5));
        assert_eq!(index.get(&[127, 0, 0, 2]), None);
        assert_eq!(index.len(), 5);
        index.remove(&v6);
        index.remove(&long);
        assert_eq!(
            (index.get(&v6), index.get(&long), index.get(&v4)),
            (None, None, Some(1))
        );
        assert_eq!(index.len(), 3);
    }

    #[test]
    fn leaky_bucket_drains_at_the_rate() {
        let zone = ReqZone::new("one", MIN_ZONE_SIZE, "$k");
        // 2 r/s, burst 1.
        assert_eq!(
            zone.lookup(b"a", 2000, 1000, true, 1000),
            Lookup::Accounted { excess: 0 }
        );
        assert_eq!(
            zone.lookup(b"a", 2000, 1000, true, 1100),
            Lookup::Accounted { excess: 800 }
        );
        assert_eq!(
            zone.lookup(b"a", 2000, 1000, true, 1200),
            Lookup::Busy { excess: 1600 }
        );
        // The busy request was not counted: 800 drained by 400 ms at 2 r/s, plus one.
        assert_eq!(
            zone.lookup(b"a", 2000, 1000, true, 1500),
            Lookup::Accounted { excess: 1000 }
        );
        // A long pause drains everything, this request included.
        assert_eq!(
            zone.lookup(b"a", 2000, 1000, true, 9000),
            Lookup::Accounted { excess: 0 }
        );
    }

    #[test]
    fn a_full_zone_whose_oldest_entry_is_held_refuses() {
        // Seven pages: the zone's name, the tree, and five keys of a page each.
        let zone = ReqZone::new("small", MIN_ZONE_SIZE, "$k");
        let key = |name: u8| vec![name; 2100];
        assert_eq!(zone.lookup(&key(b'a'), 1000, 0, false, 0), Lookup::Held);
        for name in b'b'..=b'e' {
            let found = zone.lookup(&key(name), 1000, 0, true, 0);
            assert_eq!(found, Lookup::Accounted { excess: 0 });
        }
        // `a` is the oldest and a request holds it: nothing can be freed.
        assert_eq!(zone.lookup(&key(b'f'), 1000, 0, true, 0), Lookup::Full);
        // Once let go, the oldest entry makes room.
        zone.release(&key(b'a'));
        let found = zone.lookup(&key(b'f'), 1000, 0, true, 0);
        assert_eq!(found, Lookup::Accounted { excess: 0 });
        assert_eq!(zone.len(), 5);
    }

    #[test]
    fn a_connection_count_is_given_back() {
        let zone = ConnZone::new("c", MIN_ZONE_SIZE, "$k");
        assert_eq!(zone.take(b"a", 1), Take::Taken);
        assert_eq!(zone.take(b"a", 1), Take::Limited);
        zone.give_back(b"a");
        assert_eq!(zone.count(b"a"), 0);
        assert_eq!(zone.take(b"a", 1), Take::Taken);
    }
}
