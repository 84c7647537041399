//! The cache manager thread of one cache path (`cache manager NAME`): it unlinks the files
//! of evicted entries as soon as they are queued, and runs nginx's manager schedule.
//!
//! One run ([`run_once`]) does what nginx's cache manager does for a path:
//! 1. the `inactive` walk: entries at the LRU tail whose expiry has passed are evicted and
//!    their files unlinked, at most `manager_files` per run or until `manager_threshold`
//!    has elapsed; it yields the time until the next expiry, capped at 10 s;
//! 2. then, while the size is at least `max_size`, or the count at least the watermark, or
//!    the free space at most `min_free`, one LRU entry is evicted at a time, stopping after
//!    `manager_files` evictions (both steps count) or `manager_threshold` (next run after
//!    `manager_sleep`), or when nothing can be evicted (next run after 10 s);
//! 3. otherwise the next run is at the next expiry (at most 10 s away).
//!
//! The first run is at start, and again once the loader has restored the index. Between
//! runs the thread sleeps on the zone's condition variable, so a queued unlink is handled
//! at once; it also wakes every second to record the file system's free space in the zone
//! (reservations keep a floor of it free) and to commit the index's changes to the
//! journal, and every minute to write a checkpoint ([`crate::persist`],
//! [`crate::journal`]). Before a checkpoint it drops the purge rules that no entry can be
//! older than ([`retire_rules`]): the index keeps each file's store time (whole seconds),
//! so a rule goes once every file in a warm zone was stored after it, and a minute has
//! passed. With `purger=on` it also runs the purger ([`crate::purger`]) between these
//! duties, on its own pace.

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use logging::Level;

use crate::index::{Expired, Unlink, Zone};
use crate::store;

mod journal;

/// The longest sleep between runs.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// How old the zone's free-space figure may get.
const FREE_SPACE_AGE: Duration = Duration::from_secs(1);
/// The wait after an `inactive` walk that found only busy entries.
const BUSY_WAIT: Duration = Duration::from_secs(1);
// A purge rule is kept at least this long, whatever the store times of the files: a
// file renamed into place is indexed a moment later.
use crate::purger::RULE_MARGIN;
/// The least time between two checkpoints the journal asked for.
const EARLY_CHECKPOINT_GAP: Duration = Duration::from_secs(10);

/// Starts managers.
#[derive(Debug)]
pub struct Manager;

impl Manager {
    /// Starts the manager thread of `zone`; `log` receives its error-log lines.
    pub fn spawn(
        zone: Arc<Zone>,
        log: impl Fn(Level, String) + Send + 'static,
    ) -> io::Result<ManagerHandle> {
        zone.request_stop(false);
        let thread_zone = Arc::clone(&zone);
        let thread = std::thread::Builder::new()
            .name(format!("cache manager {}", zone.params().name))
            .spawn(move || run(&thread_zone, &log))?;
        Ok(ManagerHandle {
            zone,
            thread: Some(thread),
        })
    }
}

/// The running manager; [`ManagerHandle::stop`] ends it.
#[derive(Debug)]
pub struct ManagerHandle {
    zone: Arc<Zone>,
    thread: Option<JoinHandle<()>>,
}

impl ManagerHandle {
    /// Stops the thread after the unlinks already queued and waits for it.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.zone.request_stop(true);
            // A panic in the manager was already reported by the panic hook.
            let _ = thread.join();
        }
    }
}

