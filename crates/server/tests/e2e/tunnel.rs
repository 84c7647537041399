//! `tunnel_pass` and the `tunnel_*` directives: a CONNECT request opens a TCP connection to
//! a local echo server and bytes go both ways; CONNECT is refused where no tunnel is, on
//! HTTP/1.0 and with a body; proxy authentication answers 407; the connect and read
//! timeouts end a tunnel; a refused peer passes the tunnel to the next address, as
//! `tunnel_next_upstream` says.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::support::Instance;
use crate::support::dns::dns_server_answering;
use crate::support::upstream::full_listener;

/// An echo server on 127.0.0.1:`port`: each connection gets back what it sends, until it
/// closes.
fn echo_server(port: u16) {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the echo server");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buffer = [0u8; 8192];
                while let Ok(count) = stream.read(&mut buffer) {
                    if count == 0 || stream.write_all(&buffer[..count]).is_err() {
                        break;
                    }
                }
            });
        }
    });
}

/// Reads until `needle` has arrived after the bytes `seen` already holds, or the peer
/// closes; everything read, `seen` first.
fn read_more(stream: &mut TcpStream, mut seen: Vec<u8>, needle: &[u8]) -> Vec<u8> {
    let mut chunk = [0u8; 8192];
    while !seen.windows(needle.len()).any(|window| window == needle) {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(count) => seen.extend_from_slice(&chunk[..count]),
        }
    }
    seen
}

/// Reads until the peer closes (or 10 s pass), after the bytes `seen` already holds.
fn read_to_close(stream: &mut TcpStream, seen: Vec<u8>) -> Vec<u8> {
    read_more(stream, seen, b"\0never\0")
}

/// Opens a client connection to the instance's nominal port and sends `head`.
fn send(server: &Instance, nominal: u16, head: &str) -> TcpStream {
    let mut client = TcpStream::connect(("127.0.0.1", server.port_of(nominal))).expect("connect");
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    client.write_all(head.as_bytes()).expect("write the head");
    client
}

/// A tunnel as the client sees it: the response head, the bytes read past it.
struct Opened {
    head: String,
    rest: Vec<u8>,
    stream: TcpStream,
}

impl Opened {
    fn read(mut stream: TcpStream) -> Opened {
        let seen = read_more(&mut stream, Vec::new(), b"\r\n\r\n");
        let end = seen
            .windows(4)
            .position(|window| window == b"\r\n\r\n")
            .map_or(seen.len(), |at| at + 4);
        Opened {
            head: String::from_utf8_lossy(&seen[..end]).into_owned(),
            rest: seen[end..].to_vec(),
            stream,
        }
    }

    /// Everything that came through the tunnel until `needle`.
    fn until(&mut self, needle: &[u8]) -> Vec<u8> {
        read_more(&mut self.stream, std::mem::take(&mut self.rest), needle)
    }

    /// Everything that came through the tunnel until it closed.
    fn until_closed(&mut self) -> Vec<u8> {
        read_to_close(&mut self.stream, std::mem::take(&mut self.rest))
    }
}

/// Sends a CONNECT for `target` (with `early` bytes behind it) and reads the answer's head.
fn connect(server: &Instance, nominal: u16, target: &str, early: &str) -> Opened {
    let client = send(
        server,
        nominal,
        &format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n{early}"),
    );
    Opened::read(client)
}

#[test]
fn a_tunnel_carries_bytes_both_ways() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            tunnel_pass;
            tunnel_buffer_size 1k;
            tunnel_read_timeout 5s;
        }",
    );
    let echo = builder.port(8081);
    echo_server(echo);
    let server = builder.start();
    // What the client sends with its request goes through the tunnel first.
    let mut opened = connect(&server, 8080, &format!("127.0.0.1:{echo}"), "early,");
    let head = opened.head.clone();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("\r\nConnection: close\r\n"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding"),
        "{head}"
    );
    assert!(
        !head.to_ascii_lowercase().contains("content-length"),
        "{head}"
    );
    assert_eq!(opened.until(b"early,"), b"early,");
    let mut client = opened.stream;
    // More than the relay's buffer, both ways.
    let payload: Vec<u8> = (0..256 * 1024).map(|i| (i % 251) as u8).collect();
    let mut writer = client.try_clone().expect("clone");
    let sent = payload.clone();
    let writing = std::thread::spawn(move || writer.write_all(&sent).expect("write"));
    let mut echoed = vec![0u8; payload.len()];
    client.read_exact(&mut echoed).expect("the echo");
    writing.join().expect("writer");
    assert!(echoed == payload, "the echo differs");
    // The client's close ends the tunnel.
    client
        .shutdown(std::net::Shutdown::Write)
        .expect("shutdown");
    assert_eq!(read_to_close(&mut client, Vec::new()), b"");
}

