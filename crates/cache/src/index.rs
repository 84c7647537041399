//! The index of one cache zone (`keys_zone=NAME:SIZE`): what Portico knows about each key,
//! kept in memory and shared by every worker thread through an `Arc<Zone>`.
//!
//! # Layout
//! 64 shards, each a `std::sync::Mutex` around a map from MD5 to a slab slot and an
//! intrusive LRU list (head = most recently touched). A key's shard is chosen by one byte of
//! its MD5, its map bucket by the first eight (the key is already a hash). Counters (live
//! entries, committed bytes, reserved bytes, watermark) are atomics updated under the
//! shard lock that changed them. No shard lock is held across a system call or while
//! another shard lock is taken.
//!
//! Capacity follows nginx's slab arithmetic: `max(1, (keys_zone_size - 8 KiB) / 128)`
//! entries. When a new key finds the zone full, the watermark drops to `count - count/8`
//! (the manager then trims to it) and the globally oldest entry that is not being filled or
//! updated is evicted; if 20 candidates cannot go, [`ZoneFull`] tells the caller to serve
//! the request uncached.
//!
//! # Unlinking safely
//! Evicting an entry whose file exists leaves a *tombstone* in its node (the inode and size
//! of the old file) and queues an [`Unlink`] for the manager thread. The manager re-checks
//! under the shard lock ([`Zone::begin_unlink`]): it unlinks only if the node still holds a
//! tombstone of that inode and no filler is renaming a new file over the same name, and it
//! marks the node `unlinking` while the system call runs. A filler claims the name before
//! its rename ([`crate::FillGuard::try_begin_rename`]) and is refused while `unlinking` is
//! set; it waits with [`Zone::wait_unlinked`], woken through a `tokio::sync::Notify` when
//! the unlink ends. A commit replaces a tombstone (its file was renamed over). So an unlink
//! queued for version N can only ever remove version N: version N+1 is renamed either after
//! the unlink finished, or while the manager is kept away by the claim, after which the
//! tombstone is gone.
//!
//! Readers do not pin entries: a request serving an entry holds its open file, which stays
//! readable after an unlink.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Notify;

use crate::fill::{Fill, FillGuard, FillState, Reservation, UpdateGuard};
use crate::key::Layout;

const SHARDS: usize = 64;
const NIL: u32 = u32::MAX;
/// How many LRU tails a new key may try to evict before the zone counts as full.
const EVICT_TRIES: usize = 20;
/// Bytes nginx's shared zone keeps for itself before its slab pages.
const ZONE_OVERHEAD: u64 = 8192;
/// Bytes per key in nginx's slab (its node is 120 bytes, slab class 128).
const BYTES_PER_KEY: u64 = 128;
const DEFAULT_BLOCK_SIZE: u64 = 4096;
const MIN_SLACK: u64 = 64 * 1024 * 1024;
/// The free space a store must leave when `min_free` is not set.
const DEFAULT_FREE_FLOOR: u64 = 16 * 1024 * 1024;
const UNKNOWN_FREE: u64 = u64::MAX;

/// A cache path's parameters (`proxy_cache_path`), already parsed and defaulted.
#[derive(Clone, Debug)]
pub struct ZoneParams {
    pub name: String,
    pub layout: Layout,
    pub keys_zone_size: u64,
    pub inactive: Duration,
    /// Bytes; `None` is unlimited.
    pub max_size: Option<u64>,
    /// Portico's `max_size_slack=`; `None` is max(1% of `max_size`, 64 MiB).
    pub max_size_slack: Option<u64>,
    /// Bytes of free space the manager keeps; `None` when not set.
    pub min_free: Option<u64>,
    pub manager_files: usize,
    pub manager_sleep: Duration,
    pub manager_threshold: Duration,
    pub loader_files: usize,
    pub loader_sleep: Duration,
    pub loader_threshold: Duration,
    pub use_temp_path: bool,
}

impl ZoneParams {
    /// nginx's defaults: `inactive=10m`, no size limits, batches of 100 files,
    /// 50 ms sleeps, 200 ms thresholds, `use_temp_path=on`.
    pub fn new(name: &str, layout: Layout, keys_zone_size: u64) -> ZoneParams {
        ZoneParams {
            name: name.to_owned(),
            layout,
            keys_zone_size,
            inactive: Duration::from_secs(600),
            max_size: None,
            max_size_slack: None,
            min_free: None,
            manager_files: 100,
            manager_sleep: Duration::from_millis(50),
            manager_threshold: Duration::from_millis(200),
            loader_files: 100,
            loader_sleep: Duration::from_millis(50),
            loader_threshold: Duration::from_millis(200),
            use_temp_path: true,
        }
    }

