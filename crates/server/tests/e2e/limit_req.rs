//! `limit_req_zone`, `limit_req` (burst, nodelay, delay), `limit_req_log_level`,
//! `limit_req_status`, `limit_req_dry_run` and `$limit_req_status`: refusals past the
//! burst with nginx's log line, delays measured as time, one zone for every worker, a zone
//! too small for its keys, zones kept across a reload, and configuration errors in nginx's
//! words.

use std::time::{Duration, Instant};

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;

/// One request a minute per key: nothing drains while a test runs.
const SLOW: &str = r#"
limit_req_zone $arg_k zone=one:32k rate=1r/m;
server {
    listen 127.0.0.1:8080;
    root html;
    add_header X-Limit "$limit_req_status" always;
    location /burst/ { limit_req zone=one burst=2 nodelay; }
    location /teapot/ {
        limit_req zone=one;
        limit_req_status 429;
        limit_req_log_level warn;
    }
    location /dry/ { limit_req zone=one; limit_req_dry_run on; }
    location /none/ { }
}
"#;

fn start_slow() -> Instance {
    Instance::http_builder(SLOW)
        .file("html/burst/index.html", "burst\n")
        .file("html/teapot/index.html", "teapot\n")
        .file("html/dry/index.html", "dry\n")
        .file("html/none/index.html", "none\n")
        .start()
}

/// The excess a `limiting requests` line reports, in thousandths.
fn logged_excess(line: &str, prefix: &str) -> u64 {
    let start = line.find(prefix).expect("the prefix") + prefix.len();
    let number: String = line[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let (whole, fraction) = number.split_once('.').expect("three decimals");
    assert_eq!(fraction.len(), 3, "{line}");
    whole.parse::<u64>().expect("digits") * 1000 + fraction.parse::<u64>().expect("digits")
}

#[test]
fn requests_past_the_burst_are_refused_with_the_status_and_a_log_line() {
    let server = start_slow();
    for _ in 0..3 {
        let response = server.get("/burst/?k=a");
        assert_eq!(response.status, 200);
        assert_eq!(response.header("X-Limit"), Some("PASSED"));
    }
    let refused = server.get("/burst/?k=a");
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("X-Limit"), Some("REJECTED"));
    let line = server.wait_for_error_log("limiting requests");
    assert!(line.contains("[error]"), "{line}");
    assert!(line.contains(" by zone \"one\""), "{line}");
    // Three requests' worth, less what 1 r/m drained in the milliseconds between them.
    let excess = logged_excess(&line, "limiting requests, excess: ");
    assert!((2_990..=3_000).contains(&excess), "{line}");
    // Another key has its own bucket; an empty key is not accounted at all.
    assert_eq!(server.get("/burst/?k=b").status, 200);
    for _ in 0..5 {
        let response = server.get("/burst/");
        assert_eq!(response.status, 200);
        // nginx adds no header whose value is empty.
        assert_eq!(response.header("X-Limit"), None);
    }
    // A location without limit_req leaves the variable unset.
    assert_eq!(server.get("/none/?k=a").header("X-Limit"), None);
}

#[test]
fn limit_req_status_and_log_level_choose_the_answer_and_the_line() {
    let server = start_slow();
    assert_eq!(server.get("/teapot/?k=t").status, 200);
    let refused = server.get("/teapot/?k=t");
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("X-Limit"), Some("REJECTED"));
    let line = server.wait_for_error_log("limiting requests");
    assert!(line.contains("[warn]"), "{line}");
    assert!(line.contains("by zone \"one\""), "{line}");
}

#[test]
fn a_dry_run_serves_what_it_would_refuse_and_says_so() {
    let server = start_slow();
    assert_eq!(server.get("/dry/?k=d").header("X-Limit"), Some("PASSED"));
    let response = server.get("/dry/?k=d");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "dry\n");
    assert_eq!(response.header("X-Limit"), Some("REJECTED_DRY_RUN"));
    let line = server.wait_for_error_log("limiting requests, dry run, excess: ");
    assert!(line.contains("by zone \"one\""), "{line}");
    // What a dry run would refuse is not accounted: the bucket holds the first request
    // only, so a burst of 2 takes one more.
    assert_eq!(server.get("/burst/?k=d").status, 200);
}

