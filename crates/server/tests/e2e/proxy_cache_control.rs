//! What the upstream's fields make of the cache: `X-Accel-Expires` over `Cache-Control`
//! over `Expires` over `proxy_cache_valid`, `Set-Cookie` and `Authorization` (not stored),
//! then revalidation (`proxy_cache_revalidate`), stale answers (`proxy_cache_use_stale`)
//! and ranges (`proxy_cache_max_range_offset`, `proxy_force_ranges`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::proxy_cache::{
    BASIC, asked, cached_proxy, entry_path, ok, request, wait_stored, x_cache,
};
use crate::support::{Instance, PATIENCE, wait_until};

/// An HTTP date `offset` seconds from now, from the system's `date` (not Portico's code).
fn http_date(offset: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64;
    let output = std::process::Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("@{}", now + offset),
            "+%a, %d %b %Y %H:%M:%S GMT",
        ])
        .output()
        .expect("run date");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Config without `proxy_cache_valid`: only the fields give a time.
const FIELDS_ONLY: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        add_header X-Cache $upstream_cache_status always;
    }
    location /valid/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1m;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// Each path's fields, and whether the response they come with is stored.
fn cases() -> Vec<(&'static str, String, bool)> {
    let future = http_date(3600);
    let past = http_date(-3600);
    vec![
        ("/cc", "Cache-Control: max-age=60\r\n".to_owned(), true),
        (
            "/s-maxage",
            "Cache-Control: s-maxage=60, max-age=0\r\n".to_owned(),
            true,
        ),
        (
            "/no-cache",
            "Cache-Control: no-cache, max-age=60\r\n".to_owned(),
            false,
        ),
        ("/no-store", "Cache-Control: no-store\r\n".to_owned(), false),
        (
            "/private",
            "Cache-Control: private, max-age=60\r\n".to_owned(),
            false,
        ),
        (
            "/max-age-0",
            "Cache-Control: max-age=0\r\n".to_owned(),
            false,
        ),
        ("/expires", format!("Expires: {future}\r\n"), true),
        ("/expires-past", format!("Expires: {past}\r\n"), false),
        // Cache-Control wins over Expires, in either order.
        (
            "/cc-then-past",
            format!("Cache-Control: max-age=60\r\nExpires: {past}\r\n"),
            true,
        ),
        (
            "/past-then-cc",
            format!("Expires: {past}\r\nCache-Control: max-age=60\r\n"),
            true,
        ),
        (
            "/nocache-expires",
            format!("Expires: {future}\r\nCache-Control: no-cache\r\n"),
            false,
        ),
        // X-Accel-Expires wins over both, in either order.
        (
            "/xae-over-cc",
            "Cache-Control: no-store\r\nX-Accel-Expires: 60\r\n".to_owned(),
            true,
        ),
        (
            "/xae-first",
            "X-Accel-Expires: 60\r\nCache-Control: private\r\n".to_owned(),
            true,
        ),
        (
            "/xae-zero",
            "X-Accel-Expires: 0\r\nCache-Control: max-age=60\r\n".to_owned(),
            false,
        ),
        (
            "/xae-zero-expires",
            format!("X-Accel-Expires: 0\r\nExpires: {future}\r\n"),
            false,
        ),
        // Set-Cookie: never stored, whatever else says.
        (
            "/cookie",
            "Set-Cookie: a=b\r\nCache-Control: max-age=60\r\n".to_owned(),
            false,
        ),
        (
            "/cookie-xae",
            "X-Accel-Expires: 60\r\nSet-Cookie: a=b\r\n".to_owned(),
            false,
        ),
        ("/nothing", String::new(), false),
    ]
}

fn fields_for(path: &str) -> String {
    cases()
        .into_iter()
        .find(|(case, _, _)| path.ends_with(case))
        .map(|(_, fields, _)| fields)
        .unwrap_or_default()
}

fn answer(request: &str, number: usize) -> String {
    let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
    ok(&format!("{path} #{number}"), &fields_for(&path))
}

