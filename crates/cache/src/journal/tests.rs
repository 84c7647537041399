use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::index::{CommitInfo, Expired, FileInfo, FillStart, Zone, ZoneParams};
use crate::persist::{checkpoint_path, take_checkpoint, write_checkpoint};
use crate::test_dir::TestDir;

const SECOND: Duration = Duration::from_secs(1);

fn levels() -> Levels {
    Levels::parse("1:2").expect("levels")
}

fn zone_in(dir: &TestDir) -> Arc<Zone> {
    let layout = Layout {
        root: dir.path().to_path_buf(),
        levels: levels(),
    };
    Zone::with_block_size(ZoneParams::new("journal", layout, 1 << 20), 4096)
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
        exists: true,
        uniq: u64::from(n) * 10,
        fs_size: 4096,
        valid_sec: 1_000 + i64::from(n),
        body_start: 321,
        uses: u32::from(n),
        error: 0,
        expires_in: Duration::from_secs(60 * u64::from(n)),
        written: 1_700_000_000 + u64::from(n),
    }
}

fn rule(key: &str, prefix: bool, at: u64) -> Rule {
    Rule {
        key: key.as_bytes().to_vec(),
        prefix,
        at,
    }
}

/// A committed file for key `n` (inode `n`).
fn store(zone: &Arc<Zone>, n: u8, now: Instant) {
    zone.touch(&md5(n), now).expect("room");
    let Ok(FillStart::Filler(mut guard)) = zone.start_fill(&md5(n), None, now) else {
        panic!("expected a filler");
    };
    assert!(guard.try_begin_rename());
    guard.commit(CommitInfo {
        file: FileInfo {
            uniq: u64::from(n),
            fs_size: 4096,
            written: 100 * u64::from(n),
        },
        valid_sec: 500,
        body_start: 300,
    });
}

/// One group commit, as the manager makes it.
fn commit(zone: &Zone, journal: &mut Journal, now: Instant, rules_seen: &mut u64) {
    let changes = zone.take_changes(now);
    let (rules, last) = zone.purges().added_since(*rules_seen);
    *rules_seen = last;
    let mut bytes = Vec::new();
    encode_changes(&changes, &rules, wall_ms(), &mut bytes);
    journal.append(&bytes).expect("appended");
}

/// The inodes of the zone's entries, least recently used first (evicting them all).
fn lru_order(zone: &Zone) -> Vec<u64> {
    let mut order = Vec::new();
    loop {
        match zone.forced_expire_step() {
            Expired::Evicted(Some(unlink)) => order.push(unlink.uniq),
            Expired::Evicted(None) => {}
            _ => return order,
        }
    }
}

#[test]
fn records_round_trip() {
    let changes = Changes {
        puts: vec![entry(1), entry(2)],
        removes: vec![md5(3)],
        gap: false,
    };
    let rules = [rule("http://a/img/", true, 42), rule("/x", false, 43)];
    let mut bytes = encode_header(levels(), 99).to_vec();
    encode_changes(&changes, &rules, 5_000, &mut bytes);
    assert_eq!(decode_header(&bytes, levels()).expect("header"), 99);
    let replay = decode_records(&bytes, 5_000);
    assert_eq!(replay.damaged_at, None);
    assert_eq!(replay.good_len, bytes.len());
    assert_eq!(
        replay.records,
        vec![
            Record::Remove(md5(3)),
            Record::Put(entry(1)),
            Record::Put(entry(2)),
            Record::Rule(rules[0].clone()),
            Record::Rule(rules[1].clone()),
        ]
    );
    // `inactive` is wall-clock time: read 30 s later, 30 s less are left.
    let later = decode_records(&bytes, 35_000);
    assert_eq!(
        later.records[1],
        Record::Put(SavedEntry {
            expires_in: Duration::from_secs(30),
            ..entry(1)
        })
    );
    assert_eq!(
        (HEADER_LEN + RECORD_HEAD + 16 + 2 * (RECORD_HEAD + PUT_LEN)) as u64,
        (bytes.len() - 2 * RECORD_HEAD - 9 * 2 - "http://a/img/".len() - "/x".len()) as u64
    );
}

/// A record cut short or with a flipped byte ends the replay; what came before is used.
#[test]
fn a_damaged_tail_ends_the_replay() {
    let mut bytes = encode_header(levels(), 1).to_vec();
    let changes = |n: u8| Changes {
        puts: vec![entry(n)],
        ..Changes::default()
    };
    encode_changes(&changes(1), &[], 0, &mut bytes);
    let first_end = bytes.len();
    encode_changes(&changes(2), &[], 0, &mut bytes);
    for cut in 1..bytes.len() - first_end {
        let replay = decode_records(&bytes[..bytes.len() - cut], 0);
        assert_eq!(replay.records.len(), 1, "cut by {cut}");
        assert_eq!(replay.good_len, first_end);
        assert_eq!(replay.damaged_at, Some(first_end));
    }
    for offset in first_end..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[offset] ^= 0x40;
        let replay = decode_records(&flipped, 0);
        assert_eq!(replay.records.len(), 1, "byte {offset} flipped");
        assert_eq!(replay.damaged_at, Some(first_end));
    }
    let mut header = bytes.clone();
    header[17] ^= 1;
    assert!(matches!(
        decode_header(&header, levels()),
        Err(SnapshotError::Unusable("checksum mismatch"))
    ));
    assert!(matches!(
        decode_header(&bytes, Levels::parse("2").expect("levels")),
        Err(SnapshotError::Unusable("written for other levels"))
    ));
    assert!(matches!(
        decode_header(&bytes[..10], levels()),
        Err(SnapshotError::Unusable("too short"))
    ));
}

