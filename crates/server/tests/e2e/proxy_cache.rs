//! The proxy cache, first the basics: a MISS stored in nginx's file layout and then a HIT,
//! and the directives that choose what is cached and under which key (`proxy_cache`,
//! `proxy_cache_key`, `proxy_cache_valid`, `proxy_cache_min_uses`, `proxy_cache_bypass`,
//! `proxy_no_cache`, `proxy_cache_methods`, `proxy_cache_convert_head`). The helpers at the
//! top are shared by the other `proxy_cache_*` test files.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::upstream::MockUpstream;
use crate::support::{Instance, PATIENCE, Response, wait_until};

/// A 200 with `body` and the extra header lines `fields` (each ending with CRLF).
pub fn ok(body: &str, fields: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\n{fields}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// An upstream on `port` whose answer to each request is `answer(request, number)`, the
/// number counting requests from 1 across connections.
pub fn origin(
    port: u16,
    answer: impl Fn(&str, usize) -> String + Send + Sync + 'static,
) -> MockUpstream {
    let count = Arc::new(AtomicUsize::new(0));
    MockUpstream::start(port, move |mut conn| {
        while let Some(request) = conn.read_request() {
            let number = count.fetch_add(1, Ordering::AcqRel) + 1;
            conn.write(answer(&String::from_utf8_lossy(&request), number));
        }
    })
}

/// A proxy with `config` (the inside of `http`) in front of [`origin`] at nominal port 8081,
/// on a wall clock the test moves (`Instance::advance_clock`): an entry expires without
/// waiting for it.
pub fn cached_proxy(
    config: &str,
    answer: impl Fn(&str, usize) -> String + Send + Sync + 'static,
) -> (Instance, MockUpstream) {
    let mut builder = Instance::http_builder(config).movable_clock();
    let upstream = origin(builder.port(8081), answer);
    (builder.start(), upstream)
}

/// The harness's movable clock moves the server's wall clock (every worker's), at once,
/// and only forward by what the test says.
#[test]
fn the_movable_clock_moves_the_server_s_wall_clock() {
    let server = Instance::http_builder(
        "server { listen 127.0.0.1:8080; location / { return 200 $msec; } }",
    )
    .movable_clock()
    .start();
    let msec = |server: &Instance| -> f64 {
        server
            .get("/")
            .body_text()
            .parse()
            .expect("$msec is a number")
    };
    let before = msec(&server);
    server.advance_clock(Duration::from_secs(3600));
    let after = msec(&server);
    assert!(
        (3600.0..3630.0).contains(&(after - before)),
        "{before} then {after}"
    );
}

/// The config most cache tests share: zone `one` at `PREFIX/cache` with nginx's usual
/// levels, responses kept for a minute, the cache status in `X-Cache`.
pub const BASIC: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1m;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `$upstream_cache_status` as `add_header X-Cache` reported it ("" when absent).
pub fn x_cache(response: &Response) -> &str {
    response.header("X-Cache").unwrap_or("")
}

/// The MD5 of `key` in hex, from the system's `md5sum` (not from Portico's own code).
pub fn md5_hex(key: &str) -> String {
    let mut child = std::process::Command::new("md5sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run md5sum");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("md5sum's stdin");
        stdin.write_all(key.as_bytes()).expect("write to md5sum");
    }
    let output = child.wait_with_output().expect("md5sum's output");
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .next()
        .expect("md5sum prints the sum")
        .to_owned()
}

/// Where nginx keeps the entry of `key` with `levels=1:2`: the last hex digit, then the two
/// before it, then the whole MD5.
pub fn entry_path(cache: &Path, key: &str) -> PathBuf {
    let name = md5_hex(key);
    let length = name.len();
    cache
        .join(&name[length - 1..])
        .join(&name[length - 3..length - 1])
        .join(&name)
}

/// A cache directory outside any one instance's prefix, shared by successive instances.
pub struct SharedCache {
    home: crate::support::TempPrefix,
}

impl SharedCache {
    pub fn new() -> SharedCache {
        SharedCache {
            home: crate::support::TempPrefix::new(),
        }
    }

    pub fn dir(&self) -> PathBuf {
        self.home.join("cache")
    }
}

