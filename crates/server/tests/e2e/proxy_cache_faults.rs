//! The cache under faults: bodies cut short by the upstream (not stored, no temp file
//! left), a client that leaves during a fill (still stored), damaged entry files (never
//! served), and a cache directory the server cannot write (still answered).

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::proxy_cache::{
    BASIC, asked, cached_proxy, entry_path, files_under, ok, wait_stored, x_cache,
};
use crate::support::{Instance, PATIENCE, ReadError, wait_until};

/// The server's files after a response that must not be stored: no entry and no
/// temporary file, in the cache or under `proxy_temp`.
fn assert_nothing_left(server: &Instance, what: &str) {
    let (cache, temp) = (
        server.prefix().join("cache"),
        server.prefix().join("proxy_temp"),
    );
    // Give a wrong store the time to show up before looking.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        files_under(&cache).is_empty(),
        "{what}: {:?}",
        files_under(&cache)
    );
    assert!(
        files_under(&temp).is_empty(),
        "{what}: {:?}",
        files_under(&temp)
    );
}

/// A body cut short by the upstream (per request number `1`): as Content-Length, then as
/// chunked. The client's response is cut too, nothing is stored, and the next request is
/// a MISS again that stores the whole body.
#[test]
fn bodies_cut_short_by_the_upstream_are_not_stored() {
    let mut builder = Instance::http_builder(BASIC);
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let upstream =
        crate::support::upstream::MockUpstream::start(builder.port(8081), move |mut conn| {
            let Some(request) = conn.read_request() else {
                return;
            };
            let request = String::from_utf8_lossy(&request).into_owned();
            let whole = count.fetch_add(1, std::sync::atomic::Ordering::AcqRel) >= 2;
            if request.contains("/length") {
                let body = "L".repeat(if whole { 10_000 } else { 5_000 });
                conn.write(format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n{body}"
                ));
            } else if whole {
                conn.write(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                );
            } else {
                conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
            }
            // The upstream goes away: after the whole answer, or in the middle of the body.
            conn.close();
        });
    let server = builder.start();
    for path in ["/length", "/chunked"] {
        let mut client = server.connect();
        client.write(crate::support::get(path));
        let cut = client.try_read_response();
        assert!(
            matches!(cut, Err(ReadError::Malformed(..) | ReadError::Reset)),
            "{path}: the client sees the cut: {cut:?}"
        );
        assert_nothing_left(&server, path);
    }
    assert_eq!(asked(&upstream), 2);
    for path in ["/length", "/chunked"] {
        let whole = server.get(path);
        assert_eq!((whole.status, x_cache(&whole)), (200, "MISS"), "{path}");
        wait_stored(&server.prefix().join("cache"), path);
        assert_eq!(x_cache(&server.get(path)), "HIT", "{path}");
    }
    assert_eq!(asked(&upstream), 4);
}

/// A body delimited by the upstream's close (no length at all) is complete when the
/// connection ends, so it is stored, as nginx does.
#[test]
fn a_close_delimited_body_is_stored() {
    let mut builder = Instance::http_builder(BASIC);
    let upstream = crate::support::upstream::MockUpstream::start(builder.port(8081), |mut conn| {
        if conn.read_request().is_some() {
            conn.write("HTTP/1.0 200 OK\r\n\r\nuntil the end");
            conn.close();
        }
    });
    let server = builder.start();
    let first = server.get("/close");
    assert_eq!(
        (x_cache(&first), first.body_text().as_str()),
        ("MISS", "until the end")
    );
    wait_stored(&server.prefix().join("cache"), "/close");
    let hit = server.get("/close");
    assert_eq!(
        (x_cache(&hit), hit.body_text().as_str()),
        ("HIT", "until the end")
    );
    assert_eq!(asked(&upstream), 1);
}

