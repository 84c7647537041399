//! What changes a stored entry after it was stored: `proxy_cache_purge` (an exact key with
//! its Vary variants, a key prefix), the invalidation an unsafe request's success brings
//! (RFC 9111 section 4.4), a 304 to a revalidation that updates the stored head (section
//! 4.3.4), and `X-Accel-Charset` recoding a response served from the cache.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::upstream::MockUpstream;
use crate::support::{Instance, Response};

/// An upstream that numbers its answers (from 1), each `answer(request, number)`.
fn numbered(
    port: u16,
    answer: impl Fn(&str, usize) -> String + Send + Sync + 'static,
) -> (MockUpstream, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    let upstream = MockUpstream::start(port, move |mut conn| {
        while let Some(request) = conn.read_request() {
            let number = seen.fetch_add(1, Ordering::AcqRel) + 1;
            conn.write(answer(&String::from_utf8_lossy(&request), number));
        }
    });
    (upstream, count)
}

fn ok(body: &str, fields: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\n{fields}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn cache_status(response: &Response) -> &str {
    response.header("X-Cache").unwrap_or("")
}

fn request(method: &str, path: &str, extra: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n")
}

const PURGE: &str = "
map $request_method $purge_method { PURGE 1; default 0; }
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_purge $purge_method;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// A purge of a key removes it and its Vary variants (204); a key never stored is 404; a
/// key ending in `*` purges every key starting with what comes before it. Entries stored
/// after a purge are served again.
#[test]
fn proxy_cache_purge_removes_a_key_its_variants_and_prefixes() {
    let mut builder = Instance::http_builder(PURGE).movable_clock();
    let (_upstream, asked) = numbered(builder.port(8081), |request, number| {
        let lang = request
            .lines()
            .find_map(|line| line.strip_prefix("Accept-Language: "))
            .unwrap_or("none")
            .to_owned();
        ok(
            &format!("#{number} {lang}"),
            "Cache-Control: max-age=600\r\nVary: Accept-Language\r\n",
        )
    });
    let server = builder.start();
    let en = "Accept-Language: en\r\n";
    let de = "Accept-Language: de\r\n";
    for (path, extra) in [
        ("/a", en),
        ("/a", de),
        ("/img/1", ""),
        ("/img/2", ""),
        ("/other", ""),
    ] {
        assert_eq!(
            cache_status(&server.request(request("GET", path, extra))),
            "MISS"
        );
        assert_eq!(
            cache_status(&server.request(request("GET", path, extra))),
            "HIT"
        );
    }
    assert_eq!(asked.load(Ordering::Acquire), 5);
    assert_eq!(server.request(request("PURGE", "/a", "")).status, 204);
    assert_eq!(server.request(request("PURGE", "/never", "")).status, 404);
    assert_eq!(
        cache_status(&server.request(request("GET", "/a", en))),
        "MISS"
    );
    assert_eq!(
        cache_status(&server.request(request("GET", "/a", de))),
        "MISS",
        "the variant is purged too"
    );
    assert_eq!(server.request(request("PURGE", "/img/*", "")).status, 204);
    assert_eq!(
        cache_status(&server.request(request("GET", "/img/1", ""))),
        "MISS"
    );
    assert_eq!(
        cache_status(&server.request(request("GET", "/img/2", ""))),
        "MISS"
    );
    assert_eq!(
        cache_status(&server.request(request("GET", "/other", ""))),
        "HIT",
        "outside the prefix"
    );
    server.advance_clock(Duration::from_millis(1100));
    assert_eq!(
        cache_status(&server.request(request("GET", "/img/1", ""))),
        "HIT",
        "stored after the purge"
    );
}

/// A successful POST through a cached location invalidates its key's entry; a failed one
/// does not.
#[test]
fn a_successful_unsafe_request_invalidates_the_entry() {
    let mut builder = Instance::http_builder(PURGE);
    let (_upstream, asked) = numbered(builder.port(8081), |request, number| {
        if request.starts_with("POST /fails") {
            return "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n".to_owned();
        }
        ok(&format!("#{number}"), "Cache-Control: max-age=600\r\n")
    });
    let server = builder.start();
    for path in ["/doc", "/fails"] {
        assert_eq!(cache_status(&server.get(path)), "MISS");
        assert_eq!(cache_status(&server.get(path)), "HIT");
    }
    let post = |path: &str| request("POST", path, "Content-Length: 1\r\n") + "x";
    assert_eq!(server.request(post("/doc")).status, 200);
    assert_eq!(server.request(post("/fails")).status, 500);
    assert_eq!(
        cache_status(&server.get("/doc")),
        "MISS",
        "invalidated by the POST"
    );
    assert_eq!(
        cache_status(&server.get("/fails")),
        "HIT",
        "a failed POST changes nothing"
    );
    assert_eq!(asked.load(Ordering::Acquire), 5);
}

/// A 304 to a revalidation brings new field values: the REVALIDATED answer carries them,
/// and so do the HITs after it (the entry was written again), with the stored body.
#[test]
fn a_revalidation_304_updates_the_stored_head() {
    let mut builder = Instance::http_builder(
        "proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
        server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_cache one;
                proxy_cache_revalidate on;
                add_header X-Cache $upstream_cache_status always;
            }
        }",
    )
    .movable_clock();
    let (_upstream, _asked) = numbered(builder.port(8081), |request, number| {
        if request.contains("If-None-Match: \"v1\"") {
            return format!(
                "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=1\r\nX-Version: {number}\r\n\r\n"
            );
        }
        ok(
            "the body",
            &format!("ETag: \"v1\"\r\nCache-Control: max-age=1\r\nX-Version: {number}\r\n"),
        )
    });
    let server = builder.start();
    let first = server.get("/r");
    assert_eq!(
        (cache_status(&first), first.header("X-Version")),
        ("MISS", Some("1"))
    );
    // `max-age=1` is fresh through the next second, as in nginx.
    server.advance_clock(Duration::from_millis(2100));
    let revalidated = server.get("/r");
    assert_eq!(cache_status(&revalidated), "REVALIDATED");
    assert_eq!(revalidated.header("X-Version"), Some("2"));
    assert_eq!(revalidated.body, b"the body");
    let mut hit = server.get("/r");
    for _ in 0..50 {
        if hit.header("X-Version") == Some("2") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        hit = server.get("/r");
    }
    assert_eq!(
        (cache_status(&hit), hit.header("X-Version")),
        ("HIT", Some("2"))
    );
    assert_eq!(hit.body, b"the body");
}

