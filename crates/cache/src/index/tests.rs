use std::path::PathBuf;

use super::*;
use crate::fill::FillState;
use crate::key::{Layout, Levels};

const SECOND: Duration = Duration::from_secs(1);

fn params(keys_zone_size: u64) -> ZoneParams {
    let layout = Layout {
        root: PathBuf::from("/nonexistent/portico-cache-test"),
        levels: Levels::parse("1:2").expect("levels"),
    };
    ZoneParams::new("test", layout, keys_zone_size)
}

/// A zone holding `capacity` keys.
fn zone_of(capacity: u64) -> Arc<Zone> {
    Zone::with_block_size(params(8192 + capacity * 128), 4096)
}

fn md5(n: u32) -> [u8; 16] {
    let mut md5 = [0u8; 16];
    md5[..4].copy_from_slice(&n.to_le_bytes());
    md5[8] = (n % 251) as u8;
    md5
}

fn filler(start: Result<FillStart, ZoneFull>) -> FillGuard {
    match start {
        Ok(FillStart::Filler(guard)) => guard,
        other => panic!("expected a filler, got {other:?}"),
    }
}

fn waiter(start: Result<FillStart, ZoneFull>) -> Arc<Fill> {
    match start {
        Ok(FillStart::Wait(fill)) => fill,
        other => panic!("expected to wait, got {other:?}"),
    }
}

fn info(uniq: u64, fs_size: u64) -> CommitInfo {
    CommitInfo {
        file: FileInfo {
            uniq,
            fs_size,
            written: 0,
        },
        valid_sec: 100,
        body_start: 400,
    }
}

/// Fills and commits `key` as inode `uniq` of `fs_size` bytes.
fn store(zone: &Arc<Zone>, key: u32, uniq: u64, fs_size: u64, now: Instant) {
    zone.touch(&md5(key), now).expect("room");
    let mut guard = filler(zone.start_fill(&md5(key), None, now));
    assert!(guard.try_begin_rename());
    guard.commit(info(uniq, fs_size));
}

impl Zone {
    /// Live entries and bytes recounted from the nodes.
    fn audit(&self) -> (usize, u64, u64) {
        let (mut live, mut bytes, mut tombstones) = (0, 0, 0);
        for index in 0..SHARDS {
            let shard = self.lock_shard(index);
            let mut lru = 0;
            let mut slot = shard.head;
            while slot != NIL {
                lru += 1;
                slot = shard.nodes[slot as usize].next;
            }
            for &slot in shard.map.values() {
                let node = &shard.nodes[slot as usize];
                live += usize::from(node.live);
                if node.exists {
                    bytes += node.fs_size;
                }
                if let Some(tombstone) = node.tombstone {
                    bytes += tombstone.fs_size;
                    tombstones += tombstone.fs_size;
                }
            }
            let linked = shard
                .map
                .values()
                .filter(|&&s| shard.nodes[s as usize].live)
                .count();
            assert_eq!(lru, linked, "LRU length of shard {index}");
        }
        (live, bytes, tombstones)
    }

    fn assert_consistent(&self) {
        let (live, bytes, tombstones) = self.audit();
        assert_eq!(live, self.count());
        assert_eq!(bytes, self.size());
        assert_eq!(tombstones, self.tombstone_bytes.load(Ordering::Relaxed));
    }
}

#[test]
fn capacity_follows_nginx_slab_arithmetic() {
    assert_eq!(params(16 * 1024).capacity(), 64);
    assert_eq!(params(1024 * 1024).capacity(), 8128);
    assert_eq!(params(256 * 1024 * 1024).capacity(), 2_097_088);
    assert_eq!(params(8192).capacity(), 1);
    assert_eq!(params(100).capacity(), 1);
}

#[test]
fn ceiling_has_a_slack() {
    let mut p = params(16 * 1024);
    assert_eq!(p.ceiling(), None);
    p.max_size = Some(1 << 30);
    assert_eq!(p.ceiling(), Some((1 << 30) + (64 << 20)));
    p.max_size = Some(100 << 30);
    assert_eq!(p.ceiling(), Some((100 << 30) + (1 << 30)));
    p.max_size_slack = Some(5);
    assert_eq!(p.ceiling(), Some((100 << 30) + 5));
}

