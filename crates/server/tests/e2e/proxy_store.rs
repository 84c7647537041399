//! `proxy_store` and `proxy_store_access`: a 200 to a GET is kept as a plain file under
//! `root` plus the URI (`on`) or under the path given, with the mode the access list says
//! and the upstream's `Last-Modified` as its time; a HEAD, another status or a body cut
//! short is not kept, and no temporary file is left behind.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use crate::proxy_cache::{asked, cached_proxy, files_under, request};
use crate::support::{Instance, PATIENCE, poll};

const STORE: &str = "
server {
    listen 127.0.0.1:8080;
    location /on/ {
        root %%PREFIX%%/store;
        proxy_pass http://127.0.0.1:8081;
        proxy_store on;
        proxy_store_access user:rw group:rw all:r;
    }
    location /named/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_store %%PREFIX%%/store/by-name$uri.copy;
        proxy_store_access group:r;
    }
}";

const MODIFIED: &str = "Tue, 03 Jan 2023 10:00:00 GMT";
/// `MODIFIED` in seconds since 1970.
const MODIFIED_UNIX: i64 = 1_672_740_000;

fn answer(request: &str, number: usize) -> String {
    let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
    if path.contains("missing") {
        return "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope".to_owned();
    }
    let body = format!("{path} #{number}");
    let head = format!(
        "HTTP/1.1 200 OK\r\nLast-Modified: {MODIFIED}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    if request.starts_with("HEAD ") {
        head
    } else {
        head + &body
    }
}

/// A store directory the workers can write (they run as `nobody` under root).
fn start() -> (Instance, crate::support::upstream::MockUpstream) {
    let (server, upstream) = cached_proxy(STORE, answer);
    let store = server.prefix().create_dir("store");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777))
        .expect("chmod the store");
    (server, upstream)
}

/// Waits for a stored file to hold `body`.
fn wait_file(path: &std::path::Path, body: &str) -> std::fs::Metadata {
    poll(PATIENCE, || {
        let text = std::fs::read_to_string(path).ok()?;
        (text == body)
            .then(|| std::fs::metadata(path).ok())
            .flatten()
    })
    .unwrap_or_else(|| panic!("{} never held {body:?}", path.display()))
}

/// `proxy_store on`: the response goes to the client and to `root` plus the URI, with
/// missing directories made, mode `user:rw group:rw all:r` (0664) and the upstream's
/// `Last-Modified` as the file's time.
#[test]
fn proxy_store_on_keeps_the_response_under_root() {
    let (server, upstream) = start();
    let response = server.get("/on/deep/page.html");
    assert_eq!(
        (response.status, response.body_text().as_str()),
        (200, "/on/deep/page.html #1")
    );
    let path = server.prefix().join("store/on/deep/page.html");
    let metadata = wait_file(&path, "/on/deep/page.html #1");
    assert_eq!(metadata.permissions().mode() & 0o777, 0o664);
    assert_eq!(metadata.mtime(), MODIFIED_UNIX);
    assert_eq!(asked(&upstream), 1);
}

/// `proxy_store PATH` with variables: the file is where the path says, mode `group:r`
/// with the default `user:rw` (0640).
#[test]
fn proxy_store_with_a_path_and_access() {
    let (server, _upstream) = start();
    assert_eq!(server.get("/named/x").status, 200);
    let path = server.prefix().join("store/by-name/named/x.copy");
    let metadata = wait_file(&path, "/named/x #1");
    assert_eq!(metadata.permissions().mode() & 0o777, 0o640);
}

/// Not kept: a HEAD, a 404, and a body cut short by the upstream; and no temporary file is
/// left under `proxy_temp` after any of them.
#[test]
fn proxy_store_keeps_only_whole_200s_to_get() {
    let mut builder = Instance::http_builder(STORE);
    let upstream = crate::support::upstream::MockUpstream::start(builder.port(8081), |mut conn| {
        let Some(request) = conn.read_request() else {
            return;
        };
        let request = String::from_utf8_lossy(&request).into_owned();
        if request.contains("/cut") {
            conn.write(format!(
                "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}",
                "c".repeat(40)
            ));
        } else {
            conn.write(answer(&request, 1));
        }
        conn.close();
    });
    let server = builder.start();
    let store = server.prefix().create_dir("store");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777))
        .expect("chmod the store");
    let mut client = server.connect();
    client.write(request("HEAD", "/on/head", ""));
    assert_eq!(client.read_head_response().status, 200);
    assert_eq!(server.get("/on/missing").status, 404);
    let mut client = server.connect();
    client.write(crate::support::get("/on/cut"));
    assert!(
        client.try_read_response().is_err(),
        "the client sees the cut"
    );
    // The control: a whole 200 is kept, so the store works in this instance.
    assert_eq!(server.get("/on/whole").status, 200);
    wait_file(&server.prefix().join("store/on/whole"), "/on/whole #1");
    std::thread::sleep(Duration::from_millis(300));
    let kept = files_under(&store);
    assert_eq!(
        kept,
        vec![server.prefix().join("store/on/whole")],
        "only the whole 200"
    );
    assert!(
        files_under(&server.prefix().join("proxy_temp")).is_empty(),
        "no temp file left"
    );
    assert_eq!(asked(&upstream), 4);
}
