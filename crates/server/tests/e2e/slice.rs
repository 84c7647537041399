//! `slice` and `$slice_range`: a response fetched from the upstream in ranges of the slice
//! size, each its own cache entry, and sent as one response; the client's own range is cut
//! from the slices that hold it, which later requests find in the cache.

use crate::support::{Instance, PATIENCE, wait_until};

const SLICED: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8081;
    root %%PREFIX%%/html;
}
server {
    listen 127.0.0.1:8080;
    location / {
        slice 1000;
        proxy_pass http://127.0.0.1:8081;
        proxy_set_header Range $slice_range;
        proxy_cache one;
        proxy_cache_key $uri$slice_range;
        proxy_cache_valid 200 206 1h;
        add_header X-Slice $slice_range;
    }
}";

fn ranged(path: &str, range: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nRange: {range}\r\n\r\n")
}

/// The whole body comes from three slices; ranges across slices are cut from them; the
/// second time, every slice is a HIT (the upstream's access log does not grow).
#[test]
fn a_response_is_fetched_and_cached_in_slices() {
    let body: Vec<u8> = (0..2500u32).map(|n| b'a' + (n % 26) as u8).collect();
    let server = Instance::http_builder(SLICED)
        .file("html/data.bin", &body)
        .start();
    let logged = || server.prefix().read("logs/access.log").lines().count();
    let whole = server.get("/data.bin");
    assert_eq!(whole.status, 200);
    assert_eq!(whole.header("Content-Length"), Some("2500"));
    assert_eq!(whole.body, body);
    let across = server.request(ranged("/data.bin", "bytes=900-1100"));
    assert_eq!(across.status, 206);
    assert_eq!(across.header("Content-Range"), Some("bytes 900-1100/2500"));
    assert_eq!(across.body, &body[900..=1100]);
    let tail = server.request(ranged("/data.bin", "bytes=-5"));
    assert_eq!(tail.status, 206);
    assert_eq!(tail.body, &body[2495..]);
    // Three slices fetched for the first request, the range and the tail read them from
    // the cache: 3 upstream and 3 client lines.
    wait_until("the access log written", PATIENCE, || logged() == 6);
    let again = server.get("/data.bin");
    assert_eq!(again.body, body);
    wait_until("the client's line", PATIENCE, || logged() >= 7);
    assert_eq!(
        logged(),
        7,
        "every slice came from the cache: no upstream request"
    );
}