/// `X-Accel-Charset` recodes a cached response from the charset its `Content-Type` names.
#[test]
fn x_accel_charset_recodes_a_cached_response() {
    let mut builder = Instance::http_builder(
        "charset_map B A { 58 59; }
        proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
        server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_cache one;
                proxy_cache_valid 200 1m;
                add_header X-Cache $upstream_cache_status always;
            }
        }",
    );
    let (_upstream, _asked) = numbered(builder.port(8081), |_, _| {
        ok(
            "XXXX",
            "Content-Type: text/html; charset=B\r\nX-Accel-Charset: A\r\n",
        )
    });
    let server = builder.start();
    assert_eq!(cache_status(&server.get("/t")), "MISS");
    let hit = server.get("/t");
    assert_eq!(cache_status(&hit), "HIT");
    assert_eq!(hit.header("Content-Type"), Some("text/html; charset=A"));
    assert_eq!(hit.body, b"YYYY");
    assert!(
        hit.header("X-Accel-Charset").is_none(),
        "hidden as nginx hides it"
    );
}

/// With `purger=on`, a prefix purge removes the files of the entries it covers without
/// their being asked for; entries outside the prefix stay and still HIT.
#[test]
fn the_purger_removes_purged_files_nobody_asks_for() {
    let config = PURGE.replace(
        "keys_zone=one:1m;",
        "keys_zone=one:1m purger=on purger_files=2 purger_sleep=10ms;",
    );
    let mut builder = Instance::http_builder(&config);
    let (_upstream, asked) = numbered(builder.port(8081), |_, number| {
        ok(&format!("#{number}"), "Cache-Control: max-age=600\r\n")
    });
    let server = builder.start();
    let cache = server.prefix().path().join("cache");
    let paths = ["/a/1", "/a/2", "/a/3/x", "/b/1", "/b/2"];
    for path in paths {
        assert_eq!(cache_status(&server.get(path)), "MISS");
    }
    for path in paths {
        crate::proxy_cache::wait_stored(&cache, path);
    }
    for path in paths {
        assert_eq!(cache_status(&server.get(path)), "HIT");
    }
    assert_eq!(server.request(request("PURGE", "/a/*", "")).status, 204);
    let file_of = |path: &str| crate::proxy_cache::entry_path(&cache, path);
    // The manager sees a new rule within a second; the walk then takes milliseconds.
    crate::support::wait_until("the /a/ files to go", Duration::from_secs(5), || {
        paths[..3].iter().all(|path| !file_of(path).exists())
    });
    for path in &paths[3..] {
        assert!(file_of(path).is_file(), "{path} is outside the prefix");
        assert_eq!(cache_status(&server.get(path)), "HIT");
    }
    assert_eq!(asked.load(Ordering::Acquire), 5, "nothing was asked again");
    assert_eq!(
        crate::proxy_cache::files_under(&cache).len(),
        2,
        "only the /b/ files are left"
    );
}
