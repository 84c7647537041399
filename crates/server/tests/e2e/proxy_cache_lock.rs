//! `proxy_cache_lock`, `proxy_cache_lock_timeout` and `proxy_cache_lock_age`: concurrent
//! misses of one key coalesced into one upstream request, a waiter that gives up after the
//! timeout (goes upstream itself, stores nothing), and one that takes over an old fill.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::proxy_cache::{asked, cached_proxy, ok, wait_stored, x_cache};
use crate::support::{Client, PATIENCE, get, wait_until};

fn config(lock_lines: &str) -> String {
    format!(
        "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {{
    listen 127.0.0.1:8080;
    location / {{
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1m;
        proxy_read_timeout 30s;
        {lock_lines}
        add_header X-Cache $upstream_cache_status always;
    }}
}}"
    )
}

/// Starts `count` clients on `GET PATH` at once; their (status, X-Cache, body) in order.
fn concurrent(
    port: u16,
    path: &str,
    count: usize,
) -> Vec<std::thread::JoinHandle<(u16, String, Vec<u8>)>> {
    (0..count)
        .map(|_| {
            let path = path.to_owned();
            std::thread::spawn(move || {
                let response = Client::connect(port).request(get(&path));
                (
                    response.status,
                    x_cache(&response).to_owned(),
                    response.body,
                )
            })
        })
        .collect()
}

/// 100 concurrent misses of one key with the lock on, against an upstream that thinks for
/// a second: one upstream request, and 100 identical 200s (one MISS, the others HITs).
#[test]
fn proxy_cache_lock_coalesces_concurrent_misses() {
    let body: String = (0..20_000)
        .map(|index| char::from(b'a' + (index % 26) as u8))
        .collect();
    let answer_body = body.clone();
    let (server, upstream) = cached_proxy(&config("proxy_cache_lock on;"), move |_, number| {
        std::thread::sleep(Duration::from_secs(1));
        ok(&format!("{number}:{answer_body}"), "")
    });
    let clients = concurrent(server.port(), "/hot", 100);
    let results: Vec<_> = clients
        .into_iter()
        .map(|client| client.join().expect("a client thread"))
        .collect();
    assert_eq!(results.len(), 100);
    let want = format!("1:{body}");
    for (status, _, received) in &results {
        assert_eq!(*status, 200);
        assert!(
            received == want.as_bytes(),
            "every client gets the one response's body"
        );
    }
    let misses = results
        .iter()
        .filter(|(_, cache, _)| cache == "MISS")
        .count();
    assert_eq!(
        misses,
        1,
        "one filler: {:?}",
        results.iter().map(|r| &r.1).collect::<Vec<_>>()
    );
    assert!(
        results
            .iter()
            .all(|(_, cache, _)| cache == "MISS" || cache == "HIT")
    );
    assert_eq!(asked(&upstream), 1, "exactly one upstream request");
}

/// Without the lock, the same concurrent misses each go upstream (what the lock saves).
#[test]
fn without_proxy_cache_lock_every_miss_goes_upstream() {
    let (server, upstream) = cached_proxy(&config("proxy_cache_lock off;"), |_, number| {
        std::thread::sleep(Duration::from_millis(500));
        ok(&format!("#{number}"), "")
    });
    let clients = concurrent(server.port(), "/cold", 5);
    for client in clients {
        let (status, cache, _) = client.join().expect("a client thread");
        assert_eq!((status, cache.as_str()), (200, "MISS"));
    }
    assert_eq!(asked(&upstream), 5);
}

/// `proxy_cache_lock_timeout 1s`: a waiter whose filler is still busy after a second goes
/// upstream itself, logs `cache lock timeout` at info, and its response is not stored (the
/// entry is the filler's, although the waiter's response came last).
#[test]
fn proxy_cache_lock_timeout_goes_upstream_uncached() {
    let (server, upstream) = cached_proxy(
        &config("proxy_cache_lock on; proxy_cache_lock_timeout 1s; proxy_cache_lock_age 30s;"),
        |_, number| {
            std::thread::sleep(Duration::from_secs(3));
            ok(&format!("#{number}"), "")
        },
    );
    let port = server.port();
    let filler = concurrent(port, "/slow", 1).pop().expect("one client");
    wait_until("the filler's request upstream", PATIENCE, || {
        asked(&upstream) == 1
    });
    let waiter = concurrent(port, "/slow", 1).pop().expect("one client");
    let (status, cache, body) = filler.join().expect("the filler");
    assert_eq!(
        (status, cache.as_str(), body.as_slice()),
        (200, "MISS", &b"#1"[..])
    );
    let (status, cache, body) = waiter.join().expect("the waiter");
    assert_eq!(
        (status, cache.as_str(), body.as_slice()),
        (200, "MISS", &b"#2"[..])
    );
    let line = server.wait_for_error_log("cache lock timeout");
    assert!(line.contains("[info]"), "{line}");
    let path = wait_stored(&server.prefix().join("cache"), "/slow");
    std::thread::sleep(Duration::from_millis(300));
    let stored = std::fs::read(&path).expect("the entry");
    assert!(stored.ends_with(b"#1"), "the entry is the filler's");
    let hit = server.get("/slow");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#1"));
    assert_eq!(asked(&upstream), 2);
}