#[test]
fn connect_is_refused_where_no_tunnel_is() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / { return 200 \"static\"; }
        }
        server {
            listen 127.0.0.1:8082;
            location /tunnel/ { tunnel_pass; }
            location / { return 200 \"other\"; }
        }
        server {
            listen 127.0.0.1:8083;
            tunnel_pass 127.0.0.1:%%PORT_8081%%;
        }",
    );
    let echo = builder.port(8081);
    echo_server(echo);
    let server = builder.start();
    let target = format!("127.0.0.1:{echo}");
    // A server without `tunnel_pass` refuses CONNECT before any location.
    let refused = server.request_to(
        8080,
        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"),
    );
    assert_eq!(refused.status, 405);
    server.wait_for_error_log("client sent CONNECT method");
    // A server that tunnels somewhere: a CONNECT that reaches another location gets that
    // location's handler (its URI is "/"), never a tunnel.
    let elsewhere = server.request_to(
        8082,
        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"),
    );
    assert_eq!(
        (elsewhere.status, elsewhere.body_text().as_str()),
        (200, "other")
    );
    // HTTP/1.0, and a body, are refused.
    let old = server.request_to(8083, format!("CONNECT {target} HTTP/1.0\r\n\r\n"));
    assert_eq!(old.status, 405);
    let with_body = server.request_to(
        8083,
        format!("CONNECT {target} HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"),
    );
    assert_eq!(with_body.status, 400);
    server.wait_for_error_log("client sent CONNECT request with body");
    // The target must be `host:port` and nothing else.
    for bad in [
        format!("{target}/"),
        format!("user@{target}"),
        format!("http://{target}"),
        "127.0.0.1".to_owned(),
        "127.0.0.1:65536".to_owned(),
        ":80".to_owned(),
    ] {
        let response =
            server.request_to(8083, format!("CONNECT {bad} HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert_eq!(response.status, 400, "{bad}");
    }
    // A tunnel location answers other methods 405; the static address ignores the
    // request's target.
    assert_eq!(
        server
            .request_to(
                8083,
                "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
            )
            .status,
        405
    );
    let mut opened = connect(&server, 8083, "example.invalid:1", "static,");
    assert!(
        opened.head.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        opened.head
    );
    assert_eq!(opened.until(b"static,"), b"static,");
}

#[test]
fn proxy_authentication_guards_a_tunnel() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            auth_basic \"closed proxy\";
            auth_basic_user_file htpasswd;
            tunnel_pass;
        }
        server {
            listen 127.0.0.1:8082;
            deny all;
            tunnel_pass;
        }",
    )
    .file("htpasswd", "plain:{PLAIN}password\n");
    let echo = builder.port(8081);
    echo_server(echo);
    let server = builder.start();
    let target = format!("127.0.0.1:{echo}");
    let asked = server.request_to(
        8080,
        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"),
    );
    assert_eq!(asked.status, 407);
    assert_eq!(
        asked.header("Proxy-Authenticate"),
        Some("Basic realm=\"closed proxy\"")
    );
    assert!(!asked.has_header("WWW-Authenticate"));
    // `Authorization` is the origin's, not the proxy's: still 407.
    let origin = server.request_to(
        8080,
        format!(
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\
             Authorization: Basic cGxhaW46cGFzc3dvcmQ=\r\n\r\n"
        ),
    );
    assert_eq!(origin.status, 407);
    let mut opened = Opened::read(send(
        &server,
        8080,
        &format!(
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\
             Proxy-Authorization: Basic cGxhaW46cGFzc3dvcmQ=\r\n\r\nin,"
        ),
    ));
    assert!(
        opened.head.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        opened.head
    );
    assert_eq!(opened.until(b"in,"), b"in,");
    // `deny` refuses a tunnel as any request.
    let denied = server.request_to(
        8082,
        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"),
    );
    assert_eq!(denied.status, 403);
}

