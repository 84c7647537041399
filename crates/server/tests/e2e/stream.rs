//! The `stream` block: TCP and UDP proxying to real sockets, `return`, `allow`/`deny`,
//! the access log and its variables, and bad input (a client that sends nothing, a PROXY
//! header that never ends, a dead upstream, an upstream that never reads, an upstream that
//! ends its side first) while other clients are served.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::support::Instance;
use crate::support::tls;

const TIMEOUT: Duration = Duration::from_secs(10);

/// A TCP upstream on `port` that answers every read with the bytes read, uppercased, and
/// closes when it reads `close`; it runs until the test process ends.
fn upper_case_upstream(port: u16) {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the upstream");
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            let Ok(mut connection) = connection else {
                continue;
            };
            std::thread::spawn(move || {
                let _ = connection.set_read_timeout(Some(TIMEOUT));
                let mut buf = [0u8; 4096];
                loop {
                    let read = match connection.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(read) => read,
                    };
                    let answer = buf[..read].to_ascii_uppercase();
                    if connection.write_all(&answer).is_err() || answer.starts_with(b"CLOSE") {
                        return;
                    }
                }
            });
        }
    });
}

/// A UDP upstream on `port` that answers every datagram with its bytes reversed.
fn reversing_udp_upstream(port: u16) {
    let socket = UdpSocket::bind(("127.0.0.1", port)).expect("bind the udp upstream");
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((len, from)) = socket.recv_from(&mut buf) {
            let mut answer = buf[..len].to_vec();
            answer.reverse();
            let _ = socket.send_to(&answer, from);
        }
    });
}

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    stream
}

/// Writes `bytes` and reads exactly `len` bytes back.
fn exchange(stream: &mut TcpStream, bytes: &[u8], len: usize) -> Vec<u8> {
    stream.write_all(bytes).expect("write");
    let mut answer = vec![0u8; len];
    stream.read_exact(&mut answer).expect("read the answer");
    answer
}

/// Reads until the server closes; what it sent.
fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let _ = stream.read_to_end(&mut all);
    all
}

const PROXY_CONFIG: &str = r#"
worker_processes 2;
events {
}
stream {
    log_format session "$remote_addr $protocol $status $bytes_received $bytes_sent"
                       " $upstream_addr $upstream_bytes_sent $upstream_bytes_received";
    upstream backend {
        server 127.0.0.1:8081;
    }
    server {
        listen 127.0.0.1:8080;
        proxy_pass backend;
        proxy_connect_timeout 2s;
        access_log logs/stream.log session;
    }
    server {
        listen 127.0.0.1:8082;
        return "hello $remote_addr";
    }
    server {
        listen 127.0.0.1:8083;
        deny 127.0.0.1;
        return "never";
        access_log logs/denied.log session;
    }
    server {
        listen 127.0.0.1:8084;
        proxy_pass 127.0.0.1:8089;
        proxy_connect_timeout 2s;
        access_log logs/dead.log session;
    }
}
"#;

#[test]
fn tcp_bytes_go_both_ways_and_the_session_is_logged() {
    let mut builder = Instance::builder(PROXY_CONFIG);
    upper_case_upstream(builder.port(8081));
    builder.port(8089);
    let instance = builder.start();
    let mut client = connect(instance.port());
    assert_eq!(exchange(&mut client, b"abc", 3), b"ABC");
    assert_eq!(exchange(&mut client, b"defgh", 5), b"DEFGH");
    assert_eq!(exchange(&mut client, b"close", 5), b"CLOSE");
    assert_eq!(read_to_close(&mut client), b"", "the upstream closed");
    let upstream = format!("127.0.0.1:{}", instance.port_of(8081));
    let line = instance.wait_for_line("logs/stream.log", "TCP");
    assert_eq!(
        line,
        format!("127.0.0.1 TCP 200 13 13 {upstream} 13 13"),
        "client and upstream byte counts"
    );
}

#[test]
fn return_answers_and_deny_closes_with_403() {
    let mut builder = Instance::builder(PROXY_CONFIG);
    builder.port(8081);
    builder.port(8089);
    let instance = builder.start();
    let mut client = connect(instance.port_of(8082));
    assert_eq!(read_to_close(&mut client), b"hello 127.0.0.1");
    let mut denied = connect(instance.port_of(8083));
    assert_eq!(read_to_close(&mut denied), b"");
    let line = instance.wait_for_line("logs/denied.log", "TCP");
    assert!(line.starts_with("127.0.0.1 TCP 403 0 0 - "), "{line}");
    instance.wait_for_error_log("access forbidden by rule");
}

