//! `aio`, `sendfile` and the file-output directives: every way of sending a file gives the
//! same bytes; `aio threads=POOL` errors as nginx's; the loop-stall warning.

use crate::support::Instance;
use crate::support::cli::assert_fails;

/// A body larger than every piece size below, not a multiple of any, different at every
/// offset so that a misplaced piece shows.
fn big_body() -> Vec<u8> {
    (0..3_000_017u32)
        .map(|index| (index.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

const MODES: &str = "
thread_pool disk1 threads=2 max_queue=64;
events {
}
http {
    server {
        listen 127.0.0.1:8080;
        root html;
        location /plain/ { alias html/; }
        location /sendfile/ { alias html/; sendfile on; tcp_nopush on; }
        location /small-chunks/ { alias html/; sendfile on; sendfile_max_chunk 100k; }
        location /threads/ { alias html/; aio threads=disk1; }
        location /threads-sendfile/ { alias html/; aio threads; sendfile on; }
        location /small-buffers/ { alias html/; aio threads; output_buffers 3 10k; }
        location /directio/ {
            alias html/;
            aio threads;
            directio 1m;
            directio_alignment 4k;
        }
        location /read-ahead/ { alias html/; read_ahead 512k; aio threads; aio_write on; }
        location /by-variable/ { alias html/; aio threads=$arg_pool; sendfile on; }
    }
}";

#[test]
fn every_mode_sends_the_same_bytes() {
    let body = big_body();
    let server = Instance::builder(MODES)
        .file("html/big.bin", &body)
        .file("html/small.txt", "small file\n")
        .start();
    for mode in [
        "plain",
        "sendfile",
        "small-chunks",
        "threads",
        "threads-sendfile",
        "small-buffers",
        "directio",
        "read-ahead",
    ] {
        let response = server.get(&format!("/{mode}/big.bin"));
        assert_eq!(response.status, 200, "{mode}");
        assert_eq!(response.header("Content-Length"), Some("3000017"), "{mode}");
        assert!(response.body == body, "{mode}: the body differs");
        let small = server.get(&format!("/{mode}/small.txt"));
        assert_eq!(small.body_text(), "small file\n", "{mode}");
        let missing = server.get(&format!("/{mode}/missing.txt"));
        assert_eq!(missing.status, 404, "{mode}");
    }
    let response = server.get("/by-variable/big.bin?pool=disk1");
    assert!(response.body == body, "a pool chosen by a variable");
}

/// Files up to 16 KiB are read behind the head and sent with it in one write, even with
/// `sendfile on`; larger ones go by `sendfile`. Both sides of that line, an empty file and
/// a range of a small file give the same bytes in every mode.
#[test]
fn small_files_at_the_inline_limit_send_the_same_bytes() {
    let body = big_body();
    let server = Instance::builder(MODES)
        .file("html/limit.bin", &body[..16 * 1024])
        .file("html/above.bin", &body[..16 * 1024 + 1])
        .file("html/empty.bin", b"")
        .start();
    for mode in [
        "plain",
        "sendfile",
        "small-chunks",
        "threads",
        "threads-sendfile",
        "small-buffers",
        "directio",
    ] {
        for (name, len) in [("limit", 16 * 1024), ("above", 16 * 1024 + 1)] {
            let response = server.get(&format!("/{mode}/{name}.bin"));
            assert_eq!(response.status, 200, "{mode} {name}");
            assert!(
                response.body == body[..len],
                "{mode} {name}: the body differs"
            );
        }
        let empty = server.get(&format!("/{mode}/empty.bin"));
        assert_eq!(empty.status, 200, "{mode}");
        assert_eq!(empty.header("Content-Length"), Some("0"), "{mode}");
        assert!(empty.body.is_empty(), "{mode}");
        let mut client = server.connect();
        client.write(format!(
            "GET /{mode}/limit.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=100-199\r\n\r\n"
        ));
        let part = client.read_response();
        assert_eq!(part.status, 206, "{mode}");
        assert_eq!(
            part.header("Content-Range"),
            Some("bytes 100-199/16384"),
            "{mode}"
        );
        assert!(part.body == body[100..200], "{mode}: the range differs");
        // The connection stays usable after an inline body.
        let next = client.request(crate::support::get(&format!("/{mode}/above.bin")));
        assert!(
            next.body == body[..16 * 1024 + 1],
            "{mode}: the next response"
        );
    }
}

/// A file cut short while it is being sent ends the response: the connection closes
/// before the promised length, and the error log says why at `alert`, as nginx's does
/// (`sendfile() reported that "FILE" was truncated at N`, `read only N of M from "FILE"`).
#[test]
fn a_file_truncated_while_sent_closes_with_an_alert() {
    const SIZE: usize = 1024 * 1024;
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root html;
            limit_rate 64k;
            location /sendfile/ { sendfile on; }
            location /reads/ { }
            location /threads/ { aio threads; output_buffers 1 32k; }
        }",
    )
    .file("html/sendfile/cut.bin", vec![b's'; SIZE])
    .file("html/reads/cut.bin", vec![b'r'; SIZE])
    .file("html/threads/cut.bin", vec![b't'; SIZE])
    .expect_log("[alert]")
    .start();
    for (mode, expected) in [
        ("sendfile", "was truncated at "),
        ("reads", "read only 0 of "),
        ("threads", "read only 0 of "),
    ] {
        let mut client = server
            .connect()
            .with_timeout(std::time::Duration::from_secs(20));
        client.write(format!("GET /{mode}/cut.bin HTTP/1.1\r\nHost: x\r\n\r\n"));
        let head = client.read_head_response();
        assert_eq!(head.content_length(), Some(SIZE), "{mode}");
        // The first second's 64 KiB is out; the rest waits for the rate limit.
        let path = server.prefix().join(&format!("html/{mode}/cut.bin"));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1000)
            .unwrap();
        let (_, rest) = client.wait_closed();
        assert!(rest.len() < SIZE, "{mode}: {} body bytes", rest.len());
        let line = server.wait_for_error_log(&format!("/{mode}/cut.bin\""));
        assert!(line.contains("[alert]"), "{mode}: {line}");
        assert!(line.contains(expected), "{mode}: {line}");
    }
}

