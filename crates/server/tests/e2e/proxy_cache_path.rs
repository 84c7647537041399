//! `proxy_cache_path` and the life of a cache directory: where temporary files go
//! (`use_temp_path`), entries dropped by the manager (`inactive`, `max_size` with
//! `manager_files`), a small keys zone, and restarts on the same directory, clean (the
//! index snapshot) and after `kill -9` (the loader's walk, temp files removed).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::proxy_cache::{
    SharedCache, asked, cached_proxy, entry_path, files_under, ok, origin, wait_stored, x_cache,
};
use crate::support::{Instance, PATIENCE, Signal, poll, wait_until};

fn config(path_line: &str) -> String {
    format!(
        "
proxy_cache_path {path_line};
server {{
    listen 127.0.0.1:8080;
    location / {{
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1h;
        add_header X-Cache $upstream_cache_status always;
    }}
}}"
    )
}

/// Whether a file name is a temporary file's: a number of 10 digits, alone (under
/// `proxy_temp`) or after the entry's name and a dot (next to the entry).
fn is_temp_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let digits = name.rsplit('.').next().unwrap_or("");
    digits.len() == 10 && digits.bytes().all(|byte| byte.is_ascii_digit())
}

/// An upstream that sends half of a 512 KiB body (more than a write batch, so the temp
/// file exists), then the rest once `release` is set.
fn held_upstream(port: u16, release: Arc<AtomicBool>) -> crate::support::upstream::MockUpstream {
    crate::support::upstream::MockUpstream::start(port, move |mut conn| {
        if conn.read_request().is_some() {
            let half = vec![b'h'; 256 * 1024];
            conn.write(format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                2 * half.len()
            ));
            conn.write(&half);
            wait_until("the test to release the body", PATIENCE, || {
                release.load(Ordering::Acquire)
            });
            conn.write(&half);
        }
    })
}

/// `use_temp_path=off`: the entry is written next to where it will live, never under
/// `proxy_temp`; with `on` (the default) it is written under `proxy_temp`. Either way no
/// temporary file is left once it is stored.
#[test]
fn use_temp_path_decides_where_the_fill_is_written() {
    for (parameter, in_cache) in [("use_temp_path=off", true), ("use_temp_path=on", false)] {
        let release = Arc::new(AtomicBool::new(false));
        let mut builder = Instance::http_builder(&config(&format!(
            "%%PREFIX%%/cache levels=1:2 keys_zone=one:1m {parameter}"
        )));
        let _upstream = held_upstream(builder.port(8081), Arc::clone(&release));
        let server = builder.start();
        let (cache, temp) = (
            server.prefix().join("cache"),
            server.prefix().join("proxy_temp"),
        );
        let mut client =
            std::net::TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        client
            .write_all(b"GET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("send the request");
        let (look, other) = if in_cache {
            (&cache, &temp)
        } else {
            (&temp, &cache)
        };
        let found = poll(PATIENCE, || {
            files_under(look)
                .into_iter()
                .find(|path| is_temp_name(path))
        });
        let found =
            found.unwrap_or_else(|| panic!("{parameter}: no temp file under {}", look.display()));
        assert!(
            files_under(other).is_empty(),
            "{parameter}: {:?}",
            files_under(other)
        );
        if in_cache {
            let entry = entry_path(&cache, "/t");
            assert_eq!(found.parent(), entry.parent(), "next to the entry");
        }
        release.store(true, Ordering::Release);
        let mut received = Vec::new();
        client
            .read_to_end(&mut received)
            .expect("read the response");
        assert!(
            received.ends_with(&[b'h'; 1024]),
            "{parameter}: the whole body"
        );
        wait_stored(&cache, "/t");
        wait_until("no temp file left", PATIENCE, || {
            !files_under(&cache)
                .iter()
                .chain(files_under(&temp).iter())
                .any(|path| is_temp_name(path))
        });
        assert_eq!(x_cache(&server.get("/t")), "HIT", "{parameter}");
    }
}

/// `inactive=1s`: an entry nobody asked for during a second is removed by the manager
/// (its file too), and the next request is a MISS although `proxy_cache_valid` is an hour.
#[test]
fn inactive_entries_are_removed_by_the_manager() {
    let (server, upstream) = cached_proxy(
        &config("%%PREFIX%%/cache levels=1:2 keys_zone=one:1m inactive=1s"),
        |_, number| ok(&format!("#{number}"), ""),
    );
    let cache = server.prefix().join("cache");
    assert_eq!(x_cache(&server.get("/i")), "MISS");
    let path = wait_stored(&cache, "/i");
    wait_until("the manager to remove the inactive entry", PATIENCE, || {
        !path.exists()
    });
    let again = server.get("/i");
    assert_eq!(
        (x_cache(&again), again.body_text().as_str()),
        ("MISS", "#2")
    );
    assert_eq!(asked(&upstream), 2);
}

/// `max_size=16k manager_files=1`: ten entries of 3000 bytes (a 4 KiB block each) go past
/// the limit; the manager removes the least recently used, one file per pass, until the
/// cache fits, and the last one stored is still a HIT.
#[test]
fn max_size_is_enforced_by_the_manager() {
    let (server, upstream) = cached_proxy(
        &config(
            "%%PREFIX%%/cache levels=1:2 keys_zone=one:1m max_size=16k manager_files=1 \
             manager_sleep=50ms manager_threshold=100ms",
        ),
        |_, number| ok(&format!("{number:0>3000}"), ""),
    );
    let cache = server.prefix().join("cache");
    for index in 0..10 {
        let response = server.get(&format!("/s{index}"));
        assert_eq!((response.status, x_cache(&response)), (200, "MISS"));
        wait_stored(&cache, &format!("/s{index}"));
    }
    wait_until(
        "the manager to bring the cache under max_size",
        PATIENCE,
        || files_under(&cache).len() <= 4,
    );
    let last = server.get("/s9");
    assert_eq!(x_cache(&last), "HIT", "the most recent entry stays");
    assert!(!entry_path(&cache, "/s0").exists(), "the oldest went first");
    assert_eq!(asked(&upstream), 10);
}

/// A 16k keys zone holds 64 keys: 1,000 distinct keys are all answered 200,
/// with no `[alert]` (the harness fails the test on one) and no 500.
#[test]
fn a_small_keys_zone_never_fails_a_request() {
    let (server, upstream) = cached_proxy(
        &config("%%PREFIX%%/cache levels=1:2 keys_zone=one:16k"),
        |request, _| ok(request.split_whitespace().nth(1).unwrap_or(""), ""),
    );
    for index in 0..1000 {
        let path = format!("/key{index}");
        let response = server.get(&path);
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.body_text(), path);
    }
    assert!(!server.error_log().contains("[alert]"));
    assert_eq!(asked(&upstream), 1000);
    let again = server.get("/key999");
    assert_eq!(again.status, 200);
}

