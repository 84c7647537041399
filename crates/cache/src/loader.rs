//! The cache loader thread of one cache path (`cache loader NAME`): it walks the cache
//! directory once, at start, and indexes the entry files it finds.
//!
//! As nginx's loader: directories named `temp` are skipped; a file whose name is not 32
//! hex digits, or that is smaller than the 336-byte header (`[crit] cache file "F" is too
//! small`), is deleted; every other file is indexed with one use and an expiry of
//! `now + inactive`, in walk order, unless a worker indexed the key meanwhile; a file the
//! full zone cannot take is deleted. The walk is paced: after `loader_files` files or
//! `loader_threshold` of work it sleeps `loader_sleep`. At the end the zone stops being
//! cold and `[notice] http file cache: PATH 12.345M, bsize: 4096` is logged.
//!
//! Portico's differences: the walk starts at once rather than a minute after the start;
//! dot-names are skipped (Portico's sidecar index lives in `PATH/.portico/`); temp files
//! (`*.NNNNNNNNNN`) older than the zone are deleted, where nginx leaves them forever; and
//! when a clean stop left an index snapshot ([`crate::persist`]), it is used instead of the
//! walk; after a crash, the last checkpoint and the journal ([`crate::journal`]) are
//! restored before the walk.

use std::fs::{DirEntry, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Instant;

use logging::Level;

use crate::format::HEADER_SIZE;
use crate::index::Zone;
use crate::key::{is_temp_name, parse_entry_name};
use crate::manager::errno_text;
use crate::persist::{self, SnapshotError};
use crate::store;

/// Starts loaders.
#[derive(Debug)]
pub struct Loader;

impl Loader {
    /// Starts the loader thread of `zone`; `log` receives its error-log lines.
    pub fn spawn(
        zone: Arc<Zone>,
        log: impl Fn(Level, String) + Send + 'static,
    ) -> io::Result<LoaderHandle> {
        let (stop, stopped) = mpsc::channel();
        let name = format!("cache loader {}", zone.params().name);
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            let mut pace = Pace::new(&zone, move |sleep| match stopped.recv_timeout(sleep) {
                Err(RecvTimeoutError::Timeout) => true,
                Ok(()) | Err(RecvTimeoutError::Disconnected) => false,
            });
            load_or_walk(&zone, &log, &mut pace)
        })?;
        Ok(LoaderHandle {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// The running loader.
#[derive(Debug)]
pub struct LoaderHandle {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<LoadReport>>,
}

impl LoaderHandle {
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the walk to end; `None` if the thread panicked.
    pub fn join(mut self) -> Option<LoadReport> {
        self.thread.take()?.join().ok()
    }

    /// Stops the walk at its next pause (the zone stays cold) and waits for it.
    pub fn stop(mut self) -> Option<LoadReport> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.thread.take()?.join().ok()
    }
}

impl Drop for LoaderHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What a walk did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Files indexed.
    pub added: usize,
    /// Files a worker had indexed first.
    pub known: usize,
    /// Files deleted (bad names, too small, no room, stale temp files).
    pub deleted: usize,
    /// Pauses taken.
    pub sleeps: usize,
    /// The walk ran to its end (not stopped).
    pub complete: bool,
    /// The index came from the snapshot of a clean stop; there was no walk.
    pub from_snapshot: bool,
}

/// The loader's batch limits; `sleep` returns false when the walk must stop.
pub struct Pace<'a> {
    files_limit: usize,
    threshold: std::time::Duration,
    sleep_for: std::time::Duration,
    sleep: Box<dyn FnMut(std::time::Duration) -> bool + 'a>,
    files: usize,
    batch_start: Instant,
}

impl std::fmt::Debug for Pace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pace").field("files", &self.files).finish()
    }
}

