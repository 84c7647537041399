//! `limit_conn_zone`, `limit_conn`, `limit_conn_log_level`, `limit_conn_status`,
//! `limit_conn_dry_run` and `$limit_conn_status`: requests held by a slow upstream count
//! against their key until they end (also when they end in an error, and not while a
//! keep-alive connection waits for its next request), and configuration errors.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::support::cli::assert_http_body_fails;
use crate::support::upstream::MockUpstream;
use crate::support::{Client, Instance};

const CONFIG: &str = r#"
limit_conn_zone $arg_k zone=one:32k;
limit_conn_zone $arg_j zone=two:32k;
server {
    listen 127.0.0.1:8080;
    add_header X-Conn "$limit_conn_status" always;
    limit_conn one 1;
    location /slow { proxy_pass http://127.0.0.1:8081; }
    location = /fast { root html; }
    location = /long { limit_conn two 1; root html; }
    location /two {
        limit_conn one 2;
        limit_conn two 1;
        limit_conn_status 429;
        limit_conn_log_level info;
        proxy_pass http://127.0.0.1:8081;
    }
    location /dry {
        limit_conn_dry_run on;
        proxy_pass http://127.0.0.1:8081;
    }
    location /broken { proxy_pass http://127.0.0.1:8082; }
}
"#;

/// A gate the upstream waits at before it answers.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, changed) = &*self.0;
        let mut open = open.lock().expect("the gate's lock");
        while !*open {
            let (guard, timeout) = changed
                .wait_timeout(open, Duration::from_secs(20))
                .expect("the gate's lock");
            open = guard;
            if timeout.timed_out() {
                return;
            }
        }
    }

    fn open(&self) {
        let (open, changed) = &*self.0;
        *open.lock().expect("the gate's lock") = true;
        changed.notify_all();
    }
}

fn start() -> (Instance, MockUpstream, Gate) {
    let mut builder = Instance::http_builder(CONFIG)
        .file("html/fast", "fast")
        .file("html/long", "long");
    let gate = Gate::default();
    let held = gate.clone();
    let upstream = MockUpstream::start(builder.port(8081), move |mut conn| {
        while conn.read_request().is_some() {
            held.wait();
            conn.write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow");
        }
    });
    // Nothing listens on 8082: a request there ends in a 502.
    builder.port(8082);
    (builder.start(), upstream, gate)
}

/// Sends a request and waits until the server has read it.
fn send(server: &Instance, path: &str) -> Client {
    let mut client = server.connect();
    client.write(format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    ));
    server.wait_read_by_server(&client);
    client
}

fn get(server: &Instance, path: &str) -> (u16, String) {
    let response = server.get(path);
    let label = response.header("X-Conn").unwrap_or_default().to_owned();
    (response.status, label)
}

#[test]
fn a_key_with_a_request_in_progress_is_refused_until_it_ends() {
    let (server, upstream, gate) = start();
    let mut first = send(&server, "/slow?k=a");
    crate::support::wait::wait_until(
        "the upstream to see the request",
        Duration::from_secs(10),
        || upstream.requests().len() == 1,
    );
    assert_eq!(get(&server, "/fast?k=a"), (503, "REJECTED".to_owned()));
    let line = server.wait_for_error_log("limiting connections");
    assert!(line.contains("[error] "), "{line}");
    assert!(
        line.contains("limiting connections by zone \"one\""),
        "{line}"
    );
    // Another key, and a request without a key, are not limited.
    assert_eq!(get(&server, "/fast?k=b"), (200, "PASSED".to_owned()));
    assert_eq!(get(&server, "/fast"), (200, "".to_owned()));
    gate.open();
    let response = first.read_response();
    assert_eq!(response.status, 200);
    assert_eq!(response.header("X-Conn"), Some("PASSED"));
    assert_eq!(get(&server, "/fast?k=a"), (200, "PASSED".to_owned()));
}

#[test]
fn every_limit_of_a_level_counts_and_a_refusal_gives_the_others_back() {
    let (server, upstream, gate) = start();
    let _held = send(&server, "/two?k=a&j=x");
    crate::support::wait::wait_until(
        "the upstream to see the request",
        Duration::from_secs(10),
        || upstream.requests().len() == 1,
    );
    // `one` allows a second request for `a` here, but `two` refuses `x`: the count `one`
    // took for it goes back.
    assert_eq!(get(&server, "/two?k=a&j=x").0, 429);
    let line = server.wait_for_error_log("limiting connections");
    assert!(line.contains("[info] "), "{line}");
    assert!(line.contains("by zone \"two\""), "{line}");
    let _second = send(&server, "/two?k=a&j=y");
    crate::support::wait::wait_until(
        "the upstream to see the request",
        Duration::from_secs(10),
        || upstream.requests().len() == 2,
    );
    assert_eq!(get(&server, "/two?k=a&j=z").0, 429);
    gate.open();
}