#[test]
fn a_dead_upstream_ends_with_502_and_nginx_s_error_line() {
    let mut builder = Instance::builder(PROXY_CONFIG);
    builder.port(8081);
    builder.port(8089);
    let instance = builder.start();
    let mut client = connect(instance.port_of(8084));
    assert_eq!(read_to_close(&mut client), b"");
    let line = instance.wait_for_line("logs/dead.log", "TCP");
    assert!(
        line.starts_with("127.0.0.1 TCP 502 0 0 127.0.0.1:"),
        "{line}"
    );
    let error = instance.wait_for_error_log("connect() failed");
    assert!(
        error.contains("(111: Connection refused) while connecting to upstream, client: 127.0.0.1"),
        "{error}"
    );
}

const BAD_INPUT_CONFIG: &str = r#"
worker_processes 1;
events {
}
stream {
    server {
        listen 127.0.0.1:8080 proxy_protocol;
        proxy_protocol_timeout 1s;
        return "$proxy_protocol_addr:$proxy_protocol_port";
    }
    server {
        listen 127.0.0.1:8081;
        ssl_preread on;
        preread_timeout 1s;
        return "sni=$ssl_preread_server_name";
    }
    server {
        listen 127.0.0.1:8082;
        return "served";
    }
}
"#;

#[test]
fn silent_clients_and_endless_proxy_headers_time_out_while_others_are_served() {
    let instance = Instance::start(BAD_INPUT_CONFIG);
    // Many clients that send nothing, and one whose PROXY header (version 2, which says
    // its length) never ends.
    let silent: Vec<TcpStream> = (0..50).map(|_| connect(instance.port_of(8081))).collect();
    let mut endless = connect(instance.port());
    endless
        .write_all(b"\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c\xc0\x00\x02\x01")
        .expect("write");
    let started = Instant::now();
    // The worker keeps serving others meanwhile.
    for _ in 0..20 {
        let mut client = connect(instance.port_of(8082));
        assert_eq!(read_to_close(&mut client), b"served");
    }
    let mut proxied = connect(instance.port());
    proxied
        .write_all(b"PROXY TCP4 192.0.2.1 192.0.2.2 1234 80\r\n")
        .expect("write");
    assert_eq!(read_to_close(&mut proxied), b"192.0.2.1:1234");
    assert_eq!(read_to_close(&mut endless), b"", "closed at the timeout");
    for mut client in silent {
        assert_eq!(
            read_to_close(&mut client),
            b"",
            "closed at the preread timeout"
        );
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "the timeouts are 1s, the clients waited {took:?}"
    );
    instance.wait_for_error_log(
        "client timed out (110: Connection timed out) while reading PROXY protocol",
    );
}

#[test]
fn a_broken_proxy_header_is_refused_with_nginx_s_line() {
    let instance = Instance::start(BAD_INPUT_CONFIG);
    let mut client = connect(instance.port());
    client.write_all(b"GARBAGE\r\n").expect("write");
    assert_eq!(read_to_close(&mut client), b"");
    instance.wait_for_error_log("broken header: \"GARBAGE\"");
    // A version 1 line is judged on what arrived, as nginx reads it.
    let mut partial = connect(instance.port());
    partial.write_all(b"PROXY TCP4 192.0.2.1").expect("write");
    assert_eq!(read_to_close(&mut partial), b"");
    instance.wait_for_error_log("broken header: \"PROXY TCP4 192.0.2.1\"");
}

