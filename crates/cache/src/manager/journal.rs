//! The manager's journal duty ([`crate::journal`]): a group commit of the index's changes
//! at most every [`COMMIT_EVERY`], the journal's room under the hard ceiling, and its
//! reset after each checkpoint.
//!
//! Journaling pauses (changes are taken and dropped, the journal is left as it is) when a
//! shard's list of changes overflowed, when the ceiling leaves no room for the journal's
//! next blocks, or when a write failed: the journal would miss changes. It resumes with
//! the next checkpoint, which the manager then writes as soon as it can.

use std::sync::Arc;
use std::time::Instant;

use logging::Level;

use crate::fill::Reservation;
use crate::index::Zone;
use crate::journal::{self, Journal};
use crate::persist::{checkpoint_bytes, whole_blocks};

pub(super) use crate::journal::COMMIT_EVERY;

/// A journal longer than this and than the checkpoint asks for an early checkpoint.
const EARLY_CHECKPOINT_LEN: u64 = 1 << 20;

/// The manager's side of the journal.
#[derive(Debug, Default)]
pub(super) struct JournalWriter {
    journal: Option<Journal>,
    /// The journal's blocks, reserved under the zone's ceiling.
    room: Option<Reservation>,
    /// The last purge rule written.
    rules_seen: u64,
    paused: bool,
    /// The checkpoint a journal opened from now on follows, once one was written.
    base: Option<u64>,
    buffer: Vec<u8>,
}

impl JournalWriter {
    /// Commits the changes since the last call. True when this call opened the journal
    /// (the loader has just restored the index).
    pub(super) fn commit(&mut self, zone: &Arc<Zone>, log: &dyn Fn(Level, String)) -> bool {
        if zone.read_only() && self.journal.is_none() {
            // Nothing can be written on a read-only file system: not an error each time.
            zone.take_changes(Instant::now());
            return false;
        }
        let mut opened = false;
        if self.journal.is_none() {
            // Until the loader has replayed the old journal, changes wait in the index.
            let Some(base) = self.base.or_else(|| zone.journal_base()) else {
                return false;
            };
            if self.paused {
                zone.take_changes(Instant::now());
                return false;
            }
            match Journal::open(&zone.params().layout, base) {
                Ok(journal) => self.journal = Some(journal),
                Err(error) => {
                    self.fail(zone, log, "opened", &error);
                    return false;
                }
            }
            opened = true;
        }
        let changes = zone.take_changes(Instant::now());
        let (rules, last) = zone.purges().added_since(self.rules_seen);
        self.rules_seen = last;
        if changes.gap {
            self.paused = true;
        }
        if self.paused {
            return opened;
        }
        self.buffer.clear();
        journal::encode_changes(&changes, &rules, journal::wall_ms(), &mut self.buffer);
        if self.buffer.is_empty() {
            return opened;
        }
        let Some(file) = self.journal.as_mut() else {
            return opened;
        };
        let needed = whole_blocks(file.len() + self.buffer.len() as u64, zone.block_size());
        if self.room.as_ref().is_none_or(|room| room.bytes() < needed) {
            // Released first: the new reservation replaces it, not adds to it.
            drop(self.room.take());
            self.room = zone.reserve(needed);
            if self.room.is_none() {
                self.paused = true;
                return opened;
            }
        }
        if let Err(error) = file.append(&self.buffer) {
            self.fail(zone, log, "written", &error);
        }
        opened
    }

    /// Whether the journal should be folded into a checkpoint before the usual time: it
    /// is paused, or longer than the checkpoint would be.
    pub(super) fn wants_checkpoint(&self, zone: &Zone) -> bool {
        self.paused
            || self.journal.as_ref().is_some_and(|journal| {
                journal.len() > EARLY_CHECKPOINT_LEN
                    && journal.len() > checkpoint_bytes(zone.count(), zone.block_size())
            })
    }

    /// Checkpoint `id` was renamed into place: the journal starts again after it.
    pub(super) fn checkpointed(&mut self, zone: &Zone, log: &dyn Fn(Level, String), id: u64) {
        let Some(journal) = self.journal.as_mut() else {
            // Opening it failed: try again, after this checkpoint.
            self.base = Some(id);
            self.paused = false;
            return;
        };
        match journal.reset(id) {
            Ok(()) => {
                self.paused = false;
                drop(self.room.take());
            }
            Err(error) => self.fail(zone, log, "reset", &error),
        }
    }

    fn fail(
        &mut self,
        zone: &Zone,
        log: &dyn Fn(Level, String),
        what: &str,
        error: &std::io::Error,
    ) {
        self.paused = true;
        log(
            Level::Crit,
            format!(
                "cache journal \"{}\" could not be {what} ({}): journaling resumes at the next checkpoint",
                journal::journal_path(&zone.params().layout).display(),
                super::errno_text(error)
            ),
        );
    }
}
