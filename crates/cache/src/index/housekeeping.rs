//! The zone's side for its housekeeping threads: the unlink queue and its re-checks, the
//! LRU-tail steps of the manager, loading and snapshots.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::shard::{NIL, Node};
use super::{Expired, FileInfo, SHARDS, SavedEntry, Unlink, Zone, ZoneFull};

/// What changed in the index since the manager last asked, for the journal.
#[derive(Debug, Default)]
pub struct Changes {
    /// The entries changed, as they are now, least recently used first.
    pub puts: Vec<SavedEntry>,
    /// Keys whose entry went (evicted, removed, or never committed).
    pub removes: Vec<[u8; 16]>,
    /// Some changes were not listed: a shard's list outgrew its limit.
    pub gap: bool,
}

impl Zone {
    /// Adds a file found by the loader (uses = 1, expiry `now + inactive`), unless the key
    /// is already indexed (a worker got there first: its node gets the file if it has
    /// none, [`Zone::adopt`]). `Ok(false)` when it was; `Err` when the zone is full: the
    /// loader then deletes the file, as nginx's does.
    pub fn add_loaded(
        &self,
        md5: &[u8; 16],
        file: FileInfo,
        valid_sec: Option<i64>,
        body_start: Option<u16>,
        now: Instant,
    ) -> Result<bool, ZoneFull> {
        if self.shard(md5).find(md5).is_some() {
            self.adopt(md5, file, valid_sec, body_start);
            return Ok(false);
        }
        if !self.try_claim_slot() {
            self.set_watermark();
            return Err(ZoneFull);
        }
        let mut shard = self.shard(md5);
        if shard.find(md5).is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
            drop(shard);
            self.adopt(md5, file, valid_sec, body_start);
            return Ok(false);
        }
        let mut node = Node::new(*md5, now + self.params.inactive);
        node.exists = true;
        node.uses = 1;
        node.uniq = file.uniq;
        node.fs_size = file.fs_size;
        node.written = file.written;
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
    /// unless the key is already indexed (a request touched it first: its node gets the
    /// saved file if it has none, [`Zone::adopt`]). `Err` when the zone is full.
    pub fn restore(&self, saved: &SavedEntry, now: Instant) -> Result<bool, ZoneFull> {
        if self.shard(&saved.md5).find(&saved.md5).is_some() {
            self.adopt_saved(saved);
            return Ok(false);
        }
        if !self.try_claim_slot() {
            self.set_watermark();
            return Err(ZoneFull);
        }
        let mut shard = self.shard(&saved.md5);
        if shard.find(&saved.md5).is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
            drop(shard);
            self.adopt_saved(saved);
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
            node.written = saved.written;
            self.size_bytes.fetch_add(saved.fs_size, Ordering::Relaxed);
        }
        node.stamp = self.next_stamp();
        shard.insert(node);
        Ok(true)
    }

    /// Gives a file found on disk to the key's node when the node has none: a request
    /// touched the key while the zone was cold (before the loader or the snapshot got to
    /// it), and found the file itself or went on without it. Without this the node would
    /// stay without a file once the zone is warm, and the key's next request would go
    /// upstream for an entry on disk. A node that has a file (a commit got there first)
    /// or whose file is being unlinked keeps its state. Returns whether the file was
    /// taken.
    pub fn adopt(
        &self,
        md5: &[u8; 16],
        file: FileInfo,
        valid_sec: Option<i64>,
        body_start: Option<u16>,
    ) -> bool {
        let mut shard = self.shard(md5);
        let Some(slot) = shard.find(md5) else {
            return false;
        };
        let node = &mut shard.nodes[slot];
        if !node.live || node.exists || node.tombstone.is_some() {
            return false;
        }
        node.exists = true;
        node.uniq = file.uniq;
        node.fs_size = file.fs_size;
        node.written = file.written;
        if let Some(valid_sec) = valid_sec {
            node.valid_sec = valid_sec;
        }
        if let Some(body_start) = body_start {
            node.body_start = body_start;
        }
        self.size_bytes.fetch_add(file.fs_size, Ordering::Relaxed);
        shard.mark_changed(slot, self.change_limit);
        true
    }

    /// [`Zone::adopt`] of a snapshot's entry that had a file.
    fn adopt_saved(&self, saved: &SavedEntry) {
        if saved.exists {
            let file = FileInfo {
                uniq: saved.uniq,
                fs_size: saved.fs_size,
                written: saved.written,
            };
            self.adopt(
                &saved.md5,
                file,
                Some(saved.valid_sec),
                Some(saved.body_start),
            );
        }
    }

    /// Takes the keys workers changed since the last call (each listed once, under the
    /// shard lock of its change) with their present state: the journal's records.
    pub fn take_changes(&self, now: Instant) -> Changes {
        let mut changes = Changes::default();
        let mut puts = Vec::new();
        let mut list = Vec::new();
        for index in 0..SHARDS {
            let mut shard = self.lock_shard(index);
            std::mem::swap(&mut list, &mut shard.changed);
            if shard.overflow {
                shard.overflow = false;
                changes.gap = true;
                for node in &mut shard.nodes {
                    node.changed = false;
                }
            }
            for md5 in list.drain(..) {
                match shard.find(&md5) {
                    Some(slot) if shard.nodes[slot].live => {
                        let node = &mut shard.nodes[slot];
                        node.changed = false;
                        puts.push((node.stamp, SavedEntry::of(node, now)));
                    }
                    Some(slot) => {
                        shard.nodes[slot].changed = false;
                        changes.removes.push(md5);
                    }
                    None => changes.removes.push(md5),
                }
            }
        }
        // A key freed and made again while listed is listed twice, in the same state.
        puts.sort_by(|(a, left), (b, right)| (a, left.md5).cmp(&(b, right.md5)));
        puts.dedup_by(|(a, left), (b, right)| a == b && left.md5 == right.md5);
        changes.puts = puts.into_iter().map(|(_, entry)| entry).collect();
        changes
    }

    /// The loader has restored the checkpoint and journal: the journal follows checkpoint
    /// `base` (0: none) and the manager may write it.
    pub fn set_journal_base(&self, base: u64) {
        self.lock_signal().journal_base = Some(base);
        self.wake.notify_all();
    }

    /// The checkpoint the journal follows, once the loader has restored them.
    pub fn journal_base(&self) -> Option<u64> {
        self.lock_signal().journal_base
    }

    /// The oldest store time (whole seconds since the epoch) of the files the index has;
    /// `None` when it has none. An entry whose time is unknown counts as 0.
    pub fn oldest_written(&self) -> Option<u64> {
        (0..SHARDS)
            .filter_map(|index| {
                let shard = self.lock_shard(index);
                shard
                    .nodes
                    .iter()
                    .filter(|node| node.live && node.exists)
                    .map(|node| node.written)
                    .min()
            })
            .min()
    }

    /// How many shards [`Zone::files_written_in`] walks.
    pub fn shard_count(&self) -> usize {
        SHARDS
    }

    /// The keys of shard `index` (below [`Zone::shard_count`]) whose entry has a file
    /// stored at a time `wanted` accepts (whole seconds since the epoch, 0 when unknown):
    /// the purger's candidates.
    pub fn files_written_in(&self, index: usize, wanted: impl Fn(u64) -> bool) -> Vec<[u8; 16]> {
        let shard = self.lock_shard(index);
        shard
            .nodes
            .iter()
            .filter(|node| node.live && node.exists && wanted(node.written))
            .map(|node| node.md5)
            .collect()
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
}
