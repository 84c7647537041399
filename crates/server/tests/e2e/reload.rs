//! Reload (HUP), graceful stop (QUIT), fast stop (TERM), `worker_shutdown_timeout`, and
//! reloads under continuous load.

use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{
    Client, Ending, Instance, PATIENCE, ReadError, Signal, get, get_keepalive, poll, proc_net,
    wait_until,
};

fn generation(text: &str) -> String {
    format!("server {{ listen 127.0.0.1:8080; location / {{ return 200 \"{text}\\n\"; }} }}")
}

/// A probe for [`Instance::reload`]: a new connection gets `text`.
fn serves(text: &'static str) -> impl FnMut(&Instance) -> bool {
    move |server| server.get("/").body_text() == format!("{text}\n")
}

#[test]
fn reload_serves_the_new_config() {
    let mut server = Instance::http(&generation("one"));
    assert_eq!(server.get("/").body_text(), "one\n");
    server.reload(&generation("two"), serves("two"));
    // Right after a reload an old worker may still take a connection or two (nginx's too),
    // but soon only the new generation answers.
    wait_until("only the new generation to answer", PATIENCE, || {
        (0..20).all(|_| server.get("/").body_text() == "two\n")
    });
}

#[test]
fn reload_adds_and_removes_listeners() {
    let mut server = Instance::http(&generation("one"));
    let old_port = server.port();
    let both = "server { listen 127.0.0.1:8081; location / { return 200 \"new port\\n\"; } }";
    server.reload(both, |server| {
        Client::try_connect(server.port_of(8081)).is_ok_and(|mut client| {
            client.try_write(get("/")).is_ok()
                && client
                    .try_read_response()
                    .is_ok_and(|response| response.body_text() == "new port\n")
        })
    });
    let refused = poll(PATIENCE, || match Client::try_connect(old_port) {
        Err(error) if error.kind() == ErrorKind::ConnectionRefused => Some(()),
        _ => None,
    });
    assert!(refused.is_some(), "the removed listener still accepts");
}

#[test]
fn old_keepalive_connection_finishes_its_request_then_closes() {
    let mut server = Instance::http(&generation("one"));
    let mut in_flight = server.connect();
    assert!(in_flight.request(get_keepalive("/")).keeps_alive());
    let mut idle = server.connect();
    assert!(idle.request(get_keepalive("/")).keeps_alive());
    // Half a request head: the old generation must wait for the rest.
    in_flight.write("GET /in-flight HTTP/1.1\r\nHost: localhost\r\n");
    server.wait_read_by_server(&in_flight);
    server.reload(&generation("two"), serves("two"));
    // An idle keep-alive connection of the old generation is closed.
    assert_eq!(idle.wait_closed(), (Ending::Closed, Vec::new()));
    in_flight.write("\r\n");
    let response = in_flight.read_response();
    assert_eq!(
        response.body_text(),
        "one\n",
        "answered by the generation that read it"
    );
    assert_eq!(response.header("Connection"), Some("close"));
    assert_eq!(in_flight.wait_closed(), (Ending::Closed, Vec::new()));
}

#[test]
fn broken_config_keeps_the_old_one() {
    let mut server = Instance::http(&generation("one"));
    let broken = "server { listen 127.0.0.1:8080; bogus_directive; }";
    let line = server.reload_expect_failure(broken);
    assert!(
        line.contains("unknown directive \"bogus_directive\" in "),
        "{line}"
    );
    assert!(line.contains("portico.conf:5"), "{line}");
    assert_eq!(server.get("/").body_text(), "one\n");
    // A good config after a broken one is taken.
    server.reload(&generation("three"), serves("three"));
}

