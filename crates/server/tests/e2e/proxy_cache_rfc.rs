//! Where Portico's cache follows RFC 9111 rather than nginx, and the `Vary` variants both
//! keep: `Age` and `Content-Length` on a HIT, variants by `Accept-Language`, `Vary` with
//! `*` in a list, `Authorization` with `s-maxage` or `must-revalidate`, `must-revalidate`
//! forbidding a stale answer, and `Connection`-listed fields not stored. (Invalidation
//! and the 304 head update are in `proxy_cache_purge.rs`.)

use std::time::Duration;

use crate::proxy_cache::{
    BASIC, asked, cached_proxy, files_under, ok, request, wait_stored, x_cache,
};
use crate::support::{Instance, PATIENCE, wait_until};

/// A HIT carries an `Age` field and a `Content-Length`, also when the upstream sent the
/// body chunked.
#[test]
fn a_hit_has_age_and_content_length() {
    let (server, _upstream) = cached_proxy(BASIC, |_, _| {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
            .to_owned()
    });
    let miss = server.get("/aged");
    assert_eq!(
        (x_cache(&miss), miss.body_text().as_str()),
        ("MISS", "abcdefg")
    );
    wait_stored(&server.prefix().join("cache"), "/aged");
    server.advance_clock(Duration::from_millis(1100));
    let hit = server.get("/aged");
    assert_eq!(
        (x_cache(&hit), hit.body_text().as_str()),
        ("HIT", "abcdefg")
    );
    assert_eq!(hit.content_length(), Some(7));
    assert!(!hit.is_chunked());
    let age: u64 = hit
        .header("Age")
        .and_then(|age| age.parse().ok())
        .unwrap_or_else(|| panic!("an Age field: {}", hit.head_text()));
    assert!((1..60).contains(&age), "Age {age}");
}

fn language_answer(request: &str, number: usize) -> String {
    let language = request
        .lines()
        .find_map(|line| line.strip_prefix("Accept-Language: "))
        .unwrap_or("none")
        .trim()
        .to_owned();
    let vary = if request.contains("/star ") {
        "Accept, *"
    } else {
        "Accept-Language"
    };
    ok(
        &format!("{language} #{number}"),
        &format!("Vary: {vary}\r\n"),
    )
}

/// `Vary: Accept-Language`: each language is a variant of its own under one key, each
/// stored on the first request and a HIT after; never one language's body for another.
#[test]
fn vary_keeps_a_variant_per_language() {
    let (server, upstream) = cached_proxy(BASIC, language_answer);
    let english = request("GET", "/v", "Accept-Language: en\r\n");
    let german = request("GET", "/v", "Accept-Language: de\r\n");
    let first = server.request(&english);
    assert_eq!(
        (x_cache(&first), first.body_text().as_str()),
        ("MISS", "en #1")
    );
    wait_stored(&server.prefix().join("cache"), "/v");
    let other = server.request(&german);
    assert_eq!(
        (x_cache(&other), other.body_text().as_str()),
        ("MISS", "de #2")
    );
    wait_until("the second variant's file", PATIENCE, || {
        files_under(&server.prefix().join("cache")).len() == 2
    });
    let hit = server.request(&english);
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "en #1"));
    let hit = server.request(&german);
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "de #2"));
    assert_eq!(asked(&upstream), 2);
}

/// `Vary` with `*` anywhere in its list is never stored (nginx: only exactly `*`).
#[test]
fn vary_with_a_star_in_its_list_is_not_stored() {
    let (server, upstream) = cached_proxy(BASIC, language_answer);
    for _ in 0..2 {
        let star = server.get("/star");
        assert_eq!(
            (star.status, x_cache(&star)),
            (200, "MISS"),
            "Vary with * in its list"
        );
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(files_under(&server.prefix().join("cache")).is_empty());
    assert_eq!(asked(&upstream), 2);
}

/// With `Authorization`, `s-maxage` or `must-revalidate` in the response's Cache-Control
/// also allow a shared cache to keep it (RFC 9111 section 3.5).
#[test]
fn authorization_responses_with_s_maxage_or_must_revalidate_are_stored() {
    let (server, upstream) = cached_proxy(BASIC, |request, number| {
        let control = if request.contains("/s-maxage ") {
            "s-maxage=60"
        } else {
            "max-age=60, must-revalidate"
        };
        ok(
            &format!("#{number}"),
            &format!("Cache-Control: {control}\r\n"),
        )
    });
    let auth = "Authorization: Bearer token\r\n";
    for path in ["/s-maxage", "/must-revalidate"] {
        assert_eq!(
            x_cache(&server.request(request("GET", path, auth))),
            "MISS",
            "{path}"
        );
        wait_stored(&server.prefix().join("cache"), path);
        assert_eq!(
            x_cache(&server.request(request("GET", path, auth))),
            "HIT",
            "{path}"
        );
    }
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
        proxy_cache_use_stale error timeout http_500;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `must-revalidate` forbids a stale answer: once the entry expired and the upstream
/// fails, the client gets the failure, not the entry, although `proxy_cache_use_stale`
/// allows stale answers; a response without it is served STALE in the same case.
#[test]
fn must_revalidate_forbids_a_stale_answer() {
    let mut builder = Instance::http_builder(STALE).movable_clock();
    let upstream = crate::proxy_cache::origin(builder.port(8081), |request, number| {
        if number > 2 {
            return "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops".to_owned();
        }
        let control = if request.contains("/strict ") {
            "max-age=1, must-revalidate"
        } else {
            "max-age=1"
        };
        ok(
            &format!("#{number}"),
            &format!("Cache-Control: {control}\r\n"),
        )
    });
    let server = builder.start();
    for path in ["/strict", "/lenient"] {
        assert_eq!(x_cache(&server.get(path)), "MISS");
        wait_stored(&server.prefix().join("cache"), path);
    }
    server.advance_clock(Duration::from_millis(2100));
    let lenient = server.get("/lenient");
    assert_eq!((lenient.status, x_cache(&lenient)), (200, "STALE"));
    let strict = server.get("/strict");
    assert_eq!(
        strict.status, 500,
        "the upstream's failure, not the stale entry"
    );
    assert_ne!(x_cache(&strict), "STALE");
    assert_eq!(asked(&upstream), 4);
}

/// Fields the response's `Connection` names are hop-by-hop: not stored, so a HIT does not
/// carry them; the other fields are kept.
#[test]
fn connection_listed_fields_are_not_stored() {
    let (server, _upstream) = cached_proxy(BASIC, |_, number| {
        ok(
            &format!("#{number}"),
            "Connection: X-Hop\r\nX-Hop: secret\r\nX-Kept: yes\r\n",
        )
    });
    assert_eq!(x_cache(&server.get("/hop")), "MISS");
    let path = wait_stored(&server.prefix().join("cache"), "/hop");
    let stored = String::from_utf8_lossy(&std::fs::read(path).expect("the entry")).into_owned();
    assert!(!stored.contains("X-Hop: secret"), "{stored}");
    let hit = server.get("/hop");
    assert_eq!(x_cache(&hit), "HIT");
    assert_eq!(hit.header("X-Kept"), Some("yes"));
    assert!(!hit.has_header("X-Hop"), "{}", hit.head_text());
}
