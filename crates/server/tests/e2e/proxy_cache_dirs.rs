//! The directories a cache writes to, made ready as nginx's master makes them: `-t`
//! fails on a `proxy_cache_path` that cannot be made or taken over, with the start's own
//! message (the directory and errno nginx names), and so does a start before it forks; an
//! existing directory root made is given to the workers' user; a file system that is
//! read-only or short of space is named so in the log, not called full; and
//! `manager_files=0` is accepted, as nginx accepts it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::proxy_cache::{asked, cached_proxy, ok, wait_stored, x_cache};
use crate::proxy_cache_faults::SmallTmpfs;
use crate::support::cli::{CliOutput, run_in};
use crate::support::log::matches;
use crate::support::{Instance, TempPrefix};

/// A config whose only cache is at `cache_path` (absolute), `daemon` as given, an error
/// log in the prefix.
fn config(prefix: &TempPrefix, cache_path: &Path, daemon: &str) -> String {
    format!(
        "daemon {daemon};
error_log {}/logs/error.log;
pid {}/logs/portico.pid;
events {{}}
http {{
    proxy_cache_path {} keys_zone=one:1m;
    server {{
        listen 127.0.0.1:{};
        location / {{ proxy_pass http://127.0.0.1:9; proxy_cache one; }}
    }}
}}
",
        prefix.path().display(),
        prefix.path().display(),
        cache_path.display(),
        crate::support::ports::free_port()
    )
}

/// Runs the binary on `config` written in `prefix`, with `arguments` after `-p -c`.
fn run(prefix: &TempPrefix, config: &str, arguments: &[&str]) -> CliOutput {
    prefix.write("portico.conf", config);
    let mut all = vec![
        "-p".to_owned(),
        prefix.arg(),
        "-c".to_owned(),
        "portico.conf".to_owned(),
    ];
    all.extend(arguments.iter().map(|argument| (*argument).to_owned()));
    run_in(prefix.path(), &all)
}

/// `portico: [emerg] MESSAGE` on stderr (a regex for `message`).
fn emerg_reported(output: &CliOutput, message: &str) -> bool {
    output
        .stderr
        .lines()
        .any(|line| matches(&format!(r"^portico: \[emerg\] {message}$"), line))
}

/// `path` quoted for a pattern (PCRE's `\Q...\E`).
fn quoted(path: &Path) -> String {
    format!(r"\Q{}\E", path.display())
}

/// A path below a regular file: `-t` fails, naming the directory and ENOTDIR (not the
/// file and EEXIST), as nginx does; so does a start with `daemon on` (before it forks, so
/// with exit code 1 and the message on the terminal), and the error log's line ends with a
/// newline.
#[test]
fn a_cache_path_below_a_file_fails_the_test_and_the_start() {
    let prefix = TempPrefix::new();
    prefix.write("afile", "not a directory");
    let cache = prefix.join("afile/cache");
    let message = format!(
        r#"mkdir\(\) "{}" failed \(20: Not a directory\)"#,
        quoted(&cache)
    );
    let test = run(&prefix, &config(&prefix, &cache, "off"), &["-t"]);
    test.assert_code(1);
    assert!(emerg_reported(&test, &message), "{}", test.stderr);
    assert!(test.stderr.contains("test failed"), "{}", test.stderr);
    assert!(
        !test.stderr.contains("test is successful"),
        "{}",
        test.stderr
    );

    let _ = std::fs::remove_file(prefix.join("logs/error.log"));
    let start = run(&prefix, &config(&prefix, &cache, "on"), &[]);
    start.assert_code(1);
    assert!(emerg_reported(&start, &message), "{}", start.stderr);
    let log = prefix.read("logs/error.log");
    assert!(
        log.ends_with('\n')
            && log
                .lines()
                .any(|line| matches(&format!(r"\[emerg\] \d+#\d+: {message}$"), line)),
        "{log:?}"
    );
}

/// On a read-only file system: `-t` fails for a cache directory that would have to be
/// made (EROFS from mkdir) or taken over (EROFS from chown), as nginx's does. One the
/// workers' user already owns starts: responses are served uncached, and the log says
/// the file system is read-only (once), never that the cache is full, with no `crit`.
#[test]
fn a_read_only_file_system_is_reported_as_one() {
    let prefix = TempPrefix::new();
    let Some(disk) = SmallTmpfs::mount_sized(prefix.join("ro"), "4m") else {
        return;
    };
    let owned_by_root = disk.path.join("root");
    let owned_by_workers = disk.path.join("owned");
    for dir in [&owned_by_root, &owned_by_workers] {
        std::fs::create_dir(dir).expect("a cache directory");
    }
    // The workers' user: the harness's default `user` when the tests run as root.
    let nobody = runtime_uid("nobody");
    std::os::unix::fs::chown(&owned_by_workers, Some(nobody), None).expect("chown");
    disk.remount_read_only();

    let missing = disk.path.join("cache");
    let test = run(&prefix, &config(&prefix, &missing, "off"), &["-t"]);
    test.assert_code(1);
    let message = format!(
        r#"mkdir\(\) "{}" failed \(30: Read-only file system\)"#,
        quoted(&missing)
    );
    assert!(emerg_reported(&test, &message), "{}", test.stderr);
    let test = run(&prefix, &config(&prefix, &owned_by_root, "off"), &["-t"]);
    test.assert_code(1);
    let message = format!(
        r#"chown\("{}", {nobody}\) failed \(30: Read-only file system\)"#,
        quoted(&owned_by_root)
    );
    assert!(emerg_reported(&test, &message), "{}", test.stderr);

    let body = cached_at(&owned_by_workers);
    let (mut server, upstream) = cached_proxy(&body, |_, number| ok(&format!("#{number}"), ""));
    server.expect_log("[warn]");
    for number in 1..=3 {
        let response = server.get("/r");
        assert_eq!(
            (response.status, x_cache(&response), response.body_text()),
            (200, "MISS", format!("#{number}"))
        );
    }
    assert_eq!(asked(&upstream), 3);
    let line = server.wait_for_error_log("read-only file system");
    assert!(
        line.contains("[warn]") && line.contains("responses are not stored"),
        "{line}"
    );
    server.stop();
    let log = server.error_log();
    assert!(!log.contains("is full") && !log.contains("[crit]"), "{log}");
    assert_eq!(log.matches("read-only file system").count(), 1, "{log}");
}

/// An `http` block body caching everything for an hour at `path`.
fn cached_at(path: &Path) -> String {
    format!(
        "proxy_cache_path {} keys_zone=one:1m;
server {{
    listen 127.0.0.1:8080;
    location / {{
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_valid 200 1h;
        add_header X-Cache $upstream_cache_status always;
    }}
}}",
        path.display()
    )
}

/// The uid of a user, from `/etc/passwd`.
fn runtime_uid(name: &str) -> u32 {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("/etc/passwd");
    passwd
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            (fields.next() == Some(name)).then(|| fields.nth(1)?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("user {name} in /etc/passwd"))
}

/// A file system with less free space than stores leave (an 8 MiB tmpfs, under the 16 MiB
/// floor): responses are served uncached and the `[warn]` says why, in those words.
#[test]
fn a_file_system_short_of_space_is_named_as_such() {
    let prefix = TempPrefix::new();
    let Some(disk) = SmallTmpfs::mount_sized(prefix.join("small"), "8m") else {
        return;
    };
    let cache = disk.path.join("cache");
    let body = cached_at(&cache);
    let (mut server, upstream) = cached_proxy(&body, |_, number| ok(&format!("#{number}"), ""));
    server.expect_log("[warn]");
    // The manager's first look at the file system comes within a second of the start.
    std::thread::sleep(std::time::Duration::from_millis(1200));
    for number in 1..=2 {
        let response = server.get("/s");
        assert_eq!(
            (x_cache(&response), response.body_text()),
            ("MISS", format!("#{number}"))
        );
    }
    assert_eq!(asked(&upstream), 2);
    let line = server.wait_for_error_log("has no room for the response");
    assert!(
        line.contains("[warn]")
            && line.contains("its file system has")
            && line.contains("stores leave 16.000M free"),
        "{line}"
    );
    assert!(!server.error_log().contains("is full"));
}

/// A cache directory that exists already, made by root (0755), is given to the workers'
/// user at start, as nginx's master does: its responses are stored and HIT. (Without
/// that, the workers cannot write in it and nothing is ever stored.)
#[test]
fn an_existing_root_owned_cache_directory_is_taken_over() {
    if !rustix::process::geteuid().is_root() {
        #[allow(clippy::print_stderr, reason = "the test says why it was skipped")]
        {
            eprintln!("skipped: the workers run as another user only under root");
        }
        return;
    }
    let mut builder = Instance::http_builder(crate::proxy_cache::BASIC);
    builder = builder.file("cache/.made-by-root", "");
    let upstream = crate::proxy_cache::origin(builder.port(8081), |_, number| {
        ok(&format!("#{number}"), "")
    });
    let server = builder.start();
    let cache = server.prefix().join("cache");
    let owner = std::fs::metadata(&cache)
        .expect("the cache directory")
        .uid();
    assert_eq!(owner, runtime_uid("nobody"), "given to the workers' user");
    assert_eq!(x_cache(&server.get("/t")), "MISS");
    wait_stored(&cache, "/t");
    let hit = server.get("/t");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#1"));
    assert_eq!(asked(&upstream), 1);
}

/// `manager_files=0` (and `loader_files=0`) pass `-t` and start, as with nginx, where a
/// run then stops after one file; the cache works.
#[test]
fn manager_files_0_is_accepted() {
    let prefix = TempPrefix::new();
    let cache = prefix.join("zero");
    let test = run(
        &prefix,
        &config(&prefix, &cache, "off").replace(
            "keys_zone=one:1m",
            "keys_zone=one:1m manager_files=0 loader_files=0",
        ),
        &["-t"],
    );
    test.assert_code(0);
    let body = crate::proxy_cache::BASIC.replace(
        "keys_zone=one:1m",
        "keys_zone=one:1m manager_files=0 loader_files=0",
    );
    let (server, upstream) = cached_proxy(&body, |_, number| ok(&format!("#{number}"), ""));
    assert_eq!(x_cache(&server.get("/m")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/m");
    assert_eq!(x_cache(&server.get("/m")), "HIT");
    assert_eq!(asked(&upstream), 1);
}