impl<'a> Pace<'a> {
    /// The zone's `loader_*` limits; `sleep` pauses (false: stop the walk).
    pub fn new(zone: &Zone, sleep: impl FnMut(std::time::Duration) -> bool + 'a) -> Pace<'a> {
        let params = zone.params();
        Pace {
            files_limit: params.loader_files.max(1),
            threshold: params.loader_threshold,
            sleep_for: params.loader_sleep,
            sleep: Box::new(sleep),
            files: 0,
            batch_start: Instant::now(),
        }
    }

    /// Counts one file; pauses at the end of a batch. False when the walk must stop.
    fn file_done(&mut self, report: &mut LoadReport) -> bool {
        self.files += 1;
        if self.files < self.files_limit && self.batch_start.elapsed() < self.threshold {
            return true;
        }
        report.sleeps += 1;
        let go_on = (self.sleep)(self.sleep_for);
        self.files = 0;
        self.batch_start = Instant::now();
        go_on
    }
}

/// Restores the snapshot a clean stop left ([`persist`]), else walks the cache path.
pub fn load_or_walk(zone: &Zone, log: &dyn Fn(Level, String), pace: &mut Pace<'_>) -> LoadReport {
    let path = persist::snapshot_path(&zone.params().layout);
    match persist::take_snapshot(zone, Instant::now()) {
        Ok(restored) => {
            zone.set_cold(false);
            log(
                Level::Notice,
                format!(
                    "cache \"{}\": {restored} entries from \"{}\"",
                    zone.params().name,
                    path.display()
                ),
            );
            let root = &zone.params().layout.root;
            log(Level::Notice, summary(root, zone.size(), zone.block_size()));
            return LoadReport {
                added: restored,
                complete: true,
                from_snapshot: true,
                ..LoadReport::default()
            };
        }
        Err(SnapshotError::Missing) => {}
        Err(error) => log(
            Level::Warn,
            format!(
                "cache index snapshot \"{}\" not used: {error}",
                path.display()
            ),
        ),
    }
    // No clean stop: the last checkpoint and the journal since (recent order, timers and
    // purge rules), then the walk, which adds what they did not know. The zone stays cold
    // meanwhile.
    let recovery = persist::take_checkpoint(zone, Instant::now());
    report_recovery(zone, log, &recovery);
    load(zone, log, pace)
}

/// The error-log lines of a start after a crash.
fn report_recovery(zone: &Zone, log: &dyn Fn(Level, String), recovery: &persist::Recovery) {
    let name = &zone.params().name;
    let layout = &zone.params().layout;
    if let Err(error) = &recovery.checkpoint
        && !matches!(error, SnapshotError::Missing)
    {
        log(
            Level::Warn,
            format!(
                "cache index checkpoint \"{}\" not used: {error}",
                persist::checkpoint_path(layout).display()
            ),
        );
    }
    let journal_path = crate::journal::journal_path(layout);
    match &recovery.journal {
        Ok(replayed) => {
            if let Some(offset) = replayed.damaged_at {
                log(
                    Level::Warn,
                    format!(
                        "cache journal \"{}\" is damaged at byte {offset}: replayed up to it",
                        journal_path.display()
                    ),
                );
            }
        }
        Err(SnapshotError::Missing) => {}
        Err(error) => log(
            Level::Warn,
            format!(
                "cache journal \"{}\" not used: {error}",
                journal_path.display()
            ),
        ),
    }
    let records = recovery
        .journal
        .as_ref()
        .map_or(0, |replayed| replayed.records);
    if recovery.checkpoint.is_ok() || records > 0 {
        log(
            Level::Notice,
            format!(
                "cache \"{name}\": {} entries and {} purge rules from \"{}\" and {records} \
                 journal records, checking the files",
                recovery.restored,
                recovery.rules,
                persist::checkpoint_path(layout).display()
            ),
        );
    }
}

/// Walks the zone's cache path (see the module doc).
pub fn load(zone: &Zone, log: &dyn Fn(Level, String), pace: &mut Pace<'_>) -> LoadReport {
    let root = zone.params().layout.root.clone();
    let mut report = LoadReport::default();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) => {
                log(
                    Level::Crit,
                    format!(
                        "opendir() \"{}\" failed ({})",
                        dir.display(),
                        errno_text(&error)
                    ),
                );
                continue;
            }
        };
        for entry in entries.flatten() {
            if !visit(zone, log, &entry, &mut dirs, &mut report) {
                continue;
            }
            if !pace.file_done(&mut report) {
                return report;
            }
        }
    }
    report.complete = true;
    zone.set_cold(false);
    log(
        Level::Notice,
        summary(&root, zone.size(), zone.block_size()),
    );
    report
}

/// `http file cache: PATH 12.345M, bsize: 4096`.
fn summary(root: &Path, size: u64, block_size: u64) -> String {
    let mebibytes = size as f64 / (1024.0 * 1024.0);
    format!(
        "http file cache: {} {mebibytes:.3}M, bsize: {block_size}",
        root.display()
    )
}

/// Handles one directory entry; true when it was a file (it counts for the pace).
fn visit(
    zone: &Zone,
    log: &dyn Fn(Level, String),
    entry: &DirEntry,
    dirs: &mut Vec<PathBuf>,
    report: &mut LoadReport,
) -> bool {
    let name = entry.file_name();
    if name.as_bytes().starts_with(b".") {
        return false;
    }
    let Ok(file_type) = entry.file_type() else {
        return false;
    };
    if file_type.is_dir() {
        if name != "temp" {
            dirs.push(entry.path());
        }
        return false;
    }
    if !file_type.is_file() {
        return false;
    }
    let path = entry.path();
    let Ok(metadata) = entry.metadata() else {
        return true;
    };
    if is_temp_name(&name) {
        if is_stale_temp(zone, &metadata) && store::unlink(&path).is_ok() {
            report.deleted += 1;
        }
        return true;
    }
    let Some(md5) = parse_entry_name(&name) else {
        delete(&path, log, report);
        return true;
    };
    if metadata.len() < HEADER_SIZE as u64 {
        log(
            Level::Crit,
            format!("cache file \"{}\" is too small", path.display()),
        );
        delete(&path, log, report);
        return true;
    }
    let file = store::file_info(&metadata, zone.block_size());
    match zone.add_loaded(&md5, file, None, None, Instant::now()) {
        Ok(true) => report.added += 1,
        Ok(false) => report.known += 1,
        // A worker may have committed a new file under the name since the stat: only
        // the file seen is deleted (a rename in the instant between the two calls is
        // the one case left, as in nginx).
        Err(_) if same_file(&path, &metadata) => delete(&path, log, report),
        Err(_) => report.known += 1,
    }
    true
}

fn same_file(path: &Path, seen: &Metadata) -> bool {
    std::fs::symlink_metadata(path)
        .is_ok_and(|now| now.ino() == seen.ino() && now.dev() == seen.dev())
}

fn is_stale_temp(zone: &Zone, metadata: &Metadata) -> bool {
    metadata
        .modified()
        .is_ok_and(|modified| modified < zone.created())
}

fn delete(path: &Path, log: &dyn Fn(Level, String), report: &mut LoadReport) {
    match store::unlink(path) {
        Ok(()) => report.deleted += 1,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => log(
            Level::Crit,
            format!(
                "unlink() \"{}\" failed ({})",
                path.display(),
                errno_text(&error)
            ),
        ),
    }
}

#[cfg(test)]
mod tests;