impl Drop for ManagerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn run(zone: &Arc<Zone>, log: &dyn Fn(Level, String)) {
    let mut next_run = Instant::now();
    let mut next_statvfs = Instant::now();
    let mut next_commit = Instant::now();
    let mut last_checkpoint = Instant::now();
    let mut next_checkpoint = Instant::now() + crate::persist::CHECKPOINT_EVERY;
    let mut journal = journal::JournalWriter::default();
    // The checkpoint's room under the zone's ceiling: the file and, while the next one is
    // written, its temporary copy (Portico's own files count as entries do).
    let mut checkpoint_room: Option<crate::fill::Reservation> = None;
    let mut purger = crate::purger::Purger::default();
    let mut next_purge = Instant::now();
    loop {
        drain_unlinks(zone, log);
        if Instant::now() >= next_statvfs {
            look_at_file_system(zone, log);
            next_statvfs = Instant::now() + FREE_SPACE_AGE;
        }
        if Instant::now() >= next_commit {
            if journal.commit(zone, log) {
                // The loader has restored the index: the schedule sees it now.
                next_run = Instant::now();
            }
            if journal.wants_checkpoint(zone) {
                next_checkpoint = next_checkpoint.min(last_checkpoint + EARLY_CHECKPOINT_GAP);
            }
            next_commit = Instant::now() + journal::COMMIT_EVERY;
        }
        if Instant::now() >= next_checkpoint {
            // Everything before the checkpoint is in the journal: a crash while it is
            // written loses nothing.
            journal.commit(zone, log);
            checkpoint(zone, log, &mut checkpoint_room, &mut journal);
            last_checkpoint = Instant::now();
            next_checkpoint = last_checkpoint + crate::persist::CHECKPOINT_EVERY;
        }
        if Instant::now() >= next_run {
            let delay = run_once(zone, log, &Instant::now);
            next_run = Instant::now() + delay;
        }
        if zone.params().purger && Instant::now() >= next_purge {
            let delay = purger.run(zone, crate::purger::wall_nanos(), &Instant::now);
            next_purge = Instant::now() + delay;
        }
        let mut wake = next_run
            .min(next_statvfs)
            .min(next_checkpoint)
            .min(next_commit);
        if zone.params().purger {
            wake = wake.min(next_purge);
        }
        if zone.wait_for_work(wake.saturating_duration_since(Instant::now())) {
            drain_unlinks(zone, log);
            journal.commit(zone, log);
            return;
        }
    }
}

/// Writes a checkpoint if its room under the ceiling can be reserved, then starts the
/// journal again after it.
fn checkpoint(
    zone: &Arc<Zone>,
    log: &dyn Fn(Level, String),
    room: &mut Option<crate::fill::Reservation>,
    journal: &mut journal::JournalWriter,
) {
    let needed = 2 * crate::persist::checkpoint_bytes(zone.count(), zone.block_size());
    if room.as_ref().is_none_or(|room| room.bytes() < needed) {
        // Released first: the new reservation replaces it, not adds to it.
        drop(room.take());
        *room = zone.reserve(needed);
    }
    if room.is_none() {
        // No room now (evicted files still being unlinked): the next one.
        return;
    }
    retire_rules(zone, std::time::SystemTime::now());
    let id = crate::persist::new_id();
    match crate::persist::write_checkpoint(zone, Instant::now(), id) {
        Ok(crate::persist::Saved::Entries(_)) => journal.checkpointed(zone, log, id),
        Ok(crate::persist::Saved::Incomplete) => {}
        Err(error) => log(
            Level::Crit,
            format!(
                "cache \"{}\" checkpoint not written ({})",
                zone.params().name,
                errno_text(&error)
            ),
        ),
    }
}

/// Drops the purge rules older than every file of a warm zone's index (and older than
/// a minute): nothing is left for them to cover. A cold zone may have files its
/// index does not know yet. Returns how many went.
pub fn retire_rules(zone: &Zone, now: std::time::SystemTime) -> usize {
    if zone.cold() {
        return 0;
    }
    let now = now
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(RULE_MARGIN)
        .as_secs();
    let horizon = zone.oldest_written().unwrap_or(u64::MAX).min(now);
    zone.purges()
        .retire_before(horizon.saturating_mul(1_000_000_000))
}

/// Unlinks every queued file.
pub fn drain_unlinks(zone: &Zone, log: &dyn Fn(Level, String)) {
    while let Some(unlink) = zone.next_unlink() {
        unlink_now(zone, &unlink, log);
    }
}

