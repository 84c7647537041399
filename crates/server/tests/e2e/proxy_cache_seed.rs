//! The seed's showcase: one cache and one thread pool per disk, chosen by `split_clients`,
//! with `aio threads=pool_$disk` and `sendfile on`. Its config (with the `events` block and
//! the `upstream` it lacks) passes `-t`; run on three directories, every key lands in the
//! directory its `split_clients` bucket names, is a MISS once and a HIT after. Then the
//! conditional requests a HIT answers itself.

use crate::proxy_cache::{asked, cached_proxy, entry_path, ok, request, wait_stored, x_cache};
use crate::support::Instance;
use crate::support::cli::test_config;

/// The seed's config as printed, with what nginx also needs: `events {}` and the upstream.
const SEED: &str = "
thread_pool pool_1 threads=16;  thread_pool pool_2 threads=16;  thread_pool pool_3 threads=16;
events {}
http {
    upstream backend { server 127.0.0.1:9; }
    proxy_cache_path disk1 levels=1:2 keys_zone=cache_1:256m max_size=1024G use_temp_path=off;
    proxy_cache_path disk2 levels=1:2 keys_zone=cache_2:256m max_size=1024G use_temp_path=off;
    proxy_cache_path disk3 levels=1:2 keys_zone=cache_3:256m max_size=1024G use_temp_path=off;
    split_clients $request_uri $disk { 33.3% 1; 33.3% 2; * 3; }
    server {
        location / {
            proxy_pass http://backend;
            proxy_cache_key $request_uri;
            proxy_cache cache_$disk;
            aio threads=pool_$disk;
            sendfile on;
        }
    }
}";

/// `portico -t` passes the seed's configuration.
#[test]
fn the_seed_configuration_passes_the_config_test() {
    let (_, output) = test_config(SEED);
    output.assert_code(0);
    assert!(
        output.stderr.contains("test is successful"),
        "{}",
        output.stderr
    );
}

const THREE_DISKS: &str = "
thread_pool pool_1 threads=2;
thread_pool pool_2 threads=2;
thread_pool pool_3 threads=2;
worker_processes 1;
events {}
http {
    proxy_cache_path %%PREFIX%%/disk1 levels=1:2 keys_zone=cache_1:1m use_temp_path=off;
    proxy_cache_path %%PREFIX%%/disk2 levels=1:2 keys_zone=cache_2:1m use_temp_path=off;
    proxy_cache_path %%PREFIX%%/disk3 levels=1:2 keys_zone=cache_3:1m use_temp_path=off;
    split_clients $request_uri $disk { 33.3% 1; 33.3% 2; * 3; }
    server {
        listen 127.0.0.1:8080;
        location / {
            proxy_pass http://127.0.0.1:8081;
            proxy_cache_key $request_uri;
            proxy_cache cache_$disk;
            proxy_cache_valid 200 1h;
            aio threads=pool_$disk;
            sendfile on;
            add_header X-Cache $upstream_cache_status always;
            add_header X-Disk $disk always;
        }
    }
}";

/// Thirty keys over the three disks: each is stored under the directory of its bucket
/// (and under no other), then HITs with the same body; all three disks are used.
#[test]
fn the_seed_spreads_keys_over_three_disks() {
    let mut builder = Instance::builder(THREE_DISKS);
    let upstream = crate::proxy_cache::origin(builder.port(8081), |request, _| {
        let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
        ok(&path.repeat(500), "")
    });
    let server = builder.start();
    let mut used = [false; 3];
    for index in 0..30 {
        let path = format!("/object/{index}");
        let miss = server.get(&path);
        assert_eq!((miss.status, x_cache(&miss)), (200, "MISS"), "{path}");
        let disk: usize = miss
            .header("X-Disk")
            .and_then(|disk| disk.parse().ok())
            .expect("X-Disk");
        used[disk - 1] = true;
        wait_stored(&server.prefix().join(&format!("disk{disk}")), &path);
        for other in (1..=3).filter(|other| *other != disk) {
            assert!(!entry_path(&server.prefix().join(&format!("disk{other}")), &path).exists());
        }
        let hit = server.get(&path);
        assert_eq!(
            (x_cache(&hit), hit.header("X-Disk")),
            ("HIT", Some(disk.to_string().as_str()))
        );
        assert_eq!(hit.body, miss.body, "{path}");
    }
    assert_eq!(used, [true; 3], "split_clients uses every disk");
    assert_eq!(asked(&upstream), 30);
}

const CONDITIONAL: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1h;
        add_header X-Cache $upstream_cache_status always;
    }
}";

fn conditional_proxy(modified: &'static str) -> (Instance, crate::support::upstream::MockUpstream) {
    cached_proxy(CONDITIONAL, move |_, number| {
        ok(
            &format!("#{number}"),
            &format!("Last-Modified: {modified}\r\nETag: \"e1\"\r\n"),
        )
    })
}

/// A conditional request for a stored response is answered by the cache: 304 when its
/// `If-None-Match` or `If-Modified-Since` matches, the whole entry when it does not.
#[test]
fn conditional_requests_are_answered_from_the_cache() {
    let modified = "Tue, 03 Jan 2023 10:00:00 GMT";
    let (server, upstream) = conditional_proxy(modified);
    assert_eq!(x_cache(&server.get("/c")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/c");
    let matching = server.request(request("GET", "/c", "If-None-Match: \"e1\"\r\n"));
    assert_eq!((matching.status, x_cache(&matching)), (304, "HIT"));
    let since = server.request(request(
        "GET",
        "/c",
        &format!("If-Modified-Since: {modified}\r\n"),
    ));
    assert_eq!((since.status, x_cache(&since)), (304, "HIT"));
    let other = server.request(request("GET", "/c", "If-None-Match: \"other\"\r\n"));
    assert_eq!(
        (other.status, x_cache(&other), other.body_text().as_str()),
        (200, "HIT", "#1")
    );
    assert_eq!(asked(&upstream), 1);
}

/// A conditional MISS: the client's `If-None-Match` goes upstream with the fill (RFC 9111
/// section 4.3.2); an upstream that answers the whole response anyway fills the entry,
/// the client gets its 304 from it (the not-modified filter), and the next request HITs.
/// (An upstream's own 304 is in `proxy_cache_rfc9111.rs`.)
#[test]
fn a_conditional_miss_is_stored_whole() {
    let (server, upstream) = conditional_proxy("Tue, 03 Jan 2023 10:00:00 GMT");
    let first = server.request(request("GET", "/c", "If-None-Match: \"e1\"\r\n"));
    assert_eq!((first.status, x_cache(&first)), (304, "MISS"));
    let sent = &upstream.requests()[0];
    assert!(
        sent.contains("If-None-Match: \"e1\""),
        "the client's validator goes with the fill: {sent}"
    );
    wait_stored(&server.prefix().join("cache"), "/c");
    let hit = server.get("/c");
    assert_eq!(
        (hit.status, x_cache(&hit), hit.body_text().as_str()),
        (200, "HIT", "#1")
    );
    assert_eq!(asked(&upstream), 1);
}