impl SharedCache {
    fn config(&self) -> String {
        self.config_with_loader("loader_files=10 loader_sleep=10ms loader_threshold=50ms")
    }

    /// The cache path with the loader's pace `loader` (its `loader_*` parameters).
    fn config_with_loader(&self, loader: &str) -> String {
        config(&format!(
            "{} levels=1:2 keys_zone=one:1m use_temp_path=off {loader}",
            self.dir().display()
        ))
    }

    /// A first instance on this cache that has stored each of `paths` (each a MISS),
    /// answering `#N from first`.
    fn stored(&self, paths: &[&str]) -> (Instance, crate::support::upstream::MockUpstream) {
        let (first, upstream) = self.start("first");
        for path in paths {
            assert_eq!(x_cache(&first.get(path)), "MISS", "{path}");
            wait_stored(&self.dir(), path);
        }
        (first, upstream)
    }

    /// An instance on this cache with a fresh upstream answering `#N from BATCH`.
    fn start(&self, batch: &'static str) -> (Instance, crate::support::upstream::MockUpstream) {
        self.start_with(move |_, number| ok(&format!("#{number} from {batch}"), ""))
    }

    /// An instance on this cache with a fresh upstream answering with `answer`.
    fn start_with(
        &self,
        answer: impl Fn(&str, usize) -> String + Send + Sync + 'static,
    ) -> (Instance, crate::support::upstream::MockUpstream) {
        let mut builder = Instance::http_builder(&self.config());
        let upstream = origin(builder.port(8081), answer);
        (builder.start(), upstream)
    }
}