    /// How many keys the zone holds.
    pub fn capacity(&self) -> usize {
        let keys = self.keys_zone_size.saturating_sub(ZONE_OVERHEAD) / BYTES_PER_KEY;
        usize::try_from(keys.max(1)).unwrap_or(usize::MAX)
    }

    /// The hard ceiling on committed and reserved bytes: `max_size + slack`.
    pub fn ceiling(&self) -> Option<u64> {
        let max_size = self.max_size?;
        let slack = self
            .max_size_slack
            .unwrap_or_else(|| (max_size / 100).max(MIN_SLACK));
        Some(max_size.saturating_add(slack))
    }
}

/// The zone has no room for another key and none could be evicted: serve uncached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneFull;

impl std::fmt::Display for ZoneFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cache keys zone is full")
    }
}

impl std::error::Error for ZoneFull {}

/// A copy of one entry's state, taken by [`Zone::touch`].
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// A complete file is on disk under the key's name.
    pub exists: bool,
    /// Lookups since the entry was created (`proxy_cache_min_uses`).
    pub uses: u32,
    /// Fresh until (epoch seconds); 0 when unknown (loaded without reading the file).
    pub valid_sec: i64,
    /// The status of an error-only entry, else 0.
    pub error: u16,
    /// The file's inode.
    pub uniq: u64,
    /// 0 when unknown.
    pub body_start: u16,
    /// Bytes the file takes on disk.
    pub fs_size: u64,
    /// An [`UpdateGuard`] holds the entry.
    pub updating: bool,
    /// The fill in progress, if any.
    pub fill: Option<Arc<Fill>>,
}

/// What a filler learns when it asks to start: fill, or wait for the running fill.
#[derive(Debug)]
pub enum FillStart {
    Filler(FillGuard),
    Wait(Arc<Fill>),
}

/// A file unlink queued for the manager thread: the key's file, if it is still inode `uniq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unlink {
    pub md5: [u8; 16],
    pub uniq: u64,
}

/// What one manager step did to the LRU tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    /// An entry was evicted; its file, if any, must be unlinked.
    Evicted(Option<Unlink>),
    /// The oldest entry expires after this long.
    NotYet(Duration),
    /// The index has no entry.
    Nothing,
    /// Every candidate is being filled or updated (they went to the LRU head).
    Busy,
}

/// One key zone: the index, its counters and the unlink queue.
pub struct Zone {
    params: ZoneParams,
    capacity: usize,
    ceiling: Option<u64>,
    block_size: u64,
    shards: Box<[Mutex<Shard>]>,
    count: AtomicUsize,
    watermark: AtomicUsize,
    size_bytes: AtomicU64,
    tombstone_bytes: AtomicU64,
    reserved_bytes: AtomicU64,
    /// Free space of the cache path's file system, as the manager last saw it.
    free_bytes: AtomicU64,
    stamp: AtomicU64,
    next_id: AtomicU64,
    cold: AtomicBool,
    created: SystemTime,
    unlinked: Notify,
    signal: Mutex<Signal>,
    wake: Condvar,
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zone")
            .field("name", &self.params.name)
            .field("root", &self.params.layout.root)
            .field("count", &self.count())
            .field("capacity", &self.capacity)
            .field("size", &self.size())
            .field("reserved", &self.reserved())
            .finish_non_exhaustive()
    }
}

/// What wakes the manager thread.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    pub(crate) unlinks: VecDeque<Unlink>,
    pub(crate) stop: bool,
}

impl Zone {
    /// A zone for `params`; the block size comes from `statvfs` of the root (4096 when the
    /// root cannot be asked). The zone starts cold.
    pub fn new(params: ZoneParams) -> Arc<Zone> {
        let block_size = block_size_of(&params.layout.root).unwrap_or(DEFAULT_BLOCK_SIZE);
        Zone::with_block_size(params, block_size)
    }

    /// [`Zone::new`] with a known block size.
    pub fn with_block_size(params: ZoneParams, block_size: u64) -> Arc<Zone> {
        assert!(block_size > 0, "block size is zero");
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        Arc::new(Zone {
            capacity: params.capacity(),
            ceiling: params.ceiling(),
            params,
            block_size,
            shards,
            count: AtomicUsize::new(0),
            watermark: AtomicUsize::new(usize::MAX),
            size_bytes: AtomicU64::new(0),
            tombstone_bytes: AtomicU64::new(0),
            reserved_bytes: AtomicU64::new(0),
            free_bytes: AtomicU64::new(UNKNOWN_FREE),
            stamp: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            cold: AtomicBool::new(true),
            created: SystemTime::now(),
            unlinked: Notify::new(),
            signal: Mutex::new(Signal::default()),
            wake: Condvar::new(),
        })
    }

