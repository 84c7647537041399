//! `stub_status` and the `$connections_*` variables: nginx's page byte for byte, counters
//! that move as connections come and requests are made, the three connection states, the
//! methods it answers, and the sum over several workers.

use crate::support::{Instance, PATIENCE, get_keepalive, poll};

const CONF: &str = "
server {
    listen 127.0.0.1:8080;
    root html;
    add_header X-Active $connections_active;
    add_header X-Reading $connections_reading;
    add_header X-Writing $connections_writing;
    add_header X-Waiting $connections_waiting;
    location / { }
    location /slow { limit_rate 10; }
    location = /status { stub_status; }
    location = /old { stub_status on; }
}";

fn start() -> Instance {
    Instance::http_builder(CONF)
        .file("html/index.html", "")
        .start()
}

/// The page's figures: active, accepts, handled, requests, reading, writing, waiting.
fn figures(text: &str) -> [u64; 7] {
    let numbers: Vec<u64> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|word| !word.is_empty())
        .map(|word| word.parse().expect("a figure is a number"))
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|_| panic!("not a status page: {text:?}"))
}

fn status(server: &Instance) -> [u64; 7] {
    let response = server.get("/status");
    assert_eq!(response.status, 200);
    figures(&response.body_text())
}

/// Fetches the page until `wanted` holds (the server sees a connection a moment after
/// the client made it), and returns the last figures.
fn status_when(server: &Instance, wanted: impl Fn(&[u64; 7]) -> bool) -> [u64; 7] {
    let mut last = [0; 7];
    let found = poll(PATIENCE, || {
        last = status(server);
        wanted(&last).then_some(())
    });
    assert!(
        found.is_some(),
        "the figures never became what was wanted: {last:?}"
    );
    last
}

#[test]
fn the_first_page_is_nginx_s_byte_for_byte() {
    let server = start();
    let response = server.get("/status");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Type"), Some("text/plain"));
    assert_eq!(response.content_length(), Some(97));
    assert_eq!(
        response.body_text(),
        "Active connections: 1 \nserver accepts handled requests\n 1 1 1 \n\
         Reading: 0 Writing: 1 Waiting: 0 \n"
    );
    // The argument older nginx versions required is accepted and changes nothing.
    let old = server.get("/old");
    assert_eq!(figures(&old.body_text()), [1, 2, 2, 2, 0, 1, 0]);
}

#[test]
fn requests_and_accepts_count_up() {
    let server = start();
    let before = status(&server);
    // Three requests on one keep-alive connection, then one more connection.
    let mut client = server.connect();
    for _ in 0..3 {
        let response = client.request(get_keepalive("/"));
        assert_eq!(response.status, 200);
    }
    drop(client);
    let after = status(&server);
    assert_eq!(after[1] - before[1], 2, "accepts: {before:?} {after:?}");
    assert_eq!(after[2] - before[2], 2, "handled: {before:?} {after:?}");
    assert_eq!(after[3] - before[3], 4, "requests: {before:?} {after:?}");
}

#[test]
fn connections_are_waiting_then_reading_then_writing() {
    let server = start();
    let mut idle = server.connect();
    let waiting = status_when(&server, |figures| figures[6] == 1);
    assert_eq!(waiting[0], 2, "active: {waiting:?}");
    assert_eq!((waiting[4], waiting[5]), (0, 1), "{waiting:?}");
    // Half a head: reading.
    idle.write("GET /slow HTTP/1.0\r\n");
    let reading = status_when(&server, |figures| figures[4] == 1);
    assert_eq!((reading[5], reading[6]), (1, 0), "{reading:?}");
    // The rest: the 404 page goes out at 10 bytes a second, so the request is writing.
    idle.write("Host: localhost\r\n\r\n");
    let writing = status_when(&server, |figures| figures[5] == 2);
    assert_eq!((writing[4], writing[6]), (0, 0), "{writing:?}");
    drop(idle);
    status_when(&server, |figures| figures[0] == 1);
}

#[test]
fn only_get_and_head_are_answered() {
    let server = start();
    let get_response = server.get("/status");
    let mut client = server.connect();
    client.write("HEAD /status HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(head.content_length(), get_response.content_length());
    let post = server.request("POST /status HTTP/1.0\r\nHost: localhost\r\n\r\n");
    assert_eq!(post.status, 405);
}

#[test]
fn the_variables_say_what_the_page_says() {
    let server = start();
    let response = server.get("/");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("X-Active"), Some("1"));
    assert_eq!(response.header("X-Reading"), Some("0"));
    assert_eq!(response.header("X-Writing"), Some("1"));
    assert_eq!(response.header("X-Waiting"), Some("0"));
    let _idle = server.connect();
    let mut seen = None;
    poll(PATIENCE, || {
        let response = server.get("/");
        seen = response.header("X-Waiting").map(str::to_owned);
        (seen.as_deref() == Some("1")).then_some(())
    });
    assert_eq!(seen.as_deref(), Some("1"));
}

#[test]
fn the_workers_are_summed() {
    let server = Instance::start(
        "worker_processes 2;
         events { }
         http {
             server {
                 listen 127.0.0.1:8080 reuseport;
                 location = /status { stub_status; }
             }
         }",
    );
    let idle: Vec<_> = (0..6).map(|_| server.connect()).collect();
    let figures = status_when(&server, |figures| figures[6] == 6);
    assert_eq!(figures[0], 7, "{figures:?}");
    assert!(figures[1] >= 7, "{figures:?}");
    drop(idle);
    status_when(&server, |figures| figures[0] == 1 && figures[6] == 0);
}