#[test]
fn touch_creates_counts_and_expires() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    let first = zone.touch(&md5(1), t0).expect("room");
    assert!(!first.exists);
    assert_eq!(first.uses, 1);
    let again = zone.touch(&md5(1), t0 + SECOND).expect("room");
    assert_eq!(again.uses, 2);
    assert_eq!(zone.count(), 1);
    // Expiry is last access + inactive (600 s): not before.
    assert_eq!(zone.expire_step(t0 + 600 * SECOND), Expired::NotYet(SECOND));
    assert_eq!(zone.expire_step(t0 + 601 * SECOND), Expired::Evicted(None));
    assert_eq!(zone.count(), 0);
    zone.assert_consistent();
}

#[test]
fn lru_order_decides_eviction() {
    let zone = zone_of(3);
    let t0 = Instant::now();
    for key in [1, 2, 3] {
        zone.touch(&md5(key), t0).expect("room");
    }
    zone.touch(&md5(1), t0).expect("room");
    // Full: key 2 is now the oldest.
    zone.touch(&md5(4), t0).expect("room");
    assert!(zone.peek(&md5(2)).is_none());
    assert_eq!(zone.count(), 3);
    assert_eq!(zone.forced_expire_step(), Expired::Evicted(None));
    assert!(zone.peek(&md5(3)).is_none());
    assert!(zone.peek(&md5(1)).is_some());
    zone.assert_consistent();
}

#[test]
fn a_full_zone_sets_the_watermark() {
    let zone = zone_of(64);
    let t0 = Instant::now();
    for key in 0..64 {
        zone.touch(&md5(key), t0).expect("room");
    }
    assert_eq!(zone.watermark(), usize::MAX);
    zone.touch(&md5(64), t0).expect("room");
    assert_eq!(zone.watermark(), 56);
    assert_eq!(zone.count(), 64);
    assert!(zone.peek(&md5(0)).is_none());
}

#[test]
fn eviction_skips_entries_being_filled() {
    let zone = zone_of(2);
    let t0 = Instant::now();
    zone.touch(&md5(1), t0).expect("room");
    let guard = filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
    zone.touch(&md5(2), t0).expect("room");
    zone.touch(&md5(3), t0).expect("room");
    assert!(zone.peek(&md5(1)).is_some(), "the filled entry stays");
    assert!(zone.peek(&md5(2)).is_none());
    let _second = filler(zone.start_fill(&md5(3), None, t0));
    // Everything is being filled: the zone is full, the request goes uncached.
    assert_eq!(zone.touch(&md5(4), t0).map(|_| ()), Err(ZoneFull));
    drop(guard);
    zone.touch(&md5(4), t0).expect("room once the fill ended");
    zone.assert_consistent();
}

#[test]
fn an_updated_entry_is_not_evicted() {
    let zone = zone_of(1);
    let t0 = Instant::now();
    zone.touch(&md5(1), t0).expect("room");
    let update = zone.try_update(&md5(1), t0, SECOND).expect("free");
    assert_eq!(zone.touch(&md5(2), t0).map(|_| ()), Err(ZoneFull));
    drop(update);
    zone.touch(&md5(2), t0).expect("room");
}

#[test]
fn dropping_a_fill_guard_fails_the_fill() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    zone.touch(&md5(1), t0).expect("room");
    let guard = filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
    guard.publish_head(10);
    guard.progress(4);
    let fill = waiter(zone.start_fill(&md5(1), Some(5 * SECOND), t0 + SECOND));
    let receiver = fill.subscribe();
    assert_eq!(
        *receiver.borrow(),
        FillState::Streaming {
            content_length: 10,
            written: 4
        }
    );
    let snapshot = zone.touch(&md5(1), t0).expect("room");
    assert!(snapshot.fill.is_some_and(|f| Arc::ptr_eq(&f, &fill)));
    drop(guard);
    assert_eq!(*receiver.borrow(), FillState::Failed);
    assert!(zone.touch(&md5(1), t0).expect("room").fill.is_none());
    filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0 + SECOND));
}

#[test]
fn a_panicking_filler_fails_the_fill() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    let fill = {
        let zone = Arc::clone(&zone);
        std::thread::spawn(move || {
            let guard = filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
            let fill = Arc::clone(guard.fill());
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let _guard = guard;
                panic!("filler died");
            }))
            .expect_err("panicked");
            fill
        })
        .join()
        .expect("thread")
    };
    assert_eq!(fill.state(), FillState::Failed);
    filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
}

