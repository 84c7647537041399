//! One fill per key, and the guards that make sure a fill or an update mark never sticks.
//!
//! [`Zone::start_fill`](crate::Zone::start_fill) hands the first request a [`FillGuard`];
//! later requests get the [`Fill`] and watch its [`FillState`] through a
//! `tokio::sync::watch` channel, which wakes every waiter on every change, whichever
//! worker's runtime it waits on. The guard publishes the response head and the bytes
//! written, then either commits the renamed file or reports the response not cacheable.
//! Dropped in any other way (an error, the upstream gone, a panic unwinding), it reports
//! `Failed` and clears the fill from the index, so the next request becomes the filler.
//!
//! An [`UpdateGuard`] marks an expired entry as being refreshed (nginx's `updating`);
//! dropping it clears the mark. A [`Reservation`] holds bytes against the zone's ceiling
//! until dropped.

use std::fs::File;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use tokio::sync::watch;

use crate::index::{CommitInfo, Zone};

/// Where a fill is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillState {
    /// Waiting for the upstream's response head.
    Pending,
    /// The head arrived; `written` bytes of the file (head included) are in the temp file.
    Streaming { content_length: u64, written: u64 },
    /// The file is in place under the key's name.
    Committed { uniq: u64 },
    /// The fill ended without a file: waiters look the key up again.
    Failed,
    /// The response may not be cached: waiters go upstream themselves.
    NotCacheable,
}

impl FillState {
    /// Whether the fill has ended.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            FillState::Committed { .. } | FillState::Failed | FillState::NotCacheable
        )
    }
}

/// A fill in progress, shared by its filler and its waiters.
#[derive(Debug)]
pub struct Fill {
    started: Instant,
    state: watch::Sender<FillState>,
    temp: OnceLock<Arc<File>>,
}

impl Fill {
    pub(crate) fn new(started: Instant) -> Fill {
        Fill {
            started,
            state: watch::Sender::new(FillState::Pending),
            temp: OnceLock::new(),
        }
    }

    /// When the filler started (`proxy_cache_lock_age` counts from here).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The current state.
    pub fn state(&self) -> FillState {
        *self.state.borrow()
    }

    /// A receiver that sees every later state (`changed().await`).
    pub fn subscribe(&self) -> watch::Receiver<FillState> {
        self.state.subscribe()
    }

    /// Whether a waiter follows the fill now (`proxy_cache_lock`): then the filler writes
    /// the body's first bytes at once, for the waiters to read.
    pub fn watched(&self) -> bool {
        self.state.receiver_count() > 0
    }

    /// A readable handle on the temp file, if the filler shared one: waiters that attach
    /// to a `Streaming` fill read from it up to `written`.
    pub fn temp(&self) -> Option<Arc<File>> {
        self.temp.get().cloned()
    }

    fn set(&self, state: FillState) {
        self.state.send_replace(state);
    }
}

/// The right, and the duty, to fill one key: commit, declare it not cacheable, or drop.
#[derive(Debug)]
pub struct FillGuard {
    zone: Arc<Zone>,
    md5: [u8; 16],
    fill: Arc<Fill>,
    renaming: bool,
    finished: bool,
    reserved: Option<Reservation>,
}

impl FillGuard {
    pub(crate) fn new(zone: Arc<Zone>, md5: [u8; 16], fill: Arc<Fill>) -> FillGuard {
        FillGuard {
            zone,
            md5,
            fill,
            renaming: false,
            finished: false,
            reserved: None,
        }
    }

    pub fn md5(&self) -> &[u8; 16] {
        &self.md5
    }

    pub fn fill(&self) -> &Arc<Fill> {
        &self.fill
    }

    /// The response head is in: the body will be `content_length` bytes.
    pub fn publish_head(&self, content_length: u64) {
        self.fill.set(FillState::Streaming {
            content_length,
            written: 0,
        });
    }

    /// Shares a readable handle on the temp file with waiters (once; later calls are
    /// ignored). Temp files are created write-only: open the path again for this.
    pub fn share_temp(&self, file: Arc<File>) {
        let _ = self.fill.temp.set(file);
    }

