//! `portico_metrics`: the Prometheus exposition. Counters move as requests are made, the
//! format follows `Accept`, `promtool` finds nothing to say about it, a pool's overflow
//! shows, and a worker held by a slow disk read (`aio off`) shows in its loop figures.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::slow_disk::{Evictor, SlowDisk};
use crate::support::{Client, Instance, PATIENCE, get, wait_until};

const CONF: &str = "
upstream backend {
    server 127.0.0.1:8081;
}
server {
    listen 127.0.0.1:8080;
    root html;
    location = /metrics { portico_metrics; }
    location /proxied { proxy_pass http://backend; }
}
server {
    listen 127.0.0.1:8081;
    return 200 'upstream';
}";

fn scrape(server: &Instance) -> String {
    let response = server.get("/metrics");
    assert_eq!(response.status, 200);
    response.body_text()
}

/// The value of the sample written exactly as `series` (name and labels).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
        .parse()
        .expect("a sample's value is a number")
}

#[test]
fn counters_move_as_requests_are_made() {
    let server = Instance::http_builder(CONF)
        .file("html/index.html", "index")
        .start();
    let before = scrape(&server);
    for _ in 0..3 {
        assert_eq!(server.get("/").status, 200);
    }
    assert_eq!(server.get("/proxied").body_text(), "upstream");
    let after = scrape(&server);
    let requests = "portico_http_requests_total";
    let accepted = "portico_connections_accepted_total";
    // Three requests, the proxied one and its upstream request (to this server too), and
    // the scrape itself.
    assert_eq!(value(&after, requests) - value(&before, requests), 6.0);
    assert_eq!(value(&after, accepted) - value(&before, accepted), 6.0);
    assert_eq!(value(&after, "portico_connections_active"), 1.0);
    assert_eq!(value(&after, "portico_connections{state=\"writing\"}"), 1.0);
    let peer = "{upstream=\"backend\",peer=\"127.0.0.1:%%PORT_8081%%\"}"
        .replace("%%PORT_8081%%", &server.port_of(8081).to_string());
    assert_eq!(
        value(
            &after,
            &format!("portico_upstream_peer_selected_total{peer}")
        ),
        1.0
    );
    let ok = peer.replace('}', ",code=\"2xx\"}");
    assert_eq!(
        value(
            &after,
            &format!("portico_upstream_peer_responses_total{ok}")
        ),
        1.0
    );
    assert_eq!(
        value(
            &after,
            &format!("portico_upstream_peer_headers_total{peer}")
        ),
        1.0
    );
    // One response: one head time and one connect time, each in its histogram.
    for family in [
        "portico_upstream_peer_header_duration_seconds",
        "portico_upstream_peer_connect_duration_seconds",
    ] {
        assert_eq!(value(&after, &format!("{family}_count{peer}")), 1.0);
        let all = peer.replace('}', ",le=\"+Inf\"}");
        assert_eq!(value(&after, &format!("{family}_bucket{all}")), 1.0);
        let none = peer.replace('}', ",le=\"0.001\"}");
        assert!(value(&after, &format!("{family}_bucket{none}")) <= 1.0);
    }
    let up = peer.replace('}', ",state=\"up\"}");
    assert_eq!(
        value(&after, &format!("portico_upstream_peer_state{up}")),
        1.0
    );
    // The request head written ("GET /proxied HTTP/1.0", Host, Connection) and the
    // response read (its head and the 8 bytes of "upstream").
    let sent = value(
        &after,
        &format!("portico_upstream_peer_sent_bytes_total{peer}"),
    );
    let received = value(
        &after,
        &format!("portico_upstream_peer_received_bytes_total{peer}"),
    );
    assert!((40.0..400.0).contains(&sent), "{after}");
    assert!((60.0..1000.0).contains(&received), "{after}");
    assert_eq!(
        value(&after, "portico_config_reloads_total{result=\"success\"}"),
        0.0
    );
    assert!(after.contains("portico_build_info{version=\""), "{after}");
    // The worker's CPU time, added at each tick of its 10 ms watch timer.
    let busy = "portico_worker_busy_seconds_total{worker=\"0\"}";
    let busier = crate::support::poll(PATIENCE, || {
        (value(&scrape(&server), busy) > value(&before, busy)).then_some(())
    });
    assert!(
        busier.is_some(),
        "the worker's busy time did not grow: {after}"
    );
    // The first scrape was rendered on the default pool: a task that waited and ran; this
    // one is running (its wait is counted, its run not yet).
    let pool = "{pool=\"default\",worker=\"0\"}";
    let runs = value(
        &after,
        &format!("portico_thread_pool_task_run_seconds_count{pool}"),
    );
    let waits = value(
        &after,
        &format!("portico_thread_pool_task_wait_seconds_count{pool}"),
    );
    assert!(runs >= 1.0 && waits == runs + 1.0, "{after}");
}

