//! What runs after a response is out, over HTTP/1.1 and over HTTP/2 alike: mirrors,
//! `post_action`, the background refresh of a stale cache entry
//! (`proxy_cache_background_update`), and `proxy_cache_use_stale updating` while a refresh
//! runs. Each scenario runs once per protocol on a fresh server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use http_types::Method;

use crate::proxy_cache::{asked, cached_proxy, ok, wait_stored};
use crate::support::h2;
use crate::support::upstream::MockUpstream;
use crate::support::{Client, Instance, PATIENCE, wait_until};

/// The protocol a scenario's requests use.
#[derive(Clone, Copy, Debug)]
enum Over {
    Http1,
    Http2,
}

const BOTH: [Over; 2] = [Over::Http1, Over::Http2];

/// An answer: status, `X-Cache`, body.
type Answer = (u16, String, String);

/// Sends `method path` (with `body`) over `over` on a new connection.
fn send(over: Over, port: u16, method: &str, path: &str, body: &'static [u8]) -> Answer {
    match over {
        Over::Http1 => {
            let request = format!(
                "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{}",
                body.len(),
                String::from_utf8_lossy(body)
            );
            let response = Client::connect(port).request(request);
            let cache = response.header("X-Cache").unwrap_or("").to_owned();
            (response.status, cache, response.body_text())
        }
        Over::Http2 => {
            let method = Method::from_bytes(method.as_bytes()).expect("a method");
            let body = (!body.is_empty()).then_some(body);
            let mut answers = h2::exchange(port, vec![h2::with_method(method, path, body)]);
            let answer = answers.pop().expect("an answer");
            let cache = answer
                .headers
                .get("x-cache")
                .map(|value| value.to_str().expect("ASCII").to_owned())
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&answer.body).into_owned();
            (answer.status, cache, text)
        }
    }
}

fn get(over: Over, port: u16, path: &str) -> Answer {
    send(over, port, "GET", path, b"")
}

const MIRROR_AND_POST_ACTION: &str = "
log_format sub \"$uri $request_body\";
server {
    listen 127.0.0.1:8080;
    http2 on;
    location /app {
        mirror /copy;
        post_action /notify;
        proxy_pass http://127.0.0.1:8081;
    }
    location = /copy {
        internal;
        log_subrequest on;
        access_log logs/mirror.log sub;
        proxy_pass http://127.0.0.1:8082;
    }
    location = /notify { proxy_pass http://127.0.0.1:8083; }
}";

/// An upstream that keeps every request it reads and answers `answer`.
fn recording(port: u16, answer: &'static str) -> (MockUpstream, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let upstream = MockUpstream::start(port, move |mut conn| {
        while let Some(request) = conn.read_request() {
            let text = String::from_utf8_lossy(&request).into_owned();
            kept.lock().expect("not poisoned").push(text);
            conn.write(answer);
        }
    });
    (upstream, seen)
}

fn count(seen: &Mutex<Vec<String>>) -> usize {
    seen.lock().expect("not poisoned").len()
}

/// The client gets the application's answer; the mirror gets a copy of the request with its
/// body and logs it, and `post_action` goes to its URI, once the response is out.
#[test]
fn mirrors_and_post_action_run_after_the_response() {
    for over in BOTH {
        let mut builder = Instance::http_builder(MIRROR_AND_POST_ACTION);
        let _app = MockUpstream::answering(
            builder.port(8081),
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nAPP",
        );
        let shadow = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nSHADOW";
        let (_mirror, copies) = recording(builder.port(8082), shadow);
        let hidden = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nHIDDEN";
        let (_notify, notified) = recording(builder.port(8083), hidden);
        let server = builder.start();
        let answer = send(over, server.port(), "POST", "/app?a=1", b"hello");
        assert_eq!((answer.0, answer.2.as_str()), (200, "APP"), "{over:?}");
        wait_until(&format!("{over:?}: the mirror's copy"), PATIENCE, || {
            count(&copies) == 1
        });
        wait_until(&format!("{over:?}: the post action"), PATIENCE, || {
            count(&notified) == 1
        });
        let copy = copies.lock().expect("not poisoned")[0].clone();
        assert!(copy.starts_with("POST /copy?a=1 "), "{over:?}: {copy}");
        assert!(
            copy.ends_with("hello"),
            "{over:?}: the body goes too: {copy}"
        );
        let notice = notified.lock().expect("not poisoned")[0].clone();
        assert!(notice.contains(" /notify"), "{over:?}: {notice}");
        server.wait_for_line("logs/mirror.log", "/copy hello");
    }
}