#[test]
fn a_dry_run_serves_and_logs() {
    let (server, upstream, gate) = start();
    let _held = send(&server, "/dry?k=a");
    crate::support::wait::wait_until(
        "the upstream to see the request",
        Duration::from_secs(10),
        || upstream.requests().len() == 1,
    );
    let mut second = send(&server, "/dry?k=a");
    server.wait_for_error_log("limiting connections, dry run by zone \"one\"");
    gate.open();
    let response = second.read_response();
    assert_eq!(response.status, 200);
    assert_eq!(response.header("X-Conn"), Some("REJECTED_DRY_RUN"));
}

#[test]
fn the_count_goes_back_after_an_error_and_between_keep_alive_requests() {
    let (mut server, _upstream, _gate) = start();
    server.expect_log("[error]");
    assert_eq!(get(&server, "/broken?k=e").0, 502);
    assert_eq!(get(&server, "/fast?k=e"), (200, "PASSED".to_owned()));
    let mut idle = server.connect();
    let response = idle.request("GET /fast?k=f HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(response.status, 200);
    assert!(response.keeps_alive());
    // The connection stays open and idle; its request is over.
    assert_eq!(get(&server, "/fast?k=f"), (200, "PASSED".to_owned()));
    let response = idle.request("GET /fast?k=f HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(response.status, 200);
}

#[test]
fn a_full_zone_refuses_new_keys() {
    // 7 pages: one for the zone's name, one for the tree's root; a key of 255 bytes (the
    // longest nginx counts) makes a node of 291 bytes, eight to a page, so 40 keys fill
    // the five pages left.
    let (mut server, upstream, gate) = start();
    server.expect_log("[crit]");
    let key = |index: usize| format!("{index:0>255}");
    let held: Vec<Client> = (0..40)
        .map(|index| send(&server, &format!("/two?j={}", key(index))))
        .collect();
    crate::support::wait::wait_until(
        "the upstream to see the requests",
        Duration::from_secs(20),
        || upstream.requests().len() == 40,
    );
    assert_eq!(
        get(&server, &format!("/two?j={}", key(40))),
        (429, "REJECTED".to_owned())
    );
    let line = server.wait_for_error_log("no memory");
    assert!(line.contains("[crit] "), "{line}");
    assert!(line.contains("in limit_conn_zone \"two\""), "{line}");
    // A key too long for nginx's node is not counted, with an error.
    server.expect_log("[error]");
    let long = format!("/long?j={}", "x".repeat(256));
    assert_eq!(get(&server, &long), (200, "".to_owned()));
    server.wait_for_error_log("the value of the \"$arg_j\" key is too long: 256");
    gate.open();
    for mut client in held {
        assert_eq!(client.read_response().status, 200);
    }
    assert_eq!(
        get(&server, &format!("/two?j={}", key(40))),
        (200, "PASSED".to_owned())
    );
}

#[test]
fn configuration_errors_are_nginx_s() {
    let zone = "limit_conn_zone $binary_remote_addr zone=one:1m;";
    let cases = [
        (
            format!("{zone}\nlimit_conn one 0;"),
            "invalid number of connections \"0\"",
        ),
        (
            format!("{zone}\nlimit_conn one 65536;"),
            "connection limit must be less 65536",
        ),
        (
            format!("{zone}\nlimit_conn one 1;\nlimit_conn one 2;"),
            "\"limit_conn\" directive is duplicate",
        ),
        (
            format!("{zone}\nlimit_conn_zone $uri zone=one:1m;"),
            "limit_conn_zone \"one\" is already bound to key \"$binary_remote_addr\"",
        ),
        (
            "limit_conn_zone $uri zone=one:1k;".to_owned(),
            "zone \"zone=one:1k\" is too small",
        ),
        (
            "limit_conn_zone $uri size=1m;".to_owned(),
            "invalid parameter \"size=1m\"",
        ),
        (
            "limit_conn_zone $uri zone=:1m;".to_owned(),
            "\"limit_conn_zone\" must have \"zone\" parameter",
        ),
        (
            format!("{zone}\nlimit_conn_status 600;"),
            "value must be between 400 and 599",
        ),
        (
            format!("{zone}\nlimit_conn_log_level debug;"),
            "invalid value \"debug\"",
        ),
        (
            format!("{zone}\nlimit_conn_dry_run yes;"),
            "invalid value \"yes\" in \"limit_conn_dry_run\" directive, it must be \"on\" or \"off\"",
        ),
    ];
    // nginx finds a zone nothing declared when it creates the zones: no file and line.
    assert_http_body_fails("limit_conn x 1;", "zero size shared memory zone \"x\"");
    for (body, message) in cases {
        let line = 4 + body.matches('\n').count();
        eprintln!("case: {body:?}");
        assert_http_body_fails(&body, &format!("{message} in {{conf}}:{line}"));
    }
}
