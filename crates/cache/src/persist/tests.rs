use super::*;
use crate::index::{CommitInfo, Expired, FileInfo, FillStart, ZoneParams};
use crate::test_dir::TestDir;

const SECOND: Duration = Duration::from_secs(1);

fn zone_in(dir: &TestDir) -> std::sync::Arc<Zone> {
    let layout = Layout {
        root: dir.path().to_path_buf(),
        levels: Levels::parse("1:2").expect("levels"),
    };
    Zone::with_block_size(ZoneParams::new("snap", layout, 1 << 20), 4096)
}

fn md5(n: u8) -> [u8; 16] {
    let mut md5 = [0u8; 16];
    md5[0] = n;
    md5[8] = n;
    md5
}

fn entry(n: u8) -> SavedEntry {
    SavedEntry {
        md5: md5(n),
        exists: n & 1 == 0,
        uniq: u64::from(n) * 1000,
        fs_size: 4096 * u64::from(n),
        valid_sec: -5 + i64::from(n),
        body_start: 400,
        uses: 3,
        error: if n & 1 == 0 { 0 } else { 502 },
        expires_in: Duration::from_millis(1234 * u64::from(n)),
        written: if n & 1 == 0 {
            1_700_000_000 + u64::from(n)
        } else {
            0
        },
    }
}

fn levels() -> Levels {
    Levels::parse("1:2").expect("levels")
}

#[test]
fn round_trip() {
    let entries: Vec<SavedEntry> = (1..=5).map(entry).collect();
    let bytes = encode(levels(), 4096, &entries);
    assert_eq!(bytes.len(), HEADER_LEN + 5 * RECORD_LEN + CRC_LEN);
    assert_eq!(decode(&bytes, levels(), 4096).expect("decoded"), entries);
    assert_eq!(
        decode(&encode(levels(), 512, &[]), levels(), 512).expect("empty"),
        vec![]
    );
}

fn unusable(result: Result<Vec<SavedEntry>, SnapshotError>) -> &'static str {
    match result {
        Err(SnapshotError::Unusable(why)) => why,
        other => panic!("expected unusable, got {other:?}"),
    }
}

/// Flips a byte and fixes the CRC, to reach the checks behind it.
fn with_byte(bytes: &[u8], offset: usize, value: u8) -> Vec<u8> {
    let mut bytes = bytes[..bytes.len() - CRC_LEN].to_vec();
    bytes[offset] = value;
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

/// Version 2 keeps the file's id and the purge rules; version 1 files are still read.
#[test]
fn rules_and_id_round_trip() {
    let index = SavedIndex {
        id: 77,
        entries: vec![entry(1), entry(2)],
        rules: vec![
            crate::purge::Rule {
                key: b"http://a/img/".to_vec(),
                prefix: true,
                at: 5,
            },
            crate::purge::Rule {
                key: Vec::new(),
                prefix: false,
                at: 6,
            },
        ],
    };
    let bytes = encode_index(levels(), 4096, &index);
    assert_eq!(
        decode_index(&bytes, levels(), 4096).expect("decoded"),
        index
    );
    let mut old = encode(levels(), 4096, &index.entries);
    old.truncate(old.len() - CRC_LEN);
    old[8] = 1;
    let crc = crc32fast::hash(&old);
    old.extend_from_slice(&crc.to_le_bytes());
    let decoded = decode_index(&old, levels(), 4096).expect("version 1");
    assert_eq!((decoded.id, decoded.entries), (0, index.entries.clone()));
    let mut cut = bytes[..bytes.len() - CRC_LEN - 1].to_vec();
    let crc = crc32fast::hash(&cut);
    cut.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        unusable(decode_index(&cut, levels(), 4096).map(|index| index.entries)),
        "rule count mismatch"
    );
}

#[test]
fn damaged_or_foreign_snapshots_are_not_used() {
    let bytes = encode(levels(), 4096, &[entry(1), entry(2)]);
    assert_eq!(unusable(decode(&bytes[..20], levels(), 4096)), "too short");
    let mut flipped = bytes.clone();
    flipped[HEADER_LEN + 3] ^= 1;
    assert_eq!(
        unusable(decode(&flipped, levels(), 4096)),
        "checksum mismatch"
    );
    assert_eq!(
        unusable(decode(&with_byte(&bytes, 0, b'X'), levels(), 4096)),
        "not a version 1 or 2 snapshot"
    );
    assert_eq!(
        unusable(decode(&with_byte(&bytes, 12, 0), levels(), 4096)),
        "not written at a clean stop"
    );
    let other_levels = Levels::parse("2").expect("levels");
    assert_eq!(
        unusable(decode(&bytes, other_levels, 4096)),
        "written for other levels"
    );
    assert_eq!(
        unusable(decode(&bytes, levels(), 512)),
        "written for another block size"
    );
    assert_eq!(
        unusable(decode(&with_byte(&bytes, 32, 3), levels(), 4096)),
        "entry count mismatch"
    );
}