    pub fn params(&self) -> &ZoneParams {
        &self.params
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Live entries (tombstones waiting for their unlink are not counted).
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Bytes of committed files, including those of tombstones not yet unlinked.
    pub fn size(&self) -> u64 {
        self.size_bytes.load(Ordering::Relaxed)
    }

    /// Bytes reserved by running fills.
    pub fn reserved(&self) -> u64 {
        self.reserved_bytes.load(Ordering::Relaxed)
    }

    /// Bytes free on the cache path's file system when the manager last looked.
    pub fn free_space(&self) -> Option<u64> {
        let free = self.free_bytes.load(Ordering::Relaxed);
        (free != UNKNOWN_FREE).then_some(free)
    }

    /// Records the free space (the manager calls this at least once a second).
    pub fn set_free_space(&self, bytes: u64) {
        self.free_bytes
            .store(bytes.min(UNKNOWN_FREE - 1), Ordering::Relaxed);
    }

    /// `usize::MAX` until the zone was once full.
    pub fn watermark(&self) -> usize {
        self.watermark.load(Ordering::Relaxed)
    }

    /// True until the loader has walked the whole cache path: an index miss may still
    /// have a file on disk.
    pub fn cold(&self) -> bool {
        self.cold.load(Ordering::Relaxed)
    }

    /// When the zone was made: temp files older than this are left from an earlier run.
    pub fn created(&self) -> SystemTime {
        self.created
    }

    pub fn set_cold(&self, cold: bool) {
        self.cold.store(cold, Ordering::Relaxed);
    }

    /// A lookup: creates the entry if absent, counts the use, moves it to the LRU head and
    /// sets its expiry to `now + inactive`.
    pub fn touch(&self, md5: &[u8; 16], now: Instant) -> Result<Snapshot, ZoneFull> {
        let expire = now + self.params.inactive;
        {
            let mut shard = self.shard(md5);
            if let Some(slot) = shard.find(md5)
                && shard.nodes[slot].live
            {
                return Ok(self.promote(&mut shard, slot, expire));
            }
        }
        self.claim_capacity()?;
        let mut shard = self.shard(md5);
        let slot = match shard.find(md5) {
            Some(slot) if shard.nodes[slot].live => {
                self.count.fetch_sub(1, Ordering::Relaxed);
                slot
            }
            Some(slot) => {
                // A tombstone waiting for its unlink, or a node kept for its fill or
                // update: it becomes a new entry (its old file goes on being unlinked).
                let node = &mut shard.nodes[slot];
                node.live = true;
                node.uses = 0;
                node.valid_sec = 0;
                node.error = 0;
                node.uniq = 0;
                node.fs_size = 0;
                node.body_start = 0;
                shard.push_head(slot);
                slot
            }
            None => shard.insert(Node::new(*md5, expire)),
        };
        Ok(self.promote(&mut shard, slot, expire))
    }

    /// Starts a fill of `md5` unless a live one runs: with `lock_age` `None`
    /// (`proxy_cache_lock off`) every caller fills; with `Some(age)` a fill younger than
    /// `age` is waited on and an older one is taken over by a new filler.
    pub fn start_fill(
        self: &Arc<Self>,
        md5: &[u8; 16],
        lock_age: Option<Duration>,
        now: Instant,
    ) -> Result<FillStart, ZoneFull> {
        let mut shard = loop {
            let shard = self.shard(md5);
            if shard.find(md5).is_some() {
                break shard;
            }
            drop(shard);
            self.ensure_node(md5, now)?;
        };
        let Some(slot) = shard.find(md5) else {
            unreachable!("the node was found under this lock");
        };
        let node = &mut shard.nodes[slot];
        if let (Some(fill), Some(age)) = (&node.fill, lock_age)
            && now < fill.started() + age
        {
            return Ok(FillStart::Wait(Arc::clone(fill)));
        }
        let fill = Arc::new(Fill::new(now));
        node.fill = Some(Arc::clone(&fill));
        node.fills_active += 1;
        drop(shard);
        Ok(FillStart::Filler(FillGuard::new(
            Arc::clone(self),
            *md5,
            fill,
        )))
    }

    /// Marks an expired entry as being updated by the caller. `None` when another live
    /// guard holds it (the caller sees UPDATING) or the entry is not in the index; a guard
    /// older than `backstop` is taken over.
    pub fn try_update(
        self: &Arc<Self>,
        md5: &[u8; 16],
        now: Instant,
        backstop: Duration,
    ) -> Option<UpdateGuard> {
        let mut shard = self.shard(md5);
        let slot = shard.find(md5)?;
        let node = &mut shard.nodes[slot];
        let took_over = match node.updating {
            Some(mark) if now < mark.started + backstop => return None,
            Some(_) => true,
            None => false,
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        node.updating = Some(UpdateMark { id, started: now });
        drop(shard);
        Some(UpdateGuard::new(Arc::clone(self), *md5, id, took_over))
    }

    /// Makes the entry an error-only entry (`status` until `valid_sec`), as nginx does for
    /// a 502/504 it made itself or an intercepted error covered by `proxy_cache_valid`.
    pub fn set_error(&self, md5: &[u8; 16], status: u16, valid_sec: i64) {
        let mut shard = self.shard(md5);
        if let Some(slot) = shard.find(md5) {
            let node = &mut shard.nodes[slot];
            node.error = status;
            node.valid_sec = valid_sec;
        }
    }

    /// New freshness after a 304 (the file's header was rewritten).
    pub fn set_valid(&self, md5: &[u8; 16], valid_sec: i64) {
        let mut shard = self.shard(md5);
        if let Some(slot) = shard.find(md5) {
            let node = &mut shard.nodes[slot];
            node.valid_sec = valid_sec;
            node.error = 0;
        }
    }

    /// Drops the entry's file (damaged, or purged) if it is still inode `uniq`: the node
    /// becomes a tombstone and the unlink is queued. Returns whether it was removed.
    pub fn remove(&self, md5: &[u8; 16], uniq: u64) -> bool {
        let mut shard = self.shard(md5);
        let Some(slot) = shard.find(md5) else {
            return false;
        };
        if !shard.nodes[slot].exists || shard.nodes[slot].uniq != uniq {
            return false;
        }
        let unlink = self.bury(&mut shard, slot);
        let node = &mut shard.nodes[slot];
        node.valid_sec = 0;
        node.error = 0;
        let busy = node.fills_active > 0 || node.updating.is_some();
        if node.live && !busy {
            shard.unlink_lru(slot);
            shard.nodes[slot].live = false;
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        drop(shard);
        self.queue_unlink(unlink);
        true
    }

    /// Adds a file found by the loader (uses = 1, expiry `now + inactive`), unless the key
    /// is already indexed (a worker got there first). `Ok(false)` when it was; `Err` when
    /// the zone is full: the loader then deletes the file, as nginx's does.
    pub fn add_loaded(
        &self,
        md5: &[u8; 16],
        file: FileInfo,
        valid_sec: Option<i64>,
        body_start: Option<u16>,
        now: Instant,
    ) -> Result<bool, ZoneFull> {
        if self.shard(md5).find(md5).is_some() {
            return Ok(false);
        }
        if !self.try_claim_slot() {
            self.set_watermark();
            return Err(ZoneFull);
        }
        let mut shard = self.shard(md5);
        if shard.find(md5).is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
            return Ok(false);
        }
        let mut node = Node::new(*md5, now + self.params.inactive);
        node.exists = true;
        node.uses = 1;
        node.uniq = file.uniq;
        node.fs_size = file.fs_size;
        node.valid_sec = valid_sec.unwrap_or(0);
        node.body_start = body_start.unwrap_or(0);
        node.stamp = self.next_stamp();
        self.size_bytes.fetch_add(file.fs_size, Ordering::Relaxed);
        shard.insert(node);
        Ok(true)
    }

    /// Every live entry, oldest first, with the time left before it expires at `now`
    /// (for the snapshot written at a graceful stop).
    pub fn export(&self, now: Instant) -> Vec<SavedEntry> {
        let mut entries = Vec::with_capacity(self.count());
        for index in 0..SHARDS {
            let shard = self.lock_shard(index);
            let mut slot = shard.tail;
            while slot != NIL {
                let node = &shard.nodes[slot as usize];
                entries.push((node.stamp, SavedEntry::of(node, now)));
                slot = node.prev;
            }
        }
        entries.sort_by_key(|(stamp, _)| *stamp);
        entries.into_iter().map(|(_, entry)| entry).collect()
    }

    /// Puts back an entry of a snapshot (call in the snapshot's order, oldest first),
    /// unless the key is already indexed. `Err` when the zone is full.
    pub fn restore(&self, saved: &SavedEntry, now: Instant) -> Result<bool, ZoneFull> {
        if self.shard(&saved.md5).find(&saved.md5).is_some() {
            return Ok(false);
        }
        if !self.try_claim_slot() {
            self.set_watermark();
            return Err(ZoneFull);
        }
        let mut shard = self.shard(&saved.md5);
        if shard.find(&saved.md5).is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
            return Ok(false);
        }
        let mut node = Node::new(saved.md5, now + saved.expires_in);
        node.exists = saved.exists;
        node.uses = saved.uses;
        node.valid_sec = saved.valid_sec;
        node.error = saved.error;
        node.body_start = saved.body_start;
        if saved.exists {
            node.uniq = saved.uniq;
            node.fs_size = saved.fs_size;
            self.size_bytes.fetch_add(saved.fs_size, Ordering::Relaxed);
        }
        node.stamp = self.next_stamp();
        shard.insert(node);
        Ok(true)
    }

    /// Reserves `bytes` against the ceiling (`max_size + slack`), evicting LRU entries when
    /// it would be crossed; `None` when it still would, or when the reserved bytes would
    /// leave less than `min_free / 2` (16 MiB without `min_free`) free on the file system:
    /// store nothing.
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        if !self.reserve_bytes(bytes) {
            return None;
        }
        Some(Reservation::new(Arc::clone(self), bytes))
    }