/// Every regular file under `dir`, Portico's `.portico` sidecar left out.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name() == ".portico" {
            continue;
        }
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Waits until the entry file of `key` exists (a store is committed after the response),
/// then a moment more: the file is renamed into place on a pool thread, and the index
/// learns of it when that task's completion reaches the worker; a request in between is
/// still a MISS.
pub fn wait_stored(cache: &Path, key: &str) -> PathBuf {
    let path = entry_path(cache, key);
    wait_until(&format!("the entry {}", path.display()), PATIENCE, || {
        path.is_file()
    });
    std::thread::sleep(std::time::Duration::from_millis(250));
    path
}

/// How many requests the upstream has read.
pub fn asked(upstream: &MockUpstream) -> usize {
    upstream.requests().len()
}

/// `METHOD PATH` with `Connection: close` and the extra header lines `fields`.
pub fn request(method: &str, path: &str, fields: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n{fields}Connection: close\r\n\r\n")
}

/// The first MISS is stored where nginx would put it, under nginx's file name and in its
/// version-5 format with the default key; the second request is a HIT with the same body
/// and does not reach the upstream.
#[test]
fn a_miss_is_stored_in_nginx_layout_and_then_hits() {
    let config = BASIC.replace("proxy_cache_key $uri;\n", "");
    let (server, upstream) = cached_proxy(&config, |_, number| ok(&format!("body {number}"), ""));
    let first = server.get("/k");
    assert_eq!(first.status, 200);
    assert_eq!(x_cache(&first), "MISS");
    assert_eq!(first.body_text(), "body 1");
    let key = format!("http://127.0.0.1:{}/k", server.port_of(8081));
    let file = wait_stored(&server.prefix().join("cache"), &key);
    let second = server.get("/k");
    assert_eq!(x_cache(&second), "HIT");
    assert_eq!(second.body, first.body);
    assert_eq!(asked(&upstream), 1, "the HIT does not reach the upstream");
    let bytes = std::fs::read(&file).expect("read the entry file");
    assert_eq!(bytes[..8], 5u64.to_le_bytes(), "nginx's version 5 header");
    let key_line = format!("\nKEY: {key}\n");
    let at = crate::support::client::find(&bytes, key_line.as_bytes())
        .expect("the key line is in the file");
    assert!(at < 400, "the key line follows the fixed header (at {at})");
    let rest = &bytes[at + key_line.len()..];
    assert!(
        rest.starts_with(b"HTTP/1.1 200 OK\r\n"),
        "the upstream's head follows the key"
    );
    assert!(rest.ends_with(b"\r\n\r\nbody 1"), "then the body");
}

/// `proxy_cache_key` decides which requests share an entry: here the query string is left
/// out, so `/a?x=1` and `/a?x=2` are one entry and `/b` another.
#[test]
fn proxy_cache_key_names_the_entry() {
    let (server, upstream) = cached_proxy(BASIC, |request, number| {
        let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
        ok(&format!("{path} #{number}"), "")
    });
    assert_eq!(x_cache(&server.get("/a?x=1")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/a");
    let again = server.get("/a?x=2");
    assert_eq!(x_cache(&again), "HIT");
    assert_eq!(again.body_text(), "/a?x=1 #1");
    let other = server.get("/b?x=1");
    assert_eq!(x_cache(&other), "MISS");
    assert_eq!(other.body_text(), "/b?x=1 #2");
    assert_eq!(asked(&upstream), 2);
}

const VALID: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    proxy_cache one;
    proxy_cache_key $uri;
    add_header X-Cache $upstream_cache_status always;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache_valid 200 1m;
        proxy_cache_valid 404 3s;
    }
    location /any/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache_valid 200 1m;
        proxy_cache_valid any 1m;
    }
    location /none/ {
        proxy_pass http://127.0.0.1:8081;
    }
}";