/// Two requests a second: a request over `delay` waits about half a second per request
/// of excess.
const PACED: &str = r#"
limit_req_zone $arg_k zone=paced:1m rate=2r/s;
server {
    listen 127.0.0.1:8080;
    root html;
    add_header X-Limit "$limit_req_status" always;
    location /delay/ { limit_req zone=paced burst=5; }
    location /nodelay/ { limit_req zone=paced burst=5 nodelay; }
    location /partly/ { limit_req zone=paced burst=5 delay=2; }
    location /dry/ { limit_req zone=paced burst=5; limit_req_dry_run on; }
}
"#;

fn start_paced() -> Instance {
    let mut builder = Instance::http_builder(PACED);
    for directory in ["delay", "nodelay", "partly", "dry"] {
        builder = builder.file(&format!("html/{directory}/index.html"), directory);
    }
    builder.start()
}

/// Each request's status, `$limit_req_status` and how long it took.
fn timed(server: &Instance, path: &str, count: usize) -> Vec<(u16, String, Duration)> {
    (0..count)
        .map(|_| {
            let started = Instant::now();
            let response = server.get(path);
            let label = response.header("X-Limit").unwrap_or_default().to_owned();
            (response.status, label, started.elapsed())
        })
        .collect()
}

#[test]
fn burst_without_nodelay_spaces_requests_at_the_rate() {
    let server = start_paced();
    let results = timed(&server, "/delay/?k=a", 3);
    assert_eq!(results[0].0, 200);
    assert_eq!(results[0].1, "PASSED");
    assert!(results[0].2 < Duration::from_millis(400), "{results:?}");
    for (status, label, took) in &results[1..] {
        assert_eq!(*status, 200);
        assert_eq!(label, "DELAYED");
        // 1000 thousandths of excess at 2 r/s: 500 ms, less the few it drained.
        assert!(*took >= Duration::from_millis(400), "{results:?}");
        assert!(*took < Duration::from_secs(3), "{results:?}");
    }
    let line = server.wait_for_error_log("delaying request, excess: ");
    // Delays are logged one level below limit_req_log_level (error).
    assert!(line.contains("[warn]"), "{line}");
    assert!(line.contains(", by zone \"paced\""), "{line}");
}

#[test]
fn nodelay_serves_the_burst_at_once() {
    let server = start_paced();
    let started = Instant::now();
    let results = timed(&server, "/nodelay/?k=b", 4);
    for (status, label, _) in &results {
        assert_eq!(*status, 200);
        assert_eq!(label, "PASSED");
    }
    assert!(
        started.elapsed() < Duration::from_millis(450),
        "{results:?}"
    );
}

#[test]
fn delay_serves_that_many_at_once_and_spaces_the_rest() {
    let server = start_paced();
    let results = timed(&server, "/partly/?k=c", 4);
    for (status, label, took) in &results[..3] {
        assert_eq!(*status, 200);
        assert_eq!(label, "PASSED");
        assert!(*took < Duration::from_millis(400), "{results:?}");
    }
    assert_eq!(results[3].1, "DELAYED");
    assert!(results[3].2 >= Duration::from_millis(350), "{results:?}");
}

#[test]
fn a_dry_run_does_not_delay() {
    let server = start_paced();
    let results = timed(&server, "/dry/?k=d", 3);
    assert_eq!(results[0].1, "PASSED");
    for (status, label, took) in &results[1..] {
        assert_eq!(*status, 200);
        assert_eq!(label, "DELAYED_DRY_RUN");
        assert!(*took < Duration::from_millis(400), "{results:?}");
    }
    server.wait_for_error_log("delaying request, dry run, excess: ");
}

#[test]
fn a_client_that_leaves_during_a_delay_ends_its_request() {
    let server = start_paced();
    assert_eq!(server.get("/delay/?k=gone").status, 200);
    let mut client = server.connect();
    client.write("GET /delay/?k=gone HTTP/1.1\r\nHost: localhost\r\n\r\n");
    server.wait_read_by_server(&client);
    drop(client);
    let started = Instant::now();
    let line = server.wait_for_error_log("client prematurely closed connection");
    assert!(line.contains("[info] "), "{line}");
    // At once, not when the half-second delay is over.
    assert!(started.elapsed() < Duration::from_millis(450));
    let logged = server.wait_for_line("logs/access.log", " 499 ");
    assert!(logged.contains("GET /delay/?k=gone"), "{logged}");
}