const BACKGROUND: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    http2 on;
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

/// Asks for `path` until the answer is not a HIT (the entry has expired), and returns it.
fn first_after_expiry(over: Over, port: u16, path: &str) -> Answer {
    let mut found = None;
    wait_until(&format!("{over:?}: the entry to expire"), PATIENCE, || {
        let answer = get(over, port, path);
        let expired = answer.1 != "HIT";
        if expired {
            found = Some(answer);
        }
        expired
    });
    found.expect("an answer after expiry")
}

/// `proxy_cache_background_update on`: the request that finds the entry expired gets it
/// at once as STALE, the refresh runs behind it, and the refreshed entry HITs afterwards.
#[test]
fn a_background_update_refreshes_after_a_stale_answer() {
    for over in BOTH {
        let answered = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&answered);
        let gate = crate::support::Gate::new();
        let held = gate.clone();
        let (server, upstream) = cached_proxy(BACKGROUND, move |_, number| {
            if number == 2 {
                held.wait();
                flag.store(true, Ordering::Release);
            }
            let fields = if number > 1 {
                "Cache-Control: max-age=60\r\n"
            } else {
                ""
            };
            ok(&format!("#{number}"), fields)
        });
        let port = server.port();
        let miss = get(over, port, "/bg");
        assert_eq!(
            (miss.1.as_str(), miss.2.as_str()),
            ("MISS", "#1"),
            "{over:?}"
        );
        let path = wait_stored(&server.prefix().join("cache"), "/bg");
        server.advance_clock(std::time::Duration::from_secs(2));
        let stale = first_after_expiry(over, port, "/bg");
        assert_eq!(
            (stale.1.as_str(), stale.2.as_str()),
            ("STALE", "#1"),
            "{over:?}"
        );
        assert!(
            !answered.load(Ordering::Acquire),
            "{over:?}: the stale answer did not wait for the refresh"
        );
        gate.open();
        wait_until(
            &format!("{over:?}: the background refresh"),
            PATIENCE,
            || asked(&upstream) == 2,
        );
        wait_until(&format!("{over:?}: the refreshed entry"), PATIENCE, || {
            std::fs::read(&path).is_ok_and(|bytes| bytes.ends_with(b"#2"))
        });
        // The index learns of the new file when its store completes on the worker.
        let mut answers = Vec::new();
        let found = crate::support::poll(PATIENCE, || {
            let answer = get(over, port, "/bg");
            let done = answer.2 == "#2";
            answers.push(answer);
            done.then_some(())
        });
        assert!(
            found.is_some(),
            "{over:?}: no HIT of the refreshed entry: {answers:?}"
        );
        let hit = answers.pop().expect("an answer");
        assert_eq!((hit.1.as_str(), hit.2.as_str()), ("HIT", "#2"), "{over:?}");
        assert_eq!(asked(&upstream), 2, "{over:?}");
    }
}

const UPDATING: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    http2 on;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1s;
        proxy_cache_use_stale updating;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `proxy_cache_use_stale updating`: while one request refreshes the expired entry from a
/// slow upstream, another is answered at once from the old entry as UPDATING.
#[test]
fn use_stale_updating_answers_during_a_refresh() {
    for over in BOTH {
        let gate = crate::support::Gate::new();
        let held = gate.clone();
        let (server, upstream) = cached_proxy(UPDATING, move |_, number| {
            if number == 2 {
                held.wait();
            }
            let fields = if number > 1 {
                "Cache-Control: max-age=60\r\n"
            } else {
                ""
            };
            ok(&format!("#{number}"), fields)
        });
        let port = server.port();
        assert_eq!(get(over, port, "/u").2, "#1", "{over:?}");
        wait_stored(&server.prefix().join("cache"), "/u");
        server.advance_clock(std::time::Duration::from_secs(2));
        let refresher = std::thread::spawn(move || first_after_expiry(over, port, "/u"));
        wait_until(
            &format!("{over:?}: the refresh to reach the upstream"),
            PATIENCE,
            || asked(&upstream) == 2,
        );
        let during = get(over, port, "/u");
        assert_eq!(
            (during.1.as_str(), during.2.as_str()),
            ("UPDATING", "#1"),
            "{over:?}"
        );
        gate.open();
        let refreshed = refresher.join().expect("the refreshing client");
        assert_eq!(
            (refreshed.1.as_str(), refreshed.2.as_str()),
            ("EXPIRED", "#2"),
            "{over:?}"
        );
        assert_eq!(asked(&upstream), 2, "{over:?}");
    }
}