fn status_answer(request: &str, number: usize) -> String {
    let path = request.split_whitespace().nth(1).unwrap_or("");
    let status = if path.contains("404") {
        "404 Not Found"
    } else if path.contains("500") {
        "500 Internal Server Error"
    } else if path.contains("403") {
        "403 Forbidden"
    } else {
        "200 OK"
    };
    let body = format!("#{number}");
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// `proxy_cache_valid`: each status for its own time, `any` for every other status, and a
/// status that no line covers (or no line at all) is not stored.
#[test]
fn proxy_cache_valid_times_each_status() {
    let (server, upstream) = cached_proxy(VALID, status_answer);
    let cache = server.prefix().join("cache");
    // 404 for three seconds: a HIT, then gone upstream again once it expired.
    let first = server.get("/404");
    assert_eq!((first.status, x_cache(&first)), (404, "MISS"));
    wait_stored(&cache, "/404");
    let hit = server.get("/404");
    assert_eq!(
        (hit.status, x_cache(&hit), hit.body_text().as_str()),
        (404, "HIT", "#1")
    );
    server.advance_clock(Duration::from_millis(4100));
    let expired = server.get("/404");
    assert_eq!(x_cache(&expired), "EXPIRED");
    assert_eq!(expired.body_text(), "#2");
    // 403 has no line here: never stored.
    assert_eq!(x_cache(&server.get("/403")), "MISS");
    assert_eq!(x_cache(&server.get("/403")), "MISS");
    assert_eq!(asked(&upstream), 4);
    // `any` covers a 500.
    let error = server.get("/any/500");
    assert_eq!((error.status, x_cache(&error)), (500, "MISS"));
    wait_stored(&cache, "/any/500");
    let hit = server.get("/any/500");
    assert_eq!((hit.status, x_cache(&hit)), (500, "HIT"));
    assert_eq!(hit.body, error.body);
    // Without proxy_cache_valid and without a time in the fields, nothing is stored.
    assert_eq!(x_cache(&server.get("/none/200")), "MISS");
    assert_eq!(x_cache(&server.get("/none/200")), "MISS");
    assert_eq!(asked(&upstream), 7);
    assert!(!entry_path(&cache, "/none/200").exists());
}

/// `proxy_cache_min_uses 3`: the first two requests go upstream and store nothing, the
/// third is stored, the fourth is a HIT.
#[test]
fn proxy_cache_min_uses_stores_at_the_nth_request() {
    let config = BASIC.replace(
        "proxy_cache_valid",
        "proxy_cache_min_uses 3;\n proxy_cache_valid",
    );
    let (server, upstream) = cached_proxy(&config, |_, number| ok(&format!("#{number}"), ""));
    let cache = server.prefix().join("cache");
    for expected in ["#1", "#2"] {
        let response = server.get("/m");
        assert_eq!(
            (x_cache(&response), response.body_text().as_str()),
            ("MISS", expected)
        );
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !entry_path(&cache, "/m").exists(),
            "not stored before the third use"
        );
    }
    assert_eq!(x_cache(&server.get("/m")), "MISS");
    wait_stored(&cache, "/m");
    let hit = server.get("/m");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#3"));
    assert_eq!(asked(&upstream), 3);
}

const PREDICATES: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1m;
        proxy_cache_bypass $arg_bypass $http_x_bypass;
        proxy_no_cache $arg_nostore;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `proxy_cache_bypass`: a true predicate (not empty, not "0") goes upstream as BYPASS even
/// with an entry there, and its response replaces the entry; "0" does not bypass.
#[test]
fn proxy_cache_bypass_goes_upstream_and_stores() {
    let (server, upstream) = cached_proxy(PREDICATES, |_, number| ok(&format!("#{number}"), ""));
    let cache = server.prefix().join("cache");
    let bypass = server.get("/b?bypass=1");
    assert_eq!(
        (x_cache(&bypass), bypass.body_text().as_str()),
        ("BYPASS", "#1")
    );
    let path = wait_stored(&cache, "/b");
    let hit = server.get("/b?bypass=0");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#1"));
    let again = server.request(request("GET", "/b", "X-Bypass: yes\r\n"));
    assert_eq!(
        (x_cache(&again), again.body_text().as_str()),
        ("BYPASS", "#2")
    );
    wait_until("the bypass response to replace the entry", PATIENCE, || {
        std::fs::read(&path).is_ok_and(|bytes| bytes.ends_with(b"#2"))
    });
    let hit = server.get("/b");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#2"));
    assert_eq!(asked(&upstream), 2);
}