/// A multipart range of a `directio` file is read in aligned blocks, like the whole file.
#[test]
fn multipart_ranges_of_a_directio_file() {
    let body = big_body();
    let server = Instance::builder(MODES).file("html/big.bin", &body).start();
    let mut client = server.connect();
    client.write(
        "GET /directio/big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=1-10,2000001-2000100\r\n\r\n",
    );
    let response = client.read_response();
    assert_eq!(response.status, 206);
    let text = response.body.clone();
    let contains = |part: &[u8]| text.windows(part.len()).any(|window| window == part);
    assert!(contains(&body[1..11]), "the first part");
    assert!(contains(&body[2_000_001..2_000_101]), "the second part");
}

/// `open_file_cache` shares one descriptor between locations: one with `directio` turns
/// `O_DIRECT` on, and the other still reads it in aligned blocks (unaligned reads of an
/// `O_DIRECT` descriptor fail).
#[test]
fn a_cached_descriptor_with_o_direct_serves_every_location() {
    let body = big_body();
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root html;
            open_file_cache max=10;
            location /direct/ { alias html/; directio 4k; }
            location /plain/ { alias html/; }
            location /sendfile/ { alias html/; sendfile on; }
        }",
    )
    .file("html/big.bin", &body)
    .start();
    for path in ["/direct/big.bin", "/plain/big.bin", "/sendfile/big.bin"] {
        let response = server.get(path);
        assert_eq!(response.status, 200, "{path}");
        assert!(response.body == body, "{path}: the body differs");
    }
}

/// `aio_nowait` is Portico's: with it off, every read and every `sendfile` piece goes
/// through the pool.
#[test]
fn aio_nowait_off_sends_the_same_bytes() {
    let body = big_body();
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root html;
            aio threads;
            aio_nowait off;
            location /reads/ { alias html/; output_buffers 3 10k; }
            location /sendfile/ { alias html/; sendfile on; sendfile_max_chunk 256k; }
        }",
    )
    .file("html/big.bin", &body)
    .start();
    for mode in ["reads", "sendfile"] {
        let response = server.get(&format!("/{mode}/big.bin"));
        assert!(response.body == body, "{mode}: the body differs");
    }
}

#[test]
fn index_and_head_under_aio_threads() {
    let server = Instance::builder(MODES)
        .file("html/dir/index.html", "index page\n")
        .start();
    assert_eq!(server.get("/threads/dir/").body_text(), "index page\n");
    let mut client = server.connect();
    client.write("HEAD /threads/dir/index.html HTTP/1.0\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("Content-Length"), Some("11"));
}

#[test]
fn a_pool_named_by_a_variable_that_does_not_exist_fails_after_the_head() {
    let server = Instance::builder(MODES)
        .file("html/big.bin", big_body())
        .start();
    let mut client = server.connect();
    client.write("GET /by-variable/big.bin?pool=nope HTTP/1.1\r\nHost: x\r\n\r\n");
    let (_, received) = client.wait_closed();
    let text = String::from_utf8_lossy(&received);
    // nginx sends the head, then finds no pool for the body and closes the connection.
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("Content-Length: 3000017\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\n"), "no body byte follows the head");
    let line = server.wait_for_error_log("not found");
    assert!(
        line.contains("[error]") && line.contains("thread pool \"nope\" not found"),
        "{line}"
    );
}

