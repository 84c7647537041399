//! What a cache keeps across a crash between two checkpoints: the journal
//! (`PATH/.portico/index.log`) the manager commits at most a second after each change.
//! Entries stored after the last checkpoint keep their LRU order through `kill -9`, also
//! when that checkpoint is the snapshot of the clean stop before; a prefix purge holds
//! through `kill -9` and through a clean restart; a journal with a damaged tail is
//! replayed up to the damage and the server starts.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::proxy_cache::{SharedCache, asked, entry_path, ok, origin, wait_stored, x_cache};
use crate::support::upstream::MockUpstream;
use crate::support::{Instance, PATIENCE, Signal, wait_until};

/// Longer than the journal's commit interval (one second): what was done before it is
/// in the journal.
const COMMITTED: Duration = Duration::from_millis(1500);

impl SharedCache {
    fn journal(&self) -> PathBuf {
        self.dir().join(".portico/index.log")
    }

    /// An instance with `path_extra` on its `proxy_cache_path`, purge by `PURGE`, and an
    /// upstream answering `#N from BATCH` in 3000 bytes (one 4 KiB block per entry).
    fn start_purging(&self, path_extra: &str, batch: &'static str) -> (Instance, MockUpstream) {
        let config = format!(
            "
map $request_method $purge_method {{ PURGE 1; default 0; }}
proxy_cache_path {} levels=1:2 keys_zone=one:1m use_temp_path=off {path_extra};
server {{
    listen 127.0.0.1:8080;
    location / {{
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1h;
        proxy_cache_purge $purge_method;
        add_header X-Cache $upstream_cache_status always;
    }}
}}",
            self.dir().display()
        );
        let mut builder = Instance::http_builder(&config);
        let upstream = origin(builder.port(8081), move |_, number| {
            ok(&format!("{:<3000}", format!("#{number} from {batch}")), "")
        });
        (builder.start(), upstream)
    }
}

fn body(response: &crate::support::Response) -> String {
    response.body_text().trim_end().to_owned()
}

/// Entries stored and used after the last checkpoint (none was written: the first comes
/// after a minute) keep their LRU order through `kill -9`: a restart with a smaller
/// `max_size` makes the manager evict exactly the three least recently used before the
/// crash. (The directory walk alone would index them in directory order.)
#[test]
fn kill_9_keeps_the_lru_order_of_entries_after_the_checkpoint() {
    let cache = SharedCache::new();
    let (mut first, _upstream) = cache.start_purging("", "first");
    let keys = ["/j1", "/j2", "/j3", "/j4", "/j5", "/j6"];
    for key in keys {
        assert_eq!(x_cache(&first.get(key)), "MISS");
        wait_stored(&cache.dir(), key);
    }
    for key in ["/j1", "/j2"] {
        assert_eq!(x_cache(&first.get(key)), "HIT");
    }
    // Least recently used first: j3, j4, j5, j6, j1, j2.
    std::thread::sleep(COMMITTED);
    first.stop_with(Signal::KILL);
    assert!(
        !cache.dir().join(".portico/index.ckpt").exists(),
        "no checkpoint yet: only the journal knows the order"
    );
    let block = std::fs::metadata(entry_path(&cache.dir(), "/j1"))
        .expect("stored")
        .blocks()
        * 512;
    let (second, upstream) = cache.start_purging(&format!("max_size={}", 4 * block), "second");
    let gone = |key: &str| !entry_path(&cache.dir(), key).exists();
    wait_until("the manager to trim to max_size", PATIENCE, || {
        keys.iter().filter(|key| gone(key)).count() >= 3
    });
    let evicted: Vec<&str> = keys.iter().copied().filter(|key| gone(key)).collect();
    assert_eq!(evicted, ["/j3", "/j4", "/j5"]);
    for key in ["/j6", "/j1", "/j2"] {
        let hit = second.get(key);
        assert_eq!(x_cache(&hit), "HIT", "{key}");
        assert!(body(&hit).ends_with("from first"));
    }
    assert_eq!(asked(&upstream), 0);
    second.wait_for_error_log("journal records, checking the files");
}