    /// Resolves when no unlink of `md5`'s file is running (a filler that was refused its
    /// rename waits here, then asks again).
    pub async fn wait_unlinked(&self, md5: &[u8; 16]) {
        loop {
            let notified = self.unlinked.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.is_unlinking(md5) {
                return;
            }
            notified.await;
        }
    }

    /// The next queued unlink, if any.
    pub fn next_unlink(&self) -> Option<Unlink> {
        self.lock_signal().unlinks.pop_front()
    }

    /// Queued unlinks.
    pub fn unlinks_queued(&self) -> usize {
        self.lock_signal().unlinks.len()
    }

    /// Re-checks a queued unlink under the shard lock. `Some(path)` when the file must be
    /// unlinked now; the node is then `unlinking` until [`Zone::end_unlink`]. `None` when
    /// the unlink is stale (a newer version was committed, or it was already done) or
    /// deferred (a filler is renaming over the name; the unlink is queued again if its
    /// rename fails).
    pub fn begin_unlink(&self, unlink: &Unlink) -> Option<PathBuf> {
        let mut shard = self.shard(&unlink.md5);
        let slot = shard.find(&unlink.md5)?;
        let node = &mut shard.nodes[slot];
        let tombstone = node.tombstone.as_mut()?;
        if tombstone.uniq != unlink.uniq || node.unlinking {
            return None;
        }
        if node.renaming > 0 {
            tombstone.queued = false;
            return None;
        }
        node.unlinking = true;
        Some(self.params.layout.entry_path_of(&unlink.md5))
    }