#[test]
fn with_several_zones_the_last_decides_and_a_refusal_counts_in_none() {
    let server = Instance::http_builder(
        r#"
limit_req_zone $arg_a zone=a:32k rate=1r/m;
limit_req_zone $arg_b zone=b:32k rate=1r/m;
server {
    listen 127.0.0.1:8080;
    root html;
    location / {
        limit_req zone=a burst=3 nodelay;
        limit_req zone=b nodelay;
    }
}
"#,
    )
    .file("html/index.html", "both")
    .start();
    assert_eq!(server.get("/?a=x&b=1").status, 200);
    // `b` refuses its key's second request; `a` does not count it.
    assert_eq!(server.get("/?a=x&b=1").status, 503);
    server.wait_for_error_log("limiting requests, excess: 1.000 by zone \"b\"");
    // So `a` has three requests of burst left for `x`, then refuses.
    for key in 2..5 {
        assert_eq!(server.get(&format!("/?a=x&b={key}")).status, 200, "b={key}");
    }
    assert_eq!(server.get("/?a=x&b=9").status, 503);
    let line = server.wait_for_error_log("by zone \"a\"");
    let excess = logged_excess(&line, "limiting requests, excess: ");
    assert!((3_990..=4_000).contains(&excess), "{line}");
    // `b` was not asked about 9: its first request passes.
    assert_eq!(server.get("/?b=9").status, 200);
}

#[test]
fn every_worker_shares_the_zone() {
    let server = Instance::builder(
        r#"
worker_processes 4;
events {
}
http {
    limit_req_zone $arg_k zone=shared:32k rate=1r/m;
    server {
        listen 127.0.0.1:8080;
        root html;
        location / { limit_req zone=shared; }
    }
}
"#,
    )
    .file("html/index.html", "shared")
    .start();
    // Each request on a new connection, so that the workers take turns accepting: one
    // request of the key passes in all, whichever worker serves it.
    let statuses: Vec<u16> = (0..20)
        .map(|_| {
            let mut client = server.connect();
            let response = client
                .request("GET /?k=s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
            response.status
        })
        .collect();
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|status| **status == 503).count(),
        19,
        "{statuses:?}"
    );
}

#[test]
fn a_full_zone_forgets_its_oldest_key() {
    // A 32k zone has 7 pages: one holds the zone's name, one the tree's root, and a
    // key of 2100 bytes takes a page of its own, so five such keys fill it.
    let server = Instance::http_builder(
        r#"
limit_req_zone $arg_k zone=small:32k rate=1r/m;
limit_req_zone $arg_k zone=large:1m rate=1r/m;
server {
    listen 127.0.0.1:8080;
    root html;
    location /small { limit_req zone=small; }
    location /large { limit_req zone=large; }
}
"#,
    )
    .file("html/small", "small")
    .file("html/large", "large")
    .start();
    let key = |name: char| name.to_string().repeat(2100);
    for location in ["/small", "/large"] {
        let first = format!("{location}?k={}", key('a'));
        assert_eq!(server.get(&first).status, 200, "{location}");
        assert_eq!(server.get(&first).status, 503, "{location}");
        for name in ['b', 'c', 'd', 'e', 'f'] {
            let path = format!("{location}?k={}", key(name));
            assert_eq!(server.get(&path).status, 200, "{location} {name}");
        }
        let again = server.get(&first).status;
        if location == "/small" {
            // The sixth key found no room: the oldest entry, `a`, was freed for it.
            assert_eq!(again, 200);
        } else {
            assert_eq!(again, 503);
        }
    }
}

