//! `proxy_cache_use_stale updating` protects the upstream for as long as an expired entry
//! is being refreshed: until the new response is stored, not only until its head arrived.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::proxy_cache::{asked, wait_stored, x_cache};
use crate::support::upstream::MockUpstream;
use crate::support::{Instance, PATIENCE, wait_until};

const UPDATING: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1s;
        proxy_cache_use_stale updating;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// Bytes of the entry.
const SIZE: usize = 3 << 20;

/// An expired 3 MiB entry whose refresh comes at about 1 MiB/s (its head at once), and 10
/// clients 0.2 s apart while it comes: one request reaches the upstream (`EXPIRED`) and
/// the nine others get the stale entry (`UPDATING`), as with nginx. The refreshed entry
/// then HITs.
#[test]
fn updating_holds_until_the_refresh_is_stored() {
    let mut builder = Instance::http_builder(UPDATING).movable_clock();
    let count = Arc::new(AtomicUsize::new(0));
    let upstream = MockUpstream::start(builder.port(8081), move |mut conn| {
        while conn.read_request().is_some() {
            let number = count.fetch_add(1, Ordering::AcqRel) + 1;
            let fill = if number == 1 { b'1' } else { b'2' };
            // The refresh stays fresh for a minute (the first entry, for a second).
            let fresh = if number == 1 {
                ""
            } else {
                "Cache-Control: max-age=60\r\n"
            };
            conn.write(format!(
                "HTTP/1.1 200 OK\r\n{fresh}Content-Length: {SIZE}\r\n\r\n"
            ));
            if number == 1 {
                conn.write(vec![fill; SIZE]);
            } else {
                conn.write_slowly(&vec![fill; SIZE], 64 * 1024, Duration::from_millis(60));
            }
        }
    });
    let server = Arc::new(builder.start());
    let first = server.get("/u");
    assert_eq!(x_cache(&first), "MISS");
    let path = wait_stored(&server.prefix().join("cache"), "/u");
    server.advance_clock(Duration::from_millis(2100));
    let mut clients = Vec::new();
    for index in 0..10 {
        let server = Arc::clone(&server);
        clients.push(std::thread::spawn(move || {
            let response = server.get("/u");
            assert_eq!(response.status, 200, "client {index}");
            assert_eq!(response.body.len(), SIZE, "client {index}");
            (x_cache(&response).to_owned(), response.body[0])
        }));
        std::thread::sleep(Duration::from_millis(200));
    }
    let answers: Vec<(String, u8)> = clients
        .into_iter()
        .map(|client| client.join().expect("a client"))
        .collect();
    let statuses: Vec<&str> = answers.iter().map(|(status, _)| status.as_str()).collect();
    assert_eq!(statuses[0], "EXPIRED", "{statuses:?}");
    assert!(
        statuses[1..].iter().all(|status| *status == "UPDATING"),
        "{statuses:?}"
    );
    assert_eq!(answers[0].1, b'2', "the refresh's body");
    assert!(
        answers[1..].iter().all(|(_, byte)| *byte == b'1'),
        "the stale body"
    );
    assert_eq!(asked(&upstream), 2, "one refresh reached the upstream");
    wait_until("the refreshed entry", PATIENCE, || {
        std::fs::read(&path).is_ok_and(|bytes| bytes.last() == Some(&b'2'))
    });
    std::thread::sleep(Duration::from_millis(250));
    let hit = server.get("/u");
    assert_eq!((x_cache(&hit), hit.body[0]), ("HIT", b'2'));
    assert_eq!(asked(&upstream), 2);
}
