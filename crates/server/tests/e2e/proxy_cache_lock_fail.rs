//! `proxy_cache_lock` when the fill fails: with streaming waiters (the default
//! `proxy_cache_lock_stream on`), a real origin that closes mid-body or stalls past
//! `proxy_read_timeout` cuts the filler's own response, as nginx's, but every waiter still
//! gets the whole body: the fill is made again by one request for them all, and each
//! waiter finishes from it after checking that it is the same bytes. An origin whose new
//! answer differs cuts the waiters instead of mixing two bodies.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::proxy_cache::{asked, wait_stored, x_cache};
use crate::support::upstream::{MockUpstream, UpstreamConn};
use crate::support::{Instance, PATIENCE, wait_until};

const SIZE: usize = 1 << 20;

fn config(extra: &str) -> String {
    format!(
        "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {{
    listen 127.0.0.1:8080;
    location / {{
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1h;
        proxy_cache_lock on;
        {extra}
        add_header X-Cache $upstream_cache_status always;
    }}
}}"
    )
}

/// The body: bytes that differ from place to place, so a splice at the wrong offset shows.
fn body(version: u8) -> Vec<u8> {
    (0..SIZE)
        .map(|index| b'a' + ((index / 7 + usize::from(version)) % 26) as u8)
        .collect()
}

/// What the origin does with its first request, after the head and a quarter of the body.
#[derive(Clone, Copy)]
enum FirstAnswer {
    /// Closes the connection.
    Close,
    /// Sends nothing more for three seconds (past a `proxy_read_timeout` of one).
    Stall,
}

/// An origin whose first answer fails as `first` says, once `waiters_in` is set, and whose
/// later answers are whole: the body of `later_version` at its own pace.
fn origin(
    builder: &mut crate::support::Builder,
    first: FirstAnswer,
    later_version: u8,
    waiters_in: Arc<AtomicUsize>,
) -> MockUpstream {
    let count = Arc::new(AtomicUsize::new(0));
    MockUpstream::start(builder.port(8081), move |mut conn: UpstreamConn| {
        if conn.read_request().is_none() {
            return;
        }
        let number = count.fetch_add(1, Ordering::AcqRel) + 1;
        conn.write(format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\n\r\n"));
        if number > 1 {
            conn.write_slowly(&body(later_version), 64 * 1024, Duration::from_millis(5));
            return;
        }
        let whole = body(1);
        conn.write(&whole[..SIZE / 4]);
        // The waiters attach while this answer is under way.
        wait_until("the waiters to attach", PATIENCE, || {
            waiters_in.load(Ordering::Acquire) > 0
        });
        std::thread::sleep(Duration::from_millis(300));
        match first {
            FirstAnswer::Close => conn.close(),
            FirstAnswer::Stall => {
                std::thread::sleep(Duration::from_secs(3));
                conn.close();
            }
        }
    })
}

/// A whole answer: its status and body.
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// Sends `GET /f` and reads the answer to its end; `signal` is raised once its first
/// bytes are in. `Err` when the answer was cut.
fn fetch(port: u16, signal: Arc<AtomicUsize>) -> Result<Answer, String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .write_all(b"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut first = [0u8; 16 * 1024];
    let count = stream.read(&mut first).unwrap_or(0);
    signal.fetch_add(1, Ordering::AcqRel);
    let mut all = first[..count].to_vec();
    let ended = stream.read_to_end(&mut all);
    parse(&all).ok_or_else(|| format!("cut: {} bytes, {ended:?}", all.len()))
}

/// A whole answer with a `Content-Length` body, or `None` when cut.
fn parse(bytes: &[u8]) -> Option<Answer> {
    let head_end = crate::support::client::find(bytes, b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))?
        .trim()
        .parse()
        .ok()?;
    (bytes.len() - head_end == length).then(|| Answer {
        status,
        body: bytes[head_end..].to_vec(),
    })
}

/// What [`run`] gives: the server, its upstream, the filler's answer and the waiters'.
type Run = (
    Instance,
    MockUpstream,
    Result<Answer, String>,
    Vec<Result<Answer, String>>,
);