/// Answers with the request's `Accept-Language` and `Vary: Accept-Language`.
fn by_language(batch: &'static str) -> impl Fn(&str, usize) -> String + Send + Sync + 'static {
    move |request, number| {
        let language = request
            .lines()
            .find_map(|line| line.strip_prefix("Accept-Language: "))
            .unwrap_or("none")
            .to_owned();
        ok(
            &format!("{language} #{number} from {batch}"),
            "Vary: Accept-Language\r\n",
        )
    }
}

/// Variants survive a restart, clean (QUIT) or not (`kill -9`): right after the start, the
/// main key's variant and a secondary one both HIT with their own bodies.
#[test]
fn vary_variants_survive_a_restart() {
    for signal in [Signal::QUIT, Signal::KILL] {
        variants_across(signal);
    }
}

fn variants_across(signal: Signal) {
    let shared = SharedCache::new();
    let (mut first, _upstream) = shared.start_with(by_language("first"));
    let ask = |server: &Instance, language: &str| {
        server.request(crate::proxy_cache::request(
            "GET",
            "/v",
            &format!("Accept-Language: {language}\r\n"),
        ))
    };
    assert_eq!(ask(&first, "en").body_text(), "en #1 from first");
    wait_stored(&shared.dir(), "/v");
    assert_eq!(ask(&first, "de").body_text(), "de #2 from first");
    wait_until("the secondary variant's file", PATIENCE, || {
        files_under(&shared.dir()).len() == 2
    });
    first.stop_with(signal);
    let (second, upstream) = shared.start_with(by_language("second"));
    let english = ask(&second, "en");
    assert_eq!(
        (x_cache(&english), english.body_text().as_str()),
        ("HIT", "en #1 from first")
    );
    let german = ask(&second, "de");
    assert_eq!(
        (x_cache(&german), german.body_text().as_str()),
        ("HIT", "de #2 from first")
    );
    let french = ask(&second, "fr");
    assert_eq!(
        (x_cache(&french), french.body_text().as_str()),
        ("MISS", "fr #1 from second")
    );
    assert_eq!(asked(&upstream), 1);
}

/// A clean stop (QUIT) writes the index snapshot under `PATH/.portico/`; the next instance
/// on the same directory HITs from its very first request.
#[test]
fn entries_survive_a_clean_restart() {
    let shared = SharedCache::new();
    let (mut first, _upstream) = shared.stored(&["/a", "/b"]);
    first.stop();
    assert!(
        shared.dir().join(".portico/index.snap").is_file(),
        "the snapshot is written at stop"
    );
    let (second, upstream) = shared.start("second");
    let hit = second.get("/a");
    assert_eq!(
        (x_cache(&hit), hit.body_text().as_str()),
        ("HIT", "#1 from first")
    );
    let hit = second.get("/b");
    assert_eq!(
        (x_cache(&hit), hit.body_text().as_str()),
        ("HIT", "#2 from first")
    );
    assert_eq!(asked(&upstream), 0);
}

/// Writes `contents` at `path` under `cache`, its new directories and itself owned like
/// `cache` (the workers' user), as the server would have made them.
fn plant(cache: &Path, path: &Path, contents: &[u8]) {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(cache).expect("the cache directory");
    std::fs::create_dir_all(path.parent().expect("a level directory")).expect("mkdir");
    std::fs::write(path, contents).expect("write the file");
    let mut current = path.to_path_buf();
    while current.starts_with(cache) && current != cache {
        std::os::unix::fs::chown(&current, Some(owner.uid()), Some(owner.gid())).expect("chown");
        current = current.parent().expect("inside the cache").to_path_buf();
    }
}

/// After `kill -9` there is no clean snapshot: the next instance still HITs at once (the
/// directory is probed while the loader walks it), and a temporary file left behind by
/// the killed fill is removed.
#[test]
fn entries_survive_kill_9_and_temp_files_are_removed() {
    let shared = SharedCache::new();
    let (mut first, _upstream) = shared.stored(&["/k"]);
    // What a fill cut by the kill leaves: `MD5.NNNNNNNNNN` in a level directory.
    let entry = entry_path(&shared.dir(), "/gone");
    let temp = PathBuf::from(format!("{}.0000000042", entry.display()));
    plant(&shared.dir(), &temp, b"half a fill");
    first.stop_with(Signal::KILL);
    let (second, upstream) = shared.start("second");
    let hit = second.get("/k");
    assert_eq!(
        (x_cache(&hit), hit.body_text().as_str()),
        ("HIT", "#1 from first")
    );
    assert_eq!(asked(&upstream), 0);
    wait_until("the loader to remove the stray temp file", PATIENCE, || {
        !temp.exists()
    });
    let miss = second.get("/gone");
    assert_eq!(
        (x_cache(&miss), miss.body_text().as_str()),
        ("MISS", "#1 from second")
    );
}

/// Keys asked for while the loader walks the cache (the zone cold: a worker finds the
/// file on its own) stay HITs after the walk, which leaves alone the keys the index
/// already has: the index takes the file the worker found. The walk here indexes one file,
/// then pauses 3 s, so at least one of the two keys is asked for before the walk gets to
/// it, whatever its order.
#[test]
fn keys_found_before_the_walk_reaches_them_stay_hits() {
    let shared = SharedCache::new();
    let (mut first, _upstream) = shared.stored(&["/a", "/b"]);
    first.stop_with(Signal::KILL);
    // No checkpoint or journal either: the next start has only the walk.
    match std::fs::remove_dir_all(shared.dir().join(".portico")) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            panic!("remove the sidecar: {error}")
        }
        _ => {}
    }
    let paced = shared.config_with_loader("loader_files=1 loader_sleep=3s loader_threshold=10s");
    let mut builder = Instance::http_builder(&paced);
    let upstream = origin(builder.port(8081), |_, number| {
        ok(&format!("#{number} from second"), "")
    });
    let second = builder.start();
    for path in ["/a", "/b"] {
        assert_eq!(
            x_cache(&second.get(path)),
            "HIT",
            "{path} while the walk pauses"
        );
    }
    assert!(
        !second.error_log().contains("http file cache: "),
        "the walk was still under way"
    );
    wait_until("the end of the walk", PATIENCE, || {
        second.error_log().contains("http file cache: ")
    });
    for (path, body) in [("/a", "#1 from first"), ("/b", "#2 from first")] {
        let hit = second.get(path);
        assert_eq!(
            (x_cache(&hit), hit.body_text().as_str()),
            ("HIT", body),
            "{path}"
        );
    }
    assert_eq!(asked(&upstream), 0);
}