    /// Ends an unlink [`Zone::begin_unlink`] started (whether or not the system call
    /// succeeded): the tombstone and its bytes go, and refused fillers are woken.
    pub fn end_unlink(&self, unlink: &Unlink) {
        {
            let mut shard = self.shard(&unlink.md5);
            if let Some(slot) = shard.find(&unlink.md5) {
                let node = &mut shard.nodes[slot];
                assert!(node.unlinking, "end_unlink without begin_unlink");
                node.unlinking = false;
                if let Some(tombstone) = node.tombstone.take() {
                    self.drop_bytes(tombstone.fs_size, true);
                }
                shard.free_if_unused(slot);
            }
        }
        self.unlinked.notify_waiters();
    }

    /// One step of the manager's `inactive` walk: evicts the oldest entry if its expiry
    /// has passed at `now`.
    pub fn expire_step(&self, now: Instant) -> Expired {
        self.evict_oldest(Some(now))
    }

    /// One step of the manager's size/count/free-space trimming: evicts the oldest entry
    /// that can go, whatever its expiry.
    pub fn forced_expire_step(&self) -> Expired {
        self.evict_oldest(None)
    }

    /// Waits up to `timeout` for an unlink to be queued or a stop; true when stopping.
    pub(crate) fn wait_for_work(&self, timeout: Duration) -> bool {
        let signal = self.lock_signal();
        if signal.stop || !signal.unlinks.is_empty() {
            return signal.stop;
        }
        let (signal, _) = self
            .wake
            .wait_timeout(signal, timeout)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        signal.stop
    }

    pub(crate) fn request_stop(&self, stop: bool) {
        self.lock_signal().stop = stop;
        self.wake.notify_all();
    }

    /// The entry's state, without counting a use or moving it in the LRU.
    pub fn peek(&self, md5: &[u8; 16]) -> Option<Snapshot> {
        let shard = self.shard(md5);
        let slot = shard.find(md5)?;
        Some(shard.nodes[slot].snapshot())
    }