#[test]
fn a_reload_keeps_a_zone_of_the_same_name_and_size() {
    let config = |size: &str, body: &str| {
        format!(
            r#"
limit_req_zone $arg_k zone=one:{size} rate=1r/m;
server {{
    listen 127.0.0.1:8080;
    root html;
    location / {{ limit_req zone=one; add_header X-Generation {body}; }}
}}
"#
        )
    };
    let mut server = Instance::http_builder(&config("64k", "first"))
        .file("html/index.html", "index")
        .start();
    // A new key for every question, so that asking is never refused.
    let keys = std::cell::Cell::new(0u32);
    let generation = |server: &Instance| {
        keys.set(keys.get() + 1);
        let response = server.get(&format!("/?k=fresh{}", keys.get()));
        response
            .header("X-Generation")
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(server.get("/?k=a").status, 200);
    assert_eq!(server.get("/?k=a").status, 503);
    server.reload(&config("64k", "second"), |server| {
        generation(server) == "second"
    });
    // The key's bucket came through the reload.
    assert_eq!(server.get("/?k=a").status, 503);
    // Another size is another zone, empty.
    server.reload(&config("128k", "third"), |server| {
        generation(server) == "third"
    });
    assert_eq!(server.get("/?k=a").status, 200);
    // The same zone with another key is refused, as nginx refuses it.
    server.expect_log("[alert]");
    server.write_config(&config("128k", "fourth").replace("$arg_k zone", "$arg_j zone"));
    server.signal(rustix::process::Signal::HUP);
    let line = server.wait_for_error_log("uses the \"$arg_j\" key");
    assert!(
        line.contains(
            "limit_req \"one\" uses the \"$arg_j\" key while previously it used the \"$arg_k\" key"
        ),
        "{line}"
    );
    assert_eq!(generation(&server), "third");
}

#[test]
fn configuration_errors_are_nginx_s() {
    let zone = "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s;";
    let cases = [
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=0r/s;".to_owned(),
            "invalid rate \"rate=0r/s\"",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=fast;".to_owned(),
            "invalid rate \"rate=fast\"",
        ),
        (
            format!("{zone}\nlimit_req_zone $uri zone=one:1m rate=1r/s;"),
            "limit_req_zone \"one\" is already bound to key \"$binary_remote_addr\"",
        ),
        (
            format!("{zone}\nlimit_req_zone $uri zone=one:2m rate=1r/s;"),
            "the size 2097152 of shared memory zone \"one\" conflicts with already declared size 1048576",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1k rate=1r/s;".to_owned(),
            "zone \"zone=one:1k\" is too small",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one rate=1r/s;".to_owned(),
            "invalid zone size \"zone=one\"",
        ),
        (
            "limit_req_zone $binary_remote_addr rate=1r/s sync;".to_owned(),
            "\"limit_req_zone\" must have \"zone\" parameter",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s fast;".to_owned(),
            "invalid parameter \"fast\"",
        ),
        (
            format!("{zone}\nlimit_req zone=one burst=many;"),
            "invalid burst value \"burst=many\"",
        ),
        (
            format!("{zone}\nlimit_req zone=one delay=0;"),
            "invalid delay value \"delay=0\"",
        ),
        (
            format!("{zone}\nlimit_req burst=1;"),
            "\"limit_req\" must have \"zone\" parameter",
        ),
        (
            format!("{zone}\nlimit_req zone=one;\nlimit_req zone=one burst=2;"),
            "\"limit_req\" directive is duplicate",
        ),
        (
            format!("{zone}\nlimit_req_status 200;"),
            "value must be between 400 and 599",
        ),
        (
            format!("{zone}\nlimit_req_log_level crit;"),
            "invalid value \"crit\"",
        ),
        (
            format!("{zone}\nlimit_req_dry_run maybe;"),
            "invalid value \"maybe\" in \"limit_req_dry_run\" directive, it must be \"on\" or \"off\"",
        ),
        (
            "limit_conn_zone $uri zone=one:1m;\nlimit_req zone=one;".to_owned(),
            "the shared memory zone \"one\" is already declared for a different use",
        ),
    ];
    // nginx finds a zone nothing declared when it creates the zones: no file and line.
    assert_http_body_fails(
        "server { location / { limit_req zone=x; } }",
        "zero size shared memory zone \"x\"",
    );
    for (body, message) in cases {
        // Each error is on the body's last line; the body starts on line 4.
        let line = 4 + body.matches('\n').count();
        eprintln!("case: {body:?}");
        assert_http_body_fails(&body, &format!("{message} in {{conf}}:{line}"));
    }
}