#[test]
fn records_apply_over_a_checkpoint_in_order() {
    let checkpoint = vec![entry(1), entry(2), entry(3)];
    let updated = SavedEntry {
        uses: 99,
        ..entry(1)
    };
    let records = vec![
        Record::Put(updated),
        Record::Remove(md5(2)),
        Record::Put(entry(4)),
        Record::Remove(md5(7)),
        Record::Rule(rule("/a", true, 5)),
        Record::Rule(rule("/a", true, 6)),
    ];
    let (entries, rules) = apply(checkpoint, vec![rule("/b", false, 1)], records);
    assert_eq!(entries, vec![entry(3), updated, entry(4)]);
    assert_eq!(rules, vec![rule("/b", false, 1), rule("/a", true, 6)]);
}

/// What workers change reaches the journal once per key per commit, with the state of
/// the moment, least recently used first; gone entries as removes.
#[test]
fn changes_are_taken_once_in_lru_order() {
    let dir = TestDir::new("journal-changes");
    let zone = zone_in(&dir);
    let now = Instant::now();
    for n in 1..=3 {
        store(&zone, n, now);
    }
    zone.touch(&md5(1), now).expect("room");
    let changes = zone.take_changes(now);
    let order: Vec<u64> = changes.puts.iter().map(|entry| entry.uniq).collect();
    assert_eq!(order, vec![2, 3, 1]);
    assert_eq!(changes.puts[2].uses, 2);
    assert!(changes.removes.is_empty() && !changes.gap);
    assert!(zone.take_changes(now).puts.is_empty(), "taken once");
    assert!(zone.remove(&md5(2), 2));
    let changes = zone.take_changes(now);
    assert_eq!((changes.puts.len(), changes.removes), (0, vec![md5(2)]));
}

/// After a crash: the checkpoint, then the journal written since, give the index as it
/// was at the last commit: order, uses, errors, removals and purge rules.
#[test]
fn a_crash_restores_the_checkpoint_and_the_journal() {
    let dir = TestDir::new("journal-crash");
    let zone = zone_in(&dir);
    let t0 = Instant::now();
    zone.set_cold(false);
    for n in 1..=3 {
        store(&zone, n, t0);
    }
    let layout = zone.params().layout.clone();
    let mut journal = Journal::open(&layout, 0).expect("opened");
    let mut rules_seen = 0;
    commit(&zone, &mut journal, t0, &mut rules_seen);
    write_checkpoint(&zone, t0, 7).expect("written");
    journal.reset(7).expect("reset");
    assert!(journal.is_empty());
    // After the checkpoint: 4 and 5 stored, 1 used, 2 removed, 5 an error, a purge.
    store(&zone, 4, t0);
    store(&zone, 5, t0);
    zone.touch(&md5(1), t0 + SECOND).expect("room");
    assert!(zone.remove(&md5(2), 2));
    zone.set_error(&md5(5), 502, 9);
    zone.purges().add(b"/img/", true, 1234);
    commit(&zone, &mut journal, t0, &mut rules_seen);
    // Not committed when the crash comes.
    store(&zone, 6, t0);
    drop(journal);

    let after = zone_in(&dir);
    let recovery = take_checkpoint(&after, t0);
    assert_eq!(recovery.checkpoint.expect("checkpoint"), 3);
    // Puts of 4, 5 and 1, the remove of 2, the rule.
    assert_eq!(recovery.journal.expect("journal").records, 5);
    assert_eq!((recovery.restored, recovery.rules), (4, 1));
    assert_eq!(after.journal_base(), Some(7));
    assert!(after.purges().covers(b"/img/a.png", 1000));
    assert!(after.peek(&md5(6)).is_none(), "after the last commit");
    let five = after.peek(&md5(5)).expect("restored");
    assert_eq!((five.error, five.valid_sec), (502, 9));
    assert_eq!(after.peek(&md5(1)).expect("restored").uses, 2);
    assert_eq!(lru_order(&after), vec![3, 4, 5, 1]);

    // The manager goes on after the last good record.
    let journal = Journal::open(&layout, 7).expect("opened");
    assert!(!journal.is_empty());
    // A journal that follows another checkpoint starts again.
    let journal = Journal::open(&layout, 8).expect("opened");
    assert!(journal.is_empty());
}

/// A crash between a checkpoint's rename and the journal's reset: the journal still
/// follows the previous checkpoint, so its records (all in the new one) are skipped.
#[test]
fn a_journal_older_than_the_checkpoint_is_skipped() {
    let dir = TestDir::new("journal-older");
    let zone = zone_in(&dir);
    let t0 = Instant::now();
    zone.set_cold(false);
    store(&zone, 1, t0);
    let layout = zone.params().layout.clone();
    let mut journal = Journal::open(&layout, 7).expect("opened");
    let mut rules_seen = 0;
    commit(&zone, &mut journal, t0, &mut rules_seen);
    assert!(zone.remove(&md5(1), 1));
    store(&zone, 2, t0);
    write_checkpoint(&zone, t0, 8).expect("written");
    assert!(checkpoint_path(&layout).exists());

    let after = zone_in(&dir);
    let recovery = take_checkpoint(&after, t0);
    assert!(matches!(
        recovery.journal,
        Err(SnapshotError::Unusable("older than the checkpoint"))
    ));
    assert_eq!(recovery.restored, 1);
    assert!(
        after.peek(&md5(1)).is_none(),
        "the old record is not replayed"
    );
    assert_eq!(after.journal_base(), Some(8));
}