/// A peer that refuses connections becomes unavailable (`max_fails=1`) and the request
/// goes to the other, whose connection is kept: per peer, in the metrics and the API.
#[test]
fn peers_show_unavailability_bytes_and_idle_connections() {
    let server = Instance::http(
        "upstream pair {
            server 127.0.0.1:8082 max_fails=1 fail_timeout=60s;
            server 127.0.0.1:8081;
            keepalive 4;
        }
        server {
            listen 127.0.0.1:8080;
            location = /metrics { portico_metrics; }
            location /api/ { api; }
            location / {
                proxy_pass http://pair;
                proxy_http_version 1.1;
                proxy_set_header Connection \"\";
            }
        }
        server {
            listen 127.0.0.1:8081;
            return 200 'upstream';
        }",
    );
    assert_eq!(server.get("/first").body_text(), "upstream");
    let text = scrape(&server);
    let dead = format!(
        "{{upstream=\"pair\",peer=\"127.0.0.1:{}\"}}",
        server.port_of(8082)
    );
    let live = format!(
        "{{upstream=\"pair\",peer=\"127.0.0.1:{}\"}}",
        server.port_of(8081)
    );
    let series = |family: &str, peer: &str| value(&text, &format!("{family}{peer}"));
    assert_eq!(
        series("portico_upstream_peer_unavailable_total", &dead),
        1.0,
        "{text}"
    );
    assert_eq!(
        series("portico_upstream_peer_unavailable_total", &live),
        0.0,
        "{text}"
    );
    assert_eq!(
        series("portico_upstream_peer_sent_bytes_total", &dead),
        0.0,
        "{text}"
    );
    assert!(
        series("portico_upstream_peer_received_bytes_total", &live) > 8.0,
        "{text}"
    );
    assert_eq!(
        series("portico_upstream_peer_keepalive_connections", &live),
        1.0,
        "{text}"
    );
    assert_eq!(
        series("portico_upstream_peer_keepalive_connections", &dead),
        0.0,
        "{text}"
    );
    let api = server.get("/api/9/http/upstreams").body_text();
    assert!(api.contains("\"fails\":1,\"unavail\":1,"), "{api}");
    // Only the dead peer has neither sent nor received anything.
    assert_eq!(
        api.matches("\"sent\":0,\"received\":0,").count(),
        1,
        "{api}"
    );
}