#[test]
fn commit_and_not_cacheable_reach_waiters() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    let mut guard = filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
    let fill = waiter(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
    assert!(guard.try_begin_rename());
    guard.commit(info(77, 8192));
    assert_eq!(fill.state(), FillState::Committed { uniq: 77 });
    let snapshot = zone.touch(&md5(1), t0).expect("room");
    assert!(snapshot.exists);
    assert_eq!(
        (snapshot.uniq, snapshot.fs_size, snapshot.valid_sec),
        (77, 8192, 100)
    );
    assert_eq!(snapshot.body_start, 400);
    assert_eq!(zone.size(), 8192);

    let guard = filler(zone.start_fill(&md5(2), Some(5 * SECOND), t0));
    let fill = waiter(zone.start_fill(&md5(2), Some(5 * SECOND), t0));
    guard.not_cacheable();
    assert_eq!(fill.state(), FillState::NotCacheable);
    filler(zone.start_fill(&md5(2), Some(5 * SECOND), t0));
    zone.assert_consistent();
}

#[tokio::test(flavor = "current_thread")]
async fn waiters_are_woken_by_the_channel() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    let mut guard = filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
    let mut receiver = waiter(zone.start_fill(&md5(1), Some(5 * SECOND), t0)).subscribe();
    let waiting = tokio::spawn(async move {
        while !receiver.borrow_and_update().is_final() {
            receiver.changed().await.expect("sender alive");
        }
        *receiver.borrow()
    });
    tokio::task::yield_now().await;
    guard.begin_rename().await;
    guard.commit(info(5, 4096));
    assert_eq!(
        waiting.await.expect("task"),
        FillState::Committed { uniq: 5 }
    );
}

#[test]
fn an_old_fill_is_taken_over_after_lock_age() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    let age = Some(5 * SECOND);
    let first = filler(zone.start_fill(&md5(1), age, t0));
    waiter(zone.start_fill(&md5(1), age, t0 + 4 * SECOND));
    let mut second = filler(zone.start_fill(&md5(1), age, t0 + 6 * SECOND));
    let current = waiter(zone.start_fill(&md5(1), age, t0 + 7 * SECOND));
    assert!(Arc::ptr_eq(&current, second.fill()));
    // The first filler ending does not clear the second's fill.
    drop(first);
    let still = waiter(zone.start_fill(&md5(1), age, t0 + 8 * SECOND));
    assert!(Arc::ptr_eq(&still, second.fill()));
    assert!(second.try_begin_rename());
    second.commit(info(9, 4096));
    zone.assert_consistent();
}

#[test]
fn lock_off_always_fills() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    let mut guards: Vec<FillGuard> = (0..3)
        .map(|_| filler(zone.start_fill(&md5(1), None, t0)))
        .collect();
    // Last rename wins.
    for (uniq, guard) in guards.iter_mut().enumerate() {
        assert!(guard.try_begin_rename(), "{uniq}");
    }
    for (uniq, guard) in guards.into_iter().enumerate() {
        guard.commit(info(uniq as u64 + 1, 4096));
    }
    let snapshot = zone.touch(&md5(1), t0).expect("room");
    assert_eq!(snapshot.uniq, 3);
    assert_eq!(zone.size(), 4096);
    zone.assert_consistent();
}

#[test]
fn update_marks_have_a_backstop() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    let backstop = 10 * SECOND;
    assert!(
        zone.try_update(&md5(1), t0, backstop).is_none(),
        "not indexed"
    );
    zone.touch(&md5(1), t0).expect("room");
    let first = zone.try_update(&md5(1), t0, backstop).expect("free");
    assert!(!first.took_over());
    assert!(zone.touch(&md5(1), t0).expect("room").updating);
    assert!(zone.try_update(&md5(1), t0 + SECOND, backstop).is_none());
    let second = zone
        .try_update(&md5(1), t0 + 11 * SECOND, backstop)
        .expect("stale mark");
    assert!(second.took_over());
    drop(first);
    assert!(
        zone.try_update(&md5(1), t0 + 12 * SECOND, backstop)
            .is_none()
    );
    drop(second);
    assert!(!zone.touch(&md5(1), t0).expect("room").updating);
    assert!(
        zone.try_update(&md5(1), t0 + 12 * SECOND, backstop)
            .is_some()
    );
}