/// One run of the schedule (see the module doc), timed by `clock`; returns the delay to
/// the next run.
pub fn run_once(zone: &Zone, log: &dyn Fn(Level, String), clock: &dyn Fn() -> Instant) -> Duration {
    let params = zone.params();
    let start = clock();
    let mut files = 0;
    let next = expire(zone, log, clock, start, &mut files);
    if next.is_zero() {
        return params.manager_sleep;
    }
    while over_limits(zone) {
        match zone.forced_expire_step() {
            Expired::Evicted(unlink) => {
                if let Some(unlink) = unlink {
                    unlink_now(zone, &unlink, log);
                }
            }
            Expired::NotYet(_) | Expired::Nothing | Expired::Busy => return MAX_WAIT,
        }
        files += 1;
        if files >= params.manager_files
            || clock().saturating_duration_since(start) >= params.manager_threshold
        {
            return params.manager_sleep;
        }
    }
    next
}

/// The `inactive` walk; zero when a batch limit stopped it.
fn expire(
    zone: &Zone,
    log: &dyn Fn(Level, String),
    clock: &dyn Fn() -> Instant,
    start: Instant,
    files: &mut usize,
) -> Duration {
    let params = zone.params();
    loop {
        match zone.expire_step(clock()) {
            Expired::Evicted(unlink) => {
                if let Some(unlink) = unlink {
                    unlink_now(zone, &unlink, log);
                }
            }
            Expired::NotYet(wait) => return wait.clamp(Duration::from_millis(1), MAX_WAIT),
            Expired::Nothing => return MAX_WAIT,
            Expired::Busy => return BUSY_WAIT,
        }
        *files += 1;
        if *files >= params.manager_files
            || clock().saturating_duration_since(start) >= params.manager_threshold
        {
            return Duration::ZERO;
        }
    }
}

fn over_limits(zone: &Zone) -> bool {
    let params = zone.params();
    if zone.size() >= params.max_size.unwrap_or(u64::MAX) || zone.count() >= zone.watermark() {
        return true;
    }
    let Some(min_free) = params.min_free else {
        return false;
    };
    let Some(free) = free_space(zone) else {
        return false;
    };
    zone.set_free_space(free);
    free <= min_free
}

/// Bytes available to unprivileged users on the cache path's file system.
fn free_space(zone: &Zone) -> Option<u64> {
    let stat = rustix::fs::statvfs(&zone.params().layout.root).ok()?;
    let block = if stat.f_frsize > 0 {
        stat.f_frsize
    } else {
        stat.f_bsize
    };
    Some(stat.f_bavail.saturating_mul(block))
}

/// The free space and the read-only flag of the cache path's file system, for the
/// zone's reservations; a change of the flag is logged (at `warn` when stores stop).
fn look_at_file_system(zone: &Zone, log: &dyn Fn(Level, String)) {
    let Ok(stat) = rustix::fs::statvfs(&zone.params().layout.root) else {
        return;
    };
    let block = if stat.f_frsize > 0 {
        stat.f_frsize
    } else {
        stat.f_bsize
    };
    zone.set_free_space(stat.f_bavail.saturating_mul(block));
    let read_only = stat.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY);
    if zone.set_read_only(read_only) {
        let params = zone.params();
        let (level, what) = if read_only {
            (
                Level::Warn,
                "is on a read-only file system: responses are not stored",
            )
        } else {
            (Level::Notice, "is writable again: responses are stored")
        };
        log(
            level,
            format!(
                "cache \"{}\" directory \"{}\" {what}",
                params.name,
                params.layout.root.display()
            ),
        );
    }
}

/// Unlinks a file the zone says is due, then tells the zone.
fn unlink_now(zone: &Zone, unlink: &Unlink, log: &dyn Fn(Level, String)) {
    let Some(path) = zone.begin_unlink(unlink) else {
        return;
    };
    if let Err(error) = store::unlink(&path)
        && error.kind() != io::ErrorKind::NotFound
    {
        log(
            Level::Crit,
            format!(
                "unlink() \"{}\" failed ({})",
                path.display(),
                errno_text(&error)
            ),
        );
    }
    zone.end_unlink(unlink);
}

/// `13: Permission denied`, as nginx prints a system error.
pub(crate) fn errno_text(error: &io::Error) -> String {
    let text = error.to_string();
    let message = text.split(" (os error").next().unwrap_or(&text);
    match error.raw_os_error() {
        Some(errno) => format!("{errno}: {message}"),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
