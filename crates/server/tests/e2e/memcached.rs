//! `memcached_pass` to a real memcached (Debian's `memcached`, skipped with a message where
//! it is not installed) and to scripted ones that answer in pieces, break the protocol,
//! stall or are not there: nginx's statuses and error-log lines, and the worker goes on.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::app_servers::{Server, TempDir, find_program, running_as_root};
use crate::support::upstream::MockUpstream;
use crate::support::{Client, Instance};

/// memcached on a unix socket in a directory of its own, or `None` (said on stderr).
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn start_memcached() -> Option<(Server, TempDir)> {
    let Some(program) = find_program(|name| name == "memcached") else {
        eprintln!("skipped: memcached not found (Debian: apt-get install memcached)");
        return None;
    };
    let dir = TempDir::new("e2e-memcached");
    let socket = dir.join("memcached.sock");
    let mut command = Command::new(program);
    command
        .arg("-s")
        .arg(&socket)
        .args(["-a", "0666", "-t", "1"]);
    if running_as_root() {
        command.args(["-u", "root"]);
    }
    let server = Server::start(
        "memcached",
        command,
        &socket,
        dir.join("memcached.log"),
        "TERM",
    );
    Some((server, dir))
}

/// Sends commands to memcached and reads until its answer ends with `end`.
fn memcached_command(socket: &Path, command: &[u8], end: &[u8]) -> Vec<u8> {
    let mut stream = UnixStream::connect(socket).expect("connect to memcached");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a read timeout");
    stream.write_all(command).expect("send to memcached");
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !answer.ends_with(end) {
        let read = stream.read(&mut chunk).expect("memcached answers");
        assert!(read > 0, "memcached closed: {answer:?}");
        answer.extend_from_slice(&chunk[..read]);
    }
    answer
}

fn memcached_set(socket: &Path, key: &str, flags: u32, value: &[u8]) {
    let mut command = format!("set {key} {flags} 0 {}\r\n", value.len()).into_bytes();
    command.extend_from_slice(value);
    command.extend_from_slice(b"\r\n");
    assert_eq!(memcached_command(socket, &command, b"\r\n"), b"STORED\r\n");
}

/// memcached's count of the connections it has accepted.
fn total_connections(socket: &Path) -> u64 {
    let stats = memcached_command(socket, b"stats\r\n", b"END\r\n");
    String::from_utf8_lossy(&stats)
        .lines()
        .find_map(|line| line.strip_prefix("STAT total_connections "))
        .and_then(|count| count.trim().parse().ok())
        .expect("stats has total_connections")
}

#[test]
fn values_from_a_real_memcached() {
    let Some((_memcached, dir)) = start_memcached() else {
        return;
    };
    let socket = dir.join("memcached.sock");
    let config = format!(
        "upstream memd {{
            server unix:{socket};
            keepalive 1;
        }}
        server {{
            listen 127.0.0.1:8080;
            default_type text/plain;
            location / {{
                set $memcached_key $uri;
                memcached_pass memd;
                memcached_gzip_flag 2;
                error_page 404 /missing;
            }}
            location = /missing {{ return 200 'not in memcached'; }}
            location /html/ {{
                set $memcached_key $uri;
                memcached_pass unix:{socket};
                default_type text/html;
            }}
        }}",
        socket = socket.display(),
    );
    let server = Instance::http(&config);
    memcached_set(&socket, "/", 0, b"SEE-THIS");
    memcached_set(&socket, "/a%20b", 0, b"spaced");
    memcached_set(&socket, "/zipped", 3, b"\x1f\x8b-not-really");
    memcached_set(&socket, "/html/page", 0, b"<p>page</p>");
    let big: Vec<u8> = (0..1_000_000u32)
        .map(|index| b'a' + (index % 26) as u8)
        .collect();
    memcached_set(&socket, "/big", 0, &big);
    let before = total_connections(&socket);

    let value = server.get("/");
    assert_eq!(value.status, 200);
    assert_eq!(value.body, b"SEE-THIS");
    assert_eq!(value.header("Content-Type"), Some("text/plain"));
    assert_eq!(value.content_length(), Some(8));
    assert_eq!(value.header("Content-Encoding"), None);
    // The key is `$uri` decoded, then escaped for memcached's text protocol.
    assert_eq!(server.get("/a%20b").body, b"spaced");
    let zipped = server.get("/zipped");
    assert_eq!(zipped.header("Content-Encoding"), Some("gzip"));
    assert_eq!(zipped.body, b"\x1f\x8b-not-really");
    let missing = server.get("/nothing-here");
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.body_text(),
        "not in memcached",
        "error_page answers the 404"
    );
    assert_eq!(server.get("/big").body, big);
    // The connection was kept for each of them (the count includes each look at it).
    assert_eq!(total_connections(&socket), before + 2);
    server.wait_for_error_log("key: \"/nothing-here\" was not found by memcached");

    // HEAD leaves the value unread: that connection is not kept.
    let mut client = Client::connect(server.port());
    client.write("HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(server.get("/").body, b"SEE-THIS");
    assert_eq!(total_connections(&socket), before + 4);

    let post = server
        .request("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc");
    assert_eq!(post.status, 405);
    let html = server.get("/html/page");
    assert_eq!(html.header("Content-Type"), Some("text/html"));
    assert_eq!(html.body, b"<p>page</p>");
}