#[test]
fn errors_validity_and_removal() {
    let zone = zone_of(10);
    let t0 = Instant::now();
    zone.touch(&md5(1), t0).expect("room");
    zone.set_error(&md5(1), 502, 50);
    let snapshot = zone.touch(&md5(1), t0).expect("room");
    assert_eq!(
        (snapshot.error, snapshot.valid_sec, snapshot.exists),
        (502, 50, false)
    );

    store(&zone, 2, 42, 8192, t0);
    zone.set_valid(&md5(2), 500);
    assert_eq!(zone.touch(&md5(2), t0).expect("room").valid_sec, 500);
    assert!(!zone.remove(&md5(2), 41), "another inode");
    assert!(zone.remove(&md5(2), 42));
    assert_eq!(
        zone.next_unlink(),
        Some(Unlink {
            md5: md5(2),
            uniq: 42
        })
    );
    assert_eq!(zone.count(), 1);
    let snapshot = zone.touch(&md5(2), t0).expect("room");
    assert!(!snapshot.exists);
    assert_eq!(zone.size(), 8192, "until the unlink is done");
    let unlink = Unlink {
        md5: md5(2),
        uniq: 42,
    };
    assert!(zone.begin_unlink(&unlink).is_some());
    zone.end_unlink(&unlink);
    assert_eq!(zone.size(), 0);
    zone.assert_consistent();
}

#[test]
fn loaded_entries_do_not_override_workers() {
    let zone = zone_of(2);
    let t0 = Instant::now();
    zone.touch(&md5(1), t0).expect("room");
    let file = FileInfo {
        uniq: 3,
        fs_size: 4096,
        written: 0,
    };
    // The worker's node stays (its use counted once); it takes the file it lacked.
    assert_eq!(zone.add_loaded(&md5(1), file, None, None, t0), Ok(false));
    let touched = zone.peek(&md5(1)).expect("kept");
    assert_eq!((touched.exists, touched.uses), (true, 1));
    assert_eq!(
        zone.add_loaded(&md5(2), file, Some(9), Some(500), t0),
        Ok(true)
    );
    let snapshot = zone.peek(&md5(2)).expect("added");
    assert!(snapshot.exists);
    assert_eq!(
        (snapshot.uses, snapshot.valid_sec, snapshot.body_start),
        (1, 9, 500)
    );
    assert_eq!(zone.size(), 2 * 4096);
    assert_eq!(
        zone.add_loaded(&md5(3), file, None, None, t0),
        Err(ZoneFull)
    );
    assert_eq!(zone.watermark(), 2);
    assert_eq!(
        zone.expire_step(t0 + 601 * SECOND),
        Expired::Evicted(Some(Unlink {
            md5: md5(1),
            uniq: 3
        }))
    );
    assert_eq!(
        zone.expire_step(t0 + 601 * SECOND),
        Expired::Evicted(Some(Unlink {
            md5: md5(2),
            uniq: 3
        }))
    );
    zone.assert_consistent();
}

#[test]
fn cold_until_told() {
    let zone = zone_of(1);
    assert!(zone.cold());
    zone.set_cold(false);
    assert!(!zone.cold());
}

/// The invariant of the module doc: an unlink queued for version N never removes N+1.
/// Here the filler of N+1 claims the name before the manager looks at the unlink.
#[test]
fn an_unlink_of_version_n_never_removes_version_n_plus_1() {
    let zone = zone_of(1);
    let t0 = Instant::now();
    store(&zone, 1, 100, 4096, t0);
    // Evicted to make room: a tombstone of inode 100, its unlink queued.
    zone.touch(&md5(2), t0).expect("room");
    let old = zone.next_unlink().expect("queued");
    assert_eq!(
        old,
        Unlink {
            md5: md5(1),
            uniq: 100
        }
    );

    zone.touch(&md5(1), t0).expect("room");
    let mut guard = filler(zone.start_fill(&md5(1), None, t0));
    assert!(guard.try_begin_rename());
    assert_eq!(zone.begin_unlink(&old), None, "deferred while renaming");
    guard.commit(info(101, 4096));
    assert_eq!(
        zone.begin_unlink(&old),
        None,
        "the rename replaced version 100"
    );
    assert_eq!(zone.next_unlink(), None, "nothing queued again");
    let snapshot = zone.peek(&md5(1)).expect("kept");
    assert!(snapshot.exists);
    assert_eq!(snapshot.uniq, 101);

    // Version 101 evicted in its turn: only an unlink of 101 may proceed.
    zone.touch(&md5(3), t0).expect("room");
    let newer = zone.next_unlink().expect("queued");
    assert_eq!(newer.uniq, 101);
    assert_eq!(zone.begin_unlink(&old), None, "stale");
    assert!(zone.begin_unlink(&newer).is_some());
    zone.end_unlink(&newer);
    assert_eq!(zone.size(), 0);
    zone.assert_consistent();
}