#[test]
fn udp_datagrams_are_proxied_and_answered() {
    let mut builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
stream {
    server {
        listen 127.0.0.1:8080 udp;
        proxy_pass 127.0.0.1:8081;
        proxy_responses 1;
        proxy_timeout 2s;
    }
    server {
        listen 127.0.0.1:8082 udp;
        return "port $remote_port";
    }
}
"#,
    );
    reversing_udp_upstream(builder.port(8081));
    let instance = builder.start();
    let client = UdpSocket::bind("127.0.0.1:0").expect("bind the client");
    client.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    let mut buf = [0u8; 2048];
    for message in [&b"abc"[..], b"hello", b""] {
        client
            .send_to(message, ("127.0.0.1", instance.port()))
            .expect("send");
        let len = client.recv(&mut buf).expect("an answer");
        let mut expected = message.to_vec();
        expected.reverse();
        assert_eq!(&buf[..len], &expected[..]);
    }
    client
        .send_to(b"x", ("127.0.0.1", instance.port_of(8082)))
        .expect("send");
    let len = client.recv(&mut buf).expect("an answer");
    let port = client.local_addr().expect("bound").port();
    assert_eq!(&buf[..len], format!("port {port}").as_bytes());
}

#[test]
fn unknown_directives_and_missing_handlers_are_refused_as_nginx_words_them() {
    let unknown = Instance::builder(
        "events {\n}\nstream {\n    server {\n        listen 127.0.0.1:8080;\n        frobnicate on;\n    }\n}\n",
    )
    .try_start()
    .expect_err("an unknown directive");
    assert!(
        unknown
            .stderr
            .contains("unknown directive \"frobnicate\" in ")
            && unknown.stderr.contains("portico.conf:6"),
        "{}",
        unknown.stderr
    );
    // A server without a handler loads, as in nginx 1.25.5 and later; a session that
    // reaches it is closed.
    let no_handler = Instance::builder(
        "events {\n}\nstream {\n    server {\n        listen 127.0.0.1:8080;\n    }\n}\n",
    )
    .start();
    let mut closed = connect(no_handler.port());
    let mut buffer = [0u8; 16];
    assert_eq!(
        closed.read(&mut buffer).unwrap_or(0),
        0,
        "the session is closed"
    );
    drop(no_handler);
    let small_cache = Instance::builder(
        "events {\n}\nstream {\n    server {\n        listen 127.0.0.1:8080;\n        \
         ssl_session_cache shared:s:8k;\n        return x;\n    }\n}\n",
    )
    .try_start()
    .expect_err("a session cache below 32k");
    assert!(
        small_cache
            .stderr
            .contains("invalid session cache \"shared:s:8k\" in ")
            && small_cache.stderr.contains("portico.conf:6"),
        "{}",
        small_cache.stderr
    );
    let misplaced = Instance::builder("events {\n}\nproxy_timeout 1s;\nstream {\n}\n")
        .try_start()
        .expect_err("a stream directive in the main context");
    assert!(
        misplaced
            .stderr
            .contains("\"proxy_timeout\" directive is not allowed here"),
        "{}",
        misplaced.stderr
    );
}

#[test]
fn tls_is_terminated_with_alpn_and_spoken_again_to_an_https_upstream() {
    let builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
http {
    server {
        listen 127.0.0.1:8085 ssl;
        ssl_certificate localhost.crt;
        ssl_certificate_key localhost.key;
        location / {
            return 200 "backend $ssl_server_name";
        }
    }
}
stream {
    server {
        listen 127.0.0.1:8080 ssl;
        ssl_certificate localhost.crt;
        ssl_certificate_key localhost.key;
        ssl_alpn h2 http/1.1;
        # Read as the http block reads them: values in any case, both caches.
        ssl_protocols tlsv1.2 TLSv1.3;
        ssl_verify_client OFF;
        ssl_session_cache builtin:1000 shared:stream:1m;
        proxy_pass 127.0.0.1:8085;
        proxy_ssl on;
        proxy_ssl_server_name on;
        proxy_ssl_name localhost;
    }
}
"#,
    );
    let instance = tls::with_files(builder, |directory| {
        tls::self_signed(directory, "localhost", tls::Key::Rsa);
    })
    .start();
    let options = tls::Options {
        server_name: Some("localhost".to_owned()),
        alpn: vec![b"http/1.1".to_vec()],
        ..tls::Options::default()
    };
    let mut client = tls::connect(instance.port(), &options).expect("a TLS handshake");
    let negotiated = client
        .tls()
        .expect("a TLS client")
        .conn
        .alpn_protocol()
        .map(<[u8]>::to_vec);
    assert_eq!(negotiated.as_deref(), Some(&b"http/1.1"[..]));
    let response = client.request("GET / HTTP/1.0\r\nHost: localhost\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "backend localhost");
}