/// One scripted memcached at nominal port 8081 behind `location` settings.
fn fake_memcached(
    location: &str,
    script: impl Fn(crate::support::upstream::UpstreamConn) + Send + Sync + 'static,
) -> (Instance, MockUpstream) {
    let mut builder = Instance::http_builder(&format!(
        "upstream memd {{ server 127.0.0.1:8081; keepalive 4; }}
         server {{
             listen 127.0.0.1:8080;
             location / {{
                 set $memcached_key $uri;
                 memcached_pass memd;
                 {location}
             }}
             location /unset {{
                 set $memcached_key $arg_k;
                 memcached_pass memd;
             }}
         }}"
    ));
    let port = builder.port(8081);
    let upstream = MockUpstream::start(port, script);
    (builder.start(), upstream)
}

#[test]
fn answers_in_pieces_or_whole_and_kept_connections() {
    let (server, upstream) = fake_memcached("", |mut conn| {
        while let Some(line) = conn.read_line() {
            if line == b"get /split\r\n" {
                let pause = Duration::from_millis(50);
                for piece in ["VALUE /split 0 8\r\nSEE-TH", "IS", "\r\nEN", "D\r\n"] {
                    conn.write(piece);
                    std::thread::sleep(pause);
                }
            } else {
                conn.write("VALUE / 0 8\r\nSEE-THIS\r\nEND\r\n");
            }
        }
    });
    // A whole answer: its connection is idle again before the client has the body.
    for _ in 0..3 {
        let response = server.get("/");
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"SEE-THIS");
    }
    assert_eq!(upstream.connections(), 1);
    // The client has its body before `END` has come; the trailer split across reads is
    // still a valid one (no error).
    let split = server.get("/split");
    assert_eq!(split.body, b"SEE-THIS");
    assert_eq!(server.get("/").body, b"SEE-THIS");
    assert!(
        !server.error_log().contains("[error]"),
        "{}",
        server.error_log()
    );
}

#[test]
fn an_invalid_trailer_is_logged_and_the_connection_closed() {
    let (server, upstream) = fake_memcached("", |mut conn| {
        while conn.read_line().is_some() {
            conn.write("VALUE / 0 8\r\nSEE-THIS\r\nBAD\r\n");
        }
    });
    assert_eq!(server.get("/").body, b"SEE-THIS");
    assert_eq!(server.get("/").body, b"SEE-THIS");
    assert_eq!(upstream.connections(), 2);
    server.wait_for_error_log("memcached sent invalid trailer while reading upstream");
}

