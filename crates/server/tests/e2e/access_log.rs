//! `access_log` and `log_format`: the default format, escaping, buffering, conditions,
//! `off`, and reopening on USR1.

use crate::support::log::matches;
use crate::support::{Instance, PATIENCE, Signal, get, wait_until};
use std::time::{Duration, Instant};

#[test]
fn combined_is_the_default_format() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; access_log logs/access.log; location / { return 200 \"hello\"; } }",
    );
    server.request(
        "GET /path?a=1 HTTP/1.1\r\nHost: localhost\r\nReferer: http://ref.example/\r\n\
         User-Agent: test-agent/1.0\r\nConnection: close\r\n\r\n",
    );
    let line = server.wait_for_line("logs/access.log", "/path");
    let pattern = concat!(
        r#"^127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "#,
        r#""GET /path\?a=1 HTTP/1\.1" 200 5 "http://ref\.example/" "test-agent/1\.0"$"#,
    );
    assert!(matches(pattern, &line), "{line}");
}

#[test]
fn missing_headers_are_logged_as_dashes() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; access_log logs/access.log combined; location / { return 404; } }",
    );
    server.request("GET /none HTTP/1.0\r\n\r\n");
    let line = server.wait_for_line("logs/access.log", "/none");
    assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
    assert!(line.contains(r#"] "GET /none HTTP/1.0" 404 "#), "{line}");
    assert!(line.ends_with(r#" "-" "-""#), "{line}");
}

const ESCAPES: &str = "
log_format plain '$http_x_value';
log_format json escape=json '$http_x_value';
log_format none escape=none '$http_x_value';
server {
    listen 127.0.0.1:8080;
    access_log logs/plain.log plain;
    access_log logs/json.log json;
    access_log logs/none.log none;
    location / { return 200 ok; }
}";

#[test]
fn log_format_escaping() {
    let server = Instance::http(ESCAPES);
    server.request(b"GET / HTTP/1.0\r\nX-Value: a\"b\\c\x01\t\xc3\xa9\x7f\r\n\r\n");
    let logged = |name: &str| {
        server.wait_for_line(name, "a");
        std::fs::read(server.prefix().join(name)).unwrap()
    };
    assert_eq!(
        logged("logs/plain.log"),
        b"a\\x22b\\x5Cc\\x01\\x09\\xC3\\xA9\\x7F\n"
    );
    assert_eq!(
        logged("logs/json.log"),
        b"a\\\"b\\\\c\\u0001\\t\xc3\xa9\x7f\n"
    );
    assert_eq!(logged("logs/none.log"), b"a\"b\\c\x01\t\xc3\xa9\x7f\n");
}

#[test]
fn buffered_log_is_flushed_by_time() {
    let server = Instance::http(
        "log_format uri '$uri';
         server {
             listen 127.0.0.1:8080;
             access_log logs/buffered.log uri buffer=64k flush=2s;
             location / { return 200 ok; }
         }",
    );
    server.get("/first");
    assert_eq!(
        server.read("logs/buffered.log"),
        "",
        "the line waits in the buffer"
    );
    assert_eq!(
        server.wait_for_line("logs/buffered.log", "/first"),
        "/first"
    );
}

#[test]
fn buffered_log_is_flushed_at_exit() {
    let mut server = Instance::http(
        "log_format uri '$uri';
         server {
             listen 127.0.0.1:8080;
             access_log logs/buffered.log uri buffer=64k flush=1h;
             location / { return 200 ok; }
         }",
    );
    server.get("/one");
    server.get("/two");
    assert!(server.stop().success());
    assert_eq!(server.read("logs/buffered.log"), "/one\n/two\n");
}

#[test]
fn conditional_logging() {
    let server = Instance::http(
        "log_format uri '$request_uri';
         server {
             listen 127.0.0.1:8080;
             access_log logs/if.log uri if=$arg_log;
             access_log logs/all.log uri;
             location / { return 200 ok; }
         }",
    );
    for target in ["/?log=1", "/?log=0", "/?log=", "/", "/?log=yes"] {
        server.get(target);
    }
    server.wait_for_line("logs/all.log", "/?log=yes");
    assert_eq!(server.read("logs/if.log"), "/?log=1\n/?log=yes\n");
}

#[test]
fn access_log_off() {
    let server = Instance::http(
        "log_format uri '$uri';
         access_log logs/http.log uri;
         server {
             listen 127.0.0.1:8080;
             location /quiet { access_log off; return 200 ok; }
             location / { return 200 ok; }
         }",
    );
    server.get("/quiet");
    server.get("/loud");
    server.wait_for_line("logs/http.log", "/loud");
    assert_eq!(server.read("logs/http.log"), "/loud\n");
}

#[test]
fn usr1_reopens_logs() {
    let server = Instance::http(
        "log_format uri '$uri';
         server { listen 127.0.0.1:8080; access_log logs/access.log uri; location / { return 200 ok; } }",
    );
    server.get("/before");
    server.wait_for_line("logs/access.log", "/before");
    let rotated = server.prefix().join("logs/access.log.1");
    std::fs::rename(server.prefix().join("logs/access.log"), &rotated).unwrap();
    server.get("/still-old");
    // Until USR1 the server writes to the file it has open, whatever its name.
    server.wait_for_line("logs/access.log.1", "/still-old");
    server.signal(Signal::USR1);
    wait_until("the access log to be reopened", PATIENCE, || {
        server.prefix().join("logs/access.log").exists()
    });
    server.request(get("/after"));
    assert_eq!(server.wait_for_line("logs/access.log", "/after"), "/after");
    assert_eq!(
        std::fs::read_to_string(&rotated).unwrap(),
        "/before\n/still-old\n"
    );
}

/// `access_log ... gzip=N`: the buffer is written compressed, each flush a gzip member, so
/// the file reads back whole with `gzip -dc`.
#[test]
fn gzip_logs_read_back_with_gzip() {
    let mut server = Instance::http(
        "log_format uri '$uri';
        server {
            listen 127.0.0.1:8080;
            access_log logs/zipped.log.gz uri gzip=5 flush=100ms;
            location / { return 200 ok; }
        }",
    );
    for n in 0..5 {
        server.get(&format!("/line{n}"));
    }
    // The flush timer writes the first member; stopping writes the rest.
    let path = server.prefix().join("logs/zipped.log.gz");
    wait_until("the first flush", PATIENCE, || {
        std::fs::metadata(&path).is_ok_and(|meta| meta.len() > 0)
    });
    server.get("/after");
    server.stop();
    let bytes = std::fs::read(&path).expect("the log");
    assert_eq!(&bytes[..2], b"\x1f\x8b", "gzip's magic number");
    let output = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(&path)
        .output()
        .expect("run gzip");
    assert!(output.status.success(), "{:?}", output);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "/line0\n/line1\n/line2\n/line3\n/line4\n/after\n"
    );
}

/// A path with variables: each line goes to the file its request names (opened, written
/// and closed on a pool), in order; a file that cannot be opened is logged at `crit` and
/// the server goes on; such a log cannot be buffered.
#[test]
fn variables_in_the_path_pick_the_file_per_request() {
    let server = Instance::http_builder(
        "log_format uri '$uri?$args';
        server {
            listen 127.0.0.1:8080;
            access_log varlogs/by_$arg_name.log uri;
            location /missing/ { access_log logs/none/$arg_name.log uri; return 204; }
            location / { return 200 ok; }
        }",
    )
    .file("varlogs/.keep", "")
    .expect_log("[crit]")
    .start();
    // The files are opened by the workers' user, as nginx's workers open them.
    let directory = server.prefix().join("varlogs");
    std::fs::set_permissions(
        &directory,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("make varlogs writable");
    for query in ["name=a&n=1", "name=b&n=1", "name=a&n=2", "n=3"] {
        assert_eq!(server.get(&format!("/x?{query}")).status, 200);
    }
    wait_until("the lines of a", PATIENCE, || {
        server.read("varlogs/by_a.log") == "/x?name=a&n=1\n/x?name=a&n=2\n"
    });
    wait_until("the line of b", PATIENCE, || {
        server.read("varlogs/by_b.log") == "/x?name=b&n=1\n"
    });
    wait_until("an empty name", PATIENCE, || {
        server.read("varlogs/by_.log") == "/x?n=3\n"
    });
    assert_eq!(server.get("/missing/?name=c").status, 204);
    let line = server.wait_for_error_log("[crit]");
    assert!(
        line.contains("none/c.log\" failed (2: No such file or directory)"),
        "{line}"
    );
    assert_eq!(server.get("/x?name=a&n=4").status, 200);
    wait_until("the server goes on", PATIENCE, || {
        server.read("varlogs/by_a.log").ends_with("/x?name=a&n=4\n")
    });
    crate::support::cli::assert_http_body_fails(
        "access_log logs/$host.log combined buffer=32k;",
        "buffered logs cannot have variables in name in {conf}:4",
    );
}

/// `open_log_file_cache max=2 min_uses=2`: a path logged to twice keeps its descriptor, so
/// after the log's directory is renamed its lines still reach the file there; a path used
/// once, or pushed out by a newer path, is opened again and its line is lost (`crit`). A
/// connection closes only after its line is written, as in nginx.
#[test]
fn open_log_file_cache_keeps_descriptors_of_paths_used_often() {
    let server = Instance::http_builder(
        "log_format uri '$uri?$args';
        server {
            listen 127.0.0.1:8080;
            location / {
                open_log_file_cache max=2 inactive=20s valid=1m min_uses=2;
                access_log dir/$arg_name.log uri;
                return 200 ok;
            }
        }",
    )
    .file("dir/.keep", "")
    .expect_log("[crit]")
    .start();
    let directory = server.prefix().join("dir");
    std::fs::set_permissions(
        &directory,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("make dir writable");
    // Each answer is read to the connection's close: the line is written by then.
    let logged = |query: &str| {
        let mut client = server.connect();
        client.write(get(&format!("/?{query}")));
        let answer = String::from_utf8_lossy(&client.read_to_end()).into_owned();
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    };
    for name in ["old", "old", "once", "kept", "kept"] {
        logged(&format!("name={name}"));
    }
    let moved = server.prefix().join("moved");
    std::fs::rename(&directory, &moved).expect("rename the log directory");
    for name in ["old", "once", "kept"] {
        logged(&format!("name={name}&after"));
    }
    let read = |name: &str| std::fs::read_to_string(moved.join(name)).unwrap_or_default();
    assert_eq!(
        read("kept.log"),
        "/?name=kept\n/?name=kept\n/?name=kept&after\n"
    );
    assert_eq!(read("once.log"), "/?name=once\n", "used once: not kept");
    assert_eq!(
        read("old.log"),
        "/?name=old\n/?name=old\n",
        "pushed out by kept"
    );
    let line = server.wait_for_error_log("[crit]");
    assert!(
        line.contains("dir/old.log\" failed (2: No such file or directory)"),
        "{line}"
    );
    crate::support::cli::assert_http_body_fails(
        "open_log_file_cache max=10; open_log_file_cache off;",
        "\"open_log_file_cache\" directive is duplicate in {conf}:4",
    );
}

/// A log file that cannot take writes (here a pipe whose reader does not read) holds the
/// log writer thread, not the workers: requests go on being answered while the pipe is
/// full, and every line arrives, in order, once the reader reads.
#[test]
fn a_log_file_that_blocks_does_not_hold_the_workers() {
    let (dir, fifo, mut reader) = fifo("blocks");
    let server = Instance::http(&format!(
        "log_format uri '$uri';
         server {{
             listen 127.0.0.1:8080;
             access_log {} uri;
             location / {{ return 200 ok; }}
         }}",
        fifo.display()
    ));
    // 48 lines of 4 KB: three times what a pipe holds (64 KiB) before a write waits.
    log_long_lines(&server, 48);
    let text = read_lines(&mut reader, 48);
    let numbers: Vec<usize> = text
        .lines()
        .map(|line| line[1..].split('/').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(numbers, (0..48).collect::<Vec<_>>());
    drop(server);
    drop(reader);
    let _ = std::fs::remove_dir_all(dir);
}

/// An access log on a full disk (`/dev/full`): requests are still answered, and the failure
/// is reported once, at `alert`, in nginx's words, not once per line.
#[test]
fn a_full_disk_is_reported_once_not_per_line() {
    let mut server = Instance::http(
        "server {
             listen 127.0.0.1:8080;
             access_log /dev/full;
             location / { return 200 ok; }
         }",
    );
    server.expect_log("[alert]");
    let started = Instant::now();
    let mut requests = 0;
    // Across more than one second: lines of the second in which the disk was found full are
    // dropped; the later ones fail again and are not reported again within the minute.
    while requests < 4 || started.elapsed() < Duration::from_millis(1500) {
        let response =
            server.request("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        assert_eq!(response.status, 200);
        requests += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let needle = r#"write() to "/dev/full" failed (28: No space left on device)"#;
    let line = server.wait_for_line("logs/error.log", needle);
    assert!(line.contains("[alert]"), "{line}");
    let reports = server.error_log().matches(needle).count();
    assert_eq!(reports, 1, "{}", server.error_log());
}

/// Makes `count` requests of about 4 KB each on one keep-alive connection, each answered
/// 200: as many access-log lines of that size (`log_format uri '$uri'`), logged in order.
fn log_long_lines(server: &Instance, count: usize) {
    let long = "x".repeat(4000);
    let mut client = server.connect();
    client.timeout = Duration::from_secs(5);
    for number in 0..count {
        let response = client.request(format!(
            "GET /{number}/{long} HTTP/1.1\r\nHost: localhost\r\n\r\n"
        ));
        assert_eq!(response.status, 200, "request {number}");
    }
}

/// A pipe in a fresh directory, and its reader (opened first: the server's open of a pipe
/// for writing waits for a reader).
fn fifo(name: &str) -> (std::path::PathBuf, std::path::PathBuf, std::fs::File) {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir().join(format!("portico-e2e-fifo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let fifo = dir.join("access.fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("a pipe");
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("the pipe opens for reading");
    (dir, fifo, reader)
}

/// Reads the pipe until it has given `lines` lines (or [`PATIENCE`] has passed).
fn read_lines(reader: &mut std::fs::File, lines: usize) -> String {
    use std::io::Read;
    let mut logged = Vec::new();
    let mut chunk = vec![0u8; 65536];
    let deadline = Instant::now() + PATIENCE;
    while logged.iter().filter(|&&byte| byte == b'\n').count() < lines && Instant::now() < deadline
    {
        match reader.read(&mut chunk) {
            Ok(read) => logged.extend_from_slice(&chunk[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(error) => panic!("{error}"),
        }
    }
    String::from_utf8(logged).expect("lines in UTF-8")
}

/// An HTTP/2 connection, like an HTTP/1 one, waits for its requests' log lines before it
/// closes, for a bounded time. The line goes to a path with a variable, opened on a pool
/// thread; the path is a pipe without a reader, so the open waits: a client that
/// half-closes after its answer sees the close only after the wait's bound (50 ms), not at
/// once.
#[test]
fn an_http2_connection_waits_for_its_log_lines_before_it_closes() {
    use std::io::{Read, Write};
    let (dir, fifo, reader) = fifo("h2-close");
    // The reader is closed again: the server's open for writing now waits for one. The
    // workers' user (`nobody` under root) may open it.
    drop(reader);
    std::fs::set_permissions(&fifo, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let server = Instance::http(&format!(
        "log_format uri '$uri';
         server {{
             listen 127.0.0.1:8080;
             http2 on;
             set $name access.fifo;
             access_log {}/$name uri;
             location / {{ return 200 ok; }}
         }}",
        dir.display()
    ));
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    socket
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .unwrap();
    socket.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap();
    // HEADERS, stream 1, END_STREAM | END_HEADERS: GET, /, http, :authority localhost.
    let mut headers = vec![0x82, 0x84, 0x86, 0x41, 9];
    headers.extend_from_slice(b"localhost");
    let mut frame = vec![0, 0, headers.len() as u8, 1, 5, 0, 0, 0, 1];
    frame.extend_from_slice(&headers);
    socket.write_all(&frame).unwrap();
    socket.set_read_timeout(Some(PATIENCE)).unwrap();
    // Frames until stream 1 ends (HEADERS or DATA with END_STREAM).
    loop {
        let mut head = [0u8; 9];
        socket.read_exact(&mut head).unwrap();
        let length = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let mut payload = vec![0; length];
        socket.read_exact(&mut payload).unwrap();
        let stream = u32::from_be_bytes([head[5] & 0x7f, head[6], head[7], head[8]]);
        if stream == 1 && head[3] <= 1 && head[4] & 1 == 1 {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(20));
    let half_closed = Instant::now();
    socket.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = [0u8; 4096];
    loop {
        match socket.read(&mut rest) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => panic!("the connection did not close: {error}"),
        }
    }
    let waited = half_closed.elapsed();
    assert!(
        waited >= Duration::from_millis(40),
        "closed after {waited:?}"
    );
    // The pool's open is still waiting: a reader lets it through, and the line arrives.
    let mut reader = std::fs::OpenOptions::new().read(true).open(&fifo).unwrap();
    let mut line = [0u8; 2];
    reader.read_exact(&mut line).unwrap();
    assert_eq!(&line, b"/\n");
    drop(server);
    drop(reader);
    let _ = std::fs::remove_dir_all(dir);
}

/// While the log writer is stalled (its pipe full, nobody reading), closing connections do
/// not wait for their lines: a client making many short connections is not refused for
/// `worker_connections` held by connections waiting on the log.
#[test]
fn a_stalled_log_does_not_hold_closing_connections() {
    let (dir, fifo, mut reader) = fifo("stalled");
    let server = Instance::builder(&format!(
        "worker_processes 1;
         events {{ worker_connections 16; }}
         http {{
             log_format uri '$uri';
             server {{
                 listen 127.0.0.1:8080;
                 access_log {} uri;
                 location / {{ return 200 ok; }}
             }}
         }}",
        fifo.display()
    ))
    .start();
    // 20 lines of 4 KB: more than the pipe holds, so the writer waits.
    log_long_lines(&server, 20);
    for number in 0..100 {
        let response = server.request(format!(
            "GET /short/{number} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        ));
        assert_eq!(response.status, 200, "request {number}");
    }
    let text = read_lines(&mut reader, 120);
    assert_eq!(
        text.lines().count(),
        120,
        "every line arrives once the pipe is read"
    );
    drop(server);
    drop(reader);
    let _ = std::fs::remove_dir_all(dir);
}

/// `$request_completion` is `OK` for a response sent whole and empty for one the client
/// left before its end (a large file sent at 1 KiB/s).
#[test]
fn request_completion_says_whether_the_response_was_sent_whole() {
    let server = Instance::http_builder(
        "log_format done '$uri:$status:[$request_completion]';
        server {
            listen 127.0.0.1:8080;
            access_log logs/access.log done;
            location / { limit_rate 1k; }
        }",
    )
    .file("html/small.txt", "small\n")
    .file("html/large.bin", vec![b'x'; 1 << 20])
    .start();
    server.request("GET /small.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let line = server.wait_for_line("logs/access.log", "/small.txt");
    assert_eq!(line, "/small.txt:200:[OK]");
    let mut client = crate::support::Client::connect(server.port());
    client.write("GET /large.bin HTTP/1.1\r\nHost: a\r\n\r\n");
    std::thread::sleep(Duration::from_millis(300));
    drop(client);
    let line = server.wait_for_line("logs/access.log", "/large.bin");
    assert_eq!(line, "/large.bin:200:[]");
}
