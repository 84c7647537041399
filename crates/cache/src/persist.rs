//! The index snapshot: written at a graceful stop, used once at the next start, so a
//! restarted Portico has its index (LRU order, expiry timers, `uses`, error entries) at
//! once instead of after a paced walk of the whole cache path.
//!
//! The file is `PATH/.portico/index.snap` (a dot-name: the loader and nginx-tests' file
//! counts pass it by). A zone whose loader did not finish is not saved: its index lacks
//! files the walk had not reached. It is written to a temp name, synced, renamed and the directory
//! synced; the checkpoint and journal below are then removed. At start the loader reads it
//! and **renames it to the checkpoint before using it**, so a crash later in that run can
//! never bring back an index older than the files as if it were clean: the next start
//! restores it as a checkpoint, replays the journal written since, and walks the tree.
//!
//! Layout, little-endian: a 48-byte header (magic `PCIDXSNP`, version 2, flags with bit 0
//! "clean", the levels, the number of purge rules, the block size, the entry count, the
//! file's id), fixed 64-byte records in LRU order (oldest first; the last four bytes, zero
//! in version 1, are the file's store time in seconds), the purge rules (their
//! time, a prefix flag, the key's length and bytes), then a CRC-32 of everything before
//! it. A snapshot that does not match the zone (levels, block size), is not clean, or
//! fails its CRC is not used. Version 1 files (no rules, no id) are still read.
//!
//! Between stops the manager writes a **checkpoint** (`PATH/.portico/index.ckpt`, the
//! same format) every [`CHECKPOINT_EVERY`], and sooner when the journal has grown past
//! the checkpoint's size, and commits every change in between to the **journal**
//! (`PATH/.portico/index.log`, see [`crate::journal`]) at most a second after it was made.
//! A start without a clean snapshot (after a crash or `kill -9`) restores the last
//! checkpoint and replays the journal, so entries keep their LRU order, `inactive`
//! timers, `uses` and freshness up to the last second before the crash, and purge rules
//! hold; then it walks the tree as nginx's loader does: files the index did not know are
//! added, and an entry whose file is gone is dropped when a request finds it missing.
//!
//! The checkpoint and the journal take room under the zone's hard ceiling as entries do
//! (whole blocks, see [`checkpoint_bytes`]); the manager reserves it before it writes.

use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::index::{SavedEntry, Zone};
use crate::journal;
use crate::key::{Layout, Levels};
use crate::purge::Rule;

const MAGIC: &[u8; 8] = b"PCIDXSNP";
const VERSION: u32 = 2;
const FLAG_CLEAN: u32 = 1;
const HEADER_LEN: usize = 48;
const RECORD_LEN: usize = 64;
const CRC_LEN: usize = 4;
/// The directory, under the cache path, of Portico's own files.
pub const SIDECAR_DIR: &str = ".portico";
const SNAPSHOT_NAME: &str = "index.snap";
const CHECKPOINT_NAME: &str = "index.ckpt";
/// How often the manager writes a checkpoint of a warm zone.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(60);

/// Where a zone's snapshot lives.
pub fn snapshot_path(layout: &Layout) -> PathBuf {
    layout.root.join(SIDECAR_DIR).join(SNAPSHOT_NAME)
}

/// Why a snapshot was not used.
#[derive(Debug)]
pub enum SnapshotError {
    /// There is none (first start, or the last run did not stop gracefully).
    Missing,
    Io(io::Error),
    /// The file is not a usable snapshot of this zone.
    Unusable(&'static str),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Missing => f.write_str("no snapshot"),
            SnapshotError::Io(error) => write!(f, "{error}"),
            SnapshotError::Unusable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// What [`write_snapshot`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    /// The snapshot holds this many entries.
    Entries(usize),
    /// Nothing was written: the zone is still cold (its loader did not finish), so its
    /// index misses files; the next start walks the tree instead.
    Incomplete,
}

/// A decoded snapshot or checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SavedIndex {
    /// Names the file for the journal that follows it (0 in version 1 files).
    pub id: u64,
    /// Oldest first.
    pub entries: Vec<SavedEntry>,
    /// Oldest first.
    pub rules: Vec<Rule>,
}