    fn is_unlinking(&self, md5: &[u8; 16]) -> bool {
        let shard = self.shard(md5);
        shard
            .find(md5)
            .is_some_and(|slot| shard.nodes[slot].unlinking)
    }

    /// Claims the name for a rename; refused while the name's unlink runs.
    pub(crate) fn claim_rename(&self, md5: &[u8; 16]) -> bool {
        let mut shard = self.shard(md5);
        let Some(slot) = shard.find(md5) else {
            return false;
        };
        let node = &mut shard.nodes[slot];
        if node.unlinking {
            return false;
        }
        node.renaming += 1;
        true
    }

    /// A fill ends: commit its file, or give up (releasing a rename claim).
    pub(crate) fn finish_fill(
        &self,
        md5: &[u8; 16],
        fill: &Arc<Fill>,
        renaming: bool,
        commit: Option<&CommitInfo>,
    ) {
        let mut requeue = None;
        {
            let mut shard = self.shard(md5);
            let Some(slot) = shard.find(md5) else {
                return;
            };
            let node = &mut shard.nodes[slot];
            assert!(node.fills_active > 0, "fill finished twice");
            node.fills_active -= 1;
            if renaming {
                assert!(node.renaming > 0, "rename claim released twice");
                node.renaming -= 1;
            }
            if node.fill.as_ref().is_some_and(|f| Arc::ptr_eq(f, fill)) {
                node.fill = None;
            }
            if let Some(info) = commit {
                self.apply_commit(node, info);
                if !node.live {
                    // Removed while filling: the new file is still the key's file.
                    node.live = true;
                    node.stamp = self.next_stamp();
                    self.count.fetch_add(1, Ordering::Relaxed);
                    shard.push_head(slot);
                }
            } else if let Some(tombstone) = node.tombstone.as_mut()
                && !tombstone.queued
                && node.renaming == 0
            {
                tombstone.queued = true;
                requeue = Some(Unlink {
                    md5: *md5,
                    uniq: tombstone.uniq,
                });
            }
            shard.free_if_unused(slot);
        }
        if let Some(unlink) = requeue {
            self.queue_unlink(Some(unlink));
        }
    }

    pub(crate) fn finish_update(&self, md5: &[u8; 16], id: u64) {
        let mut shard = self.shard(md5);
        if let Some(slot) = shard.find(md5)
            && shard.nodes[slot].updating.is_some_and(|mark| mark.id == id)
        {
            shard.nodes[slot].updating = None;
            shard.free_if_unused(slot);
        }
    }

