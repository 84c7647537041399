//! The cache across a real `kill -9` in the middle of fills: the temporary files the
//! crash leaves under `proxy_temp_path` (nginx never removes them either) must not stop
//! the next run from storing, nor cut its responses short, and every response completed
//! before the crash is a HIT after it.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::proxy_cache::{SharedCache, entry_path, x_cache};
use crate::support::upstream::MockUpstream;
use crate::support::{Instance, PATIENCE, Signal, wait_until};

/// Bodies this long go through the proxy's temporary file as well as the cache's.
const BIG: usize = 4 << 20;

/// Names of the regular files directly in `dir` (no levels are configured).
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.path().is_file())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `/slow*` sends its head and a quarter of its body, then stalls until the proxy goes
/// away; anything else is answered whole, with a body naming its path.
fn start(home: &SharedCache) -> (Instance, MockUpstream) {
    let root = home.dir();
    let root = root.parent().expect("the shared directory");
    let config = format!(
        "
proxy_cache_path {root}/cache levels=1:2 keys_zone=one:1m;
proxy_temp_path {root}/temp;
server {{
    listen 127.0.0.1:8080;
    location / {{
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1h;
        add_header X-Cache $upstream_cache_status always;
    }}
}}",
        root = root.display()
    );
    let mut builder = Instance::http_builder(&config);
    let upstream = MockUpstream::start(builder.port(8081), |mut conn| {
        while let Some(request) = conn.read_request() {
            let request = String::from_utf8_lossy(&request).into_owned();
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
            conn.write(format!("HTTP/1.1 200 OK\r\nContent-Length: {BIG}\r\n\r\n"));
            if path.starts_with("/slow") {
                conn.write(vec![b's'; BIG / 4]);
                conn.wait_closed(PATIENCE);
                return;
            }
            conn.write(body_of(&path));
        }
    });
    (builder.start(), upstream)
}

/// The 4 MiB body of `path`: its name over and over.
fn body_of(path: &str) -> Vec<u8> {
    path.as_bytes().iter().copied().cycle().take(BIG).collect()
}

fn assert_whole(response: &crate::support::Response, path: &str) {
    assert_eq!(response.status, 200, "{path}");
    assert!(
        response.body == body_of(path),
        "{path}: a whole and right body ({} bytes)",
        response.body.len()
    );
}

/// A real `kill -9` while five 4 MiB fills are under way leaves their temporary files in
/// `proxy_temp_path`. The next run stores every one of 18 new 4 MiB responses (each
/// whole for its client) and HITs them, and the five responses completed before the
/// crash are HITs too.
#[test]
fn temporary_files_left_by_kill_9_do_not_stop_later_fills() {
    let home = SharedCache::new();
    let temp = home.dir().with_file_name("temp");
    let (mut first, _upstream) = start(&home);
    let done: Vec<String> = (1..=5).map(|n| format!("/done{n}")).collect();
    for path in &done {
        let response = first.get(path);
        assert_eq!(x_cache(&response), "MISS", "{path}");
        assert_whole(&response, path);
    }
    // Five fills that will never end, each holding a temporary file.
    let mut clients = Vec::new();
    for n in 1..=5 {
        let mut client =
            std::net::TcpStream::connect(("127.0.0.1", first.port())).expect("connect");
        client
            .write_all(format!("GET /slow{n} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .expect("send");
        clients.push(client);
    }
    wait_until("the fills' temporary files", PATIENCE, || {
        temp_files(&temp).len() >= 5
    });
    first.stop_with(Signal::KILL);
    for mut client in clients {
        let _ = client.set_read_timeout(Some(PATIENCE));
        let mut rest = Vec::new();
        let _ = client.read_to_end(&mut rest);
    }
    let left = temp_files(&temp);
    assert!(
        left.len() >= 5,
        "the crash left its temporary files: {left:?}"
    );

    let (second, upstream) = start(&home);
    for path in &done {
        let hit = second.get(path);
        assert_eq!(x_cache(&hit), "HIT", "{path}: completed before the crash");
        assert_whole(&hit, path);
    }
    let fresh: Vec<String> = (1..=18).map(|n| format!("/fresh{n}")).collect();
    for path in &fresh {
        let response = second.get(path);
        assert_eq!(x_cache(&response), "MISS", "{path}");
        assert_whole(&response, path);
    }
    for path in &fresh {
        wait_until(&format!("{path} stored"), PATIENCE, || {
            entry_path(&home.dir(), path).is_file()
        });
    }
    std::thread::sleep(Duration::from_millis(250));
    for path in &fresh {
        let hit = second.get(path);
        assert_eq!(x_cache(&hit), "HIT", "{path}");
        assert_whole(&hit, path);
    }
    assert_eq!(upstream.requests().len(), fresh.len());
    let log = second.error_log();
    assert!(!log.contains("File exists"), "{log}");
}