#[test]
fn timeouts_end_a_tunnel_and_error_page_answers_its_failures() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / {
                if ($request_method = CONNECT) {
                    tunnel_pass;
                    error_page 502 504 /50x.html;
                    break;
                }
                root site;
            }
        }
        tunnel_connect_timeout 300ms;
        tunnel_read_timeout 500ms;",
    )
    .file("site/50x.html", "ERROR");
    let silent = builder.port(8081);
    let hanging = builder.port(8082);
    let refused = builder.port(8083);
    let listener = TcpListener::bind(("127.0.0.1", silent)).expect("bind");
    let holder = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.write_all(b"hello,").expect("greet");
        // Silent from here until the tunnel closes.
        read_to_close(&mut stream, Vec::new())
    });
    let _full = full_listener(hanging);
    let server = builder.start();
    // Nothing moves for `tunnel_read_timeout`: the tunnel closes.
    let started = Instant::now();
    let mut opened = connect(&server, 8080, &format!("127.0.0.1:{silent}"), "");
    assert!(
        opened.head.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        opened.head
    );
    assert_eq!(opened.until_closed(), b"hello,");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(450) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    assert_eq!(holder.join().expect("holder"), b"");
    // A connect that hangs past `tunnel_connect_timeout` is a 504, one that is refused a
    // 502; both go to `error_page`, whose internal redirect is a GET.
    for (port, status) in [(hanging, 504), (refused, 502)] {
        let target = format!("127.0.0.1:{port}");
        let response = server.request_to(
            8080,
            format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"),
        );
        assert_eq!(
            (response.status, response.body_text().as_str()),
            (status, "ERROR"),
            "{target}"
        );
    }
    server.wait_for_error_log(&format!(
        "upstream timed out (110: Connection timed out) while connecting to upstream, \
         client: 127.0.0.1, server: , request: \"CONNECT 127.0.0.1:{hanging} HTTP/1.1\", \
         upstream: \"127.0.0.1:{hanging}\""
    ));
}

/// A tunnel address made by variables without a port: 500 and nginx's line, unless it
/// names an `upstream` block.
#[test]
fn a_variable_address_without_a_port_names_a_group() {
    let mut builder = Instance::http_builder(
        "upstream echo { server 127.0.0.1:%%PORT_8081%%; }
        server { listen 127.0.0.1:8080; tunnel_pass $http_x_to; }",
    );
    let echo = builder.port(8081);
    echo_server(echo);
    let server = builder.start();
    let mut opened = Opened::read(send(
        &server,
        8080,
        "CONNECT a.test:1 HTTP/1.1\r\nHost: a.test:1\r\nX-To: echo\r\n\r\ngroup,",
    ));
    assert!(
        opened.head.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        opened.head
    );
    assert_eq!(opened.until(b"group,"), b"group,");
    let opened = Opened::read(send(
        &server,
        8080,
        "CONNECT a.test:1 HTTP/1.1\r\nHost: a.test:1\r\nX-To: nowhere\r\n\r\n",
    ));
    assert!(opened.head.starts_with("HTTP/1.1 500 "), "{}", opened.head);
    server.wait_for_error_log("no port in upstream \"nowhere\"");
}

/// Addresses the test's name server gives every name: the first refuses connections
/// (nothing listens on 127.0.0.3 at the echo server's port), the second is the echo
/// server's.
const REFUSED_THEN_ECHO: &[Ipv4Addr] = &[Ipv4Addr::new(127, 0, 0, 3), Ipv4Addr::new(127, 0, 0, 1)];