/// One filler and eight waiters against an origin whose first answer fails as `first`
/// says and whose second is `later_version`'s body; the filler's answer and the waiters'.
fn run(first: FirstAnswer, later_version: u8, extra: &str) -> Run {
    let waiters_in = Arc::new(AtomicUsize::new(0));
    let mut builder = Instance::http_builder(&config(extra));
    let upstream = origin(&mut builder, first, later_version, Arc::clone(&waiters_in));
    let mut server = builder.start();
    server.expect_log("[error]");
    let port = server.port();
    let filler = std::thread::spawn(move || fetch(port, Arc::new(AtomicUsize::new(0))));
    wait_until("the fill to start", PATIENCE, || asked(&upstream) == 1);
    // Each waiter has read a first part of the fill before it fails.
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            let waiters_in = Arc::clone(&waiters_in);
            std::thread::spawn(move || fetch(port, waiters_in))
        })
        .collect();
    let waiters = waiters
        .into_iter()
        .map(|waiter| waiter.join().expect("a waiter"))
        .collect();
    let filler = filler.join().expect("the filler");
    (server, upstream, filler, waiters)
}

fn assert_waiters_whole(waiters: &[Result<Answer, String>], version: u8) {
    let want = body(version);
    for (index, waiter) in waiters.iter().enumerate() {
        let response = waiter
            .as_ref()
            .unwrap_or_else(|error| panic!("waiter {index} was cut: {error}"));
        assert_eq!(response.status, 200, "waiter {index}");
        assert!(
            response.body == want,
            "waiter {index}: the whole body, right"
        );
    }
}

/// The origin closes the filler's connection mid-body: the filler's answer is cut (as
/// nginx's), the eight waiters get the whole body from one more upstream request, and the
/// entry is stored from it.
#[test]
fn a_fill_cut_by_the_origin_does_not_cut_its_waiters() {
    let (server, upstream, filler, waiters) = run(FirstAnswer::Close, 1, "");
    assert!(filler.is_err(), "the filler's own answer is cut");
    assert_waiters_whole(&waiters, 1);
    assert_eq!(
        asked(&upstream),
        2,
        "one more upstream request for all the waiters"
    );
    wait_stored(&server.prefix().join("cache"), "/f");
    let hit = server.get("/f");
    assert_eq!((x_cache(&hit), hit.body == body(1)), ("HIT", true));
}

/// The origin stalls past `proxy_read_timeout` (1s): the same, the waiters waiting out
/// the stall instead of being cut by it.
#[test]
fn a_fill_stalled_past_the_read_timeout_does_not_cut_its_waiters() {
    let (server, upstream, filler, waiters) = run(FirstAnswer::Stall, 1, "proxy_read_timeout 1s;");
    assert!(filler.is_err(), "the filler's own answer is cut");
    assert_waiters_whole(&waiters, 1);
    assert_eq!(asked(&upstream), 2);
    wait_stored(&server.prefix().join("cache"), "/f");
    assert_eq!(x_cache(&server.get("/f")), "HIT");
}

/// The origin's second answer is another body: a waiter never gets a mix of the two. Its
/// answer is cut, and the reason is logged at `error`.
#[test]
fn a_refill_with_other_bytes_cuts_the_waiters() {
    let (server, _upstream, filler, waiters) = run(FirstAnswer::Close, 2, "");
    assert!(filler.is_err());
    for (index, waiter) in waiters.iter().enumerate() {
        if let Ok(response) = waiter {
            // A waiter that had read nothing of the first body before the failure (none
            // here) could take the second whole; a mixed body never.
            assert!(
                response.body == body(2),
                "waiter {index}: a whole answer is one body"
            );
        }
    }
    assert!(
        waiters.iter().any(Result::is_err),
        "the waiters that read the first body are cut"
    );
    let line = server.wait_for_error_log("ended short");
    assert!(
        line.contains("[error]") && line.contains("differs"),
        "{line}"
    );
}