#[test]
fn a_rename_waits_for_a_running_unlink() {
    let zone = zone_of(1);
    let t0 = Instant::now();
    store(&zone, 1, 100, 4096, t0);
    zone.touch(&md5(2), t0).expect("room");
    let old = zone.next_unlink().expect("queued");

    let mut guard = filler(zone.start_fill(&md5(1), None, t0));
    let path = zone.begin_unlink(&old).expect("due");
    assert!(path.ends_with(std::str::from_utf8(&crate::key::hex_of(&md5(1))).expect("hex")));
    assert!(!guard.try_begin_rename(), "refused while unlinking");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let key = md5(1);
        let waiting = zone.wait_unlinked(&key);
        tokio::pin!(waiting);
        assert!(
            futures_poll_once(waiting.as_mut()).await.is_none(),
            "still unlinking"
        );
        zone.end_unlink(&old);
        waiting.await;
    });
    assert!(guard.try_begin_rename());
    guard.commit(info(101, 4096));
    // The unlink was done; a repeat of it finds nothing to do.
    assert_eq!(zone.begin_unlink(&old), None);
    let snapshot = zone.peek(&md5(1)).expect("indexed");
    assert!(snapshot.exists);
    assert_eq!(snapshot.uniq, 101);
    assert_eq!(zone.size(), 4096);
    zone.assert_consistent();
}

#[test]
fn a_deferred_unlink_is_queued_again_when_the_rename_fails() {
    let zone = zone_of(1);
    let t0 = Instant::now();
    store(&zone, 1, 100, 4096, t0);
    zone.touch(&md5(2), t0).expect("room");
    let old = zone.next_unlink().expect("queued");
    let mut guard = filler(zone.start_fill(&md5(1), None, t0));
    assert!(guard.try_begin_rename());
    assert_eq!(zone.begin_unlink(&old), None, "deferred");
    drop(guard);
    assert_eq!(zone.next_unlink(), Some(old));
    assert!(zone.begin_unlink(&old).is_some());
    zone.end_unlink(&old);
    assert!(zone.peek(&md5(1)).is_none(), "freed");
    assert_eq!(zone.size(), 0);
    zone.assert_consistent();
}