#[track_caller]
fn assert_conf_error(directives: &str, message: &str, line: usize) {
    assert_fails(
        &format!("events {{\n}}\n{directives}"),
        &format!("{message} in {{conf}}:{line}"),
    );
}

#[test]
fn an_undeclared_pool_is_refused_at_load() {
    assert_conf_error(
        "http {\n    server {\n        aio threads=disk9;\n    }\n}\n",
        "unknown thread pool \"disk9\"",
        5,
    );
}

#[test]
fn directive_values_are_checked_as_nginx_checks_them() {
    assert_conf_error(
        "http {\n    aio sometimes;\n}\n",
        "\"aio\" directive invalid value",
        4,
    );
    assert_conf_error(
        "http {\n    aio off;\n    aio threads;\n}\n",
        "\"aio\" directive is duplicate",
        5,
    );
    assert_conf_error(
        "http {\n    output_buffers 0 32k;\n}\n",
        "\"output_buffers\" directive invalid value",
        4,
    );
    assert_conf_error(
        "http {\n    sendfile_max_chunk 1x;\n}\n",
        "\"sendfile_max_chunk\" directive invalid value",
        4,
    );
    assert_conf_error(
        "http {\n    directio sometimes;\n}\n",
        "\"directio\" directive invalid value",
        4,
    );
    assert_conf_error(
        "http {\n    sendfile maybe;\n}\n",
        "invalid value \"maybe\" in \"sendfile\" directive, it must be \"on\" or \"off\"",
        4,
    );
}

/// A full queue refuses the task. With `aio_nowait off` every open and read is a pool
/// task, so the refused task is the `open()` and the answer is 500; nginx opens on the
/// worker, sends the head and then closes when the read task is refused. Both write
/// nginx's line. (Portico's directives: not for nginx.)
#[test]
fn queue_overflow_fails_the_request_with_nginx_line() {
    let server = Instance::builder(
        "thread_pool one threads=1 max_queue=0;
        events {
        }
        http {
            server {
                listen 127.0.0.1:8080;
                root html;
                aio threads=one;
                location / { aio_nowait off; }
                location /nowait/ { alias html/; }
                location /nowait-sendfile/ { alias html/; sendfile on; }
            }
        }",
    )
    .file("html/file.txt", "file\n")
    .start();
    assert_eq!(server.get("/file.txt").status, 500);
    let line = server.wait_for_error_log("queue overflow");
    assert!(
        line.contains("[error]")
            && line.contains("thread pool \"one\" queue overflow: 0 tasks waiting"),
        "{line}"
    );
    // With aio_nowait (the default) a file whose path and data are in memory (it was just
    // written) is opened, read or sent on the worker: the pool that refuses every task is
    // never asked.
    assert_eq!(server.get("/nowait/file.txt").body_text(), "file\n");
    assert_eq!(
        server.get("/nowait-sendfile/file.txt").body_text(),
        "file\n"
    );
}

