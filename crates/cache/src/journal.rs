//! The journal of a zone's index between two checkpoints: `PATH/.portico/index.log`.
//!
//! Workers never write it. A worker that changes an entry (a store, a use, an eviction, a
//! removal, new freshness) notes the key in its shard's list under the lock it already
//! holds ([`crate::Zone::take_changes`]); a purge adds a rule to the zone's list. Once a second
//! the manager thread takes both lists, encodes one record per changed key (its state at
//! that moment, so a key used a thousand times in the second costs one record) and per
//! new rule, appends them with one `write` and one `fdatasync`: a group commit. A crash
//! (`kill -9`, power loss) loses at most the last second of changes.
//!
//! When the manager writes a checkpoint ([`crate::persist`]), it first commits the
//! journal, then renames the new checkpoint into place, then resets the journal to follow
//! it. A crash between the rename and the reset leaves a journal that still names the
//! previous checkpoint as its base: its records are all in the new checkpoint, and the
//! next start skips it.
//!
//! An unclean start restores the checkpoint, then replays the journal if its base is that
//! checkpoint (or there is no usable checkpoint): records are applied in order, a put
//! replaces the key's state and makes it the most recently used, a remove drops it, a
//! rule is restored. The replay stops at the first record that is cut short or fails its
//! CRC (what a crash in the middle of a commit leaves); what was read before is used and
//! the start goes on. The manager then appends after the last good record.
//!
//! Layout, little-endian. A 32-byte header: magic `PCIDXLOG`, version, the levels, the
//! base checkpoint's id, a CRC-32 of the 24 bytes before it, 4 zero bytes. Then records:
//! a CRC-32 of everything after it in the record, the body's length (u16), the kind (u8),
//! a zero byte, the body. Bodies: a put (kind 1) is the key's MD5, inode, disk bytes,
//! `valid_sec`, when `inactive` ends (milliseconds since the epoch: the downtime counts),
//! `uses`, error status, body start, whether the file exists and when it was stored
//! (seconds since the epoch; 65 bytes); a remove
//! (kind 2) is the MD5; a purge rule (kind 3) is its time (nanoseconds since the epoch), a
//! prefix flag and the key's bytes.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::Duration;

use crate::index::{Changes, SavedEntry};
use crate::key::{Layout, Levels};
use crate::persist::{SIDECAR_DIR, SnapshotError, levels_bytes, read_u32, read_u64};
use crate::purge::Rule;

const MAGIC: &[u8; 8] = b"PCIDXLOG";
const VERSION: u32 = 1;
/// Bytes of the file's header.
pub const HEADER_LEN: usize = 32;
const RECORD_HEAD: usize = 8;
const PUT_LEN: usize = 65;
const KIND_PUT: u8 = 1;
const KIND_REMOVE: u8 = 2;
const KIND_RULE: u8 = 3;
/// The longest key a rule record holds (longer rules are kept in memory only).
const RULE_KEY_MAX: usize = u16::MAX as usize - 9;
const JOURNAL_NAME: &str = "index.log";
/// How often the manager commits the journal.
pub const COMMIT_EVERY: Duration = Duration::from_secs(1);

/// Where a zone's journal lives.
pub fn journal_path(layout: &Layout) -> PathBuf {
    layout.root.join(SIDECAR_DIR).join(JOURNAL_NAME)
}

/// One journal record, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// The entry's state; `expires_in` counted from the replay's wall-clock time.
    Put(SavedEntry),
    Remove([u8; 16]),
    Rule(Rule),
}

/// The header of a journal following checkpoint `base`.
pub fn encode_header(levels: Levels, base: u64) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&levels_bytes(levels));
    out[16..24].copy_from_slice(&base.to_le_bytes());
    let crc = crc32fast::hash(&out[..24]);
    out[24..28].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The base checkpoint id of a journal header written for `levels`.
pub fn decode_header(bytes: &[u8], levels: Levels) -> Result<u64, SnapshotError> {
    if bytes.len() < HEADER_LEN {
        return Err(SnapshotError::Unusable("too short"));
    }
    if crc32fast::hash(&bytes[..24]).to_le_bytes() != bytes[24..28] {
        return Err(SnapshotError::Unusable("checksum mismatch"));
    }
    if &bytes[..8] != MAGIC || read_u32(bytes, 8) != VERSION {
        return Err(SnapshotError::Unusable("not a version 1 journal"));
    }
    if bytes[12..16] != levels_bytes(levels) {
        return Err(SnapshotError::Unusable("written for other levels"));
    }
    Ok(read_u64(bytes, 16))
}