/// `proxy_no_cache`: a true predicate keeps the response out of the cache; the request is
/// still a MISS that reached the upstream.
#[test]
fn proxy_no_cache_does_not_store() {
    let (server, upstream) = cached_proxy(PREDICATES, |_, number| ok(&format!("#{number}"), ""));
    let cache = server.prefix().join("cache");
    let first = server.get("/n?nostore=1");
    assert_eq!(
        (x_cache(&first), first.body_text().as_str()),
        ("MISS", "#1")
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(!entry_path(&cache, "/n").exists(), "nothing stored");
    let second = server.get("/n");
    assert_eq!(
        (x_cache(&second), second.body_text().as_str()),
        ("MISS", "#2")
    );
    wait_stored(&cache, "/n");
    let third = server.get("/n?nostore=1");
    assert_eq!((x_cache(&third), third.body_text().as_str()), ("HIT", "#2"));
    assert_eq!(asked(&upstream), 2);
}

const METHODS: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    proxy_cache one;
    proxy_cache_valid 200 1m;
    add_header X-Cache $upstream_cache_status always;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache_key $request_method$uri;
    }
    location /post/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache_key $request_method$uri;
        proxy_cache_methods POST;
    }
    location /convert/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache_key $uri;
    }
    location /noconvert/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache_key $request_method$uri;
        proxy_cache_convert_head off;
    }
}";

/// Answers with the request line's method and the request's number, without a body to HEAD.
fn method_answer(request: &str, number: usize) -> String {
    let method = request.split_whitespace().next().unwrap_or("");
    let body = format!("{method} #{number}");
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
    if method == "HEAD" { head } else { head + &body }
}

fn post(path: &str) -> String {
    request("POST", path, "Content-Length: 4\r\n").replace("\r\n\r\n", "\r\n\r\ndata")
}

/// `proxy_cache_methods`: a POST is cached only where the directive lists it.
#[test]
fn proxy_cache_methods_lists_post() {
    let (server, upstream) = cached_proxy(METHODS, method_answer);
    let cache = server.prefix().join("cache");
    let first = server.request(post("/post/p"));
    assert_eq!(
        (x_cache(&first), first.body_text().as_str()),
        ("MISS", "POST #1")
    );
    wait_stored(&cache, "POST/post/p");
    let second = server.request(post("/post/p"));
    assert_eq!(
        (x_cache(&second), second.body_text().as_str()),
        ("HIT", "POST #1")
    );
    // Not listed: both POSTs go upstream and the cache stays out of it.
    let third = server.request(post("/p"));
    let fourth = server.request(post("/p"));
    assert_eq!(third.body_text(), "POST #2");
    assert_eq!(fourth.body_text(), "POST #3");
    assert_eq!(
        x_cache(&fourth),
        "",
        "no cache status for an uncached method"
    );
    assert!(!entry_path(&cache, "POST/p").exists());
    assert_eq!(asked(&upstream), 3);
}

/// `proxy_cache_convert_head`: on (the default), a HEAD miss is fetched as a GET, so a later
/// GET is a HIT with the body; off, the HEAD goes upstream as a HEAD.
#[test]
fn proxy_cache_convert_head_fetches_a_head_as_get() {
    let (server, upstream) = cached_proxy(METHODS, method_answer);
    let cache = server.prefix().join("cache");
    let mut client = server.connect();
    client.write(request("HEAD", "/convert/h", ""));
    let head = client.read_head_response();
    assert_eq!((head.status, x_cache(&head)), (200, "MISS"));
    assert!(
        upstream.requests()[0].starts_with("GET /convert/h "),
        "{:?}",
        upstream.requests()
    );
    wait_stored(&cache, "/convert/h");
    let get = server.get("/convert/h");
    assert_eq!((x_cache(&get), get.body_text().as_str()), ("HIT", "GET #1"));
    let mut client = server.connect();
    client.write(request("HEAD", "/noconvert/h", ""));
    let head = client.read_head_response();
    assert_eq!((head.status, x_cache(&head)), (200, "MISS"));
    assert!(
        upstream.requests()[1].starts_with("HEAD /noconvert/h "),
        "{:?}",
        upstream.requests()
    );
    assert_eq!(asked(&upstream), 2);
}