/// `sendfile on` under `aio threads`: a large piece page cache holds goes to the pool's
/// `sendfile` (no copy) while a thread is free for it, and is copied by the worker while
/// every thread of the pool is busy, so that it never waits behind them. The pool's one
/// thread (a pool of one keeps none for urgent tasks) is held by an
/// `auth_basic_user_file` that is a FIFO nobody writes yet.
#[test]
fn large_cached_pieces_go_to_the_pool_only_while_it_keeps_up() {
    const BIG: usize = 1 << 20;
    let server = Instance::builder(
        "worker_processes 1;
        thread_pool one threads=1;
        events {
        }
        http {
            server {
                listen 127.0.0.1:8080;
                root html;
                sendfile on;
                aio threads=one;
                location /held/ { auth_basic on; auth_basic_user_file fifo; }
                location = /metrics { portico_metrics; }
            }
        }",
    )
    .file("html/big.bin", vec![3u8; BIG])
    .file("html/held/index.html", "held")
    .start();
    let fifo = server.prefix().path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "666"])
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let scrape = || server.get("/metrics").body_text();
    let moved = |text: &str, route: &str| {
        let series =
            format!("portico_worker_file_body_bytes_total{{worker=\"0\",route=\"{route}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&series))
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
    };
    let running = |text: &str| {
        text.lines()
            .filter(|line| line.starts_with("portico_thread_pool_running_tasks{pool=\"one\""))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };

    // The pool's thread opens the FIFO for the held request and waits for a writer.
    let mut held = crate::support::Client::connect(server.port());
    held.write("GET /held/ HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dTpw\r\n\r\n");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running(&scrape()) < 1.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the pool's thread never got the task"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }

    // Every thread busy: the worker copies the cached file itself, without waiting.
    let before = scrape();
    let response = crate::support::Client::connect(server.port())
        .with_timeout(std::time::Duration::from_secs(5))
        .request("GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(response.body.len(), BIG);
    let after = scrape();
    assert_eq!(
        moved(&after, "cached_on_worker") - moved(&before, "cached_on_worker"),
        BIG as f64
    );
    assert_eq!(
        moved(&after, "pool"),
        moved(&before, "pool"),
        "nothing queued behind the FIFO"
    );

    // A writer lets the held request go (the user is not in the file: 401).
    std::fs::write(&fifo, "other:{PLAIN}x\n").expect("write the FIFO");
    assert_eq!(held.read_response().status, 401);

    // The pool is free again: the large pieces go to its sendfile.
    let before = scrape();
    assert_eq!(server.get("/big.bin").body.len(), BIG);
    let after = scrape();
    let pool = moved(&after, "pool") - moved(&before, "pool");
    let worker = moved(&after, "cached_on_worker") - moved(&before, "cached_on_worker");
    assert!(
        pool >= (128 * 1024) as f64,
        "{pool} bytes by the pool, {worker} by the worker"
    );
    assert_eq!(pool + worker, BIG as f64);
}

/// The seed's hot file under a cold load: while every thread a pool has for ordinary tasks
/// waits (three opens of a FIFO nobody writes, as reads wait for a slow disk) and a fourth
/// ordinary task waits in the queue, the large cached pieces of a file still go to the
/// pool's `sendfile` at once, on the thread it keeps for urgent tasks (issue 34).
#[test]
fn cached_pieces_never_wait_behind_a_busy_pool() {
    const BIG: usize = 2 << 20;
    let server = Instance::builder(
        "worker_processes 1;
        thread_pool four threads=4;
        events {
        }
        http {
            server {
                listen 127.0.0.1:8080;
                root html;
                sendfile on;
                sendfile_max_chunk 256k;
                aio threads=four;
                location /held/ { auth_basic on; auth_basic_user_file fifo; }
                location = /metrics { portico_metrics; }
            }
        }",
    )
    .file("html/big.bin", vec![7u8; BIG])
    .file("html/held/index.html", "held")
    .start();
    let fifo = server.prefix().path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "666"])
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let scrape = || server.get("/metrics").body_text();
    let value = |text: &str, series: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
    };
    let moved = |text: &str, route: &str| {
        let series =
            format!("portico_worker_file_body_bytes_total{{worker=\"0\",route=\"{route}\"}}");
        value(text, &series)
    };
    let pool_series =
        |name: &str| format!("portico_thread_pool_{name}{{pool=\"four\",worker=\"0\"}}");

    // Three ordinary tasks hold the three threads a pool of four has for them; a fourth
    // waits in the queue.
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut client = crate::support::Client::connect(server.port());
        client.write("GET /held/ HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dTpw\r\n\r\n");
        held.push(client);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = scrape();
        if value(&text, &pool_series("running_tasks")) >= 3.0
            && value(&text, &pool_series("queued_tasks")) >= 1.0
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the held tasks never filled the pool:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }

    let before = scrape();
    let response = crate::support::Client::connect(server.port())
        .with_timeout(std::time::Duration::from_secs(5))
        .request("GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(response.status, 200);
    assert!(response.body == vec![7u8; BIG], "the body's bytes");
    let after = scrape();
    let pool = moved(&after, "pool") - moved(&before, "pool");
    let worker = moved(&after, "cached_on_worker") - moved(&before, "cached_on_worker");
    assert_eq!(pool + worker, BIG as f64);
    // Only the first piece (at most `output_buffers`, 64 KiB) and the pieces a busy moment
    // left to the worker are copied; most of the file goes by the pool's sendfile.
    assert!(
        pool >= (BIG / 2) as f64,
        "{pool} bytes by the pool, {worker} by the worker"
    );
    assert!(
        value(&after, &pool_series("queued_tasks")) >= 1.0,
        "the fourth ordinary task still waits:\n{after}"
    );

    // Writers let the held requests go: the fourth opens the FIFO only after one of the
    // first three is done, so a writer comes back until every answer is in.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                // Without a reader, a non-blocking open for writing fails (ENXIO).
                if let Ok(mut pipe) = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                    .open(&fifo)
                {
                    let _ = pipe.write_all(b"other:{PLAIN}x\n");
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        })
    };
    for mut client in held {
        let status = client.read_response().status;
        assert!(status == 401 || status == 500, "held request: {status}");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}