#[test]
fn broken_answers_are_502_with_nginx_words() {
    let (server, _upstream) = fake_memcached("", |mut conn| {
        let Some(line) = conn.read_line() else {
            return;
        };
        match &line[..] {
            b"get /error\r\n" => conn.write("SERVER_ERROR out of memory\r\n"),
            b"get /key\r\n" => conn.write("VALUE /other 0 2\r\nhi\r\nEND\r\n"),
            b"get /length\r\n" => conn.write("VALUE /length 0 -1\r\n"),
            // The value, then the connection ends where `END` should come.
            b"get /short\r\n" => conn.write("VALUE /short 0 8\r\nSEE-THIS"),
            _ => conn.write("END\r\n"),
        }
    });
    assert_eq!(server.get("/error").status, 502);
    server.wait_for_error_log(
        "memcached sent invalid response: \"SERVER_ERROR out of memory\" while reading \
         response header from upstream",
    );
    assert_eq!(server.get("/key").status, 502);
    server.wait_for_error_log(
        "memcached sent invalid key in response \"VALUE /other 0 2\" for key \"/key\"",
    );
    assert_eq!(server.get("/length").status, 502);
    server.wait_for_error_log(
        "memcached sent invalid length in response \"VALUE /length 0 -1\" for key \"/length\"",
    );
    let mut client = Client::connect(server.port());
    client.write("GET /short HTTP/1.1\r\nHost: x\r\n\r\n");
    let (_, bytes) = client.wait_closed();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("SEE-THIS"), "{text}");
    server.wait_for_error_log("upstream prematurely closed connection while reading upstream");
    assert_eq!(server.get("/unset").status, 500);
    server.wait_for_error_log("the \"$memcached_key\" variable is not set");
    // The worker goes on.
    assert_eq!(server.get("/absent").status, 404);
}

#[test]
fn a_stalled_or_dead_memcached_is_504_or_502() {
    let (server, _upstream) = fake_memcached(
        "memcached_read_timeout 300ms;
         memcached_send_timeout 1s;
         memcached_connect_timeout 1s;
         memcached_buffer_size 1k;
         memcached_socket_keepalive on;
         memcached_bind 127.0.0.1;",
        |mut conn| {
            if conn.read_line().is_some() {
                std::thread::sleep(Duration::from_secs(2));
            }
        },
    );
    assert_eq!(server.get("/").status, 504);
    server.wait_for_error_log(
        "upstream timed out (110: Connection timed out) while reading response header from upstream",
    );

    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            set $memcached_key $uri;
            location / { memcached_pass 127.0.0.1:8081; }
        }",
    );
    let _nobody = builder.port(8081);
    let server = builder.start();
    assert_eq!(server.get("/").status, 502);
    server.wait_for_error_log(
        "connect() failed (111: Connection refused) while connecting to upstream",
    );
}

#[test]
fn memcached_next_upstream_not_found_asks_the_next_server() {
    let mut builder = Instance::http_builder(
        "upstream memd { server 127.0.0.1:8081; server 127.0.0.1:8082; }
         server {
             listen 127.0.0.1:8080;
             set $memcached_key $uri;
             location / {
                 memcached_pass memd;
                 memcached_next_upstream not_found error;
                 memcached_next_upstream_tries 2;
                 memcached_next_upstream_timeout 5s;
             }
             location /first/ {
                 memcached_pass memd;
                 memcached_next_upstream off;
             }
         }",
    );
    let empty = MockUpstream::start(builder.port(8081), |mut conn| {
        while conn.read_line().is_some() {
            conn.write("END\r\n");
        }
    });
    let full = MockUpstream::start(builder.port(8082), |mut conn| {
        while let Some(line) = conn.read_line() {
            let key = String::from_utf8_lossy(&line[4..line.len() - 2]).into_owned();
            conn.write(format!("VALUE {key} 0 5\r\nfound\r\nEND\r\n"));
        }
    });
    let server = builder.start();
    for _ in 0..4 {
        let response = server.get("/x");
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"found");
    }
    assert!(empty.connections() >= 1 && full.connections() >= 1);
    // Without it, the first server's `END` is the answer half of the time.
    let statuses: Vec<u16> = (0..4).map(|_| server.get("/first/y").status).collect();
    assert!(statuses.contains(&404), "{statuses:?}");
}