/// Writes the zone's snapshot (after the manager and the loader have stopped and no fill
/// runs), unless the zone is still cold. The checkpoint and journal are removed: the
/// snapshot is newer.
pub fn write_snapshot(zone: &Zone, now: Instant) -> io::Result<Saved> {
    let path = snapshot_path(&zone.params().layout);
    let saved = write_index(zone, now, &path, new_id())?;
    if saved != Saved::Incomplete {
        let _ = std::fs::remove_file(checkpoint_path(&zone.params().layout));
        let _ = std::fs::remove_file(journal::journal_path(&zone.params().layout));
    }
    Ok(saved)
}

/// A fresh id for a snapshot or checkpoint: nanoseconds since the epoch, never 0.
pub fn new_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
        .max(1)
}

/// Where a zone's checkpoint lives.
pub fn checkpoint_path(layout: &Layout) -> PathBuf {
    layout.root.join(SIDECAR_DIR).join(CHECKPOINT_NAME)
}

/// The disk bytes of a checkpoint of `entries` entries (purge rules aside), or of a
/// journal of that many bytes: whole blocks.
pub fn checkpoint_bytes(entries: usize, block_size: u64) -> u64 {
    whole_blocks(
        (HEADER_LEN + entries * RECORD_LEN + CRC_LEN) as u64,
        block_size,
    )
}

/// `bytes` rounded up to whole blocks.
pub fn whole_blocks(bytes: u64, block_size: u64) -> u64 {
    bytes.div_ceil(block_size.max(1)) * block_size.max(1)
}

/// Writes checkpoint `id` of a warm zone while it serves (the manager's duty).
pub fn write_checkpoint(zone: &Zone, now: Instant, id: u64) -> io::Result<Saved> {
    write_index(zone, now, &checkpoint_path(&zone.params().layout), id)
}

/// What the start after a crash restored.
#[derive(Debug)]
pub struct Recovery {
    /// Entries put back in the index.
    pub restored: usize,
    /// Purge rules put back.
    pub rules: usize,
    /// The checkpoint's entries, or why there was none to use.
    pub checkpoint: Result<usize, SnapshotError>,
    /// The journal's records replayed, or why there were none.
    pub journal: Result<Replayed, SnapshotError>,
}

/// After a crash: the checkpoint (kept: the next one replaces it) and the journal that
/// follows it, applied to the zone; the journal's base is then handed to the manager.
pub fn take_checkpoint(zone: &Zone, now: Instant) -> Recovery {
    let layout = &zone.params().layout;
    let checkpoint = read_index(&checkpoint_path(layout), layout.levels, zone.block_size());
    let mut journal = journal::read(layout, journal::wall_ms());
    let base = match (&checkpoint, &journal) {
        (Ok(index), Ok((base, _))) if *base != index.id => {
            // Older than the checkpoint (a crash came between its rename and the reset).
            journal = Err(SnapshotError::Unusable("older than the checkpoint"));
            index.id
        }
        (_, Ok((base, _))) => *base,
        (Ok(index), Err(_)) => index.id,
        (Err(_), Err(_)) => 0,
    };
    let (entries, rules, checkpoint) = match checkpoint {
        Ok(index) => {
            let count = index.entries.len();
            (index.entries, index.rules, Ok(count))
        }
        Err(error) => (Vec::new(), Vec::new(), Err(error)),
    };
    let (journal, records) = match journal {
        Ok((_, replay)) => {
            let replayed = Replayed {
                records: replay.records.len(),
                damaged_at: replay.damaged_at,
            };
            (Ok(replayed), replay.records)
        }
        Err(error) => (Err(error), Vec::new()),
    };
    let (entries, rules) = journal::apply(entries, rules, records);
    let (restored, rules) = restore(zone, entries, rules, now);
    zone.set_journal_base(base);
    Recovery {
        restored,
        rules,
        checkpoint,
        journal,
    }
}

/// What a journal's replay read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replayed {
    /// Good records applied.
    pub records: usize,
    /// The offset of the damaged record that ended the replay, if one did.
    pub damaged_at: Option<usize>,
}

/// Puts entries (oldest first) and rules back; the entries restored and rules.
fn restore(
    zone: &Zone,
    entries: Vec<SavedEntry>,
    rules: Vec<Rule>,
    now: Instant,
) -> (usize, usize) {
    let restored = entries
        .iter()
        .filter(|entry| zone.restore(entry, now) == Ok(true))
        .count();
    let count = rules.len();
    for rule in rules {
        zone.purges().restore(rule);
    }
    (restored, count)
}