    /// `written` bytes of the file are in the temp file.
    pub fn progress(&self, written: u64) {
        if let FillState::Streaming { content_length, .. } = self.fill.state() {
            self.fill.set(FillState::Streaming {
                content_length,
                written,
            });
        }
    }

    /// Reserves `bytes` more against the zone's ceiling (the Content-Length up front, or
    /// steps as an unknown length grows), rounded up to whole blocks of the file system, as
    /// the committed file is counted. False: the ceiling cannot be met, store nothing.
    pub fn reserve(&mut self, bytes: u64) -> bool {
        let block = self.zone.block_size();
        let bytes = bytes.div_ceil(block).saturating_mul(block);
        match &mut self.reserved {
            Some(reservation) => reservation.grow(bytes),
            None => match self.zone.reserve(bytes) {
                Some(reservation) => {
                    self.reserved = Some(reservation);
                    true
                }
                None => false,
            },
        }
    }

    /// Claims the key's name for the rename of the finished temp file. False while the
    /// manager unlinks the previous file of the key: await
    /// [`Zone::wait_unlinked`](crate::Zone::wait_unlinked), then ask again.
    pub fn try_begin_rename(&mut self) -> bool {
        if self.renaming {
            return true;
        }
        self.renaming = self.zone.claim_rename(&self.md5);
        self.renaming
    }

    /// [`FillGuard::try_begin_rename`] and the waiting, in one call.
    pub async fn begin_rename(&mut self) {
        while !self.try_begin_rename() {
            self.zone.wait_unlinked(&self.md5).await;
        }
    }

    /// The file was renamed into place: index it and wake the waiters.
    ///
    /// Panics if the name was not claimed with [`FillGuard::try_begin_rename`].
    pub fn commit(mut self, info: CommitInfo) {
        assert!(self.renaming, "commit without a rename claim");
        self.finished = true;
        self.zone
            .finish_fill(&self.md5, &self.fill, self.renaming, Some(&info));
        self.fill.set(FillState::Committed {
            uniq: info.file.uniq,
        });
    }

    /// The response may not be cached (decided at its head or by `proxy_no_cache`).
    pub fn not_cacheable(mut self) {
        self.finished = true;
        self.zone
            .finish_fill(&self.md5, &self.fill, self.renaming, None);
        self.fill.set(FillState::NotCacheable);
    }
}

impl Drop for FillGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.zone
                .finish_fill(&self.md5, &self.fill, self.renaming, None);
            self.fill.set(FillState::Failed);
        }
    }
}

/// The mark of an expired entry being refreshed; cleared on drop.
#[derive(Debug)]
pub struct UpdateGuard {
    zone: Arc<Zone>,
    md5: [u8; 16],
    id: u64,
    took_over: bool,
}

impl UpdateGuard {
    pub(crate) fn new(zone: Arc<Zone>, md5: [u8; 16], id: u64, took_over: bool) -> UpdateGuard {
        UpdateGuard {
            zone,
            md5,
            id,
            took_over,
        }
    }

    /// Whether this guard replaced a mark older than the backstop (the caller warns).
    pub fn took_over(&self) -> bool {
        self.took_over
    }
}

impl Drop for UpdateGuard {
    fn drop(&mut self) {
        self.zone.finish_update(&self.md5, self.id);
    }
}

/// Bytes held against the zone's ceiling; released on drop.
#[derive(Debug)]
pub struct Reservation {
    zone: Arc<Zone>,
    bytes: u64,
}

impl Reservation {
    pub(crate) fn new(zone: Arc<Zone>, bytes: u64) -> Reservation {
        Reservation { zone, bytes }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Holds `more` bytes too; false (nothing changed) when the ceiling cannot be met.
    pub fn grow(&mut self, more: u64) -> bool {
        if !self.zone.reserve_bytes(more) {
            return false;
        }
        self.bytes += more;
        true
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.zone.release_bytes(self.bytes);
    }
}