/// A client that goes away early in the fill of a 4 MiB body does not lose the entry: the
/// fill goes on, and the next request HITs with the whole body.
#[test]
fn a_client_leaving_during_a_fill_does_not_lose_the_entry() {
    const SIZE: usize = 4 << 20;
    let mut builder = Instance::http_builder(BASIC);
    let upstream = crate::support::upstream::MockUpstream::start(builder.port(8081), |mut conn| {
        if conn.read_request().is_some() {
            conn.write(format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\n\r\n"));
            conn.write_slowly(&vec![b'z'; SIZE], 64 * 1024, Duration::from_millis(5));
        }
    });
    let server = builder.start();
    let mut client = std::net::TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    client
        .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send the request");
    client
        .set_read_timeout(Some(PATIENCE))
        .expect("a read timeout");
    let mut first = [0u8; 1024];
    let count = client.read(&mut first).expect("the response starts");
    assert!(
        first[..count].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&first[..count])
    );
    drop(client);
    let path = wait_stored(&server.prefix().join("cache"), "/big");
    let hit = server.get("/big");
    assert_eq!((hit.status, x_cache(&hit)), (200, "HIT"));
    assert_eq!(hit.body.len(), SIZE);
    assert!(hit.body.iter().all(|byte| *byte == b'z'));
    assert!(std::fs::metadata(path).expect("the entry").len() > SIZE as u64);
    assert_eq!(asked(&upstream), 1);
}

/// An entry file cut to 20 bytes (shorter than its header): the next request is a MISS,
/// logged as `[crit] cache file "PATH" is too small`, never served; the entry is stored
/// again from the upstream.
#[test]
fn a_damaged_entry_file_is_a_logged_miss() {
    let (mut server, upstream) =
        cached_proxy(BASIC, |_, number| ok(&format!("fresh body #{number}"), ""));
    server.expect_log("[crit]");
    assert_eq!(x_cache(&server.get("/d")), "MISS");
    let path = wait_stored(&server.prefix().join("cache"), "/d");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_len(20))
        .expect("truncate the entry");
    let after = server.get("/d");
    assert_eq!((after.status, x_cache(&after)), (200, "MISS"));
    assert_eq!(after.body_text(), "fresh body #2");
    let line = server.wait_for_error_log(&format!("cache file \"{}\"", path.display()));
    assert!(
        line.contains("[crit]") && line.contains("is too small"),
        "{line}"
    );
    wait_until("the entry stored again", PATIENCE, || {
        std::fs::read(&path).is_ok_and(|bytes| bytes.ends_with(b"fresh body #2"))
    });
    assert_eq!(x_cache(&server.get("/d")), "HIT");
    assert_eq!(asked(&upstream), 2);
}

/// An entry whose body was cut (its header intact, the file shorter than when stored) is
/// not served short: a MISS with a `[crit]` line (the index knows the file's size).
#[test]
fn an_entry_with_a_cut_body_is_never_served_short() {
    let body = "B".repeat(5000);
    let answer = body.clone();
    let (mut server, upstream) = cached_proxy(BASIC, move |_, _| ok(&answer, ""));
    server.expect_log("[crit]");
    assert_eq!(x_cache(&server.get("/cut")), "MISS");
    let path = wait_stored(&server.prefix().join("cache"), "/cut");
    let length = std::fs::metadata(&path).expect("the entry").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_len(length - 1000))
        .expect("truncate the entry's body");
    let mut client = server.connect();
    client.write(crate::support::get("/cut"));
    let after = client.try_read_response();
    let after = after.unwrap_or_else(|error| panic!("a whole response, not a cut one: {error:?}"));
    assert_eq!(after.status, 200);
    assert_eq!(after.body.len(), body.len(), "never the short body");
    assert_eq!(x_cache(&after), "MISS");
    let line = server.wait_for_error_log(&format!("cache file \"{}\"", path.display()));
    assert!(line.contains("[crit]"), "{line}");
    assert_eq!(asked(&upstream), 2);
}