#[test]
fn tunnel_next_upstream_passes_a_refused_connection_on() {
    let mut builder = Instance::http_builder(
        "resolver 127.0.0.1:8089;
        resolver_timeout 2s;
        server { listen 127.0.0.1:8080; tunnel_pass; }
        server { listen 127.0.0.1:8082; tunnel_pass; tunnel_next_upstream off; }
        server { listen 127.0.0.1:8083; tunnel_pass; tunnel_next_upstream_tries 1; }
        server { listen 127.0.0.1:8084; tunnel_pass; tunnel_next_upstream timeout; }",
    );
    let echo = builder.port(8081);
    let dns = builder.port(8089);
    dns_server_answering(dns, REFUSED_THEN_ECHO);
    echo_server(echo);
    let server = builder.start();
    let target = format!("echo.test:{echo}");
    // By default an error moves the tunnel to the name's next address.
    let mut opened = connect(&server, 8080, &target, "next,");
    assert!(
        opened.head.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        opened.head
    );
    assert_eq!(opened.until(b"next,"), b"next,");
    // `off`, one try, or only timeouts: the refusal is the answer.
    for nominal in [8082, 8083, 8084] {
        let opened = connect(&server, nominal, &target, "");
        assert!(
            opened.head.starts_with("HTTP/1.1 502 "),
            "port {nominal}: {}",
            opened.head
        );
    }
}

/// `tunnel_bind` picks the connection's source address; `tunnel_socket_keepalive` turns on
/// `SO_KEEPALIVE` (the kernel's keep-alive timer runs on the idle connection).
#[test]
fn tunnel_bind_and_socket_keepalive_shape_the_connection() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            tunnel_pass;
            tunnel_bind 127.0.0.2;
            tunnel_socket_keepalive on;
        }",
    );
    let port = builder.port(8081);
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind");
    let peer = std::thread::spawn(move || {
        let (mut stream, from) = listener.accept().expect("accept");
        stream.write_all(b"hi,").expect("greet");
        let _ = read_to_close(&mut stream, Vec::new());
        from
    });
    let server = builder.start();
    let mut opened = connect(&server, 8080, &format!("127.0.0.1:{port}"), "");
    assert_eq!(opened.until(b"hi,"), b"hi,");
    let upstream_side = crate::support::proc_net::rows()
        .into_iter()
        .find(|row| row.remote_port == port && row.state == "01")
        .expect("the tunnel's connection");
    assert_eq!(
        upstream_side.timer,
        crate::support::proc_net::TIMER_KEEPALIVE
    );
    drop(opened);
    let from = peer.join().expect("peer");
    assert_eq!(from.ip(), std::net::IpAddr::from([127, 0, 0, 2]));
}

/// A peer that stops reading: the tunnel ends once a write to it waits
/// `tunnel_send_timeout`, long before `tunnel_read_timeout` (small socket buffers make
/// the wait come soon).
#[test]
fn tunnel_send_timeout_ends_a_tunnel_the_peer_stopped_reading() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            tunnel_pass;
            tunnel_send_timeout 500ms;
            tunnel_read_timeout 30s;
            tunnel_socket_sndbuf 4k;
            tunnel_socket_rcvbuf 4k;
        }",
    );
    let port = builder.port(8081);
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind");
    let peer = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .expect("timeout");
        // Never reads: waits for the tunnel to close its side.
        let mut byte = [0u8; 1];
        std::thread::sleep(Duration::from_secs(5));
        let _ = stream.peek(&mut byte);
    });
    let server = builder.start();
    let opened = connect(&server, 8080, &format!("127.0.0.1:{port}"), "");
    assert!(
        opened.head.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        opened.head
    );
    let mut client = opened.stream;
    let started = Instant::now();
    let mut writer = client.try_clone().expect("clone");
    std::thread::spawn(move || {
        let block = vec![b'x'; 64 * 1024];
        while writer.write_all(&block).is_ok() {}
    });
    assert_eq!(read_to_close(&mut client, Vec::new()), b"");
    let elapsed = started.elapsed();
    // The peer itself lets go after 5 s: the send timeout came well before.
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    peer.join().expect("peer");
}