/// `proxy_cache_lock_age 1s`: a fill older than a second lets a waiter send its own
/// request upstream (before the first one answered), well inside the lock timeout.
#[test]
fn proxy_cache_lock_age_lets_a_waiter_take_over() {
    let first_done = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&first_done);
    let (server, upstream) = cached_proxy(
        &config("proxy_cache_lock on; proxy_cache_lock_age 1s; proxy_cache_lock_timeout 20s;"),
        move |_, number| {
            if number == 1 {
                std::thread::sleep(Duration::from_secs(4));
                flag.store(true, Ordering::Release);
            }
            ok(&format!("#{number}"), "")
        },
    );
    let port = server.port();
    let filler = concurrent(port, "/aged", 1).pop().expect("one client");
    wait_until("the filler's request upstream", PATIENCE, || {
        asked(&upstream) == 1
    });
    let waiter = concurrent(port, "/aged", 1).pop().expect("one client");
    wait_until("the waiter's own upstream request", PATIENCE, || {
        asked(&upstream) == 2
    });
    assert!(
        !first_done.load(Ordering::Acquire),
        "the waiter went upstream before the first fill ended"
    );
    let (status, _, body) = waiter.join().expect("the waiter");
    assert_eq!((status, body.as_slice()), (200, &b"#2"[..]));
    let (status, _, body) = filler.join().expect("the filler");
    assert_eq!((status, body.as_slice()), (200, &b"#1"[..]));
    wait_stored(&server.prefix().join("cache"), "/aged");
    assert_eq!(x_cache(&server.get("/aged")), "HIT");
    assert_eq!(asked(&upstream), 2);
}

/// Waiters of a fill with a `Content-Length` read the entry while it is written (Portico's
/// streaming waiters, on by default): with the upstream holding the second half back, a
/// waiter already has most of the first half; both get the whole body once it is released.
#[test]
fn lock_waiters_read_a_fill_while_it_is_written() {
    const HALF: usize = 256 * 1024;
    let release = Arc::new(AtomicBool::new(false));
    let held = Arc::clone(&release);
    let mut builder = crate::support::Instance::http_builder(&config("proxy_cache_lock on;"));
    let upstream =
        crate::support::upstream::MockUpstream::start(builder.port(8081), move |mut conn| {
            if conn.read_request().is_some() {
                conn.write(format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                    2 * HALF
                ));
                conn.write(vec![b'1'; HALF]);
                wait_until("the test to release the body", PATIENCE, || {
                    held.load(Ordering::Acquire)
                });
                conn.write(vec![b'2'; HALF]);
            }
        });
    let server = builder.start();
    let read_ones = |port: u16, at_least: usize| {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        std::io::Write::write_all(
            &mut stream,
            b"GET /streamed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .expect("send the request");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("a read timeout");
        let mut received = Vec::new();
        let mut chunk = [0u8; 65536];
        while received.iter().filter(|byte| **byte == b'1').count() < at_least {
            let count =
                std::io::Read::read(&mut stream, &mut chunk).expect("bytes before the release");
            assert!(count > 0, "the connection ended early");
            received.extend_from_slice(&chunk[..count]);
        }
        (stream, received)
    };
    let (mut filler, mut filler_bytes) = read_ones(server.port(), HALF);
    // The filler writes its entry in batches: the waiter sees all but the last one.
    let (mut waiter, mut waiter_bytes) = read_ones(server.port(), HALF / 2);
    assert_eq!(asked(&upstream), 1, "the waiter did not go upstream");
    assert!(!release.load(Ordering::Acquire));
    release.store(true, Ordering::Release);
    std::io::Read::read_to_end(&mut filler, &mut filler_bytes).expect("the filler's rest");
    std::io::Read::read_to_end(&mut waiter, &mut waiter_bytes).expect("the waiter's rest");
    for received in [&filler_bytes, &waiter_bytes] {
        let body_start = crate::support::client::find(received, b"\r\n\r\n").expect("a head") + 4;
        assert_eq!(received.len() - body_start, 2 * HALF);
        assert!(received.ends_with(&[b'2'; 1024]));
    }
    assert_eq!(asked(&upstream), 1);
}

