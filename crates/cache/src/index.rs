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
//! # Size
//! `size` counts the disk blocks of committed files, tombstones included until their
//! unlink. A fill reserves its bytes first ([`Zone::reserve`]): against the hard ceiling
//! `max_size + slack` (tombstones not counted: their unlinks are already queued), evicting
//! LRU entries to make room, and against a floor of free space (`min_free / 2`, 16 MiB
//! without `min_free`) measured by the manager thread; a fill that cannot reserve stores
//! nothing. The soft limit, `max_size` itself, is the manager's, on nginx's schedule.
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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Notify;

use crate::fill::{Fill, FillGuard, Reservation, UpdateGuard};

mod housekeeping;
mod params;
mod shard;

pub use housekeeping::Changes;
pub use params::ZoneParams;
use shard::{NIL, Node, Shard, Tombstone, UpdateMark};

const SHARDS: usize = 64;
/// How many LRU tails a new key may try to evict before the zone counts as full.
const EVICT_TRIES: usize = 20;
const DEFAULT_BLOCK_SIZE: u64 = 4096;
/// The free space a store must leave when `min_free` is not set.
const DEFAULT_FREE_FLOOR: u64 = 16 * 1024 * 1024;
const UNKNOWN_FREE: u64 = u64::MAX;

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
    /// How many changed keys a shard lists for the journal before it gives up.
    change_limit: usize,
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
    /// The cache path's file system is mounted read-only, as the manager last saw it.
    read_only: AtomicBool,
    next_id: AtomicU64,
    cold: AtomicBool,
    created: SystemTime,
    unlinked: Notify,
    signal: Mutex<Signal>,
    wake: Condvar,
    purges: crate::purge::PurgeRules,
    stats: crate::stats::CacheStats,
    root_dir: crate::store::RootDir,
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
    /// Set by the loader once the checkpoint and journal are restored: the checkpoint id
    /// the journal now follows (0: none).
    pub(crate) journal_base: Option<u64>,
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
            change_limit: 2 * params.capacity() / SHARDS + 1024,
            ceiling: params.ceiling(),
            block_size,
            shards,
            count: AtomicUsize::new(0),
            watermark: AtomicUsize::new(usize::MAX),
            size_bytes: AtomicU64::new(0),
            tombstone_bytes: AtomicU64::new(0),
            reserved_bytes: AtomicU64::new(0),
            free_bytes: AtomicU64::new(UNKNOWN_FREE),
            read_only: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            cold: AtomicBool::new(true),
            created: SystemTime::now(),
            unlinked: Notify::new(),
            signal: Mutex::new(Signal::default()),
            wake: Condvar::new(),
            purges: crate::purge::PurgeRules::default(),
            stats: crate::stats::CacheStats::default(),
            root_dir: crate::store::RootDir::open(&params.layout.root),
            params,
        })
    }

    pub fn params(&self) -> &ZoneParams {
        &self.params
    }

    /// What the zone answered, by cache status.
    pub fn stats(&self) -> &crate::stats::CacheStats {
        &self.stats
    }

    /// The cache's root directory, held open for opening entries (on the thread that may
    /// block).
    pub fn root_dir(&self) -> &crate::store::RootDir {
        &self.root_dir
    }

    /// The zone's purge rules (`proxy_cache_purge`).
    pub fn purges(&self) -> &crate::purge::PurgeRules {
        &self.purges
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

    /// Records whether the cache path's file system is mounted read-only (the manager
    /// looks with the free space): nothing is reserved, so nothing is stored, meanwhile.
    /// Returns whether that changed.
    pub fn set_read_only(&self, read_only: bool) -> bool {
        self.read_only.swap(read_only, Ordering::Relaxed) != read_only
    }

    pub fn read_only(&self) -> bool {
        self.read_only.load(Ordering::Relaxed)
    }

    /// Why a reservation of `bytes` more was refused (a store not made), for its log
    /// line: the file system is read-only, it has too little free space, or the zone's
    /// ceiling (`max_size` + slack) cannot be met.
    pub fn no_room(&self, bytes: u64) -> NoRoom {
        if self.read_only() {
            return NoRoom::ReadOnly;
        }
        let reserved = self.reserved().saturating_add(bytes);
        if !self.leaves_free_space(reserved) {
            return NoRoom::FreeSpace {
                free: self.free_space().unwrap_or(0),
                floor: self.free_floor(),
            };
        }
        NoRoom::Ceiling {
            ceiling: self.ceiling.unwrap_or(u64::MAX),
        }
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
            shard.mark_changed(slot, self.change_limit);
        }
    }

    /// New freshness after a 304 (the file's header was rewritten).
    pub fn set_valid(&self, md5: &[u8; 16], valid_sec: i64) {
        let mut shard = self.shard(md5);
        if let Some(slot) = shard.find(md5) {
            let node = &mut shard.nodes[slot];
            node.valid_sec = valid_sec;
            node.error = 0;
            shard.mark_changed(slot, self.change_limit);
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
        shard.mark_changed(slot, self.change_limit);
        drop(shard);
        self.queue_unlink(unlink);
        true
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
                shard.mark_changed(slot, self.change_limit);
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
        if self.read_only() {
            return false;
        }
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
        free.saturating_sub(reserved) >= self.free_floor()
    }

    /// The free space a store must leave: `min_free / 2`, or 16 MiB without `min_free`.
    fn free_floor(&self) -> u64 {
        self.params
            .min_free
            .map_or(DEFAULT_FREE_FLOOR, |min_free| min_free / 2)
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
        node.written = info.file.written;
        node.valid_sec = info.valid_sec;
        node.body_start = info.body_start;
        node.error = 0;
        self.size_bytes
            .fetch_add(info.file.fs_size, Ordering::Relaxed);
        self.spend_free_space(info.file.fs_size);
    }

    /// A committed file's bytes come off the free space last measured, so that stores
    /// between two measurements (the manager's, once a second) cannot together go below
    /// the floor. Files removed meanwhile are counted at the next measurement.
    fn spend_free_space(&self, bytes: u64) {
        let _ = self
            .free_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |free| {
                (free != UNKNOWN_FREE).then(|| free.saturating_sub(bytes))
            });
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
        let snapshot = node.snapshot();
        shard.mark_changed(slot, self.change_limit);
        snapshot
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
            shard.mark_changed(slot, self.change_limit);
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
        next_stamp()
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

/// Why a store found no room (see [`Zone::no_room`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRoom {
    /// The cache path's file system is mounted read-only.
    ReadOnly,
    /// The file system has `free` bytes, and stores leave `floor` free.
    FreeSpace { free: u64, floor: u64 },
    /// `max_size` + slack, and nothing more can be evicted.
    Ceiling { ceiling: u64 },
}