/// `kill -9` in the middle of a fill (the temporary file half written next to where the
/// entry would be): the next instance does not serve anything of it (a MISS with the whole
/// new body) and removes the temporary file.
#[test]
fn kill_9_during_a_fill_leaves_no_entry_and_no_temp_file() {
    let shared = SharedCache::new();
    let release = Arc::new(AtomicBool::new(false));
    let mut builder = Instance::http_builder(&shared.config());
    let _held = held_upstream(builder.port(8081), Arc::clone(&release));
    let mut first = builder.start();
    let mut client = std::net::TcpStream::connect(("127.0.0.1", first.port())).expect("connect");
    client
        .write_all(b"GET /half HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send the request");
    let temp = poll(PATIENCE, || {
        files_under(&shared.dir())
            .into_iter()
            .find(|path| is_temp_name(path))
    })
    .expect("the fill's temp file");
    first.stop_with(Signal::KILL);
    release.store(true, Ordering::Release);
    assert!(
        !entry_path(&shared.dir(), "/half").exists(),
        "no entry before the restart"
    );
    let (second, upstream) = shared.start("second");
    let response = second.get("/half");
    assert_eq!((response.status, x_cache(&response)), (200, "MISS"));
    assert_eq!(response.body_text(), "#1 from second");
    assert_eq!(asked(&upstream), 1);
    wait_until(
        "the loader to remove the killed fill's temp file",
        PATIENCE,
        || !temp.exists(),
    );
}

/// Portico's hard ceiling: a store that would take the cache past `max_size` plus
/// `max_size_slack` first evicts the least recently used entries, without waiting for the
/// manager (asleep for a minute here), so the cache never holds more; every response is
/// a 200 and the newest entry is kept.
#[test]
fn max_size_slack_is_a_hard_ceiling() {
    let (server, upstream) = cached_proxy(
        &config(
            "%%PREFIX%%/cache levels=1:2 keys_zone=one:1m max_size=32k max_size_slack=8k \
             min_free=1m manager_sleep=1m manager_threshold=1s",
        ),
        |_, number| ok(&format!("{number:0>3000}"), ""),
    );
    let cache = server.prefix().join("cache");
    for index in 0..20 {
        let response = server.get(&format!("/c{index}"));
        assert_eq!(response.status, 200);
        assert_eq!(response.body.len(), 3000);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let files = files_under(&cache).len();
        assert!(
            files <= 10,
            "{files} entries of a 4 KiB block each past a 40 KiB ceiling"
        );
    }
    wait_stored(&cache, "/c19");
    assert_eq!(x_cache(&server.get("/c19")), "HIT");
    assert!(
        !entry_path(&cache, "/c0").exists(),
        "the oldest was evicted"
    );
    assert_eq!(asked(&upstream), 20);
}