/// An upstream that reads until the client's end of stream, then answers how many bytes
/// it read, and (on `answer_bytes`) that many more bytes of its own.
fn counting_upstream(port: u16, answer_bytes: usize) {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the upstream");
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            let Ok(mut connection) = connection else {
                continue;
            };
            std::thread::spawn(move || {
                let _ = connection.set_read_timeout(Some(TIMEOUT));
                let mut all = Vec::new();
                let _ = connection.read_to_end(&mut all);
                let mut answer = format!("read {}\n", all.len()).into_bytes();
                answer.resize(answer.len() + answer_bytes, b'x');
                let _ = connection.write_all(&answer);
            });
        }
    });
}

#[test]
fn half_close_and_rate_limits_hold() {
    let mut builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
stream {
    proxy_half_close on;
    server {
        listen 127.0.0.1:8080;
        proxy_pass 127.0.0.1:8081;
        proxy_upload_rate 32k;
    }
    server {
        listen 127.0.0.1:8082;
        proxy_pass 127.0.0.1:8083;
        proxy_download_rate 32k;
    }
}
"#,
    );
    counting_upstream(builder.port(8081), 0);
    counting_upstream(builder.port(8083), 64 * 1024);
    let instance = builder.start();
    // Upload: 64 KiB at 32 KiB/s takes a second at least; the answer comes after the
    // client's half close reached the upstream.
    let started = Instant::now();
    let mut client = connect(instance.port());
    client.write_all(&[b'u'; 64 * 1024]).expect("write");
    client
        .shutdown(std::net::Shutdown::Write)
        .expect("half close");
    assert_eq!(read_to_close(&mut client), b"read 65536\n");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900), "upload rate: {took:?}");
    assert!(took < TIMEOUT, "upload rate: {took:?}");
    // Download: the same from the upstream's side.
    let started = Instant::now();
    let mut client = connect(instance.port_of(8082));
    client
        .shutdown(std::net::Shutdown::Write)
        .expect("half close");
    let answer = read_to_close(&mut client);
    assert_eq!(answer.len(), "read 0\n".len() + 64 * 1024);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "download rate: {took:?}"
    );
    assert!(took < TIMEOUT, "download rate: {took:?}");
}

#[test]
fn geo_pass_and_preread_buffer_size() {
    let instance = Instance::start(
        r#"
worker_processes 1;
events {
}
stream {
    geo $where {
        default elsewhere;
        127.0.0.0/8 loopback;
    }
    geo $remote_addr $ranged {
        ranges;
        default none;
        127.0.0.0-127.0.0.255 low;
    }
    server {
        listen 127.0.0.1:8080;
        return "$where $ranged";
    }
    server {
        listen 127.0.0.1:8081;
        ssl_preread on;
        pass 127.0.0.1:8082;
    }
    server {
        listen 127.0.0.1:8082;
        return "passed";
    }
    server {
        listen 127.0.0.1:8083;
        ssl_preread on;
        preread_buffer_size 64;
        return "read";
    }
}
"#,
    );
    assert_eq!(
        read_to_close(&mut connect(instance.port())),
        b"loopback low"
    );
    let mut passed = connect(instance.port_of(8081));
    passed.write_all(b"not tls").expect("write");
    assert_eq!(read_to_close(&mut passed), b"passed");
    // A handshake record longer than the preread buffer.
    let mut long = connect(instance.port_of(8083));
    let mut record = vec![0x16, 3, 1, 0x10, 0, 1, 0, 0x0f, 0xfc];
    record.resize(100, 0);
    long.write_all(&record).expect("write");
    assert_eq!(read_to_close(&mut long), b"");
    instance.wait_for_error_log("preread buffer full while prereading client data");
}

/// A UDP upstream on `port` that answers every datagram with the port it came from.
fn port_telling_udp_upstream(port: u16) {
    let socket = UdpSocket::bind(("127.0.0.1", port)).expect("bind the udp upstream");
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((_, from)) = socket.recv_from(&mut buf) {
            let _ = socket.send_to(from.port().to_string().as_bytes(), from);
        }
    });
}