/// The snapshot a clean stop wrote becomes, at the next start, the checkpoint the journal
/// follows: after a `kill -9` in that run, the start restores it and replays the journal
/// over it. Here `/a` was used after the snapshot and `/d` stored: a smaller `max_size`
/// then evicts `/b` and `/c`, the least recently used (the snapshot alone says `/a`).
#[test]
fn kill_9_after_a_clean_start_replays_the_journal_over_the_snapshot() {
    let cache = SharedCache::new();
    let (mut first, _upstream) = cache.start_purging("", "first");
    for key in ["/a", "/b", "/c"] {
        assert_eq!(x_cache(&first.get(key)), "MISS");
        wait_stored(&cache.dir(), key);
    }
    first.stop();
    let (mut second, _upstream) = cache.start_purging("", "second");
    assert_eq!(x_cache(&second.get("/a")), "HIT");
    assert_eq!(x_cache(&second.get("/d")), "MISS");
    wait_stored(&cache.dir(), "/d");
    std::thread::sleep(COMMITTED);
    second.stop_with(Signal::KILL);
    let block = std::fs::metadata(entry_path(&cache.dir(), "/a"))
        .expect("stored")
        .blocks()
        * 512;
    let (third, upstream) = cache.start_purging(&format!("max_size={}", 3 * block), "third");
    let keys = ["/a", "/b", "/c", "/d"];
    let gone = |key: &str| !entry_path(&cache.dir(), key).exists();
    wait_until("the manager to trim to max_size", PATIENCE, || {
        keys.iter().filter(|key| gone(key)).count() >= 2
    });
    let evicted: Vec<&str> = keys.iter().copied().filter(|key| gone(key)).collect();
    assert_eq!(evicted, ["/b", "/c"]);
    third.wait_for_error_log("index.ckpt\" and ");
    for key in ["/a", "/d"] {
        assert_eq!(x_cache(&third.get(key)), "HIT", "{key}");
    }
    assert_eq!(asked(&upstream), 0);
}

/// A purge of a key prefix holds across a restart, after `kill -9` once the journal has
/// committed it, and after a clean stop (the snapshot keeps it): the purged entries are
/// not served again, the others are.
#[test]
fn a_prefix_purge_holds_across_kill_9_and_a_clean_restart() {
    for signal in [Signal::KILL, Signal::QUIT] {
        let cache = SharedCache::new();
        let (mut first, _upstream) = cache.start_purging("", "first");
        for key in ["/p/a", "/p/b", "/q"] {
            assert_eq!(x_cache(&first.get(key)), "MISS");
            wait_stored(&cache.dir(), key);
        }
        let purge = first.request("PURGE /p/* HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert_eq!(purge.status, 204);
        std::thread::sleep(COMMITTED);
        first.stop_with(signal);
        let (second, upstream) = cache.start_purging("", "second");
        for key in ["/p/a", "/p/b"] {
            let response = second.get(key);
            assert_eq!(
                (x_cache(&response), body(&response).ends_with("from second")),
                ("MISS", true),
                "{key} after {signal:?}"
            );
        }
        let kept = second.get("/q");
        assert_eq!(x_cache(&kept), "HIT", "after {signal:?}");
        assert!(body(&kept).ends_with("from first"));
        assert_eq!(asked(&upstream), 2);
    }
}

/// A journal whose last record is cut short or has a flipped byte (a crash in the middle
/// of a commit, or a bad disk) is replayed up to the damage, with a warning; the server
/// starts and serves every entry.
#[test]
fn a_damaged_journal_tail_is_replayed_up_to_the_damage() {
    for damage in ["truncate", "flip"] {
        let cache = SharedCache::new();
        let (mut first, _upstream) = cache.start_purging("", "first");
        for key in ["/d1", "/d2"] {
            assert_eq!(x_cache(&first.get(key)), "MISS");
            wait_stored(&cache.dir(), key);
        }
        std::thread::sleep(COMMITTED);
        let before = std::fs::metadata(cache.journal())
            .expect("the journal")
            .len();
        assert_eq!(x_cache(&first.get("/d3")), "MISS");
        wait_stored(&cache.dir(), "/d3");
        wait_until("the journal's next commit", PATIENCE, || {
            std::fs::metadata(cache.journal()).is_ok_and(|meta| meta.len() > before)
        });
        std::thread::sleep(COMMITTED);
        first.stop_with(Signal::KILL);
        let mut bytes = std::fs::read(cache.journal()).expect("the journal");
        match damage {
            "truncate" => bytes.truncate(bytes.len() - 5),
            _ => *bytes.last_mut().expect("records") ^= 0x55,
        }
        std::fs::write(cache.journal(), &bytes).expect("damage the journal");
        let (second, upstream) = cache.start_purging("", "second");
        second.wait_for_error_log("is damaged at byte");
        for key in ["/d1", "/d2", "/d3"] {
            let hit = second.get(key);
            assert_eq!(x_cache(&hit), "HIT", "{key} after {damage}");
            assert!(body(&hit).ends_with("from first"));
        }
        assert_eq!(asked(&upstream), 0);
    }
}