#[test]
fn accept_chooses_openmetrics() {
    let server = Instance::http(CONF);
    let classic = server.get("/metrics");
    assert_eq!(
        classic.header("Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(
        classic
            .body_text()
            .contains("# TYPE portico_http_requests_total counter\n")
    );
    let open = server.request(
        "GET /metrics HTTP/1.0\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
    );
    assert_eq!(
        open.header("Content-Type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    let text = open.body_text();
    assert!(
        text.contains("# TYPE portico_http_requests counter\n"),
        "{text}"
    );
    assert!(text.contains("\nportico_http_requests_total "), "{text}");
    assert!(text.ends_with("\n# EOF\n"), "{text}");
    let post = server.request("POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(post.status, 405);
}

#[test]
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn promtool_finds_nothing_to_say() {
    if Command::new("promtool").arg("--version").output().is_err() {
        eprintln!("skipped: promtool is missing (Debian package prometheus)");
        return;
    }
    let server = Instance::http_builder(CONF).start();
    assert_eq!(server.get("/proxied").status, 200);
    let text = scrape(&server);
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child
        .stdin
        .take()
        .expect("a piped stdin")
        .write_all(text.as_bytes())
        .expect("promtool reads the exposition");
    let output = child.wait_with_output().expect("promtool ends");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool: {said}\n{text}");
    assert!(said.trim().is_empty(), "promtool: {said}");
}

#[test]
fn a_pool_overflow_is_counted() {
    let server = Instance::builder(
        "thread_pool one threads=1 max_queue=0;
        worker_processes 1;
        events {
        }
        http {
            server {
                listen 127.0.0.1:8080;
                root html;
                location / { aio threads=one; aio_nowait off; }
                location = /metrics { portico_metrics; }
                location /api { api; }
            }
        }",
    )
    .file("html/file.txt", "file\n")
    .start();
    assert_eq!(server.get("/file.txt").status, 500);
    assert_eq!(server.get("/file.txt").status, 500);
    let text = scrape(&server);
    let pool = "{pool=\"one\",worker=\"0\"}";
    assert_eq!(
        value(&text, &format!("portico_thread_pool_overflows_total{pool}")),
        2.0
    );
    assert_eq!(
        value(&text, &format!("portico_thread_pool_queue_capacity{pool}")),
        0.0
    );
    assert_eq!(
        value(&text, &format!("portico_thread_pool_threads{pool}")),
        1.0
    );
    // Portico's own section of the API says the same.
    let api = server.get("/api/9/portico/thread_pools").body_text();
    assert!(
        api.contains("\"one\":[{\"worker\":0,\"threads\":1,\"queue_capacity\":0,\"queued\":0,"),
        "{api}"
    );
    assert!(api.contains("\"tasks\":0,\"overflows\":2,"), "{api}");
    let loops = server.get("/api/9/portico/workers").body_text();
    assert!(
        loops.starts_with("[{\"id\":0,\"loop_stalls\":{\"10ms\":"),
        "{loops}"
    );
    server.wait_for_error_log("queue overflow");
}

#[test]
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn a_worker_held_by_a_slow_read_shows_in_its_loop_figures() {
    const FILE_BYTES: usize = 8 * 1024 * 1024;
    let body: Vec<u8> = (0..FILE_BYTES as u32)
        .map(|index| (index.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location /files/ { root html; aio off; sendfile off; output_buffers 1 1m; }
            location = /metrics { portico_metrics; }
        }",
    )
    .file("html/files/big.bin", &body)
    .start();
    let path = server.prefix().join("html/files/big.bin");
    let _disk = match SlowDisk::throttle(server.pid(), &path, 4 * 1024 * 1024) {
        Ok(disk) => disk,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let evictor = match Evictor::start(&path, Duration::from_millis(20)) {
        Ok(evictor) => evictor,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    // Once the server sends 8 MiB from page cache within the first 20 ms (it reads into
    // buffers it does not zero), the request must start after a drop to meet the disk.
    evictor.wait_evicted(&path);
    let response = Client::connect(server.port())
        .with_timeout(Duration::from_secs(60))
        .request(get("/files/big.bin"));
    assert_eq!(response.body.len(), FILE_BYTES);
    let text = scrape(&server);
    let worker = "{worker=\"0\"}";
    let stalls = "portico_worker_loop_stalls_total{worker=\"0\",min_seconds=\"0.1\"}";
    assert!(value(&text, stalls) >= 1.0, "{text}");
    let fast = value(
        &text,
        "portico_worker_loop_lag_seconds_bucket{worker=\"0\",le=\"0.1\"}",
    );
    let all = value(
        &text,
        &format!("portico_worker_loop_lag_seconds_count{worker}"),
    );
    assert!(all > fast, "no tick later than 0.1 s: {text}");
    let blocked = value(
        &text,
        &format!("portico_worker_blocking_file_seconds_total{worker}"),
    );
    assert!(blocked >= 0.1, "{text}");
}

#[test]
fn cache_zones_show_their_size() {
    let server = Instance::http_builder(
        "proxy_cache_path cache/one keys_zone=one:1m max_size=10m;
        server {
            listen 127.0.0.1:8080;
            location = /metrics { portico_metrics; }
            location = /api/9/http/caches { api; }
            location /cached { proxy_pass http://127.0.0.1:8081; proxy_cache one; }
        }",
    )
    .start();
    let zone = "{zone=\"one\"}";
    let text = scrape(&server);
    assert_eq!(
        value(&text, &format!("portico_cache_max_size_bytes{zone}")),
        10_485_760.0
    );
    assert_eq!(value(&text, &format!("portico_cache_entries{zone}")), 0.0);
    assert_eq!(
        value(&text, &format!("portico_cache_size_bytes{zone}")),
        0.0
    );
    assert!(
        value(&text, &format!("portico_cache_entries_max{zone}")) > 1000.0,
        "{text}"
    );
    let api = server.get("/api/9/http/caches").body_text();
    assert!(
        api.starts_with("{\"one\":{\"size\":0,\"max_size\":10485760,"),
        "{api}"
    );
}

#[test]
fn status_zones_count_requests_by_class_and_duration() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root html;
            status_zone site;
            location / { }
            location /other { status_zone other; return 503; }
            location = /dropped { return 444; }
            location = /slow.txt { limit_rate 100; }
        }
        server {
            listen 127.0.0.1:8081;
            location = /metrics { portico_metrics; }
            location /api { api; }
        }",
    )
    .file("html/index.html", "index")
    .file("html/slow.txt", "x".repeat(4000))
    .start();
    // A request under way counts as processing in its server zone until it is over.
    let mut slow = server.connect();
    slow.write("GET /slow.txt HTTP/1.0\r\n\r\n");
    let zones = || {
        server
            .request_to(8081, "GET /api/9/http/server_zones HTTP/1.0\r\n\r\n")
            .body_text()
    };
    wait_until("the slow request counts as processing", PATIENCE, || {
        zones().starts_with("{\"site\":{\"processing\":1,")
    });
    drop(slow);
    wait_until("the slow request is over", PATIENCE, || {
        zones().starts_with("{\"site\":{\"processing\":0,\"requests\":1,")
    });
    assert_eq!(server.get("/").status, 200);
    assert_eq!(server.get("/missing").status, 404);
    assert_eq!(server.get("/other").status, 503);
    // `return 444` closes without a response: discarded, in no status class.
    let mut dropped = server.connect();
    dropped.write("GET /dropped HTTP/1.0\r\n\r\n");
    dropped.expect_closed_without_response();
    let response = server.request_to(8081, "GET /metrics HTTP/1.0\r\n\r\n");
    let text = response.body_text();
    // A request counts in its server's zone and in its location's own zone, as NGINX Plus
    // counts server and location zones.
    assert_eq!(
        value(&text, "portico_zone_requests_total{zone=\"site\"}"),
        5.0
    );
    assert_eq!(
        value(&text, "portico_zone_discarded_total{zone=\"site\"}"),
        1.0
    );
    assert_eq!(value(&text, "portico_zone_processing{zone=\"site\"}"), 0.0);
    let site =
        |code: &str| format!("portico_zone_responses_total{{zone=\"site\",code=\"{code}\"}}");
    assert_eq!(value(&text, &site("2xx")), 2.0);
    assert_eq!(value(&text, &site("4xx")), 1.0);
    assert_eq!(value(&text, &site("5xx")), 1.0);
    let other = "portico_zone_responses_total{zone=\"other\",code=\"5xx\"}";
    assert_eq!(value(&text, other), 1.0);
    let count = "portico_zone_request_duration_seconds_count{zone=\"site\"}";
    assert_eq!(value(&text, count), 5.0);
    assert!(value(&text, "portico_zone_sent_bytes_total{zone=\"site\"}") > 100.0);
    assert!(value(&text, "portico_zone_received_bytes_total{zone=\"site\"}") > 10.0);
    let api = server
        .request_to(8081, "GET /api/9/http/server_zones HTTP/1.0\r\n\r\n")
        .body_text();
    assert!(
        api.starts_with(
            "{\"site\":{\"processing\":0,\"requests\":5,\"responses\":{\"1xx\":0,\"2xx\":2,"
        ),
        "{api}"
    );
    assert!(api.contains("\"total\":4},\"discarded\":1,"), "{api}");
    assert!(!api.contains("\"other\""), "{api}");
    let locations = server
        .request_to(8081, "GET /api/9/http/location_zones HTTP/1.0\r\n\r\n")
        .body_text();
    assert!(
        locations.starts_with("{\"other\":{\"requests\":1,\"responses\":{\"1xx\":0,"),
        "{locations}"
    );
    assert!(locations.contains("\"5xx\":1,"), "{locations}");
}

#[test]
fn a_second_status_zone_at_one_level_is_refused() {
    crate::support::cli::assert_http_body_fails(
        "server { status_zone a; status_zone b; }",
        "\"status_zone\" directive is duplicate in {conf}:4",
    );
}

#[test]
fn counters_go_on_across_reloads() {
    let config = |answer: &str| {
        format!(
            "server {{
                listen 127.0.0.1:8080;
                status_zone site;
                location = /metrics {{ portico_metrics; }}
                location / {{ return 200 '{answer}'; }}
            }}"
        )
    };
    let mut server = Instance::http(&config("old"));
    for _ in 0..5 {
        assert_eq!(server.get("/").body_text(), "old");
    }
    let before = scrape(&server);
    server.reload(&config("new"), |server| {
        server.get("/").body_text() == "new"
    });
    // The old generation's worker ("worker 1.0") exits once its connections are gone;
    // what it counted stays, in the registry's retired sums.
    let threads = format!("/proc/{}/task", server.pid());
    let old_worker_gone = crate::support::poll(crate::support::PATIENCE, || {
        let names: Vec<String> = std::fs::read_dir(&threads)
            .ok()?
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
            .collect();
        (!names.iter().any(|name| name.trim() == "worker 1.0")).then_some(())
    });
    assert!(old_worker_gone.is_some(), "the old worker never exited");
    let old_gone = scrape(&server);
    assert_eq!(
        value(
            &old_gone,
            "portico_config_reloads_total{result=\"success\"}"
        ),
        1.0
    );
    for series in [
        "portico_http_requests_total",
        "portico_connections_accepted_total",
        "portico_zone_requests_total{zone=\"site\"}",
    ] {
        assert!(
            value(&old_gone, series) > value(&before, series),
            "{series}: {old_gone}"
        );
    }
    server.reload_expect_failure("server { listen 127.0.0.1:8080; bad_directive; }");
    let failed = crate::support::poll(crate::support::PATIENCE, || {
        let text = scrape(&server);
        (value(&text, "portico_config_reloads_total{result=\"failure\"}") == 1.0).then_some(())
    });
    assert!(failed.is_some(), "the failed reload is counted");
}

#[test]
fn file_bytes_are_counted_by_who_moved_them() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root html;
            location /threads/ { alias html/; aio threads; }
            location /nowait-off/ { alias html/; aio threads; aio_nowait off; }
            location /off/ { alias html/; aio off; }
            location = /metrics { portico_metrics; }
        }",
    )
    .file("html/data.bin", vec![7u8; 100_000])
    .start();
    let route = |route: &str| {
        format!("portico_worker_file_body_bytes_total{{worker=\"0\",route=\"{route}\"}}")
    };
    let moved = |path: &str, which: &str| {
        let before = value(&scrape(&server), &route(which));
        assert_eq!(server.get(path).body.len(), 100_000, "{path}");
        value(&scrape(&server), &route(which)) - before
    };
    let nowait = "portico_worker_residency_answers_total{worker=\"0\",test=\"nowait_read\",\
                  answer=\"cached\"}";
    let reads =
        "portico_thread_pool_tasks_by_kind_total{pool=\"default\",worker=\"0\",kind=\"read\"}";
    let before = scrape(&server);
    // Just written, so in page cache: the worker reads it without waiting.
    assert_eq!(moved("/threads/data.bin", "cached_on_worker"), 100_000.0);
    let after = scrape(&server);
    assert!(value(&after, nowait) > value(&before, nowait), "{after}");
    assert_eq!(value(&after, reads), value(&before, reads), "{after}");
    assert_eq!(moved("/nowait-off/data.bin", "pool"), 100_000.0);
    assert!(value(&scrape(&server), reads) > value(&after, reads));
    assert_eq!(moved("/off/data.bin", "aio_off"), 100_000.0);
}