#[test]
fn worker_shutdown_timeout_closes_a_stuck_connection() {
    // A client that stops reading a large response keeps the old generation busy until
    // worker_shutdown_timeout closes its connection.
    let config = |text: &str| {
        format!(
            "worker_processes 1;\nworker_shutdown_timeout 1s;\nevents {{\n}}\nhttp {{\n\
             server {{ listen 127.0.0.1:8080 sndbuf=32k; root html; \
             location = / {{ return 200 \"{text}\\n\"; }} }}\n}}\n"
        )
    };
    let size = 16 * 1024 * 1024;
    let mut server = Instance::builder(&config("one"))
        .file("html/big.bin", vec![b'z'; size])
        .start();
    let mut stuck = server.connect().with_timeout(Duration::from_secs(20));
    stuck.write(get("/big.bin"));
    server.wait_read_by_server(&stuck);
    server.reload(&config("two"), serves("two"));
    // Reading would unstick the server, so the close is seen from the kernel's side.
    let (server_port, client_port) = (stuck.peer_port(), stuck.local_port());
    wait_until(
        "the old generation to close the stuck connection",
        PATIENCE,
        || {
            proc_net::server_socket_state(server_port, client_port).as_deref()
                != Some(proc_net::STATE_ESTABLISHED)
        },
    );
    let (_, received) = stuck.wait_closed();
    assert!(received.len() < size, "the whole response arrived");
}

#[test]
fn quit_waits_for_an_in_flight_request() {
    let mut server = Instance::http(&generation("one"));
    let mut in_flight = server.connect();
    in_flight.write("GET /in-flight HTTP/1.1\r\nHost: localhost\r\n");
    server.wait_read_by_server(&in_flight);
    server.signal(Signal::QUIT);
    server.wait_for_error_log("SIGQUIT");
    assert!(
        server.is_running(),
        "the master waits for the request in flight"
    );
    in_flight.write("\r\n");
    let response = in_flight.read_response();
    assert_eq!(response.body_text(), "one\n");
    assert_eq!(response.header("Connection"), Some("close"));
    let status = server
        .wait_exit(PATIENCE)
        .expect("exit once the request is done");
    assert!(status.success(), "{status}");
}

#[test]
fn quit_stops_accepting_new_connections() {
    let mut server = Instance::http(&generation("one"));
    let port = server.port();
    let mut in_flight = server.connect();
    in_flight.write("GET /in-flight HTTP/1.1\r\nHost: localhost\r\n");
    server.wait_read_by_server(&in_flight);
    server.signal(Signal::QUIT);
    server.wait_for_error_log("SIGQUIT");
    // nginx closes its listening sockets at once: a new client is refused, not left waiting
    // in a backlog nobody accepts from.
    let refused = poll(
        Duration::from_secs(5),
        || match Client::try_connect_timeout(port, Duration::from_millis(500)) {
            Err(error) if error.kind() == ErrorKind::ConnectionRefused => Some(true),
            Err(_) | Ok(_) => None,
        },
    );
    in_flight.write("\r\n");
    assert_eq!(in_flight.read_response().status, 200);
    assert_eq!(
        refused,
        Some(true),
        "new connections are still accepted after QUIT"
    );
    assert!(
        server
            .wait_exit(PATIENCE)
            .is_some_and(|status| status.success())
    );
}

#[test]
fn term_closes_at_once() {
    let mut server = Instance::http(&generation("one"));
    let mut in_flight = server.connect();
    in_flight.write("GET /in-flight HTTP/1.1\r\nHost: localhost\r\n");
    server.wait_read_by_server(&in_flight);
    let since = Instant::now();
    let status = server.kill_fast();
    assert!(status.success(), "{status}");
    assert!(
        since.elapsed() < Duration::from_secs(5),
        "TERM took {:?}",
        since.elapsed()
    );
    in_flight.expect_closed_without_response();
}

/// What the load threads saw.
#[derive(Default)]
struct LoadCounters {
    ok: AtomicU64,
    failed: AtomicU64,
    refused: AtomicU64,
    /// Requests sent on a kept-alive connection that the server had closed as idle; like
    /// any HTTP client, the load retries them on a new connection.
    retried: AtomicU64,
    first_failures: Mutex<Vec<String>>,
}

impl LoadCounters {
    fn fail(&self, what: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut failures = self
            .first_failures
            .lock()
            .expect("a load thread never panics holding the lock");
        if failures.len() < 10 {
            failures.push(what);
        }
    }

