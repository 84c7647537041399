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

/// With `If-Range`, the response starts at the first slice (as nginx's does), then goes
/// on with the slice that holds the range: the slices between are not fetched, and the
/// first, not sent, is cached all the same.
#[test]
fn if_range_fetches_the_first_slice_and_the_one_with_the_range() {
    let body: Vec<u8> = (0..2500u32).map(|n| b'a' + (n % 26) as u8).collect();
    let server = Instance::http_builder(SLICED)
        .file("html/data.bin", &body)
        .start();
    let etag = server
        .request_to(
            8081,
            "GET /data.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .header("ETag")
        .expect("an ETag")
        .to_owned();
    let upstream = || {
        server
            .prefix()
            .read("logs/access.log")
            .lines()
            .filter(|line| line.contains("HTTP/1.0"))
            .count()
    };
    let request = format!(
        "GET /data.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Range: bytes=2100-2199\r\nIf-Range: {etag}\r\n\r\n"
    );
    let answer = server.request(&request);
    assert_eq!(answer.status, 206);
    assert_eq!(answer.body, &body[2100..2200]);
    wait_until("two slices fetched", PATIENCE, || upstream() == 2);
    let again = server.request(&request);
    assert_eq!(again.body, &body[2100..2200]);
    assert_eq!(again.header("X-Slice"), Some("bytes=0-999"));
    // Both slices came from the cache.
    wait_until("the client's lines", PATIENCE, || {
        server.prefix().read("logs/access.log").lines().count() >= 5
    });
    assert_eq!(upstream(), 2);
}

/// A filter that takes the body in (sub_filter) gets every slice, in order: a match
/// across two slices is found.
#[test]
fn sub_filter_takes_in_a_sliced_response() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8081;
            root html;
        }
        server {
            listen 127.0.0.1:8080;
            location / {
                slice 4;
                sub_filter foo bar;
                sub_filter_once off;
                sub_filter_types *;
                proxy_pass http://127.0.0.1:8081;
                proxy_set_header Range $slice_range;
            }
        }",
    )
    .file("html/t", "0foo456foo0123")
    .start();
    let answer = server.get("/t");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, b"0bar456bar0123");
}

/// A slice that does not fit ends a small response with nothing sent (nginx's output is
/// still held back then), whether it is the first slice or a later one.
#[test]
fn a_slice_that_does_not_fit_ends_the_response_with_nothing_sent() {
    let server = Instance::http_builder(
        r#"server {
            listen 127.0.0.1:8081;
            location /later {
                add_header Content-Range "bytes 0-1/100";
                if ($http_range = "bytes=2-3") {
                    return 200;
                }
                return 206 fo;
            }
            location /first {
                add_header Content-Range "bytes 0-2/100";
                return 206 foo;
            }
        }
        server {
            listen 127.0.0.1:8080;
            location / {
                slice 2;
                proxy_pass http://127.0.0.1:8081;
                proxy_set_header Range $slice_range;
            }
        }"#,
    )
    .start();
    for path in ["/later", "/first"] {
        let mut client = crate::support::Client::connect(server.port());
        client.write(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
        assert!(client.read_to_end().is_empty(), "{path}: nothing sent");
    }
    server.wait_for_error_log("unexpected status code 200 in slice response");
    server.wait_for_error_log("unexpected range in slice response: 0-2, expected: 0-1");
}