/// `sendfile off` under `aio threads`, on a file whose page-cache state the worker can see
/// (one it could write): each piece is asked about, so a piece not cached goes to the pool
/// and the next cached one is still read on the worker. Pieces 0 and 2 of four are cached.
#[test]
fn the_pieces_of_a_visible_file_are_asked_about_one_by_one() {
    use std::os::unix::fs::{FileExt, PermissionsExt};
    const PIECE: usize = 64 * 1024;
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / { root html; aio threads; sendfile off; output_buffers 1 64k; }
            location = /metrics { portico_metrics; }
        }",
    )
    .file("html/striped.bin", vec![5u8; 4 * PIECE])
    .start();
    let path = server.prefix().join("html/striped.bin");
    // Writable by the workers' user (`nobody` under root), so mincore answers them.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    file.sync_all().unwrap();
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    // No readahead on this descriptor: only the pieces read come into page cache.
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random).unwrap();
    let mut piece = vec![0u8; PIECE];
    for index in [0, 2] {
        file.read_exact_at(&mut piece, (index * PIECE) as u64)
            .unwrap();
    }
    let cached: Vec<bool> = (0..4)
        .map(|index| {
            runtime::sys::linux::range_in_core(&file, (index * PIECE) as u64, PIECE as u64)
                .unwrap_or(false)
        })
        .collect();
    if cached != [true, false, true, false] {
        eprintln!("skipped: page cache does not keep the stripes here (tmpfs?): {cached:?}");
        return;
    }
    let route = |route: &str| {
        format!("portico_worker_file_body_bytes_total{{worker=\"0\",route=\"{route}\"}}")
    };
    let before = scrape(&server);
    assert_eq!(server.get("/striped.bin").body.len(), 4 * PIECE);
    let after = scrape(&server);
    let moved = |which: &str| value(&after, &route(which)) - value(&before, &route(which));
    let (worker, pool) = (moved("cached_on_worker"), moved("pool"));
    assert_eq!(worker + pool, (4 * PIECE) as f64);
    let hints = |answer: &str| {
        let series = format!(
            "portico_worker_residency_answers_total{{worker=\"0\",test=\"mincore\",answer=\"{answer}\"}}"
        );
        value(&after, &series) - value(&before, &series)
    };
    assert_eq!(hints("cached") + hints("not_cached"), 4.0, "{after}");
    assert!(hints("not_cached") >= 1.0, "{after}");
    // Readahead by the pool's reads may cache piece 3 before it is asked about; the two
    // cached pieces are read on the worker whatever happens to the others.
    assert!(worker >= (2 * PIECE) as f64, "worker {worker}, pool {pool}");
    assert!(pool >= PIECE as f64, "worker {worker}, pool {pool}");
}

