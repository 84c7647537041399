//! A file sent from a slow disk whose pages page cache does not keep (seed 000's condition)
//! never holds the worker: in every `aio` and `sendfile` mode, a request that needs no disk
//! is answered while the file is being sent on the same worker, because the connection
//! gives the loop back after each piece and, under `aio threads`, the pieces that are not
//! in page cache are sent from the pool. Needs root and cgroup v1 (skipped otherwise, with
//! the reason).

use std::time::{Duration, Instant};

use crate::support::slow_disk::{Evictor, SlowDisk};
use crate::support::{Client, Instance};

/// The file: long enough that sending it from the throttled disk takes seconds.
const FILE_BYTES: usize = 64 * 1024 * 1024;

/// The emulated disk's read rate. A read that waits for the disk may wait for a whole
/// readahead window queued before it (the development machine's disk reads ahead 8 MiB:
/// 500 ms at this rate), which is what sets the bound below apart from scheduling noise.
const DISK_BYTES_PER_SECOND: u64 = 16 * 1024 * 1024;

/// How often the file's pages are dropped: soon after the server starts sending it from
/// page cache, and then again and again.
const EVICTION_PERIOD: Duration = Duration::from_millis(20);

/// The slowest answer allowed to the small requests under `aio threads`, where the worker
/// never waits for the disk: above the loop's own noise on a busy machine (5-25 ms
/// usually; 261 ms once while the tests ran at idle priority beside a benchmark), and
/// below one disk wait (a readahead window: 500 ms).
const SMALL_ANSWER_WITHIN_THREADS: Duration = Duration::from_millis(350);

/// The slowest answer allowed under `aio off`, where the worker waits for the disk once per
/// piece as nginx's does: a few disk waits, and far below the seconds a worker held by the
/// whole file takes.
const SMALL_ANSWER_WITHIN_OFF: Duration = Duration::from_millis(2000);

#[allow(
    clippy::print_stderr,
    reason = "a skipped test says so; the measurement is shown with --nocapture"
)]
fn assert_small_requests_are_answered_during(mode: &str, user: &str) {
    let body: Vec<u8> = (0..FILE_BYTES as u32)
        .map(|index| (index.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let config = format!(
        "worker_processes 1;
{user}
events {{
}}
http {{
    server {{
        listen 127.0.0.1:8080;
        location /files/ {{
            root html;
            sendfile_max_chunk 256k;
            {mode}
        }}
        location = /small {{
            return 200 \"small\";
        }}
    }}
}}"
    );
    let server = Instance::builder(&config)
        .file("html/files/big.bin", &body)
        .start();
    let path = server.prefix().join("html/files/big.bin");
    let _disk = match SlowDisk::throttle(server.pid(), &path, DISK_BYTES_PER_SECOND) {
        Ok(disk) => disk,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let _evictor = match Evictor::start(&path, EVICTION_PERIOD) {
        Ok(evictor) => evictor,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let port = server.port();
    let download = std::thread::spawn(move || {
        let started = Instant::now();
        let response = Client::connect(port)
            .with_timeout(Duration::from_secs(60))
            .request("GET /files/big.bin HTTP/1.0\r\n\r\n");
        (response, started.elapsed())
    });
    let mut slowest = Duration::ZERO;
    let mut answered = 0;
    while !download.is_finished() {
        let started = Instant::now();
        let response = server.get("/small");
        assert_eq!(response.body_text(), "small", "{mode}");
        slowest = slowest.max(started.elapsed());
        answered += 1;
    }
    let (response, took) = download.join().expect("the download thread ends");
    assert_eq!(response.status, 200, "{mode}");
    assert!(response.body == body, "{mode}: the body differs");
    eprintln!("{mode}: slowest small answer {slowest:?}, {answered} answered in {took:?}");
    // The condition was real: the file came from the throttled disk.
    assert!(
        took >= Duration::from_secs(1),
        "{mode}: the file took {took:?}, so the disk was not slow"
    );
    let bound = if mode.contains("aio threads") {
        SMALL_ANSWER_WITHIN_THREADS
    } else {
        SMALL_ANSWER_WITHIN_OFF
    };
    assert!(
        slowest < bound,
        "{mode}: a small request waited {slowest:?} while the file was sent \
         ({answered} answered in {took:?})"
    );
}

#[test]
fn sendfile_with_aio_threads_never_holds_the_worker() {
    assert_small_requests_are_answered_during("sendfile on; aio threads;", "");
}

#[test]
fn sendfile_with_aio_threads_as_the_owner_never_holds_the_worker() {
    assert_small_requests_are_answered_during("sendfile on; aio threads;", "user root;");
}

#[test]
fn sendfile_with_aio_off_gives_the_loop_back_after_each_piece() {
    assert_small_requests_are_answered_during("sendfile on; aio off;", "");
}

#[test]
fn reads_with_aio_threads_never_hold_the_worker() {
    assert_small_requests_are_answered_during("sendfile off; aio threads;", "");
}

#[test]
fn reads_with_aio_off_give_the_loop_back_after_each_piece() {
    assert_small_requests_are_answered_during("sendfile off; aio off;", "");
}