/// `X-Accel-Expires` > `Cache-Control` > `Expires`, in either order of the lines; a
/// response whose fields forbid storing, or give no time, is fetched again next time.
#[test]
fn the_fields_decide_in_nginx_order() {
    let (server, upstream) = cached_proxy(FIELDS_ONLY, answer);
    let cache = server.prefix().join("cache");
    let mut expected_asks = 0;
    for (path, fields, stored) in cases() {
        let first = server.get(path);
        assert_eq!(x_cache(&first), "MISS", "{path} {fields:?}");
        expected_asks += 1;
        if stored {
            wait_stored(&cache, path);
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
        let second = server.get(path);
        let want = if stored { "HIT" } else { "MISS" };
        assert_eq!(x_cache(&second), want, "{path} with {fields:?}");
        if stored {
            assert_eq!(second.body, first.body, "{path}");
        } else {
            expected_asks += 1;
            assert!(!entry_path(&cache, path).exists(), "{path} is not on disk");
        }
    }
    assert_eq!(asked(&upstream), expected_asks);
}

/// The fields' time wins over `proxy_cache_valid`: `max-age=3` expires after 3 s even
/// though the location keeps 200s for a minute; `Set-Cookie` is not stored there either.
#[test]
fn the_fields_override_proxy_cache_valid() {
    let (server, upstream) = cached_proxy(FIELDS_ONLY, |request, number| {
        let path = request.split_whitespace().nth(1).unwrap_or("");
        let fields = if path.contains("cookie") {
            "Set-Cookie: s=1\r\n"
        } else if path.contains("short") {
            "Cache-Control: max-age=3\r\n"
        } else {
            ""
        };
        ok(&format!("#{number}"), fields)
    });
    let cache = server.prefix().join("cache");
    assert_eq!(x_cache(&server.get("/valid/short")), "MISS");
    wait_stored(&cache, "/valid/short");
    assert_eq!(x_cache(&server.get("/valid/short")), "HIT");
    server.advance_clock(Duration::from_millis(4100));
    assert_eq!(x_cache(&server.get("/valid/short")), "EXPIRED");
    assert_eq!(x_cache(&server.get("/valid/plain")), "MISS");
    wait_stored(&cache, "/valid/plain");
    assert_eq!(x_cache(&server.get("/valid/plain")), "HIT");
    assert_eq!(x_cache(&server.get("/valid/cookie")), "MISS");
    let again = server.get("/valid/cookie");
    assert_eq!(
        (x_cache(&again), again.body_text().as_str()),
        ("MISS", "#5")
    );
    assert_eq!(asked(&upstream), 5);
}

/// Portico's RFC 9111 choice: the response to a request with `Authorization` is stored
/// only when its `Cache-Control` allows a shared cache to (`public` here).
#[test]
fn a_response_to_authorization_is_stored_only_when_public() {
    let (server, upstream) = cached_proxy(BASIC, |request, number| {
        let fields = if request.contains("/public ") {
            "Cache-Control: public, max-age=60\r\n"
        } else {
            "Cache-Control: max-age=60\r\n"
        };
        ok(&format!("#{number}"), fields)
    });
    let cache = server.prefix().join("cache");
    let auth = "Authorization: Basic dXNlcjpwYXNz\r\n";
    let first = server.request(request("GET", "/secret", auth));
    assert_eq!((first.status, x_cache(&first)), (200, "MISS"));
    std::thread::sleep(Duration::from_millis(200));
    assert!(!entry_path(&cache, "/secret").exists(), "not stored");
    let second = server.request(request("GET", "/secret", auth));
    assert_eq!(
        (x_cache(&second), second.body_text().as_str()),
        ("MISS", "#2")
    );
    assert_eq!(
        x_cache(&server.request(request("GET", "/public", auth))),
        "MISS"
    );
    wait_stored(&cache, "/public");
    let hit = server.request(request("GET", "/public", auth));
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#3"));
    assert_eq!(asked(&upstream), 3);
}

/// `X-Accel-Expires: @T` with `T` in the past: stored, and EXPIRED on the next request.
#[test]
fn an_x_accel_expires_in_the_past_is_stored_expired() {
    let (server, upstream) = cached_proxy(FIELDS_ONLY, |_, number| {
        ok(&format!("#{number}"), "X-Accel-Expires: @1\r\n")
    });
    assert_eq!(x_cache(&server.get("/at")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/at");
    let next = server.get("/at");
    assert_eq!(
        (x_cache(&next), next.body_text().as_str()),
        ("EXPIRED", "#2")
    );
    assert_eq!(asked(&upstream), 2);
}

const REVALIDATE: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1s;
        proxy_cache_revalidate on;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `proxy_cache_revalidate on`: an expired entry is asked for with `If-Modified-Since` and
/// `If-None-Match` from the stored response; a 304 makes it REVALIDATED, served from the
/// cache and fresh again for as long as the 304 says.
#[test]
fn proxy_cache_revalidate_turns_a_304_into_revalidated() {
    let modified = "Mon, 02 Jan 2023 10:00:00 GMT";
    let (server, upstream) = cached_proxy(REVALIDATE, move |_, number| {
        if number == 1 {
            ok(
                "original",
                &format!("Last-Modified: {modified}\r\nETag: \"v1\"\r\n"),
            )
        } else {
            "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=60\r\n\r\n"
                .to_owned()
        }
    });
    assert_eq!(x_cache(&server.get("/r")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/r");
    server.advance_clock(Duration::from_millis(2100));
    let revalidated = server.get("/r");
    assert_eq!(revalidated.status, 200);
    assert_eq!(x_cache(&revalidated), "REVALIDATED");
    assert_eq!(revalidated.body_text(), "original");
    let conditional = &upstream.requests()[1];
    assert!(
        conditional.contains(&format!("If-Modified-Since: {modified}\r\n")),
        "{conditional}"
    );
    assert!(
        conditional.contains("If-None-Match: \"v1\"\r\n"),
        "{conditional}"
    );
    let hit = server.get("/r");
    assert_eq!(
        (x_cache(&hit), hit.body_text().as_str()),
        ("HIT", "original")
    );
    assert_eq!(asked(&upstream), 2);
}

const STALE: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1s;
        proxy_cache_use_stale error timeout updating http_500;
        proxy_connect_timeout 2s;
        add_header X-Cache $upstream_cache_status always;
    }
    location /fresh-only/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1s;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `proxy_cache_use_stale error http_500`: once the entry expired, an upstream that answers
/// 500 or is gone gets the stale entry served as STALE; where the directive is absent the
/// failure reaches the client.
#[test]
fn proxy_cache_use_stale_serves_an_expired_entry_when_the_upstream_fails() {
    let mut builder = Instance::http_builder(STALE).movable_clock();
    let port = builder.port(8081);
    let upstream = crate::proxy_cache::origin(port, |request, number| {
        if number > 2 && request.contains("/500") {
            "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops".to_owned()
        } else {
            ok(&format!("#{number}"), "")
        }
    });
    let server = builder.start();
    let cache = server.prefix().join("cache");
    assert_eq!(x_cache(&server.get("/500")), "MISS");
    assert_eq!(x_cache(&server.get("/fresh-only/x")), "MISS");
    wait_stored(&cache, "/500");
    wait_stored(&cache, "/fresh-only/x");
    server.advance_clock(Duration::from_millis(2100));
    let stale = server.get("/500");
    assert_eq!((stale.status, x_cache(&stale)), (200, "STALE"));
    assert_eq!(stale.body_text(), "#1");
    assert_eq!(asked(&upstream), 3, "the refresh was tried");
    drop(upstream);
    let stale = server.get("/500");
    assert_eq!(
        (stale.status, x_cache(&stale), stale.body_text().as_str()),
        (200, "STALE", "#1")
    );
    let failed = server.get("/fresh-only/x");
    assert_eq!(failed.status, 502, "no stale answer without the directive");
}

/// `proxy_cache_use_stale updating`: while one request refreshes an expired entry from a
/// slow upstream, another gets the old entry as UPDATING at once; then the new one HITs.
#[test]
fn proxy_cache_use_stale_updating_answers_during_a_refresh() {
    let gate = crate::support::Gate::new();
    let held = gate.clone();
    let (server, upstream) = cached_proxy(STALE, move |_, number| {
        if number == 2 {
            held.wait();
        }
        ok(
            &format!("#{number}"),
            if number > 1 {
                "Cache-Control: max-age=60\r\n"
            } else {
                ""
            },
        )
    });
    assert_eq!(x_cache(&server.get("/u")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/u");
    server.advance_clock(Duration::from_millis(2100));
    let port = server.port();
    let refresher = std::thread::spawn(move || {
        let response = crate::support::Client::connect(port).request(crate::support::get("/u"));
        (x_cache(&response).to_owned(), response.body_text())
    });
    wait_until("the refresh to reach the upstream", PATIENCE, || {
        asked(&upstream) == 2
    });
    let during = server.get("/u");
    assert_eq!(
        (x_cache(&during), during.body_text().as_str()),
        ("UPDATING", "#1")
    );
    gate.open();
    let (status, body) = refresher.join().expect("the refreshing client");
    assert_eq!((status.as_str(), body.as_str()), ("EXPIRED", "#2"));
    wait_until("the refreshed entry", PATIENCE, || {
        std::fs::read(entry_path(&server.prefix().join("cache"), "/u"))
            .is_ok_and(|b| b.ends_with(b"#2"))
    });
    let hit = server.get("/u");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#2"));
    assert_eq!(asked(&upstream), 2);
}

const RANGES: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    proxy_cache_valid 200 1m;
    add_header X-Cache $upstream_cache_status always;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_max_range_offset 100;
    }
    location /forced/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_force_ranges on;
    }
    location /plain/ {
        proxy_pass http://127.0.0.1:8081;
    }
}";

fn digits() -> String {
    "0123456789".repeat(30)
}

/// (A stored response is cut to ranges when its upstream said `Accept-Ranges`, as nginx's
/// `copy_allow_ranges` decides, or with `proxy_force_ranges`.)
/// `proxy_cache_max_range_offset 100`: a range starting at 200 goes upstream as it is,
/// uncached; one starting at 0 is a MISS that stores the whole response and is cut for
/// the client, so that a later full GET HITs and a later range is cut from the entry.
#[test]
fn proxy_cache_max_range_offset_sends_far_ranges_upstream() {
    let (server, upstream) = cached_proxy(RANGES, |_, _| ok(&digits(), "Accept-Ranges: bytes\r\n"));
    let far = server.request(request("GET", "/r", "Range: bytes=200-209\r\n"));
    assert_eq!(x_cache(&far), "", "no cache for a far range");
    assert!(upstream.requests()[0].contains("Range: bytes=200-209\r\n"));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!entry_path(&server.prefix().join("cache"), "/r").exists());
    // (The range cut on this MISS is `a_range_on_a_miss_is_cut_from_the_stored_response`.)
    let near = server.request(request("GET", "/r", "Range: bytes=0-9\r\n"));
    assert_eq!(x_cache(&near), "MISS");
    assert!(
        !upstream.requests()[1].contains("Range:"),
        "a cached request fetches the whole response: {}",
        upstream.requests()[1]
    );
    wait_stored(&server.prefix().join("cache"), "/r");
    let full = server.get("/r");
    assert_eq!((full.status, x_cache(&full)), (200, "HIT"));
    assert_eq!(full.body_text(), digits());
    let part = server.request(request("GET", "/r", "Range: bytes=10-19\r\n"));
    assert_eq!(
        (part.status, x_cache(&part), part.body_text().as_str()),
        (206, "HIT", "0123456789")
    );
    assert_eq!(asked(&upstream), 2);
}

/// `proxy_force_ranges on`: a proxied response without `Accept-Ranges` is cut to the
/// client's range; without it, the whole response passes.
#[test]
fn proxy_force_ranges_cuts_uncached_responses() {
    let (server, _upstream) = cached_proxy(RANGES, |_, _| ok(&digits(), ""));
    let forced = server.request(request("GET", "/forced/x", "Range: bytes=5-9\r\n"));
    assert_eq!((forced.status, forced.body_text().as_str()), (206, "56789"));
    assert_eq!(forced.header("Content-Range"), Some("bytes 5-9/300"));
    let plain = server.request(request("GET", "/plain/x", "Range: bytes=5-9\r\n"));
    assert_eq!(plain.status, 200);
    assert_eq!(plain.body_text(), digits());
}

/// A single range on a MISS that will be stored: the whole response is fetched (no
/// `Range` upstream) and stored, and the client gets its range cut from it, as nginx does
/// (`proxy_cache_range.t`); the next range request HITs.
#[test]
fn a_range_on_a_miss_is_cut_from_the_stored_response() {
    let (server, upstream) = cached_proxy(BASIC, |_, _| ok(&digits(), "Accept-Ranges: bytes\r\n"));
    let first = server.request(request("GET", "/whole", "Range: bytes=4-7\r\n"));
    assert!(
        !upstream.requests()[0].contains("Range:"),
        "{}",
        upstream.requests()[0]
    );
    assert_eq!(x_cache(&first), "MISS");
    assert_eq!((first.status, first.body_text().as_str()), (206, "4567"));
    wait_stored(&server.prefix().join("cache"), "/whole");
    let second = server.request(request("GET", "/whole", "Range: bytes=4-7\r\n"));
    assert_eq!(
        (second.status, x_cache(&second), second.body_text().as_str()),
        (206, "HIT", "4567")
    );
    assert_eq!(asked(&upstream), 1);
}

const IGNORED: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1m;
        proxy_ignore_headers Cache-Control Expires X-Accel-Expires Set-Cookie;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `proxy_ignore_headers`: fields it names no longer decide; `proxy_cache_valid` does, so
/// responses that say `no-store`, expire in the past, `X-Accel-Expires: 0` or set a cookie
/// are stored.
#[test]
fn proxy_ignore_headers_leaves_it_to_proxy_cache_valid() {
    let (server, upstream) = cached_proxy(IGNORED, |request, number| {
        let path = request.split_whitespace().nth(1).unwrap_or("");
        let fields = match path {
            "/cc" => "Cache-Control: no-store\r\n".to_owned(),
            "/expires" => format!("Expires: {}\r\n", http_date(-3600)),
            "/xae" => "X-Accel-Expires: 0\r\n".to_owned(),
            _ => "Set-Cookie: a=b\r\n".to_owned(),
        };
        ok(&format!("#{number}"), &fields)
    });
    for path in ["/cc", "/expires", "/xae", "/cookie"] {
        assert_eq!(x_cache(&server.get(path)), "MISS", "{path}");
        wait_stored(&server.prefix().join("cache"), path);
        assert_eq!(x_cache(&server.get(path)), "HIT", "{path}");
    }
    assert_eq!(asked(&upstream), 4);
}

const BACKGROUND: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1s;
        proxy_cache_use_stale updating;
        proxy_cache_background_update on;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `proxy_cache_background_update on` with `use_stale updating`: the request that finds
/// the entry expired gets it at once as STALE while the refresh runs behind it (the slow
/// upstream has not answered yet), and the refreshed entry HITs afterwards.
#[test]
fn proxy_cache_background_update_refreshes_after_a_stale_answer() {
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&answered);
    let gate = crate::support::Gate::new();
    let held = gate.clone();
    let (server, upstream) = cached_proxy(BACKGROUND, move |_, number| {
        if number == 2 {
            held.wait();
            flag.store(true, std::sync::atomic::Ordering::Release);
        }
        ok(
            &format!("#{number}"),
            if number > 1 {
                "Cache-Control: max-age=60\r\n"
            } else {
                ""
            },
        )
    });
    let path = wait_stored_after_miss(&server, "/bg");
    server.advance_clock(Duration::from_millis(2100));
    let stale = server.get("/bg");
    assert_eq!(
        (x_cache(&stale), stale.body_text().as_str()),
        ("STALE", "#1")
    );
    assert!(
        !answered.load(std::sync::atomic::Ordering::Acquire),
        "the stale answer did not wait for the refresh"
    );
    wait_until(
        "the background refresh to reach the upstream",
        PATIENCE,
        || asked(&upstream) == 2,
    );
    gate.open();
    wait_until("the refreshed entry", PATIENCE, || {
        std::fs::read(&path).is_ok_and(|bytes| bytes.ends_with(b"#2"))
    });
    let hit = server.get("/bg");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#2"));
    assert_eq!(asked(&upstream), 2);
}

const BACKGROUND_REVALIDATE: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_revalidate on;
        proxy_cache_background_update on;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// A background refresh with `proxy_cache_revalidate on` sends the stale entry's
/// validators; the 304 (with no time of its own) makes the entry fresh again for the
/// time its stored head gives (`max-age=1`, `stale-while-revalidate`), so the next
/// request is a HIT on the stored body, as in nginx.
#[test]
fn a_background_refresh_revalidates_with_the_stored_validators() {
    let (server, upstream) = cached_proxy(BACKGROUND_REVALIDATE, move |request, number| {
        if number > 1 && request.contains("If-None-Match: \"v1\"\r\n") {
            return "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n".to_owned();
        }
        ok(
            &format!("#{number}"),
            "ETag: \"v1\"\r\nCache-Control: max-age=1, stale-while-revalidate=60\r\n",
        )
    });
    wait_stored_after_miss(&server, "/bgr");
    server.advance_clock(Duration::from_millis(2100));
    let stale = server.get("/bgr");
    assert_eq!(
        (x_cache(&stale), stale.body_text().as_str()),
        ("STALE", "#1")
    );
    wait_until("the background revalidation", PATIENCE, || {
        asked(&upstream) == 2
    });
    let conditional = &upstream.requests()[1];
    assert!(
        conditional.contains("If-None-Match: \"v1\"\r\n"),
        "{conditional}"
    );
    // While the 304's time is written into the entry, a request may still find it
    // UPDATING; it never goes upstream again.
    wait_until("a HIT on the revalidated entry", PATIENCE, || {
        let answer = server.get("/bgr");
        assert_eq!(answer.body_text(), "#1");
        x_cache(&answer) == "HIT"
    });
    assert_eq!(asked(&upstream), 2);
}

fn wait_stored_after_miss(server: &Instance, path: &str) -> std::path::PathBuf {
    assert_eq!(x_cache(&server.get(path)), "MISS");
    wait_stored(&server.prefix().join("cache"), path)
}

/// A HIT sends the stored head's fields as the MISS did (copied from the upstream's buffer
/// on the MISS, referred to in the stored head on the HIT): the first of two `Expires`
/// only, as nginx, and every other passed field with its value and in its order.
#[test]
fn a_hit_passes_the_stored_fields_as_the_miss_did() {
    let fields = concat!(
        "Content-Type: text/x-stored\r\n",
        "X-One: first value\r\n",
        "Expires: Thu, 01 Jan 2099 00:00:00 GMT\r\n",
        "Expires: Fri, 02 Jan 2099 00:00:00 GMT\r\n",
        "X-Two: second\r\n",
    );
    let (server, upstream) = cached_proxy(BASIC, move |_, _| ok("stored body", fields));
    let miss = server.get("/fields");
    wait_stored(&server.prefix().join("cache"), "/fields");
    let hit = server.get("/fields");
    assert_eq!((x_cache(&miss), x_cache(&hit)), ("MISS", "HIT"));
    assert_eq!(asked(&upstream), 1);
    for response in [&miss, &hit] {
        assert_eq!(response.header("Content-Type"), Some("text/x-stored"));
        let passed: Vec<(&str, &str)> = response
            .headers
            .iter()
            .filter(|(name, _)| name.starts_with("X-") && name != "X-Cache" || name == "Expires")
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        assert_eq!(
            passed,
            [
                ("X-One", "first value"),
                ("Expires", "Thu, 01 Jan 2099 00:00:00 GMT"),
                ("X-Two", "second"),
            ]
        );
        assert_eq!(response.body_text(), "stored body");
    }
}