    pub(crate) fn reserve_bytes(&self, bytes: u64) -> bool {
        let ceiling = self.ceiling.unwrap_or(u64::MAX);
        loop {
            let used = self
                .size()
                .saturating_sub(self.tombstone_bytes.load(Ordering::Relaxed));
            let reserved = self.reserved_bytes.load(Ordering::Relaxed);
            let wanted = reserved.saturating_add(bytes);
            if !self.leaves_free_space(wanted) {
                return false;
            }
            if used.saturating_add(wanted) <= ceiling {
                if self
                    .reserved_bytes
                    .compare_exchange(reserved, wanted, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            match self.evict_oldest(None) {
                Expired::Evicted(unlink) => self.queue_unlink(unlink),
                Expired::NotYet(_) | Expired::Nothing | Expired::Busy => return false,
            }
        }
    }

    /// Whether writing `reserved` bytes (every running fill's) leaves the floor free:
    /// `min_free / 2`, or 16 MiB without `min_free`. True while the free space is unknown.
    fn leaves_free_space(&self, reserved: u64) -> bool {
        let free = self.free_bytes.load(Ordering::Relaxed);
        if free == UNKNOWN_FREE {
            return true;
        }
        let floor = self
            .params
            .min_free
            .map_or(DEFAULT_FREE_FLOOR, |min_free| min_free / 2);
        free.saturating_sub(reserved) >= floor
    }

    pub(crate) fn release_bytes(&self, bytes: u64) {
        let before = self.reserved_bytes.fetch_sub(bytes, Ordering::Relaxed);
        assert!(before >= bytes, "reservation released twice");
    }

    fn apply_commit(&self, node: &mut Node, info: &CommitInfo) {
        if let Some(tombstone) = node.tombstone.take() {
            // The rename replaced the old file.
            self.drop_bytes(tombstone.fs_size, true);
        }
        if node.exists {
            self.drop_bytes(node.fs_size, false);
        }
        node.exists = true;
        node.uniq = info.file.uniq;
        node.fs_size = info.file.fs_size;
        node.valid_sec = info.valid_sec;
        node.body_start = info.body_start;
        node.error = 0;
        self.size_bytes
            .fetch_add(info.file.fs_size, Ordering::Relaxed);
    }

    fn drop_bytes(&self, bytes: u64, tombstone: bool) {
        self.size_bytes.fetch_sub(bytes, Ordering::Relaxed);
        if tombstone {
            self.tombstone_bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    fn promote(&self, shard: &mut Shard, slot: usize, expire: Instant) -> Snapshot {
        let stamp = self.next_stamp();
        shard.move_to_head(slot);
        let node = &mut shard.nodes[slot];
        node.uses = node.uses.saturating_add(1);
        node.expire = expire;
        node.stamp = stamp;
        node.snapshot()
    }

    /// The node for `md5`, created (live, not touched) when absent.
    fn ensure_node(&self, md5: &[u8; 16], now: Instant) -> Result<(), ZoneFull> {
        self.claim_capacity()?;
        let mut shard = self.shard(md5);
        if shard.find(md5).is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
            return Ok(());
        }
        let mut node = Node::new(*md5, now + self.params.inactive);
        node.stamp = self.next_stamp();
        shard.insert(node);
        Ok(())
    }

    /// Counts one more live entry, evicting to make room when the zone is full.
    fn claim_capacity(&self) -> Result<(), ZoneFull> {
        for _ in 0..EVICT_TRIES {
            if self.try_claim_slot() {
                return Ok(());
            }
            self.set_watermark();
            match self.evict_oldest(None) {
                Expired::Evicted(unlink) => self.queue_unlink(unlink),
                Expired::NotYet(_) | Expired::Nothing | Expired::Busy => return Err(ZoneFull),
            }
        }
        Err(ZoneFull)
    }

    fn try_claim_slot(&self) -> bool {
        self.count
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
                (count < self.capacity).then_some(count + 1)
            })
            .is_ok()
    }

    fn set_watermark(&self) {
        let count = self.count();
        self.watermark.store(count - count / 8, Ordering::Relaxed);
    }

    /// Evicts the globally oldest live entry that is not being filled or updated (busy
    /// tails go to their shard's head, at most [`EVICT_TRIES`] of them). With `expired_at`,
    /// only an entry whose expiry has passed then.
    fn evict_oldest(&self, expired_at: Option<Instant>) -> Expired {
        for _ in 0..EVICT_TRIES {
            let Some((index, stamp)) = self.oldest_tail() else {
                return Expired::Nothing;
            };
            let mut shard = self.lock_shard(index);
            let slot = shard.tail;
            if slot == NIL || shard.nodes[slot as usize].stamp != stamp {
                continue;
            }
            let slot = slot as usize;
            let node = &shard.nodes[slot];
            if let Some(now) = expired_at
                && node.expire > now
            {
                return Expired::NotYet(node.expire - now);
            }
            if node.fills_active > 0 || node.updating.is_some() {
                shard.move_to_head(slot);
                shard.nodes[slot].stamp = self.next_stamp();
                continue;
            }
            let unlink = self.bury(&mut shard, slot);
            shard.unlink_lru(slot);
            shard.nodes[slot].live = false;
            self.count.fetch_sub(1, Ordering::Relaxed);
            shard.free_if_unused(slot);
            return Expired::Evicted(unlink);
        }
        Expired::Busy
    }

    /// Turns an existing entry's file into a tombstone; the unlink to queue, if any.
    fn bury(&self, shard: &mut Shard, slot: usize) -> Option<Unlink> {
        let node = &mut shard.nodes[slot];
        if !node.exists {
            return None;
        }
        debug_assert!(
            node.tombstone.is_none(),
            "an existing entry has a tombstone"
        );
        node.exists = false;
        node.tombstone = Some(Tombstone {
            uniq: node.uniq,
            fs_size: node.fs_size,
            queued: true,
        });
        self.tombstone_bytes
            .fetch_add(node.fs_size, Ordering::Relaxed);
        Some(Unlink {
            md5: node.md5,
            uniq: node.uniq,
        })
    }

    /// The shard whose LRU tail is oldest, and that tail's stamp.
    fn oldest_tail(&self) -> Option<(usize, u64)> {
        let mut oldest: Option<(usize, u64)> = None;
        for index in 0..SHARDS {
            let shard = self.lock_shard(index);
            if shard.tail == NIL {
                continue;
            }
            let stamp = shard.nodes[shard.tail as usize].stamp;
            if oldest.is_none_or(|(_, best)| stamp < best) {
                oldest = Some((index, stamp));
            }
        }
        oldest
    }

    fn queue_unlink(&self, unlink: Option<Unlink>) {
        if let Some(unlink) = unlink {
            self.lock_signal().unlinks.push_back(unlink);
            self.wake.notify_all();
        }
    }

    fn next_stamp(&self) -> u64 {
        self.stamp.fetch_add(1, Ordering::Relaxed)
    }

    fn shard(&self, md5: &[u8; 16]) -> MutexGuard<'_, Shard> {
        self.lock_shard(usize::from(md5[8]) % SHARDS)
    }