const VARIABLE_ZONE: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache $arg_c;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1m;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `proxy_cache` with a variable: empty means no cache, a zone's name uses that zone, and
/// a name that is no zone is a 500 with nginx's `cache "X" not found`.
#[test]
fn proxy_cache_with_a_variable_zone() {
    let (server, upstream) = cached_proxy(VARIABLE_ZONE, |_, number| ok(&format!("#{number}"), ""));
    let cache = server.prefix().join("cache");
    for _ in 0..2 {
        let plain = server.get("/v?c=");
        assert_eq!((plain.status, x_cache(&plain)), (200, ""));
    }
    assert_eq!(asked(&upstream), 2, "uncached: both went upstream");
    assert!(!entry_path(&cache, "/v").exists());
    assert_eq!(x_cache(&server.get("/v?c=one")), "MISS");
    wait_stored(&cache, "/v");
    let hit = server.get("/v?c=one");
    assert_eq!((x_cache(&hit), hit.body_text().as_str()), ("HIT", "#3"));
    let unknown = server.get("/v?c=nope");
    assert_eq!(unknown.status, 500);
    let line = server.wait_for_error_log("cache \"nope\" not found");
    assert!(line.contains("[error]"), "{line}");
    assert_eq!(asked(&upstream), 3);
}

const LEVELS: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m;
server {
    listen 127.0.0.1:8080;
    proxy_cache one;
    proxy_cache_key $uri;
    add_header X-Cache $upstream_cache_status always;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache_valid 5m;
    }
    location /off/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache off;
    }
    location /down/ {
        proxy_pass http://127.0.0.1:%%PORT_8082%%;
        proxy_cache_valid 502 1m;
    }
}";

fn redirect_or_not(request: &str, number: usize) -> String {
    if request.contains("/moved") {
        format!("HTTP/1.1 301 Moved\r\nLocation: /new\r\nContent-Length: 2\r\n\r\n{number:0>2}")
    } else if request.contains("/missing") {
        format!("HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{number:0>2}")
    } else {
        ok(&format!("#{number}"), "")
    }
}

/// `proxy_cache_valid 5m` (a time alone) covers 200, 301 and 302 and not 404; a HEAD is
/// answered from a GET's entry; `proxy_cache off` in a location turns off the server's
/// cache there.
#[test]
fn proxy_cache_valid_alone_and_proxy_cache_off() {
    let (server, upstream) = cached_proxy(LEVELS, redirect_or_not);
    let cache = server.prefix().join("cache");
    assert_eq!(x_cache(&server.get("/moved")), "MISS");
    wait_stored(&cache, "/moved");
    let hit = server.get("/moved");
    assert_eq!((hit.status, x_cache(&hit)), (301, "HIT"));
    assert_eq!(x_cache(&server.get("/missing")), "MISS");
    assert_eq!(x_cache(&server.get("/missing")), "MISS");
    assert_eq!(x_cache(&server.get("/page")), "MISS");
    wait_stored(&cache, "/page");
    let mut client = server.connect();
    client.write(request("HEAD", "/page", ""));
    let head = client.read_head_response();
    assert_eq!((head.status, x_cache(&head)), (200, "HIT"));
    assert_eq!(head.content_length(), Some(2));
    for _ in 0..2 {
        let uncached = server.get("/off/page");
        assert_eq!((uncached.status, x_cache(&uncached)), (200, ""));
    }
    assert_eq!(asked(&upstream), 6);
}

/// A 502 the proxy makes itself (the upstream is down) is kept as an error entry when
/// `proxy_cache_valid` covers 502: the next request is a HIT 502 without a connect.
#[test]
fn a_502_made_by_the_proxy_is_cached_when_valid_covers_it() {
    let (server, _upstream) = cached_proxy(LEVELS, redirect_or_not);
    let first = server.get("/down/x");
    assert_eq!((first.status, x_cache(&first)), (502, "MISS"));
    let connects = server.error_log().matches("connect() failed").count();
    assert_eq!(connects, 1, "{}", server.error_log());
    let second = server.get("/down/x");
    assert_eq!((second.status, x_cache(&second)), (502, "HIT"));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        server.error_log().matches("connect() failed").count(),
        1,
        "no second connect"
    );
}