/// `tunnel_next_upstream_timeout`: a try that ends past it is the last one.
#[test]
fn tunnel_next_upstream_timeout_limits_the_tries() {
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_addr|$status';
        upstream hanging {
            server 127.0.0.1:8081 max_fails=0;
            server 127.0.0.1:8082 max_fails=0;
        }
        server {
            listen 127.0.0.1:8080;
            access_log logs/up.log up;
            tunnel_pass hanging;
            tunnel_connect_timeout 300ms;
        }
        server {
            listen 127.0.0.1:8083;
            access_log logs/up.log up;
            tunnel_pass hanging;
            tunnel_connect_timeout 300ms;
            tunnel_next_upstream_timeout 200ms;
        }",
    );
    let (first, second) = (builder.port(8081), builder.port(8082));
    let _full_first = full_listener(first);
    let _full_second = full_listener(second);
    let server = builder.start();
    for nominal in [8080, 8083] {
        let opened = connect(&server, nominal, "example.invalid:443", "");
        assert!(opened.head.starts_with("HTTP/1.1 504 "), "{}", opened.head);
    }
    // Both servers tried, then one only.
    let lines = crate::support::wait::poll(Duration::from_secs(10), || {
        let log = server.read("logs/up.log");
        let lines: Vec<String> = log.lines().map(str::to_owned).collect();
        (lines.len() >= 2).then_some(lines)
    })
    .expect("two access log lines");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].contains(&format!("127.0.0.1:{first}")),
        "{lines:?}"
    );
    assert!(
        lines[0].contains(&format!("127.0.0.1:{second}")),
        "{lines:?}"
    );
    assert!(!lines[1].contains(','), "{lines:?}");
}

#[test]
fn bad_tunnel_settings_are_refused_at_load() {
    use crate::support::cli::assert_http_body_fails;
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; tunnel_pass; tunnel_pass; }",
        "\"tunnel_pass\" directive is duplicate in {conf}:4",
    );
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; tunnel_next_upstream http_502; }",
        "invalid value \"http_502\" in {conf}:4",
    );
    assert_http_body_fails(
        "tunnel_pass; server { listen 127.0.0.1:8080; }",
        "\"tunnel_pass\" directive is not allowed here in {conf}:4",
    );
    // An address without a port must name an `upstream` block.
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; tunnel_pass backend; }",
        "no port in upstream \"backend\" in {conf}:4",
    );
    let (_, output) = crate::support::cli::test_http_body(
        "server { listen 127.0.0.1:8080; tunnel_pass backend; }
         upstream backend { server 127.0.0.1:1; }",
    );
    output.assert_code(0);
    // Linux has no settable `SO_SNDLOWAT`: a size is warned about and ignored.
    let (_, output) = crate::support::cli::test_http_body(
        "server { listen 127.0.0.1:8080; tunnel_pass; tunnel_send_lowat 4k; }",
    );
    output.assert_code(0);
    assert!(
        output
            .stderr
            .contains("\"tunnel_send_lowat\" is not supported, ignored"),
        "{}",
        output.stderr
    );
}

/// `tunnel_read_timeout` counts from the last byte moved: a tunnel whose bytes keep
/// coming more often than that stays open however long it lasts, and closes once they
/// stop.
#[test]
fn a_tunnel_that_keeps_moving_outlives_its_read_timeout() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / { tunnel_pass; }
        }
        tunnel_read_timeout 500ms;",
    );
    let trickle = builder.port(8081);
    let listener = TcpListener::bind(("127.0.0.1", trickle)).expect("bind");
    let holder = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        for _ in 0..8 {
            stream.write_all(b"x").expect("a byte");
            std::thread::sleep(Duration::from_millis(200));
        }
        read_to_close(&mut stream, Vec::new())
    });
    let server = builder.start();
    let started = Instant::now();
    let mut opened = connect(&server, 8080, &format!("127.0.0.1:{trickle}"), "");
    assert!(
        opened.head.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        opened.head
    );
    assert_eq!(
        opened.until_closed(),
        b"xxxxxxxx",
        "open for 1.6 s, past 500 ms"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1_850) && elapsed < Duration::from_secs(5),
        "closed {elapsed:?} after it opened: about 500 ms after the last byte"
    );
    assert_eq!(holder.join().expect("holder"), b"");
}