/// Polls a future once: `Some` if it was ready.
async fn futures_poll_once<F: std::future::Future + Unpin>(mut future: F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

#[test]
fn reservations_stop_at_the_ceiling() {
    let mut p = params(8192 + 10 * 128);
    p.max_size = Some(10_000);
    p.max_size_slack = Some(2_000);
    let zone = Zone::with_block_size(p, 4096);
    let t0 = Instant::now();
    store(&zone, 1, 1, 4000, t0);
    store(&zone, 2, 2, 4000, t0);
    let first = zone.reserve(4000).expect("fits: 12000");
    assert_eq!(zone.reserved(), 4000);
    // 4000 more would cross 12000: the oldest entry is evicted for it.
    let second = zone.reserve(4000).expect("after an eviction");
    assert!(zone.peek(&md5(1)).is_some_and(|s| !s.exists));
    assert_eq!(
        zone.next_unlink(),
        Some(Unlink {
            md5: md5(1),
            uniq: 1
        })
    );
    let _filling = filler(zone.start_fill(&md5(2), None, t0));
    assert!(zone.reserve(4001).is_none(), "only a filled entry is left");
    drop(first);
    assert_eq!(zone.reserved(), 4000);
    let mut third = zone.reserve(1000).expect("fits again");
    assert!(third.grow(3000));
    assert!(!third.grow(1));
    assert_eq!(third.bytes(), 4000);
    drop((second, third));
    assert_eq!(zone.reserved(), 0);
}

#[test]
fn a_fill_reservation_becomes_the_committed_size() {
    let mut p = params(8192 + 10 * 128);
    p.max_size = Some(10_000);
    p.max_size_slack = Some(0);
    let zone = Zone::with_block_size(p, 4096);
    let t0 = Instant::now();
    let mut guard = filler(zone.start_fill(&md5(1), None, t0));
    // Whole blocks, as the file will be counted: 6000 bytes hold two.
    assert!(guard.reserve(6000));
    assert_eq!(zone.reserved(), 8192);
    assert!(!guard.reserve(1), "a third block would cross 10000");
    assert_eq!(zone.reserved(), 8192);
    assert!(guard.try_begin_rename());
    guard.commit(info(1, 8192));
    assert_eq!(zone.reserved(), 0);
    assert_eq!(zone.size(), 8192);
}

#[test]
fn threads_share_a_zone() {
    let zone = zone_of(50);
    let t0 = Instant::now();
    let threads: Vec<_> = (0..6u32)
        .map(|thread| {
            let zone = Arc::clone(&zone);
            std::thread::spawn(move || {
                let mut committed = 0;
                for i in 0..3000u32 {
                    let key = (i * 7 + thread * 13) % 120;
                    let now = t0 + Duration::from_millis(u64::from(i));
                    if zone.touch(&md5(key), now).is_err() {
                        continue;
                    }
                    match zone.start_fill(&md5(key), Some(SECOND), now) {
                        Ok(FillStart::Filler(mut guard)) => {
                            if i % 3 == 0 && guard.try_begin_rename() {
                                guard.commit(info(u64::from(i), 4096));
                                committed += 1;
                            }
                        }
                        Ok(FillStart::Wait(fill)) => assert!(now < fill.started() + SECOND),
                        Err(ZoneFull) => {}
                    }
                    if i % 5 == 0 {
                        while let Some(unlink) = zone.next_unlink() {
                            if zone.begin_unlink(&unlink).is_some() {
                                zone.end_unlink(&unlink);
                            }
                        }
                    }
                }
                committed
            })
        })
        .collect();
    let committed: u32 = threads.into_iter().map(|t| t.join().expect("thread")).sum();
    assert!(committed > 0);
    assert!(zone.count() <= zone.capacity());
    zone.assert_consistent();
    while let Some(unlink) = zone.next_unlink() {
        if zone.begin_unlink(&unlink).is_some() {
            zone.end_unlink(&unlink);
        }
    }
    let (_, _, tombstones) = zone.audit();
    assert_eq!(tombstones, 0);
    zone.assert_consistent();
}

#[test]
fn a_reused_tombstone_shows_no_old_file() {
    let zone = zone_of(1);
    let t0 = Instant::now();
    store(&zone, 1, 100, 4096, t0);
    zone.touch(&md5(2), t0).expect("room");
    let snapshot = zone.touch(&md5(1), t0).expect("room");
    assert!(!snapshot.exists);
    assert_eq!((snapshot.uniq, snapshot.fs_size, snapshot.uses), (0, 0, 1));
    assert!(format!("{zone:?}").contains("capacity: 1"));
}

#[test]
fn reservations_keep_free_space() {
    const MIB: u64 = 1024 * 1024;
    let zone = zone_of(10);
    assert_eq!(zone.free_space(), None);
    let unknown = zone.reserve(1 << 40).expect("free space unknown: no floor");
    drop(unknown);
    zone.set_free_space(20 * MIB);
    assert_eq!(zone.free_space(), Some(20 * MIB));
    let first = zone.reserve(3 * MIB).expect("17 MiB left");
    assert!(
        zone.reserve(2 * MIB).is_none(),
        "15 MiB would be left, under 16"
    );
    drop(first);
    assert!(zone.reserve(2 * MIB).is_some());

    let mut p = params(8192 + 10 * 128);
    p.min_free = Some(100 * MIB);
    let zone = Zone::with_block_size(p, 4096);
    zone.set_free_space(60 * MIB);
    let mut reservation = zone.reserve(10 * MIB).expect("50 MiB left");
    assert!(!reservation.grow(1), "under min_free / 2");
}

#[test]
fn waiters_can_read_the_shared_temp_file() {
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    let dir = crate::test_dir::TestDir::new("fill-temp");
    let zone = zone_of(10);
    let t0 = Instant::now();
    let guard = filler(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
    let (mut file, temp) =
        crate::store::create_temp(&dir.path().join("e.0000000001")).expect("temp");
    guard.share_temp(Arc::new(std::fs::File::open(&temp).expect("reopen")));
    guard.publish_head(5);
    file.write_all(b"hello").expect("write");
    guard.progress(5);
    let fill = waiter(zone.start_fill(&md5(1), Some(5 * SECOND), t0));
    let FillState::Streaming { written, .. } = fill.state() else {
        panic!("streaming");
    };
    let mut buf = vec![0u8; written as usize];
    fill.temp()
        .expect("shared")
        .read_exact_at(&mut buf, 0)
        .expect("read");
    assert_eq!(buf, b"hello");
}

fn on_disk(uniq: u64, fs_size: u64) -> FileInfo {
    FileInfo {
        uniq,
        fs_size,
        written: 7,
    }
}

/// A request that touched a key while the zone was cold leaves a node without a file:
/// the file found for it afterwards (by the worker's own open, the walk, or the snapshot)
/// is given to that node, counted once, and the key reads as existing.
#[test]
fn a_node_touched_while_cold_takes_the_file_found_later() {
    let zone = zone_of(16);
    let now = Instant::now();
    zone.touch(&md5(1), now).expect("room");
    assert!(!zone.peek(&md5(1)).expect("a node").exists);

    assert!(zone.adopt(&md5(1), on_disk(11, 8192), Some(50), Some(300)));
    let node = zone.peek(&md5(1)).expect("a node");
    assert_eq!(
        (
            node.exists,
            node.uniq,
            node.fs_size,
            node.valid_sec,
            node.body_start,
            node.uses
        ),
        (true, 11, 8192, 50, 300, 1)
    );
    assert_eq!(zone.size(), 8192);
    // Found again (the walk after the worker's open): already has its file.
    assert!(!zone.adopt(&md5(1), on_disk(11, 8192), Some(50), Some(300)));
    assert_eq!(zone.size(), 8192, "counted once");

    // The loader and the snapshot on a touched key: the same.
    zone.touch(&md5(2), now).expect("room");
    assert_eq!(
        zone.add_loaded(&md5(2), on_disk(12, 4096), None, None, now),
        Ok(false)
    );
    assert!(zone.peek(&md5(2)).expect("a node").exists);
    zone.touch(&md5(3), now).expect("room");
    let saved = SavedEntry {
        md5: md5(3),
        exists: true,
        uniq: 13,
        fs_size: 4096,
        valid_sec: 60,
        body_start: 310,
        uses: 9,
        error: 0,
        expires_in: SECOND,
        written: 7,
    };
    assert_eq!(zone.restore(&saved, now), Ok(false));
    let node = zone.peek(&md5(3)).expect("a node");
    assert_eq!(
        (node.exists, node.uniq, node.valid_sec, node.uses),
        (true, 13, 60, 1)
    );
    assert_eq!(zone.size(), 8192 + 4096 + 4096);
    // A key the zone never saw is not made up.
    assert!(!zone.adopt(&md5(4), on_disk(14, 4096), None, None));
}

/// A file found for a key whose node already has one (a fill committed first) or whose
/// file is being unlinked does not replace it.
#[test]
fn a_found_file_never_replaces_a_committed_or_removed_one() {
    let zone = zone_of(16);
    let now = Instant::now();
    store(&zone, 1, 21, 4096, now);
    assert!(!zone.adopt(&md5(1), on_disk(99, 8192), Some(1), Some(1)));
    let node = zone.peek(&md5(1)).expect("a node");
    assert_eq!((node.uniq, node.fs_size), (21, 4096));
    assert_eq!(zone.size(), 4096);

    store(&zone, 2, 22, 4096, now);
    assert!(zone.remove(&md5(2), 22));
    zone.touch(&md5(2), now).expect("room");
    assert!(!zone.adopt(&md5(2), on_disk(22, 4096), None, None));
    assert!(!zone.peek(&md5(2)).expect("a node").exists);
}