/// A server whose `/` is cached in zone `one` (1 minute), with `/metrics` and the caches'
/// API, in front of an upstream answering `hello` (5 bytes, with its length) to everything.
fn cached_hello() -> (Instance, crate::support::upstream::MockUpstream) {
    let mut builder = Instance::http_builder(
        "proxy_cache_path cache/one keys_zone=one:1m;
        server {
            listen 127.0.0.1:8080;
            location = /metrics { portico_metrics; }
            location = /api/9/http/caches { api; }
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_cache one;
                proxy_cache_valid 1m;
            }
        }",
    );
    let upstream = crate::support::upstream::MockUpstream::start(builder.port(8081), |mut conn| {
        while conn.read_request().is_some() {
            conn.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        }
    });
    (builder.start(), upstream)
}

/// A response whose body is all in when it is stored (its length known, no request
/// waiting for the fill) becomes an entry in one pool task: made, written and renamed.
#[test]
fn a_small_entry_is_stored_in_one_pool_task() {
    let (server, _upstream) = cached_hello();
    let writes =
        "portico_thread_pool_tasks_by_kind_total{pool=\"default\",worker=\"0\",kind=\"write\"}";
    let before = value(&scrape(&server), writes);
    assert_eq!(server.get("/page").body, b"hello");
    let stored = crate::support::poll(PATIENCE, || {
        (crate::proxy_cache::files_under(&server.prefix().join("cache/one")).len() == 1)
            .then_some(())
    });
    assert!(stored.is_some(), "one entry on disk");
    // A task is counted just after it returns: wait for the count, then check it.
    let counted = crate::support::poll(PATIENCE, || {
        let delta = value(&scrape(&server), writes) - before;
        (delta >= 1.0).then_some(delta)
    });
    assert_eq!(counted, Some(1.0));
}

/// A cache zone's responses by `$upstream_cache_status`, in the metrics and the API.
#[test]
fn cache_zones_count_responses_by_status() {
    let (server, _upstream) = cached_hello();
    for _ in 0..3 {
        assert_eq!(server.get("/page").body, b"hello");
    }
    let counted = |text: &str, status: &str| {
        value(
            text,
            &format!("portico_cache_responses_total{{zone=\"one\",status=\"{status}\"}}"),
        )
    };
    let mut text = scrape(&server);
    // The third response is logged just after it is sent.
    for _ in 0..50 {
        if counted(&text, "hit") == 2.0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        text = scrape(&server);
    }
    assert_eq!(counted(&text, "miss"), 1.0, "{text}");
    assert_eq!(counted(&text, "hit"), 2.0, "{text}");
    assert_eq!(
        value(
            &text,
            "portico_cache_response_bytes_total{zone=\"one\",status=\"hit\"}"
        ),
        10.0
    );
    let api = server.get("/api/9/http/caches").body_text();
    assert!(
        api.contains("\"hit\":{\"responses\":2,\"bytes\":10}"),
        "{api}"
    );
    assert!(
        api.contains("\"miss\":{\"responses\":1,\"bytes\":5}"),
        "{api}"
    );
}
