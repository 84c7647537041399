//! `error_log syslog:...` and `access_log syslog:...`: RFC 3164 messages over UDP and unix
//! datagram sockets, in the http and stream blocks, and a syslog server that is not there.

use std::net::UdpSocket;
use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use crate::support::cli::assert_http_body_fails;
use crate::support::{Instance, PATIENCE};

/// A syslog server on a free UDP port.
fn udp_server() -> (UdpSocket, u16) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind the syslog server");
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let port = socket.local_addr().expect("address").port();
    (socket, port)
}

/// The messages that arrive until one contains `marker` (or `PATIENCE` passes).
fn receive_until(receive: impl Fn(&mut [u8]) -> Option<usize>, marker: &str) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    let mut messages = Vec::new();
    let mut buffer = vec![0u8; 4096];
    while Instant::now() < deadline {
        let Some(length) = receive(&mut buffer) else {
            continue;
        };
        let message = String::from_utf8_lossy(&buffer[..length]).into_owned();
        let done = message.contains(marker);
        messages.push(message);
        if done {
            return messages;
        }
    }
    panic!("no message with {marker:?} among {messages:?}");
}

fn receive_udp(socket: &UdpSocket, marker: &str) -> Vec<String> {
    receive_until(|buffer| socket.recv(buffer).ok(), marker)
}

/// `<PRI>Mmm dd hh:mm:ss HOST TAG: ` then the text.
fn is_rfc3164(message: &str, pri: u32, tag: &str, with_host: bool) -> bool {
    let host = if with_host { r"\S+ " } else { "" };
    let pattern = format!(r"^<{pri}>[A-Z][a-z]{{2}} [ \d]\d \d\d:\d\d:\d\d {host}{tag}: \S");
    crate::support::log::matches(&pattern, message)
}

/// Error-log lines carry their level's severity (local7 by default), access-log lines the
/// target's (`info` by default); `facility=`, `severity=`, `tag=` and `nohostname` apply.
#[test]
fn error_and_access_lines_are_sent_as_rfc_3164_messages() {
    let (server, port) = udp_server();
    let instance = Instance::http(&format!(
        "log_format uri_status '$uri:$status';
        server {{
            listen 127.0.0.1:8080;
            root html;
            location /e/ {{
                error_log syslog:server=127.0.0.1:{port};
                access_log off;
            }}
            location /a/ {{
                access_log syslog:server=127.0.0.1:{port},facility=user,tag=web_1 uri_status;
            }}
            location /s/ {{
                access_log syslog:severity=alert,server=127.0.0.1:{port},nohostname uri_status;
            }}
        }}"
    ));
    assert_eq!(instance.get("/e/missing").status, 404);
    let messages = receive_udp(&server, "/e/missing");
    let line = messages.last().expect("a message");
    assert!(is_rfc3164(line, 187, "nginx", true), "{line}");
    assert!(
        line.contains("nginx: ") && line.contains("[error]") && line.contains("open()"),
        "{line}"
    );
    assert!(!line.ends_with('\n'), "no newline in a message: {line:?}");
    instance.get("/a/missing");
    let messages = receive_udp(&server, "/a/missing:404");
    let line = messages.last().expect("a message");
    assert!(is_rfc3164(line, 14, "web_1", true), "{line}");
    assert!(line.ends_with("web_1: /a/missing:404"), "{line}");
    instance.get("/s/missing");
    let messages = receive_udp(&server, "/s/missing:404");
    let line = messages.last().expect("a message");
    assert!(is_rfc3164(line, 185, "nginx", false), "{line}");
}

/// A unix datagram socket, and a stream block's error log.
#[test]
fn unix_sockets_and_the_stream_block() {
    let directory = tempdir();
    let path = directory.join("log.sock");
    let server = UnixDatagram::bind(&path).expect("bind the unix syslog server");
    server
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let instance = Instance::builder(&format!(
        "worker_processes 1;
        events {{
        }}
        stream {{
            server {{
                listen 127.0.0.1:8081;
                return done;
                error_log syslog:server=unix:{path},tag=stream info;
            }}
        }}
        http {{
            server {{
                listen 127.0.0.1:8080;
                error_log syslog:server=unix:{path},facility=daemon info;
                root html;
            }}
        }}",
        path = path.display()
    ))
    .start();
    instance.get("/absent");
    let messages = receive_until(|buffer| server.recv(buffer).ok(), "/absent");
    let line = messages.last().expect("a message");
    assert!(is_rfc3164(line, 27, "nginx", true), "{line}");
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", instance.port_of(8081)))
        .expect("connect to the stream server");
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).expect("read");
    assert_eq!(answer, "done");
    let messages = receive_until(|buffer| server.recv(buffer).ok(), "connected to");
    let line = messages.last().expect("a message");
    assert!(is_rfc3164(line, 190, "stream", true), "{line}");
    let _ = std::fs::remove_dir_all(directory);
}

/// With nobody listening, requests are answered as usual; when a server comes back, the
/// messages reach it.
#[test]
fn a_syslog_server_that_is_not_there_costs_only_its_messages() {
    let (server, port) = udp_server();
    drop(server);
    let instance = Instance::http(&format!(
        "server {{
            listen 127.0.0.1:8080;
            location / {{
                access_log syslog:server=127.0.0.1:{port};
                error_log syslog:server=127.0.0.1:{port};
                return 200 ok;
            }}
        }}"
    ));
    for _ in 0..20 {
        assert_eq!(instance.get("/lost").status, 200);
    }
    let server = UdpSocket::bind(("127.0.0.1", port)).expect("bind the syslog server again");
    server
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let deadline = Instant::now() + PATIENCE;
    let mut buffer = vec![0u8; 4096];
    loop {
        assert!(
            Instant::now() < deadline,
            "no message after the server came back"
        );
        assert_eq!(instance.get("/back").status, 200);
        if let Ok(length) = server.recv(&mut buffer)
            && String::from_utf8_lossy(&buffer[..length]).contains("GET /back")
        {
            break;
        }
    }
}

#[test]
fn bad_targets_are_refused() {
    assert_http_body_fails(
        "server { access_log syslog:server=127.0.0.1 combined buffer=32k; }",
        "logs to syslog cannot be buffered in {conf}:4",
    );
    assert_http_body_fails(
        "error_log syslog:facility=user;",
        "no syslog server specified in {conf}:4",
    );
    assert_http_body_fails(
        "error_log syslog:server=127.0.0.1,facility=nope;",
        "unknown syslog facility \"nope\" in {conf}:4",
    );
    assert_http_body_fails(
        "error_log syslog:server=127.0.0.1,tag=a-b;",
        "syslog \"tag\" only allows alphanumeric characters and underscore in {conf}:4",
    );
    assert_http_body_fails(
        "access_log syslog:server=127.0.0.1,loud;",
        "unknown syslog parameter \"loud\" in {conf}:4",
    );
}

fn tempdir() -> std::path::PathBuf {
    let directory = std::env::temp_dir().join(format!(
        "portico-e2e-syslog-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).expect("temp dir");
    directory
}