impl std::fmt::Display for NoRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoRoom::ReadOnly => f.write_str("its file system is read-only"),
            NoRoom::FreeSpace { free, floor } => write!(
                f,
                "its file system has {} free, stores leave {} free",
                crate::index::size_text(*free),
                crate::index::size_text(*floor)
            ),
            NoRoom::Ceiling { ceiling } => write!(
                f,
                "it is full ({} with its slack above max_size)",
                crate::index::size_text(*ceiling)
            ),
        }
    }
}

/// A size as nginx's notices write it: mebibytes with three decimals (`12.345M`).
pub(crate) fn size_text(bytes: u64) -> String {
    format!("{:.3}M", bytes as f64 / (1024.0 * 1024.0))
}

/// A committed file: its inode and the bytes it takes on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub uniq: u64,
    pub fs_size: u64,
    /// The file's modification time, whole seconds since the epoch (when it was stored).
    pub written: u64,
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
    /// When the file was stored, whole seconds since the epoch; 0 when unknown.
    pub written: u64,
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
            written: if node.exists { node.written } else { 0 },
        }
    }
}

/// Stamps a thread takes from the shared counter at once.
const STAMP_BLOCK: u64 = 32;

/// An LRU stamp: unique across zones (a zone's stamps need only rank among themselves)
/// and increasing on each thread. A thread takes them from one counter in blocks of
/// [`STAMP_BLOCK`], so workers touching entries at once do not pass the counter's cache
/// line between their cores on every HIT. A block more than four blocks behind the
/// counter is dropped for a new one: a touch by a thread that touched little lately
/// ranks at most a few blocks of other threads' touches too old.
fn next_stamp() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static BLOCK: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
    }
    BLOCK.with(|block| {
        let (next, end) = block.get();
        let stale = NEXT.load(Ordering::Relaxed) > end + 4 * STAMP_BLOCK;
        let (stamp, end) = if next < end && !stale {
            (next, end)
        } else {
            let start = NEXT.fetch_add(STAMP_BLOCK, Ordering::Relaxed);
            (start, start + STAMP_BLOCK)
        };
        block.set((stamp + 1, end));
        stamp
    })
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