/// A cache directory the workers cannot write (mode 000 while running; the workers run as
/// `nobody` when the tests run as root): every response is still a 200 with the upstream's
/// body, served uncached, and the failure is logged at `crit`.
#[test]
fn a_cache_directory_that_cannot_be_written_still_serves() {
    let (mut server, upstream) = cached_proxy(BASIC, |_, number| ok(&format!("#{number}"), ""));
    server.expect_log("[crit]");
    let cache = server.prefix().join("cache");
    wait_until("the cache directory", PATIENCE, || cache.is_dir());
    let mode = std::fs::metadata(&cache)
        .expect("the cache directory")
        .permissions()
        .mode();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o000)).expect("chmod 000");
    let mut answers = Vec::new();
    for index in 0..3 {
        for path in ["/w1", "/w2"] {
            let response = server.get(path);
            assert_eq!(response.status, 200, "{path} try {index}");
            answers.push(response.body_text());
        }
    }
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(mode))
        .expect("restore the mode");
    let expected: Vec<String> = (1..=6).map(|number| format!("#{number}")).collect();
    let cannot_write = upstream.requests().len() == 6;
    if !cannot_write {
        // Writes succeeded anyway (a privileged worker): nothing more to check.
        #[allow(clippy::print_stderr, reason = "the test says why it checked less")]
        {
            eprintln!("the workers could write a mode 000 directory; only the 200s were checked");
        }
        return;
    }
    assert_eq!(answers, expected, "each answer came from the upstream");
    // The store fails at the rename of the temporary file into the unwritable directory.
    let line = server.wait_for_error_log("[crit]");
    assert!(
        line.contains("rename()") && line.contains("Permission denied"),
        "{line}"
    );
    assert!(!entry_path(&cache, "/w1").exists());
}

const UPDATING: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1s;
        proxy_cache_use_stale updating;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// The request refreshing an expired entry holds its UPDATING mark; when its upstream dies
/// mid-body the mark is released, so the next request refreshes again (EXPIRED) instead
/// of getting the old entry as UPDATING for ever.
#[test]
fn a_failed_refresh_does_not_leave_the_entry_updating() {
    let mut builder = Instance::http_builder(UPDATING).movable_clock();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let upstream =
        crate::support::upstream::MockUpstream::start(builder.port(8081), move |mut conn| {
            if conn.read_request().is_none() {
                return;
            }
            let number = count.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
            if number == 2 {
                conn.write(format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{}",
                    "x".repeat(100)
                ));
            } else {
                conn.write(ok(
                    &format!("#{number}"),
                    if number > 1 {
                        "Cache-Control: max-age=60\r\n"
                    } else {
                        ""
                    },
                ));
            }
            conn.close();
        });
    let server = builder.start();
    assert_eq!(x_cache(&server.get("/f")), "MISS");
    let path = wait_stored(&server.prefix().join("cache"), "/f");
    server.advance_clock(Duration::from_millis(2100));
    let mut client = server.connect();
    client.write(crate::support::get("/f"));
    assert!(
        client.try_read_response().is_err(),
        "the failed refresh is cut for its client"
    );
    std::thread::sleep(Duration::from_millis(200));
    let next = server.get("/f");
    assert_eq!(
        (x_cache(&next), next.body_text().as_str()),
        ("EXPIRED", "#3")
    );
    wait_until("the refreshed entry", PATIENCE, || {
        std::fs::read(&path).is_ok_and(|bytes| bytes.ends_with(b"#3"))
    });
    assert_eq!(x_cache(&server.get("/f")), "HIT");
    assert_eq!(asked(&upstream), 3);
}

/// An 8 MiB tmpfs mounted for one test, unmounted when dropped.
pub(crate) struct SmallTmpfs {
    pub path: std::path::PathBuf,
}

impl SmallTmpfs {
    /// An 8 MiB tmpfs; `None` (the test says why) when not root or when `mount` fails.
    fn mount(path: std::path::PathBuf) -> Option<SmallTmpfs> {
        SmallTmpfs::mount_sized(path, "8m")
    }

    /// A tmpfs of `size` (`mount -o size=`).
    pub(crate) fn mount_sized(path: std::path::PathBuf, size: &str) -> Option<SmallTmpfs> {
        #[allow(clippy::print_stderr, reason = "the test says why it was skipped")]
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        std::fs::create_dir_all(&path).expect("the mount point");
        let options = format!("size={size}");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "portico-test"])
            .arg(&path)
            .status()
            .is_ok_and(|status| status.success());
        #[allow(clippy::print_stderr, reason = "the test says why it was skipped")]
        if !mounted {
            eprintln!("skipped: mount -t tmpfs failed");
            return None;
        }
        Some(SmallTmpfs { path })
    }

    /// Makes the file system read-only from now on.
    pub(crate) fn remount_read_only(&self) {
        let status = std::process::Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.path)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount read-only");
    }

    fn available(&self) -> u64 {
        let stat = rustix::fs::statvfs(&self.path).expect("statvfs of the tmpfs");
        stat.f_bavail * stat.f_frsize
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .args(["-l"])
            .arg(&self.path)
            .status();
    }
}