#[test]
fn a_snapshot_brings_the_index_back_once() {
    let dir = TestDir::new("snapshot");
    let zone = zone_in(&dir);
    let t0 = Instant::now();
    for n in 1..=3 {
        zone.touch(&md5(n), t0 + u32::from(n) * SECOND)
            .expect("room");
        let Ok(FillStart::Filler(mut guard)) = zone.start_fill(&md5(n), None, t0) else {
            panic!("expected a filler");
        };
        assert!(guard.try_begin_rename());
        guard.commit(CommitInfo {
            file: FileInfo {
                uniq: u64::from(n),
                fs_size: 4096,
                written: 0,
            },
            valid_sec: 77,
            body_start: 300,
        });
    }
    zone.touch(&md5(1), t0 + 4 * SECOND).expect("room");
    zone.touch(&md5(9), t0 + 5 * SECOND).expect("room");
    zone.set_error(&md5(9), 504, 99);
    assert_eq!(
        write_snapshot(&zone, t0 + 10 * SECOND).expect("io"),
        Saved::Incomplete,
        "cold: the loader has not finished"
    );
    let path = snapshot_path(&zone.params().layout);
    assert!(!path.exists());
    zone.set_cold(false);
    assert_eq!(
        write_snapshot(&zone, t0 + 10 * SECOND).expect("written"),
        Saved::Entries(4)
    );
    assert!(path.exists());
    drop(zone);

    let later = t0 + 100 * SECOND;
    let zone = zone_in(&dir);
    assert_eq!(take_snapshot(&zone, later).expect("restored"), 4);
    assert!(!path.exists(), "a snapshot is used once");
    assert!(
        checkpoint_path(&zone.params().layout).exists(),
        "it is the journal's base now"
    );
    assert!(matches!(
        take_snapshot(&zone, later),
        Err(SnapshotError::Missing)
    ));
    assert_eq!(zone.count(), 4);
    assert_eq!(zone.size(), 3 * 4096);
    let first = zone.peek(&md5(1)).expect("restored");
    assert!(first.exists);
    assert_eq!(
        (first.uniq, first.valid_sec, first.body_start, first.uses),
        (1, 77, 300, 2)
    );
    let error = zone.peek(&md5(9)).expect("restored");
    assert_eq!(
        (error.error, error.valid_sec, error.exists),
        (504, 99, false)
    );

    // Expiry: key 2 was last touched at 2 s, 8 s before the snapshot: 592 s remain.
    assert_eq!(
        zone.expire_step(later + 591 * SECOND),
        Expired::NotYet(SECOND)
    );
    // The LRU order is kept: 2, 3, 1, 9.
    let order: Vec<u64> = (0..3)
        .map(|_| match zone.forced_expire_step() {
            Expired::Evicted(Some(unlink)) => unlink.uniq,
            other => panic!("expected an eviction, got {other:?}"),
        })
        .collect();
    assert_eq!(order, vec![2, 3, 1]);
    assert_eq!(zone.forced_expire_step(), Expired::Evicted(None));
}

#[test]
fn workers_come_before_the_snapshot() {
    let dir = TestDir::new("snapshot-workers");
    let zone = zone_in(&dir);
    let t0 = Instant::now();
    zone.touch(&md5(1), t0).expect("room");
    zone.set_error(&md5(1), 502, 1);
    zone.set_cold(false);
    write_snapshot(&zone, t0).expect("written");
    let zone = zone_in(&dir);
    zone.touch(&md5(1), t0).expect("room");
    assert_eq!(take_snapshot(&zone, t0).expect("read"), 0);
    assert_eq!(zone.peek(&md5(1)).expect("indexed").error, 0);
}

/// A checkpoint of a warm zone is restored by the next start without a clean snapshot,
/// and kept (the next checkpoint replaces it); a clean stop's snapshot removes it.
#[test]
fn checkpoints_restore_after_a_crash_and_go_at_a_clean_stop() {
    let dir = TestDir::new("checkpoint");
    let zone = zone_in(&dir);
    let now = Instant::now();
    for n in 1..=4 {
        assert_eq!(zone.restore(&entry(n), now), Ok(true));
    }
    assert!(
        matches!(
            write_checkpoint(&zone, now, 7).expect("written"),
            Saved::Incomplete
        ),
        "a cold zone is not checkpointed"
    );
    zone.set_cold(false);
    assert_eq!(
        write_checkpoint(&zone, now, 7).expect("written"),
        Saved::Entries(4)
    );
    let after_crash = zone_in(&dir);
    let recovery = take_checkpoint(&after_crash, now);
    assert_eq!(recovery.restored, 4);
    assert_eq!(recovery.checkpoint.expect("read"), 4);
    assert_eq!(
        after_crash.journal_base(),
        Some(7),
        "the journal follows it"
    );
    assert_eq!(after_crash.count(), 4);
    assert!(
        checkpoint_path(&after_crash.params().layout).exists(),
        "kept"
    );
    assert_eq!(
        write_snapshot(&zone, now).expect("written"),
        Saved::Entries(4)
    );
    assert!(
        !checkpoint_path(&zone.params().layout).exists(),
        "a snapshot replaces it"
    );
    let recovery = take_checkpoint(&zone_in(&dir), now);
    assert!(matches!(recovery.checkpoint, Err(SnapshotError::Missing)));
    assert!(matches!(recovery.journal, Err(SnapshotError::Missing)));
}

/// A checkpoint takes whole blocks: its header, 64 bytes per entry and its CRC.
#[test]
fn a_checkpoint_counts_whole_blocks() {
    assert_eq!(checkpoint_bytes(0, 4096), 4096);
    assert_eq!(checkpoint_bytes(63, 4096), 4096);
    assert_eq!(checkpoint_bytes(64, 4096), 8192);
    assert_eq!(checkpoint_bytes(100, 512), 6656);
}