#[test]
fn proxy_requests_ends_a_client_s_binding_to_its_udp_session() {
    let mut builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
stream {
    server {
        listen 127.0.0.1:8080 udp;
        proxy_pass 127.0.0.1:8081;
        proxy_requests 2;
        proxy_timeout 5s;
    }
}
"#,
    );
    port_telling_udp_upstream(builder.port(8081));
    let instance = builder.start();
    let client = UdpSocket::bind("127.0.0.1:0").expect("bind the client");
    client.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    let mut answers = Vec::new();
    for _ in 0..3 {
        client
            .send_to(b"which", ("127.0.0.1", instance.port()))
            .expect("send");
        let mut buf = [0u8; 64];
        let len = client.recv(&mut buf).expect("an answer");
        answers.push(String::from_utf8_lossy(&buf[..len]).into_owned());
    }
    assert_eq!(answers[0], answers[1], "the first two share a session");
    assert_ne!(answers[1], answers[2], "the third starts a new session");
}

#[test]
fn a_reload_keeps_established_sessions_until_they_end() {
    let config = |extra: &str| {
        format!(
            concat!(
                "worker_processes 1;\nevents {{\n}}\nstream {{\n    server {{\n",
                "        listen 127.0.0.1:8080;\n        proxy_pass 127.0.0.1:8081;\n    }}\n{}}}\n"
            ),
            extra
        )
    };
    let mut builder = Instance::builder(&config(""));
    upper_case_upstream(builder.port(8081));
    let mut instance = builder.start();
    let mut client = connect(instance.port());
    assert_eq!(exchange(&mut client, b"before", 6), b"BEFORE");
    let reloaded =
        config("    server {\n        listen 127.0.0.1:8082;\n        return new;\n    }\n");
    instance.reload(&reloaded, |instance| {
        TcpStream::connect(("127.0.0.1", instance.port_of(8082)))
            .map(|mut stream| read_to_close(&mut stream) == b"new")
            .unwrap_or(false)
    });
    // The session began under the old generation and goes on.
    assert_eq!(exchange(&mut client, b"after", 5), b"AFTER");
    assert_eq!(exchange(&mut client, b"close", 5), b"CLOSE");
    assert_eq!(read_to_close(&mut client), b"");
}

#[test]
fn a_udp_flood_is_bounded_by_worker_connections_and_others_are_served_after() {
    let mut builder = Instance::builder(
        r#"
worker_processes 1;
events {
    worker_connections 40;
}
stream {
    server {
        listen 127.0.0.1:8080 udp;
        proxy_pass 127.0.0.1:8081;
        proxy_timeout 1s;
    }
    server {
        listen 127.0.0.1:8082 udp;
        return "served";
    }
}
"#,
    )
    .expect_log("[alert]");
    // An upstream that takes datagrams and never answers.
    let silent = UdpSocket::bind(("127.0.0.1", builder.port(8081))).expect("bind the upstream");
    let instance = builder.start();
    let flood: Vec<UdpSocket> = (0..100)
        .map(|_| {
            let client = UdpSocket::bind("127.0.0.1:0").expect("bind a client");
            client
                .send_to(&[b'x'; 1200], ("127.0.0.1", instance.port()))
                .expect("send");
            client
        })
        .collect();
    instance.wait_for_error_log("worker_connections are not enough");
    // The flood's sessions end at their proxy_timeout; a new client is served then.
    let client = UdpSocket::bind("127.0.0.1:0").expect("bind the client");
    client
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let started = Instant::now();
    let answer = loop {
        client
            .send_to(b"hello", ("127.0.0.1", instance.port_of(8082)))
            .expect("send");
        let mut buf = [0u8; 64];
        if let Ok(len) = client.recv(&mut buf) {
            break buf[..len].to_vec();
        }
        assert!(started.elapsed() < TIMEOUT, "never served after the flood");
    };
    assert_eq!(answer, b"served");
    drop(flood);
    drop(silent);
}

/// A TCP upstream on `port` that accepts and then neither reads nor writes: its
/// connections stay open, unread, until the test process ends.
fn deaf_upstream(port: u16) {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the upstream");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming() {
            held.extend(connection.ok());
        }
    });
}

/// The resident memory of process `pid`, in KiB.
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

