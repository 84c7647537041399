//! `listen`: address forms, Unix sockets, socket options, and a busy port.

use std::net::{Ipv6Addr, SocketAddr, TcpListener};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{Client, Instance, get, proc_net};

#[test]
fn listen_port_only() {
    let server =
        Instance::http("server { listen %%PORT_8080%%; location / { return 200 \"any\\n\"; } }");
    assert_eq!(server.get("/").body_text(), "any\n");
}

#[test]
fn listen_address_and_port() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; location / { return 200 \"$server_addr:$server_port\\n\"; } }",
    );
    assert_eq!(
        server.get("/").body_text(),
        format!("127.0.0.1:{}\n", server.port())
    );
}

fn ipv6_loopback_available() -> bool {
    TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok()
}

#[test]
fn listen_ipv6_loopback() {
    if !ipv6_loopback_available() {
        eprintln!("skipped: IPv6 loopback is unavailable");
        return;
    }
    let server = Instance::http(
        "server { listen [::1]:8080; location / { return 200 \"$remote_addr $server_addr\\n\"; } }",
    );
    let mut client = Client::connect_addr(SocketAddr::from((Ipv6Addr::LOCALHOST, server.port())));
    assert_eq!(client.request(get("/")).body_text(), "::1 ::1\n");
}

#[test]
fn listen_unix_socket() {
    let server = Instance::http(
        "server { listen unix:%%PREFIX%%/portico.sock; location / { return 200 \"$remote_addr\\n\"; } }",
    );
    let mut client = Client::connect_unix(&server.prefix().join("portico.sock"));
    let response = client.request(get("/"));
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "unix:\n");
}

/// `ss` lines for the listening socket(s) on `port`, or `None` (with a message) without `ss`.
#[allow(clippy::print_stderr, reason = "a skipped check says so")]
fn ss_listening(port: u16, options: &str) -> Option<String> {
    let output = Command::new("ss")
        .args([options, &format!("sport = :{port}")])
        .output();
    match output {
        Ok(output) if output.status.success() => {
            Some(String::from_utf8_lossy(&output.stdout).into_owned())
        }
        _ => {
            eprintln!("skipped: `ss` is unavailable");
            None
        }
    }
}

#[test]
fn reuseport_opens_one_socket_per_worker() {
    let server = Instance::builder(
        "worker_processes 4;
        events {
        }
        http {
            server { listen 127.0.0.1:8080 reuseport; location / { return 200 \"ok\\n\"; } }
            server { listen 127.0.0.1:8081; location / { return 200 \"ok\\n\"; } }
        }",
    )
    .start();
    assert_eq!(proc_net::listening_sockets(server.port()), 4);
    assert_eq!(proc_net::listening_sockets(server.port_of(8081)), 1);
    let mut clients: Vec<Client> = (0..40).map(|_| server.connect()).collect();
    for client in &mut clients {
        client.write(get("/"));
    }
    for client in &mut clients {
        assert_eq!(client.read_response().body_text(), "ok\n");
    }
}

#[test]
fn backlog() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080 backlog=37; location / { return 200 ok; } }
         server { listen 127.0.0.1:8081; location / { return 200 ok; } }",
    );
    let Some(custom) = ss_listening(server.port(), "-ltnH") else {
        return;
    };
    let Some(default) = ss_listening(server.port_of(8081), "-ltnH") else {
        return;
    };
    // For a listening socket `ss` shows the backlog as Send-Q; nginx's default is 511.
    let send_queue = |line: &str| line.split_whitespace().nth(2).map(str::to_owned);
    assert_eq!(send_queue(&custom).as_deref(), Some("37"), "{custom}");
    assert_eq!(send_queue(&default).as_deref(), Some("511"), "{default}");
}

#[test]
fn deferred_accept_still_serves() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080 deferred; location / { return 200 \"ok\\n\"; } }",
    );
    assert_eq!(server.get("/").body_text(), "ok\n");
}

#[test]
fn receive_and_send_buffers() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080 rcvbuf=64k sndbuf=32k; location / { return 200 ok; } }",
    );
    let Some(text) = ss_listening(server.port(), "-ltnmH") else {
        return;
    };
    // The kernel doubles what setsockopt() asked for.
    assert!(text.contains(&format!("rb{}", 2 * 64 * 1024)), "{text}");
    assert!(text.contains(&format!("tb{}", 2 * 32 * 1024)), "{text}");
}

#[test]
fn so_keepalive_on_accepted_connections() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080 so_keepalive=on; location / { return 200 ok; } }",
    );
    let mut client = server.connect();
    assert!(
        client
            .request(crate::support::get_keepalive("/"))
            .keeps_alive()
    );
    // The server's side of the connection (source port = the listening port) runs a
    // keepalive timer.
    let Some(text) = ss_listening(server.port(), "-tnoH") else {
        return;
    };
    let established: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("ESTAB"))
        .collect();
    assert!(!established.is_empty(), "{text}");
    assert!(
        established
            .iter()
            .all(|line| line.contains("timer:(keepalive")),
        "{text}"
    );
}

#[test]
fn bind_failure_on_a_busy_port() {
    let mut builder = Instance::builder(
        "worker_processes 1;\nevents {\n}\nhttp {\n    server { listen 127.0.0.1:8080; return 200 ok; }\n}\n",
    );
    let port = builder.port(8080);
    let _busy = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let started = Instant::now();
    let failure = builder.try_start().expect_err("the port is busy");
    let elapsed = started.elapsed();
    assert_eq!(failure.status.and_then(|status| status.code()), Some(1));
    let bind_error =
        format!("portico: [emerg] bind() to 127.0.0.1:{port} failed (98: Address already in use)");
    let attempts = failure
        .stderr
        .lines()
        .filter(|line| *line == bind_error)
        .count();
    assert_eq!(attempts, 5, "stderr:\n{}", failure.stderr);
    assert!(
        failure
            .stderr
            .ends_with("portico: [emerg] still could not bind()\n"),
        "stderr:\n{}",
        failure.stderr
    );
    // Five attempts, 500 ms apart.
    assert!(
        elapsed >= Duration::from_millis(1900),
        "gave up after {elapsed:?}"
    );
}