    fn lock_shard(&self, index: usize) -> MutexGuard<'_, Shard> {
        // A panic under a shard lock leaves consistent links (no user code runs there).
        self.shards[index]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_signal(&self) -> MutexGuard<'_, Signal> {
        self.signal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A committed file: its inode and the bytes it takes on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub uniq: u64,
    pub fs_size: u64,
}

/// What a fill's commit puts into the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitInfo {
    pub file: FileInfo,
    pub valid_sec: i64,
    pub body_start: u16,
}

/// One entry as a snapshot keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedEntry {
    pub md5: [u8; 16],
    pub exists: bool,
    pub uniq: u64,
    pub fs_size: u64,
    pub valid_sec: i64,
    pub body_start: u16,
    pub uses: u32,
    pub error: u16,
    /// Time left before `inactive` removes it.
    pub expires_in: Duration,
}

impl SavedEntry {
    fn of(node: &Node, now: Instant) -> SavedEntry {
        SavedEntry {
            md5: node.md5,
            exists: node.exists,
            uniq: if node.exists { node.uniq } else { 0 },
            fs_size: if node.exists { node.fs_size } else { 0 },
            valid_sec: node.valid_sec,
            body_start: node.body_start,
            uses: node.uses,
            error: node.error,
            expires_in: node.expire.saturating_duration_since(now),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct UpdateMark {
    id: u64,
    started: Instant,
}

#[derive(Clone, Copy, Debug)]
struct Tombstone {
    uniq: u64,
    fs_size: u64,
    /// An [`Unlink`] for it is in the queue.
    queued: bool,
}

#[derive(Debug)]
struct Node {
    md5: [u8; 16],
    /// Counted in `count` and linked in the LRU.
    live: bool,
    exists: bool,
    uses: u32,
    valid_sec: i64,
    error: u16,
    uniq: u64,
    body_start: u16,
    fs_size: u64,
    expire: Instant,
    /// LRU age across shards: larger is more recent.
    stamp: u64,
    updating: Option<UpdateMark>,
    fill: Option<Arc<Fill>>,
    fills_active: u16,
    renaming: u16,
    tombstone: Option<Tombstone>,
    unlinking: bool,
    prev: u32,
    next: u32,
}

impl Node {
    fn new(md5: [u8; 16], expire: Instant) -> Node {
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
            expire,
            stamp: 0,
            updating: None,
            fill: None,
            fills_active: 0,
            renaming: 0,
            tombstone: None,
            unlinking: false,
            prev: NIL,
            next: NIL,
        }
    }

    fn snapshot(&self) -> Snapshot {
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

    fn unused(&self) -> bool {
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
struct Md5Key([u8; 16]);

impl Hash for Md5Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut first = [0u8; 8];
        first.copy_from_slice(&self.0[..8]);
        state.write_u64(u64::from_le_bytes(first));
    }
}

#[derive(Debug, Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
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

/// One shard: map, slab and LRU list.
#[derive(Debug)]
struct Shard {
    map: HashMap<Md5Key, u32, BuildHasherDefault<IdentityHasher>>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard {
            map: HashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

impl Shard {
    fn find(&self, md5: &[u8; 16]) -> Option<usize> {
        self.map.get(&Md5Key(*md5)).map(|&slot| slot as usize)
    }

    /// Stores a live node at the LRU head.
    fn insert(&mut self, node: Node) -> usize {
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

    fn free_if_unused(&mut self, slot: usize) {
        if self.nodes[slot].unused() {
            self.map.remove(&Md5Key(self.nodes[slot].md5));
            self.nodes[slot].fill = None;
            self.free.push(slot as u32);
        }
    }

    fn push_head(&mut self, slot: usize) {
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

    fn unlink_lru(&mut self, slot: usize) {
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

    fn move_to_head(&mut self, slot: usize) {
        if self.head != slot as u32 {
            self.unlink_lru(slot);
            self.push_head(slot);
        }
    }
}

/// The fundamental block size of the file system holding `root`.
fn block_size_of(root: &std::path::Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(root).ok()?;
    let size = if stat.f_frsize > 0 {
        stat.f_frsize
    } else {
        stat.f_bsize
    };
    (size > 0).then_some(size)
}

#[cfg(test)]
mod tests;