fn read_index(
    path: &std::path::Path,
    levels: Levels,
    block_size: u64,
) -> Result<SavedIndex, SnapshotError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(SnapshotError::Missing);
        }
        Err(error) => return Err(SnapshotError::Io(error)),
    };
    decode_index(&bytes, levels, block_size)
}

/// The index of a warm zone written to `path` (synced, renamed into place).
fn write_index(zone: &Zone, now: Instant, path: &std::path::Path, id: u64) -> io::Result<Saved> {
    if zone.cold() {
        return Ok(Saved::Incomplete);
    }
    let index = SavedIndex {
        id,
        entries: zone.export(now),
        rules: zone.purges().export(),
    };
    let entries = &index.entries;
    let bytes = encode_index(zone.params().layout.levels, zone.block_size(), &index);
    let path = path.to_path_buf();
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| SNAPSHOT_NAME.to_owned());
    let dir = path
        .parent()
        .unwrap_or(&zone.params().layout.root)
        .to_path_buf();
    DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    let temp = dir.join(format!("{name}.tmp"));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    std::fs::rename(&temp, &path)?;
    File::open(&dir)?.sync_all()?;
    Ok(Saved::Entries(entries.len()))
}

/// Reads and applies the zone's snapshot, renamed first to the zone's checkpoint (the
/// base of the journal this run writes). Returns the number of entries restored (entries
/// a worker indexed first and entries a full zone cannot take are skipped).
pub fn take_snapshot(zone: &Zone, now: Instant) -> Result<usize, SnapshotError> {
    let layout = &zone.params().layout;
    let path = snapshot_path(layout);
    let index = match read_index(&path, layout.levels, zone.block_size()) {
        Ok(index) => index,
        Err(SnapshotError::Missing) => return Err(SnapshotError::Missing),
        Err(error) => {
            let _ = std::fs::remove_file(&path);
            return Err(error);
        }
    };
    let base = match std::fs::rename(&path, checkpoint_path(layout)) {
        Ok(()) => index.id,
        Err(_) => {
            std::fs::remove_file(&path).map_err(SnapshotError::Io)?;
            0
        }
    };
    let (restored, _) = restore(zone, index.entries, index.rules, now);
    zone.set_journal_base(base);
    Ok(restored)
}

/// The snapshot bytes of `entries` (oldest first), with no rules and id 0.
pub fn encode(levels: Levels, block_size: u64, entries: &[SavedEntry]) -> Vec<u8> {
    let index = SavedIndex {
        id: 0,
        entries: entries.to_vec(),
        rules: Vec::new(),
    };
    encode_index(levels, block_size, &index)
}

/// The entries of a snapshot written for a zone with these levels and block size.
pub fn decode(
    bytes: &[u8],
    levels: Levels,
    block_size: u64,
) -> Result<Vec<SavedEntry>, SnapshotError> {
    decode_index(bytes, levels, block_size).map(|index| index.entries)
}