    fn check(&self, response: &crate::support::Response) {
        if response.status == 200 && response.body_text().starts_with("generation ") {
            self.ok.fetch_add(1, Ordering::Relaxed);
        } else {
            self.fail(format!("unexpected response: {}", response.head_text()));
        }
    }
}

/// Connects, counting a refusal.
fn connect_counted(port: u16, counters: &LoadCounters) -> Option<Client> {
    match Client::try_connect(port) {
        Ok(client) => Some(client.with_timeout(Duration::from_secs(10))),
        Err(error) if error.kind() == ErrorKind::ConnectionRefused => {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            None
        }
        Err(error) => {
            counters.fail(format!("connect: {error}"));
            None
        }
    }
}

/// One request per connection until `stop`.
fn load_new_connections(port: u16, stop: &AtomicBool, counters: &LoadCounters) {
    while !stop.load(Ordering::Relaxed) {
        let Some(mut client) = connect_counted(port, counters) else {
            continue;
        };
        if let Err(error) = client.try_write(get("/")) {
            counters.fail(format!("write on a new connection: {error}"));
            continue;
        }
        match client.try_read_response() {
            Ok(response) => counters.check(&response),
            Err(error) => counters.fail(format!("new connection: {error:?}")),
        }
    }
}

/// Many requests per connection until `stop`; reconnects when the server closes.
fn load_keepalive(port: u16, stop: &AtomicBool, counters: &LoadCounters) {
    let mut connection: Option<Client> = None;
    while !stop.load(Ordering::Relaxed) {
        let reused = connection.is_some();
        let Some(mut client) = connection
            .take()
            .or_else(|| connect_counted(port, counters))
        else {
            continue;
        };
        let written = client.try_write(get_keepalive("/"));
        let response = match written {
            Ok(()) => client.try_read_response(),
            Err(_) => Err(ReadError::Reset),
        };
        match response {
            Ok(response) => {
                counters.check(&response);
                if response.keeps_alive() {
                    connection = Some(client);
                }
            }
            // The server closed the idle connection as our request went out: not an
            // error of the server, retry as clients do.
            Err(ReadError::Closed | ReadError::Reset) if reused => {
                counters.retried.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => counters.fail(format!(
                "keep-alive connection (reused: {reused}): {error:?}"
            )),
        }
    }
}

#[test]
fn reload_under_load() {
    let config = |number: usize| {
        format!(
            "worker_processes 2;\nevents {{\n}}\nhttp {{\n{}\n}}\n",
            generation(&format!("generation {number}"))
        )
    };
    let mut server = Instance::start(&config(0));
    let port = server.port();
    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(LoadCounters::default());
    let mut threads = Vec::new();
    for index in 0..4 {
        let stop = Arc::clone(&stop);
        let counters = Arc::clone(&counters);
        threads.push(std::thread::spawn(move || {
            if index % 2 == 0 {
                load_keepalive(port, &stop, &counters);
            } else {
                load_new_connections(port, &stop, &counters);
            }
        }));
    }
    let reloads = 10;
    let pace = Duration::from_millis(1400);
    for number in 1..=reloads {
        // The pause sets how long the load runs between reloads; it synchronises nothing.
        std::thread::sleep(pace);
        let expected = format!("generation {number}\n");
        server.reload(&config(number), move |server| {
            server.get("/").body_text() == expected
        });
    }
    std::thread::sleep(pace);
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().expect("a load thread does not panic");
    }
    let ok = counters.ok.load(Ordering::Relaxed);
    let failed = counters.failed.load(Ordering::Relaxed);
    let refused = counters.refused.load(Ordering::Relaxed);
    let retried = counters.retried.load(Ordering::Relaxed);
    eprintln!(
        "reload under load: {ok} ok, {failed} failed, {refused} refused, {retried} keep-alive retries"
    );
    let failures = counters.first_failures.lock().unwrap();
    assert_eq!(failed, 0, "failed requests, first ones: {failures:#?}");
    assert_eq!(refused, 0, "refused connections");
    // An idle keep-alive connection gets a grace to send its next request when its worker
    // drains, so not even a keep-alive request races a close.
    assert_eq!(retried, 0, "keep-alive requests lost to a close");
    assert!(ok > 500, "only {ok} requests were served");
}