/// Appends the records of one commit: removes, then puts (least recently used first),
/// then rules. `wall_ms` is the wall-clock time of `changes` (milliseconds since the
/// epoch), to make their `inactive` times absolute.
pub fn encode_changes(changes: &Changes, rules: &[Rule], wall_ms: u64, out: &mut Vec<u8>) {
    for md5 in &changes.removes {
        record(out, KIND_REMOVE, |body| body.extend_from_slice(md5));
    }
    for entry in &changes.puts {
        let expire_ms = wall_ms.saturating_add(millis(entry.expires_in));
        record(out, KIND_PUT, |body| encode_put(entry, expire_ms, body));
    }
    for rule in rules.iter().filter(|rule| rule.key.len() <= RULE_KEY_MAX) {
        record(out, KIND_RULE, |body| {
            body.extend_from_slice(&rule.at.to_le_bytes());
            body.push(u8::from(rule.prefix));
            body.extend_from_slice(&rule.key);
        });
    }
}

fn record(out: &mut Vec<u8>, kind: u8, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_HEAD]);
    body(out);
    let len = out.len() - start - RECORD_HEAD;
    debug_assert!(
        len <= usize::from(u16::MAX),
        "a journal record's body fits a u16"
    );
    out[start + 4..start + 6].copy_from_slice(&(len as u16).to_le_bytes());
    out[start + 6] = kind;
    let crc = crc32fast::hash(&out[start + 4..]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
}

fn encode_put(entry: &SavedEntry, expire_ms: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&entry.md5);
    out.extend_from_slice(&entry.uniq.to_le_bytes());
    out.extend_from_slice(&entry.fs_size.to_le_bytes());
    out.extend_from_slice(&entry.valid_sec.to_le_bytes());
    out.extend_from_slice(&expire_ms.to_le_bytes());
    out.extend_from_slice(&entry.uses.to_le_bytes());
    out.extend_from_slice(&entry.error.to_le_bytes());
    out.extend_from_slice(&entry.body_start.to_le_bytes());
    out.push(u8::from(entry.exists));
    out.extend_from_slice(&entry.written.to_le_bytes());
}

/// What the records after a journal's header hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replay {
    pub records: Vec<Record>,
    /// Bytes of the file up to the end of the last good record.
    pub good_len: usize,
    /// Where a record cut short or with a bad CRC starts, if one does.
    pub damaged_at: Option<usize>,
}

/// Decodes the records of a whole journal file (header included) up to the first
/// damaged one; `wall_ms` is now, to turn absolute `inactive` times into times left.
pub fn decode_records(bytes: &[u8], wall_ms: u64) -> Replay {
    let mut replay = Replay {
        good_len: HEADER_LEN.min(bytes.len()),
        ..Replay::default()
    };
    let mut at = HEADER_LEN;
    while at < bytes.len() {
        match decode_record(&bytes[at..], wall_ms) {
            Some((record, len)) => {
                replay.records.push(record);
                at += len;
                replay.good_len = at;
            }
            None => {
                replay.damaged_at = Some(at);
                break;
            }
        }
    }
    replay
}

/// One record and its length; `None` when cut short, damaged or unknown.
fn decode_record(bytes: &[u8], wall_ms: u64) -> Option<(Record, usize)> {
    if bytes.len() < RECORD_HEAD {
        return None;
    }
    let len = usize::from(u16::from_le_bytes([bytes[4], bytes[5]]));
    let end = RECORD_HEAD + len;
    if bytes.len() < end || crc32fast::hash(&bytes[4..end]).to_le_bytes() != bytes[..4] {
        return None;
    }
    let body = &bytes[RECORD_HEAD..end];
    let record = match (bytes[6], len) {
        (KIND_PUT, PUT_LEN) => Record::Put(decode_put(body, wall_ms)),
        (KIND_REMOVE, 16) => Record::Remove(md5_of(body)),
        (KIND_RULE, 9..) => Record::Rule(Rule {
            at: read_u64(body, 0),
            prefix: body[8] == 1,
            key: body[9..].to_vec(),
        }),
        _ => return None,
    };
    Some((record, end))
}