#[test]
fn a_backend_that_never_reads_holds_back_its_client_and_no_one_else() {
    let mut builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
stream {
    log_format session "$status $bytes_received $upstream_bytes_sent";
    server {
        listen 127.0.0.1:8080;
        proxy_pass 127.0.0.1:8081;
        proxy_timeout 2s;
        access_log logs/deaf.log session;
    }
    server {
        listen 127.0.0.1:8082;
        return "served";
    }
}
"#,
    );
    deaf_upstream(builder.port(8081));
    let instance = builder.start();
    let resident_before = resident_kib(instance.pid());
    // The client writes until a write stalls: the relay stops reading once its buffer
    // cannot be written on, so what it took is bounded by the sockets' buffers and its own.
    let mut client = connect(instance.port());
    client
        .set_write_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    const OFFERED_BYTES: usize = 256 << 20;
    let piece = vec![b'w'; 64 * 1024];
    let mut written = 0;
    while written < OFFERED_BYTES {
        match client.write(&piece) {
            Ok(count) => written += count,
            Err(_) => break,
        }
    }
    assert!(
        written < 64 << 20,
        "{written} bytes taken by a relay that cannot deliver"
    );
    let stalled = Instant::now();
    // Meanwhile the worker serves others.
    for _ in 0..5 {
        assert_eq!(
            read_to_close(&mut connect(instance.port_of(8082))),
            b"served"
        );
    }
    let grown_kib = resident_kib(instance.pid()).saturating_sub(resident_before);
    assert!(
        grown_kib < 16 * 1024,
        "resident memory grew by {grown_kib} KiB"
    );
    // Nothing moves, so the session ends at its proxy_timeout.
    assert_eq!(read_to_close(&mut client), b"");
    let took = stalled.elapsed();
    assert!(
        took < TIMEOUT,
        "the session outlived its proxy_timeout: {took:?}"
    );
    instance.wait_for_error_log("connection timed out (110: Connection timed out)");
    let line = instance.wait_for_line("logs/deaf.log", "200 ");
    let counts: Vec<usize> = line
        .split(' ')
        .skip(1)
        .map(|count| count.parse().expect("a byte count"))
        .collect();
    assert!(
        counts[1] <= counts[0] && counts[0] <= written,
        "sent upstream <= read from the client <= written: {line} ({written} written)"
    );
}

/// A TCP upstream on `port` that greets, ends its side (`shutdown(SHUT_WR)`), then reads
/// until the client's end and sends what it read on `heard`.
fn greeting_then_listening_upstream(port: u16) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the upstream");
    let (heard, hearing) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            let Ok(mut connection) = connection else {
                continue;
            };
            let heard = heard.clone();
            std::thread::spawn(move || {
                let _ = connection.set_read_timeout(Some(TIMEOUT));
                let _ = connection.write_all(b"greeting");
                let _ = connection.shutdown(std::net::Shutdown::Write);
                let mut all = Vec::new();
                let _ = connection.read_to_end(&mut all);
                let _ = heard.send(all);
            });
        }
    });
    hearing
}

#[test]
fn an_upstream_that_ends_first_is_passed_on_with_proxy_half_close_and_ends_the_session_without() {
    let mut builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
stream {
    server {
        listen 127.0.0.1:8080;
        proxy_pass 127.0.0.1:8081;
        proxy_half_close on;
    }
    server {
        listen 127.0.0.1:8082;
        proxy_pass 127.0.0.1:8083;
    }
}
"#,
    );
    let half_close = greeting_then_listening_upstream(builder.port(8081));
    let whole_close = greeting_then_listening_upstream(builder.port(8083));
    let instance = builder.start();
    // With proxy_half_close: the client sees the upstream's end, and what it sends after
    // that still reaches the upstream.
    let mut client = connect(instance.port());
    assert_eq!(read_to_close(&mut client), b"greeting");
    client.write_all(b"after your end").expect("write");
    client
        .shutdown(std::net::Shutdown::Write)
        .expect("half close");
    let heard = half_close
        .recv_timeout(TIMEOUT)
        .expect("the upstream's reading");
    assert_eq!(heard, b"after your end");
    // Without it (nginx's default), the upstream's end ends the session: the upstream's
    // connection is closed without a byte from the client.
    let mut client = connect(instance.port_of(8082));
    assert_eq!(read_to_close(&mut client), b"greeting");
    let heard = whole_close
        .recv_timeout(TIMEOUT)
        .expect("the upstream's reading");
    assert_eq!(heard, b"");
}
