//! The RFC 9111 behaviours an HTTP-caching conformance run found missing, with the cache
//! configured as nginx users do (`proxy_cache`, `proxy_cache_revalidate on`,
//! `proxy_http_version 1.1`, nothing else): the upstream's `Last-Modified` on any status,
//! `Age` in freshness and on HITs, strict Cache-Control and Expires, a 304's fields in the
//! stored head, conditional requests, invalidation by unsafe methods, ranges of stored
//! responses, and `CDN-Cache-Control`.

use std::time::Duration;

use crate::proxy_cache::{asked, cached_proxy, ok, request, wait_stored, x_cache};
use crate::support::Response;

/// nginx users' configuration: no `proxy_cache_valid`, so only the responses' own fields
/// make them cacheable.
const RFC: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_revalidate on;
        proxy_http_version 1.1;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// The answer's path.
fn path_of(request: &str) -> &str {
    request.split_whitespace().nth(1).unwrap_or("/")
}

/// An answer with `status`, the header lines `fields` and `body`.
fn answer(status: &str, fields: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{fields}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn age_of(response: &Response) -> u64 {
    response
        .header("Age")
        .and_then(|age| age.parse().ok())
        .unwrap_or_else(|| panic!("an Age field: {}", response.head_text()))
}

/// nginx passes an upstream's `Last-Modified` on with any status (its header filter drops
/// only one it computed): a 404 and a 301 keep theirs, cached or not, so a client can
/// revalidate them (RFC 9111 section 4.3.1).
#[test]
fn last_modified_passes_with_any_status() {
    const MODIFIED: &str = "Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\n";
    let (server, _upstream) = cached_proxy(RFC, |request, _| match path_of(request) {
        "/gone" => answer(
            "404 Not Found",
            &format!("{MODIFIED}Cache-Control: max-age=60\r\n"),
            "no",
        ),
        "/moved" => answer(
            "301 Moved Permanently",
            &format!("{MODIFIED}Location: /elsewhere\r\nCache-Control: max-age=60\r\n"),
            "",
        ),
        _ => answer("410 Gone", MODIFIED, ""),
    });
    for path in ["/gone", "/moved", "/uncached"] {
        for _ in 0..2 {
            let response = server.get(path);
            assert_eq!(
                response.header("Last-Modified"),
                Some("Mon, 01 Jan 2024 00:00:00 GMT"),
                "{path} ({}): {}",
                x_cache(&response),
                response.head_text()
            );
        }
    }
    assert_eq!(x_cache(&server.get("/gone")), "HIT");
}

/// RFC 9111 section 4.2.3: the `Age` a response arrives with is taken off its lifetime;
/// one already past its `max-age` is not stored. A HIT's `Age` is the one it arrived
/// with plus the time since it was stored (section 5.1).
#[test]
fn the_upstream_s_age_counts() {
    let (server, upstream) = cached_proxy(RFC, |request, number| match path_of(request) {
        "/aged" => ok(
            &format!("#{number}"),
            "Cache-Control: max-age=3\r\nAge: 2\r\n",
        ),
        "/old" => ok(
            &format!("#{number}"),
            "Cache-Control: max-age=3600\r\nAge: 7200\r\n",
        ),
        _ => ok(
            &format!("#{number}"),
            "Cache-Control: max-age=1000\r\nAge: 100\r\n",
        ),
    });
    let cache = server.prefix().join("cache");
    assert_eq!(x_cache(&server.get("/aged")), "MISS");
    wait_stored(&cache, "/aged");
    server.advance_clock(Duration::from_millis(2100));
    // Three seconds from the upstream, two of them gone before it arrived.
    assert_eq!(x_cache(&server.get("/aged")), "EXPIRED");
    for _ in 0..2 {
        assert_eq!(x_cache(&server.get("/old")), "MISS", "stale on arrival");
    }
    assert_eq!(x_cache(&server.get("/hundred")), "MISS");
    wait_stored(&cache, "/hundred");
    server.advance_clock(Duration::from_millis(1100));
    let hit = server.get("/hundred");
    assert_eq!(x_cache(&hit), "HIT");
    let age = age_of(&hit);
    assert!((101..160).contains(&age), "Age {age}");
    assert_eq!(asked(&upstream), 5);
}

/// RFC 9111 section 5.2: `max-age` with white space around its `=` is no `max-age`;
/// section 4.2.1: of two, the first counts; section 5.3: an invalid `Expires` (`0`) is
/// in the past.
#[test]
fn cache_control_and_expires_are_read_strictly() {
    let (server, upstream) = cached_proxy(RFC, |request, number| match path_of(request) {
        "/spaced" => ok(&format!("#{number}"), "Cache-Control: max-age = 3600\r\n"),
        "/twice" => ok(
            &format!("#{number}"),
            "Cache-Control: max-age=1, max-age=3600\r\n",
        ),
        _ => ok(&format!("#{number}"), "Expires: 0\r\n"),
    });
    let cache = server.prefix().join("cache");
    for path in ["/spaced", "/expires"] {
        assert_eq!(x_cache(&server.get(path)), "MISS");
        assert_eq!(x_cache(&server.get(path)), "MISS", "{path} is not stored");
    }
    assert_eq!(x_cache(&server.get("/twice")), "MISS");
    wait_stored(&cache, "/twice");
    server.advance_clock(Duration::from_millis(2100));
    assert_eq!(
        x_cache(&server.get("/twice")),
        "EXPIRED",
        "max-age=1 counted"
    );
    assert_eq!(asked(&upstream), 6);
}

/// RFC 9111 sections 3.2 and 4.3.4: the fields of a 304 to a revalidation replace the
/// stored ones, `Content-Type` and `Date` included; the answer and the HITs after it have
/// them (`Date` as stored with `proxy_pass_header Date`).
#[test]
fn a_304_updates_the_stored_fields() {
    let config = RFC.replace(
        "proxy_http_version 1.1;",
        "proxy_http_version 1.1;\n        proxy_pass_header Date;",
    );
    let (server, upstream) = cached_proxy(&config, |_, number| {
        if number == 1 {
            answer(
                "200 OK",
                "Date: Mon, 01 Jan 2024 00:00:00 GMT\r\nContent-Type: text/plain\r\n\
                 ETag: \"v1\"\r\nCache-Control: max-age=1\r\n",
                "body",
            )
        } else {
            "HTTP/1.1 304 Not Modified\r\nDate: Tue, 02 Jan 2024 00:00:00 GMT\r\n\
             Content-Type: text/html\r\nETag: \"v1\"\r\nCache-Control: max-age=60\r\n\r\n"
                .to_owned()
        }
    });
    assert_eq!(x_cache(&server.get("/r")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/r");
    server.advance_clock(Duration::from_millis(2100));
    let revalidated = server.get("/r");
    assert_eq!(x_cache(&revalidated), "REVALIDATED");
    assert!(
        upstream.requests()[1].contains("If-None-Match: \"v1\""),
        "{:?}",
        upstream.requests()
    );
    std::thread::sleep(Duration::from_millis(300));
    let hit = server.get("/r");
    assert_eq!(x_cache(&hit), "HIT");
    for response in [&revalidated, &hit] {
        assert_eq!(response.body_text(), "body");
        assert_eq!(response.header("Content-Type"), Some("text/html"));
        assert_eq!(
            response.header("Date"),
            Some("Tue, 02 Jan 2024 00:00:00 GMT")
        );
    }
    assert_eq!(asked(&upstream), 2);
}

/// Conditional requests answered from a stored response (RFC 9111 section 4.3.2, RFC
/// 9110 section 13.1.2): a strong or weak `If-None-Match` (weak comparison), one of a
/// list, an entity-tag with obs-text; `If-Modified-Since` with the stored
/// `Last-Modified`.
#[test]
fn conditional_requests_are_answered_from_the_cache() {
    let (server, upstream) = cached_proxy(RFC, |request, _| {
        let etag = match path_of(request) {
            "/weak" => "W/\"abc\"",
            "/obs" => "\"abc\u{fc}\"",
            _ => "\"abc\"",
        };
        ok(
            "body",
            &format!(
                "ETag: {etag}\r\nLast-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\n\
                 Cache-Control: max-age=60\r\n"
            ),
        )
    });
    let cache = server.prefix().join("cache");
    for path in ["/strong", "/weak", "/obs"] {
        assert_eq!(x_cache(&server.get(path)), "MISS");
        wait_stored(&cache, path);
    }
    let conditional = |path: &str, field: &str| server.request(request("GET", path, field));
    for (path, field) in [
        ("/strong", "If-None-Match: \"abc\"\r\n"),
        ("/strong", "If-None-Match: \"x\", \"abc\", \"y\"\r\n"),
        ("/strong", "If-None-Match: W/\"abc\"\r\n"),
        ("/weak", "If-None-Match: W/\"abc\"\r\n"),
        ("/weak", "If-None-Match: \"abc\"\r\n"),
        ("/obs", "If-None-Match: \"abc\u{fc}\"\r\n"),
        (
            "/strong",
            "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT\r\n",
        ),
        ("/strong", "If-None-Match: *\r\n"),
    ] {
        let response = conditional(path, field);
        assert_eq!(
            (response.status, x_cache(&response)),
            (304, "HIT"),
            "{path} {field:?}"
        );
        assert!(response.body.is_empty());
    }
    let other = conditional("/strong", "If-None-Match: \"other\"\r\n");
    assert_eq!((other.status, other.body_text().as_str()), (200, "body"));
    assert_eq!(asked(&upstream), 3);
}

/// A client's conditional request for a key the cache holds nothing of goes upstream with
/// its `If-None-Match` (and a valid `If-Modified-Since`): the upstream's 304 is the
/// client's answer and is not stored; the next request stores the whole response. An
/// `If-Modified-Since` that is no date is not passed on (as nginx passes none).
#[test]
fn a_conditional_miss_is_forwarded_with_its_validators() {
    let (server, upstream) = cached_proxy(RFC, |request, number| {
        if request.contains("If-None-Match: \"abc\"") {
            "HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\nCache-Control: max-age=60\r\n\r\n"
                .to_owned()
        } else {
            ok(
                &format!("#{number}"),
                "ETag: \"abc\"\r\nCache-Control: max-age=60\r\n",
            )
        }
    });
    let not_modified = server.request(request("GET", "/c", "If-None-Match: \"abc\"\r\n"));
    assert_eq!((not_modified.status, x_cache(&not_modified)), (304, "MISS"));
    let dated = server.request(request(
        "GET",
        "/d",
        "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT\r\n",
    ));
    assert_eq!(dated.status, 200);
    let undated = server.request(request("GET", "/e", "If-Modified-Since: blah\r\n"));
    assert_eq!(undated.status, 200);
    let requests = upstream.requests();
    assert!(
        requests[0].contains("If-None-Match: \"abc\""),
        "{requests:?}"
    );
    assert!(
        requests[1].contains("If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT"),
        "{requests:?}"
    );
    assert!(!requests[2].contains("If-Modified-Since"), "{requests:?}");
    let whole = server.get("/c");
    assert_eq!(
        (whole.status, x_cache(&whole)),
        (200, "MISS"),
        "the 304 was not stored"
    );
    wait_stored(&server.prefix().join("cache"), "/c");
    assert_eq!(x_cache(&server.get("/c")), "HIT");
}

/// RFC 9111 section 4.4: a successful unsafe request invalidates its own URI and the
/// same-host URIs its response's `Location` and `Content-Location` name; another host's
/// are left alone.
#[test]
fn unsafe_methods_invalidate_location_and_content_location() {
    let (server, upstream) = cached_proxy(RFC, |request, number| {
        if request.starts_with("POST") {
            answer(
                "201 Created",
                "Location: /items/1\r\nContent-Location: http://localhost/items/list?all=1\r\n\
                 Link: </items/kept>\r\n",
                "",
            )
        } else if request.starts_with("PUT") {
            answer(
                "200 OK",
                "Location: http://other.example/items/kept\r\n",
                "",
            )
        } else {
            ok(&format!("#{number}"), "Cache-Control: max-age=60\r\n")
        }
    });
    let cache = server.prefix().join("cache");
    for path in ["/items/1", "/items/list", "/items/kept", "/items/new"] {
        assert_eq!(x_cache(&server.get(path)), "MISS");
        wait_stored(&cache, path);
        assert_eq!(x_cache(&server.get(path)), "HIT");
    }
    let created = server.request(request("POST", "/items/new", "Content-Length: 0\r\n"));
    assert_eq!(created.status, 201);
    let put = server.request(request("PUT", "/items/kept", "Content-Length: 0\r\n"));
    assert_eq!(put.status, 200);
    for (path, status) in [
        ("/items/new", "MISS"),
        ("/items/1", "MISS"),
        ("/items/list", "MISS"),
        ("/items/kept", "MISS"),
    ] {
        assert_eq!(x_cache(&server.get(path)), status, "{path}");
    }
    assert_eq!(asked(&upstream), 10);
    // Another host's URI, named by a response to an unsafe request, is not touched.
    let (server, upstream) = cached_proxy(RFC, |request, number| {
        if request.starts_with("DELETE") {
            answer(
                "204 No Content",
                "Content-Location: http://other.example/k\r\n",
                "",
            )
        } else {
            ok(&format!("#{number}"), "Cache-Control: max-age=60\r\n")
        }
    });
    assert_eq!(x_cache(&server.get("/k")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/k");
    assert_eq!(server.request(request("DELETE", "/x", "")).status, 204);
    assert_eq!(x_cache(&server.get("/k")), "HIT");
    assert_eq!(asked(&upstream), 2);
}

/// A complete stored response is served in ranges (206) without the upstream's
/// `Accept-Ranges` (RFC 9110 section 14.2, RFC 9111 section 3.4), unless it said
/// `Accept-Ranges: none`.
#[test]
fn ranges_are_served_from_stored_responses() {
    let (server, _upstream) = cached_proxy(RFC, |request, _| {
        let refused = if path_of(request) == "/none" {
            "Accept-Ranges: none\r\n"
        } else {
            ""
        };
        ok(
            "0123456789",
            &format!("{refused}Cache-Control: max-age=60\r\n"),
        )
    });
    let cache = server.prefix().join("cache");
    for path in ["/ranged", "/none"] {
        assert_eq!(x_cache(&server.get(path)), "MISS");
        wait_stored(&cache, path);
    }
    let part = server.request(request("GET", "/ranged", "Range: bytes=2-4\r\n"));
    assert_eq!(
        (part.status, x_cache(&part), part.body_text().as_str()),
        (206, "HIT", "234")
    );
    assert_eq!(part.header("Content-Range"), Some("bytes 2-4/10"));
    let whole = server.request(request("GET", "/none", "Range: bytes=2-4\r\n"));
    assert_eq!(
        (whole.status, whole.body_text().as_str()),
        (200, "0123456789")
    );
}

/// RFC 9213: `CDN-Cache-Control` targets this cache; when it parses, Cache-Control and
/// Expires are ignored (`private` here, which would forbid storing); one that does not
/// parse is ignored. `proxy_ignore_headers CDN-Cache-Control` turns it off.
#[test]
fn cdn_cache_control_is_followed() {
    let answer_for = |request: &str, number: usize| match path_of(request) {
        "/invalid" => ok(
            &format!("#{number}"),
            "Cache-Control: private\r\nCDN-Cache-Control: max-age =60\r\n",
        ),
        _ => ok(
            &format!("#{number}"),
            "Cache-Control: private\r\nCDN-Cache-Control: max-age=60\r\n",
        ),
    };
    let (server, upstream) = cached_proxy(RFC, answer_for);
    assert_eq!(x_cache(&server.get("/cdn")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/cdn");
    assert_eq!(x_cache(&server.get("/cdn")), "HIT");
    for _ in 0..2 {
        assert_eq!(x_cache(&server.get("/invalid")), "MISS");
    }
    assert_eq!(asked(&upstream), 3);
    let ignoring = RFC.replace(
        "proxy_cache_revalidate on;",
        "proxy_cache_revalidate on;\n        proxy_ignore_headers CDN-Cache-Control;",
    );
    let (server, upstream) = cached_proxy(&ignoring, answer_for);
    for _ in 0..2 {
        assert_eq!(x_cache(&server.get("/cdn")), "MISS");
    }
    assert_eq!(asked(&upstream), 2);
}

/// RFC 5861 `stale-if-error` in the stored response: an upstream that closes without an
/// answer is answered from the stale entry within it.
#[test]
fn stale_if_error_covers_a_closed_upstream() {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut builder = crate::support::Instance::http_builder(RFC).movable_clock();
    let seen = std::sync::Arc::clone(&count);
    let _upstream =
        crate::support::upstream::MockUpstream::start(builder.port(8081), move |mut conn| {
            if conn.read_request().is_none() {
                return;
            }
            if seen.fetch_add(1, std::sync::atomic::Ordering::AcqRel) == 0 {
                conn.write(ok(
                    "first",
                    "Cache-Control: max-age=1, stale-if-error=60\r\n",
                ));
            }
            conn.close();
        });
    let mut server = builder.start();
    server.expect_log("[error]");
    assert_eq!(x_cache(&server.get("/s")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/s");
    server.advance_clock(Duration::from_millis(2100));
    let stale = server.get("/s");
    assert_eq!(
        (stale.status, x_cache(&stale), stale.body_text().as_str()),
        (200, "STALE", "first")
    );
}
