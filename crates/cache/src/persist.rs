//! The index snapshot: written at a graceful stop, used once at the next start, so a
//! restarted Portico has its index (LRU order, expiry timers, `uses`, error entries) at
//! once instead of after a paced walk of the whole cache path.
//!
//! The file is `PATH/.portico/index.snap` (a dot-name: the loader and nginx-tests' file
//! counts pass it by). A zone whose loader did not finish is not saved: its index lacks
//! files the walk had not reached. It is written to a temp name, synced, renamed and the directory
//! synced. At start the loader reads it and **removes it before using it**, so a crash
//! later in that run can never bring back an index older than the files: the next start
//! then finds no snapshot and walks the tree, as nginx does.
//!
//! Layout, little-endian: a 48-byte header (magic `PCIDXSNP`, version, flags with bit 0
//! "clean", the levels, the block size, the entry count), fixed 64-byte records in LRU
//! order (oldest first), then a CRC-32 of everything before it. A snapshot that does not
//! match the zone (levels, block size), is not clean, or fails its CRC is not used.
//!
//! Between stops the manager writes a **checkpoint** (`PATH/.portico/index.ckpt`, the
//! same format) every [`CHECKPOINT_EVERY`]. A start without a clean snapshot (after a
//! crash or `kill -9`) restores the last checkpoint, so recently used entries keep their
//! order and timers, then walks the tree as nginx's loader does: files the checkpoint did
//! not know are added, and an entry whose file is gone is dropped when a request finds it
//! missing. The journal of every change between checkpoints (spec 5.9) is not built.

use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::index::{SavedEntry, Zone};
use crate::key::{Layout, Levels};

const MAGIC: &[u8; 8] = b"PCIDXSNP";
const VERSION: u32 = 1;
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

/// Writes the zone's snapshot (after the manager and the loader have stopped and no fill
/// runs), unless the zone is still cold. The checkpoint is removed: the snapshot is newer.
pub fn write_snapshot(zone: &Zone, now: Instant) -> io::Result<Saved> {
    let saved = write_index(zone, now, &snapshot_path(&zone.params().layout))?;
    if saved != Saved::Incomplete {
        let _ = std::fs::remove_file(checkpoint_path(&zone.params().layout));
    }
    Ok(saved)
}

/// Where a zone's checkpoint lives.
pub fn checkpoint_path(layout: &Layout) -> PathBuf {
    layout.root.join(SIDECAR_DIR).join(CHECKPOINT_NAME)
}

/// The disk bytes of a checkpoint of `entries` entries: whole blocks.
pub fn checkpoint_bytes(entries: usize, block_size: u64) -> u64 {
    let bytes = (HEADER_LEN + entries * RECORD_LEN + CRC_LEN) as u64;
    bytes.div_ceil(block_size.max(1)) * block_size.max(1)
}

/// Writes a checkpoint of a warm zone while it serves (the manager's duty).
pub fn write_checkpoint(zone: &Zone, now: Instant) -> io::Result<Saved> {
    write_index(zone, now, &checkpoint_path(&zone.params().layout))
}

/// Reads and applies the zone's checkpoint (kept: the next one replaces it). Returns the
/// number of entries restored.
pub fn take_checkpoint(zone: &Zone, now: Instant) -> Result<usize, SnapshotError> {
    let bytes = match std::fs::read(checkpoint_path(&zone.params().layout)) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(SnapshotError::Missing);
        }
        Err(error) => return Err(SnapshotError::Io(error)),
    };
    let entries = decode(&bytes, zone.params().layout.levels, zone.block_size())?;
    Ok(entries
        .iter()
        .filter(|entry| zone.restore(entry, now) == Ok(true))
        .count())
}

/// The index of a warm zone written to `path` (synced, renamed into place).
fn write_index(zone: &Zone, now: Instant, path: &std::path::Path) -> io::Result<Saved> {
    if zone.cold() {
        return Ok(Saved::Incomplete);
    }
    let entries = zone.export(now);
    let bytes = encode(zone.params().layout.levels, zone.block_size(), &entries);
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

/// Reads, removes and applies the zone's snapshot. Returns the number of entries restored
/// (entries a worker indexed first and entries a full zone cannot take are skipped).
pub fn take_snapshot(zone: &Zone, now: Instant) -> Result<usize, SnapshotError> {
    let path = snapshot_path(&zone.params().layout);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(SnapshotError::Missing);
        }
        Err(error) => return Err(SnapshotError::Io(error)),
    };
    std::fs::remove_file(&path).map_err(SnapshotError::Io)?;
    let entries = decode(&bytes, zone.params().layout.levels, zone.block_size())?;
    let mut restored = 0;
    for entry in &entries {
        if zone.restore(entry, now) == Ok(true) {
            restored += 1;
        }
    }
    Ok(restored)
}

/// The snapshot bytes of `entries` (oldest first).
pub fn encode(levels: Levels, block_size: u64, entries: &[SavedEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + entries.len() * RECORD_LEN + CRC_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&FLAG_CLEAN.to_le_bytes());
    out.extend_from_slice(&levels_bytes(levels));
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&block_size.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    debug_assert_eq!(out.len(), HEADER_LEN);
    for entry in entries {
        encode_record(entry, &mut out);
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The entries of a snapshot written for a zone with these levels and block size.
pub fn decode(
    bytes: &[u8],
    levels: Levels,
    block_size: u64,
) -> Result<Vec<SavedEntry>, SnapshotError> {
    if bytes.len() < HEADER_LEN + CRC_LEN {
        return Err(SnapshotError::Unusable("too short"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - CRC_LEN);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(SnapshotError::Unusable("checksum mismatch"));
    }
    let (header, records) = body.split_at(HEADER_LEN);
    if &header[..8] != MAGIC || read_u32(header, 8) != VERSION {
        return Err(SnapshotError::Unusable("not a version 1 snapshot"));
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
    let count = read_u64(header, 32);
    if records.len() % RECORD_LEN != 0 || (records.len() / RECORD_LEN) as u64 != count {
        return Err(SnapshotError::Unusable("entry count mismatch"));
    }
    Ok(records
        .chunks_exact(RECORD_LEN)
        .map(decode_record)
        .collect())
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
    out.resize(start + RECORD_LEN, 0);
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
    }
}

fn levels_bytes(levels: Levels) -> [u8; 4] {
    let widths = levels.widths();
    let mut out = [0u8; 4];
    out[0] = widths.len() as u8;
    out[1..1 + widths.len()].copy_from_slice(widths);
    out
}

fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    let mut out = [0u8; 4];
    out.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(out)
}

fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    let mut out = [0u8; 8];
    out.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(out)
}

#[cfg(test)]
mod tests;