/// A cache on an 8 MiB tmpfs whose `max_size` (1g) is far beyond the disk, flooded with
/// 300 misses of 64 KiB (19 MB): every response is a whole 200, the file system never
/// fills (the free-space floor, `min_free=2m`, stops stores first and eviction makes
/// room), and no `[alert]` is logged (the harness fails a test on one).
#[test]
fn a_flood_of_misses_never_fills_a_small_disk() {
    let home = crate::support::TempPrefix::new();
    let Some(disk) = SmallTmpfs::mount(home.path().join("disk")) else {
        return;
    };
    let config = format!(
        "proxy_cache_path {} levels=1:2 keys_zone=one:1m max_size=1g min_free=2m
            use_temp_path=off;
         server {{
            listen 127.0.0.1:8080;
            location / {{
                proxy_pass http://127.0.0.1:8081;
                proxy_cache one;
                proxy_cache_key $uri;
                proxy_cache_valid 200 1h;
            }}
         }}",
        disk.path.display()
    );
    let body = "x".repeat(64 * 1024);
    let answer = body.clone();
    let (server, upstream) = cached_proxy(&config, move |_, _| ok(&answer, ""));
    let mut least = u64::MAX;
    for index in 0..300 {
        let response = server.get(&format!("/flood{index}"));
        assert_eq!(response.status, 200, "/flood{index}");
        assert!(response.body_text() == body, "/flood{index}: a whole body");
        least = least.min(disk.available());
        assert!(least > 0, "the tmpfs filled at /flood{index}");
    }
    assert_eq!(asked(&upstream), 300);
    assert!(!server.error_log().contains("[alert]"));
    #[allow(clippy::print_stderr, reason = "what the test saw")]
    {
        eprintln!("least free space on the 8 MiB tmpfs: {least} bytes");
    }
    drop(server);
}

/// The cache directory removed while the server runs (entries are opened below the
/// directory each zone holds open), then made again: a key stored before is a MISS,
/// without an error, and is stored again in the new directory, from which it HITs. A key a worker
/// keeps open (HIT before) is still served from the file it holds, as the index names it.
#[test]
fn a_cache_directory_removed_while_running_fills_again() {
    let (server, upstream) = cached_proxy(BASIC, |_, number| ok(&format!("body {number}"), ""));
    let cache = server.prefix().join("cache");
    for path in ["/gone", "/kept"] {
        assert_eq!(x_cache(&server.get(path)), "MISS", "{path}");
        wait_stored(&cache, path);
    }
    let kept = server.get("/kept");
    assert_eq!(
        (x_cache(&kept), kept.body.as_slice()),
        ("HIT", &b"body 2"[..])
    );

    // Removed, and made again by hand (open to all: the workers may run as another user).
    std::fs::remove_dir_all(&cache).expect("remove the cache directory");
    std::fs::create_dir(&cache).expect("make it again");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let kept = server.get("/kept");
    assert_eq!(
        (x_cache(&kept), kept.body.as_slice()),
        ("HIT", &b"body 2"[..])
    );
    let again = server.get("/gone");
    assert_eq!(
        (again.status, x_cache(&again), again.body.as_slice()),
        (200, "MISS", &b"body 3"[..])
    );
    wait_stored(&cache, "/gone");
    let hit = server.get("/gone");
    assert_eq!(
        (x_cache(&hit), hit.body.as_slice()),
        ("HIT", &b"body 3"[..])
    );
    assert_eq!(asked(&upstream), 3);
    let log = server.error_log();
    assert!(!log.contains("[crit]") && !log.contains("[alert]"), "{log}");
}