/// The bytes of a snapshot or checkpoint.
pub fn encode_index(levels: Levels, block_size: u64, index: &SavedIndex) -> Vec<u8> {
    let rules: Vec<&Rule> = index
        .rules
        .iter()
        .filter(|rule| rule.key.len() <= usize::from(u16::MAX))
        .collect();
    let mut out = Vec::with_capacity(HEADER_LEN + index.entries.len() * RECORD_LEN + CRC_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&FLAG_CLEAN.to_le_bytes());
    out.extend_from_slice(&levels_bytes(levels));
    out.extend_from_slice(&(rules.len() as u32).to_le_bytes());
    out.extend_from_slice(&block_size.to_le_bytes());
    out.extend_from_slice(&(index.entries.len() as u64).to_le_bytes());
    out.extend_from_slice(&index.id.to_le_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    for entry in &index.entries {
        encode_record(entry, &mut out);
    }
    for rule in rules {
        out.extend_from_slice(&rule.at.to_le_bytes());
        out.push(u8::from(rule.prefix));
        out.push(0);
        out.extend_from_slice(&(rule.key.len() as u16).to_le_bytes());
        out.extend_from_slice(&rule.key);
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A snapshot or checkpoint written for a zone with these levels and block size.
pub fn decode_index(
    bytes: &[u8],
    levels: Levels,
    block_size: u64,
) -> Result<SavedIndex, SnapshotError> {
    if bytes.len() < HEADER_LEN + CRC_LEN {
        return Err(SnapshotError::Unusable("too short"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - CRC_LEN);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(SnapshotError::Unusable("checksum mismatch"));
    }
    let (header, rest) = body.split_at(HEADER_LEN);
    let version = read_u32(header, 8);
    if &header[..8] != MAGIC || !(1..=VERSION).contains(&version) {
        return Err(SnapshotError::Unusable("not a version 1 or 2 snapshot"));
    }
    if read_u32(header, 12) & FLAG_CLEAN == 0 {
        return Err(SnapshotError::Unusable("not written at a clean stop"));
    }
    if header[16..20] != levels_bytes(levels) {
        return Err(SnapshotError::Unusable("written for other levels"));
    }
    if read_u64(header, 24) != block_size {
        return Err(SnapshotError::Unusable("written for another block size"));
    }
    let (rule_count, id) = match version {
        1 => (0, 0),
        _ => (read_u32(header, 20) as usize, read_u64(header, 40)),
    };
    let count = read_u64(header, 32);
    let records_len = usize::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(RECORD_LEN))
        .filter(|&len| len <= rest.len())
        .ok_or(SnapshotError::Unusable("entry count mismatch"))?;
    let (records, mut rule_bytes) = rest.split_at(records_len);
    let mut rules = Vec::with_capacity(rule_count.min(crate::purge::RULES_MAX));
    for _ in 0..rule_count {
        let Some(len) = rule_bytes.get(10..12) else {
            return Err(SnapshotError::Unusable("rule count mismatch"));
        };
        let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
        let Some(key) = rule_bytes.get(12..12 + len) else {
            return Err(SnapshotError::Unusable("rule count mismatch"));
        };
        rules.push(Rule {
            at: read_u64(rule_bytes, 0),
            prefix: rule_bytes[8] == 1,
            key: key.to_vec(),
        });
        rule_bytes = &rule_bytes[12 + len..];
    }
    if !rule_bytes.is_empty() {
        return Err(SnapshotError::Unusable("entry count mismatch"));
    }
    Ok(SavedIndex {
        id,
        entries: records
            .chunks_exact(RECORD_LEN)
            .map(decode_record)
            .collect(),
        rules,
    })
}

fn encode_record(entry: &SavedEntry, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&entry.md5);
    out.extend_from_slice(&entry.uniq.to_le_bytes());
    out.extend_from_slice(&entry.fs_size.to_le_bytes());
    out.extend_from_slice(&entry.valid_sec.to_le_bytes());
    let expires_ms = u64::try_from(entry.expires_in.as_millis()).unwrap_or(u64::MAX);
    out.extend_from_slice(&expires_ms.to_le_bytes());
    out.extend_from_slice(&entry.uses.to_le_bytes());
    out.extend_from_slice(&entry.error.to_le_bytes());
    out.extend_from_slice(&entry.body_start.to_le_bytes());
    out.push(u8::from(entry.exists));
    out.resize(start + 60, 0);
    out.extend_from_slice(&u32::try_from(entry.written).unwrap_or(0).to_le_bytes());
    debug_assert_eq!(out.len(), start + RECORD_LEN);
}

fn decode_record(record: &[u8]) -> SavedEntry {
    let mut md5 = [0u8; 16];
    md5.copy_from_slice(&record[..16]);
    SavedEntry {
        md5,
        uniq: read_u64(record, 16),
        fs_size: read_u64(record, 24),
        valid_sec: read_u64(record, 32) as i64,
        expires_in: Duration::from_millis(read_u64(record, 40)),
        uses: read_u32(record, 48),
        error: u16::from_le_bytes([record[52], record[53]]),
        body_start: u16::from_le_bytes([record[54], record[55]]),
        exists: record[56] == 1,
        written: u64::from(read_u32(record, 60)),
    }
}

pub(crate) fn levels_bytes(levels: Levels) -> [u8; 4] {
    let widths = levels.widths();
    let mut out = [0u8; 4];
    out[0] = widths.len() as u8;
    out[1..1 + widths.len()].copy_from_slice(widths);
    out
}

/// The little-endian `u32` at `offset` (the index files' byte order).
pub(crate) fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    let mut out = [0u8; 4];
    out.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(out)
}

/// The little-endian `u64` at `offset`.
pub(crate) fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    let mut out = [0u8; 8];
    out.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(out)
}

#[cfg(test)]
mod tests;