/// `proxy_cache_lock_stream off`: nginx's lock; a waiter gets nothing while the fill is
/// still being written, then the whole body from the entry once it is stored.
#[test]
fn proxy_cache_lock_stream_off_waits_for_the_whole_fill() {
    const HALF: usize = 256 * 1024;
    let release = Arc::new(AtomicBool::new(false));
    let held = Arc::clone(&release);
    let lines = "proxy_cache_lock on; proxy_cache_lock_stream off; proxy_cache_lock_timeout 30s;";
    let mut builder = crate::support::Instance::http_builder(&config(lines));
    let upstream =
        crate::support::upstream::MockUpstream::start(builder.port(8081), move |mut conn| {
            if conn.read_request().is_some() {
                conn.write(format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                    2 * HALF
                ));
                conn.write(vec![b'1'; HALF]);
                wait_until("the test to release the body", PATIENCE, || {
                    held.load(Ordering::Acquire)
                });
                conn.write(vec![b'2'; HALF]);
            }
        });
    let server = builder.start();
    let filler = concurrent(server.port(), "/whole", 1)
        .pop()
        .expect("one client");
    wait_until("the fill to start", PATIENCE, || asked(&upstream) == 1);
    let mut waiter = Client::connect(server.port()).with_timeout(Duration::from_secs(1));
    waiter.write(get("/whole"));
    assert!(
        waiter.stays_open_and_silent(Duration::from_secs(1)),
        "nothing for the waiter before the fill ends: {} bytes",
        waiter.pending().len()
    );
    release.store(true, Ordering::Release);
    waiter.timeout = PATIENCE;
    let response = waiter.read_response();
    assert_eq!((response.status, response.body.len()), (200, 2 * HALF));
    assert_eq!(x_cache(&response), "HIT");
    let (status, cache, body) = filler.join().expect("the filler");
    assert_eq!(
        (status, cache.as_str(), body.len()),
        (200, "MISS", 2 * HALF)
    );
    assert_eq!(asked(&upstream), 1);
}

/// A streaming waiter with one range gets its 206 as soon as the fill has written that
/// part, while the rest of the body is still held upstream; a waiter asking for two ranges
/// waits for the entry and gets nginx's multipart answer from it.
#[test]
fn lock_waiters_get_a_range_while_the_fill_is_written() {
    const HALF: usize = 256 * 1024;
    let release = Arc::new(AtomicBool::new(false));
    let held = Arc::clone(&release);
    let mut builder = crate::support::Instance::http_builder(&config("proxy_cache_lock on;"));
    let upstream =
        crate::support::upstream::MockUpstream::start(builder.port(8081), move |mut conn| {
            if conn.read_request().is_some() {
                conn.write(format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\n\r\n",
                    2 * HALF
                ));
                let first: Vec<u8> = (0..HALF).map(|i| b'a' + (i % 26) as u8).collect();
                conn.write(first);
                wait_until("the test to release the body", PATIENCE, || {
                    held.load(Ordering::Acquire)
                });
                conn.write(vec![b'2'; HALF]);
            }
        });
    let server = builder.start();
    let filler = concurrent(server.port(), "/ranged", 1)
        .pop()
        .expect("one client");
    wait_until("the fill to start", PATIENCE, || asked(&upstream) == 1);
    let range = |value: &str| {
        format!(
            "GET /ranged HTTP/1.1\r\nHost: x\r\nRange: bytes={value}\r\nConnection: close\r\n\r\n"
        )
    };
    // Bytes 1000-1099 are in the part already written: answered before the release.
    let mut one = Client::connect(server.port());
    one.write(range("1000-1099"));
    let response = one.read_response();
    assert!(!release.load(Ordering::Acquire));
    assert_eq!(response.status, 206);
    assert_eq!(
        response.header("Content-Range"),
        Some(format!("bytes 1000-1099/{}", 2 * HALF).as_str())
    );
    let expected: Vec<u8> = (1000..1100).map(|i| b'a' + (i % 26) as u8).collect();
    assert_eq!(response.body, expected);
    // Two ranges: nothing until the entry is stored, then a multipart body from it.
    let mut two = Client::connect(server.port()).with_timeout(Duration::from_secs(1));
    two.write(range("0-1,-2"));
    assert!(
        two.stays_open_and_silent(Duration::from_millis(500)),
        "a multipart waiter waits for the entry"
    );
    // A range past what is written waits for it.
    let mut late = Client::connect(server.port());
    late.write(range(&format!("{}-{}", HALF + 10, HALF + 19)));
    release.store(true, Ordering::Release);
    let late = late.read_response();
    assert_eq!((late.status, late.body.as_slice()), (206, &[b'2'; 10][..]));
    two.timeout = PATIENCE;
    let multipart = two.read_response();
    assert_eq!(multipart.status, 206);
    assert_eq!(x_cache(&multipart), "HIT");
    assert!(
        multipart
            .header("Content-Type")
            .is_some_and(|value| value.starts_with("multipart/byteranges; boundary=")),
        "{:?}",
        multipart.header("Content-Type")
    );
    let text = multipart.body_text();
    assert!(text.contains(&format!("Content-Range: bytes 0-1/{}\r\n\r\nab", 2 * HALF)));
    assert!(text.contains(&format!(
        "Content-Range: bytes {}-{}/{}\r\n\r\n22",
        2 * HALF - 2,
        2 * HALF - 1,
        2 * HALF
    )));
    let (status, _, body) = filler.join().expect("the filler");
    assert_eq!((status, body.len()), (200, 2 * HALF));
    assert_eq!(asked(&upstream), 1);
}