fn decode_put(body: &[u8], wall_ms: u64) -> SavedEntry {
    SavedEntry {
        md5: md5_of(body),
        uniq: read_u64(body, 16),
        fs_size: read_u64(body, 24),
        valid_sec: read_u64(body, 32) as i64,
        expires_in: Duration::from_millis(read_u64(body, 40).saturating_sub(wall_ms)),
        uses: read_u32(body, 48),
        error: u16::from_le_bytes([body[52], body[53]]),
        body_start: u16::from_le_bytes([body[54], body[55]]),
        exists: body[56] == 1,
        written: read_u64(body, 57),
    }
}

/// A checkpoint's entries (oldest first) and rules with a journal's records applied:
/// the index to restore, oldest first.
pub fn apply(
    entries: Vec<SavedEntry>,
    rules: Vec<Rule>,
    records: Vec<Record>,
) -> (Vec<SavedEntry>, Vec<Rule>) {
    let mut order: Vec<Option<SavedEntry>> = entries.into_iter().map(Some).collect();
    let mut at: HashMap<[u8; 16], usize> = order
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| entry.map(|entry| (entry.md5, index)))
        .collect();
    let mut rules = rules;
    for record in records {
        match record {
            Record::Put(entry) => {
                if let Some(old) = at.insert(entry.md5, order.len()) {
                    order[old] = None;
                }
                order.push(Some(entry));
            }
            Record::Remove(md5) => {
                if let Some(old) = at.remove(&md5) {
                    order[old] = None;
                }
            }
            Record::Rule(rule) => {
                rules.retain(|old| !(old.key == rule.key && old.prefix == rule.prefix));
                rules.push(rule);
            }
        }
    }
    (order.into_iter().flatten().collect(), rules)
}

/// The journal file the manager appends to.
#[derive(Debug)]
pub struct Journal {
    file: File,
    len: u64,
    base: u64,
    levels: Levels,
}

impl Journal {
    /// Opens the zone's journal to go on after its last good record if it follows
    /// checkpoint `base`, else starts it again for `base`.
    pub fn open(layout: &Layout, base: u64) -> io::Result<Journal> {
        let path = journal_path(layout);
        if let Some(dir) = path.parent() {
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o700,
            )
            .create(dir)?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)?;
        let mut journal = Journal {
            file,
            len: 0,
            base,
            levels: layout.levels,
        };
        let bytes = std::fs::read(&path)?;
        match decode_header(&bytes, layout.levels) {
            Ok(found) if found == base => {
                let good = decode_records(&bytes, 0).good_len as u64;
                journal.file.set_len(good)?;
                journal.len = good;
            }
            _ => journal.reset(base)?,
        }
        Ok(journal)
    }

    /// Bytes of the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the journal holds no record.
    pub fn is_empty(&self) -> bool {
        self.len <= HEADER_LEN as u64
    }

    /// The checkpoint it follows.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Appends one commit's records and makes them durable.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.file.write_all_at(bytes, self.len)?;
        self.len += bytes.len() as u64;
        self.file.sync_data()
    }

    /// Empties the journal to follow checkpoint `base` (renamed into place before).
    pub fn reset(&mut self, base: u64) -> io::Result<()> {
        self.file.set_len(0)?;
        self.len = 0;
        self.file
            .write_all_at(&encode_header(self.levels, base), 0)?;
        self.file.sync_data()?;
        self.len = HEADER_LEN as u64;
        self.base = base;
        Ok(())
    }
}

/// The journal of a zone: its base and records, `Missing` when there is none.
pub fn read(layout: &Layout, wall_ms: u64) -> Result<(u64, Replay), SnapshotError> {
    let bytes = match std::fs::read(journal_path(layout)) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(SnapshotError::Missing);
        }
        Err(error) => return Err(SnapshotError::Io(error)),
    };
    let base = decode_header(&bytes, layout.levels)?;
    Ok((base, decode_records(&bytes, wall_ms)))
}

/// Milliseconds since the epoch, now.
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn md5_of(body: &[u8]) -> [u8; 16] {
    let mut md5 = [0u8; 16];
    md5.copy_from_slice(&body[..16]);
    md5
}

#[cfg(test)]
mod tests;
