//! Cache files damaged in place while the server runs (the same inode, written over or
//! cut by something else): a worker that keeps the entry open sees the change at the
//! next HIT, so no byte of a damaged file is ever served, and no request is left without
//! an answer. The entry is logged at `crit`, dropped and stored again.

use std::os::unix::fs::FileExt;

use crate::proxy_cache::{BASIC, asked, cached_proxy, ok, wait_stored, x_cache};
use crate::support::{Instance, PATIENCE, wait_until};

/// The body the upstream sends for its `number`th request: `size` bytes, every one of
/// them the digit of `number` (so a response shows which answer it came from).
fn body(number: usize, size: usize) -> String {
    let digit = char::from(b'0' + (number % 10) as u8);
    std::iter::repeat_n(digit, size).collect()
}

/// Stores `/d` with a body of `size` bytes and makes it a HIT twice, so the worker keeps
/// it open; returns the server, the upstream and the entry's path.
fn stored_and_kept(
    size: usize,
) -> (
    Instance,
    crate::support::upstream::MockUpstream,
    std::path::PathBuf,
) {
    let (mut server, upstream) = cached_proxy(BASIC, move |_, number| ok(&body(number, size), ""));
    server.expect_log("[crit]");
    assert_eq!(x_cache(&server.get("/d")), "MISS");
    let path = wait_stored(&server.prefix().join("cache"), "/d");
    for _ in 0..2 {
        let hit = server.get("/d");
        assert_eq!((x_cache(&hit), hit.body_text()), ("HIT", body(1, size)));
    }
    (server, upstream, path)
}

/// After the damage: 20 requests, every one a whole 200 with the upstream's second body
/// (the first a MISS that stores it again, the rest HITs once it is stored), a `[crit]`
/// line naming the file, and one more upstream request in all.
fn assert_never_served(
    server: &Instance,
    upstream: &crate::support::upstream::MockUpstream,
    path: &std::path::Path,
    size: usize,
) {
    let first = server.get("/d");
    assert_eq!(
        (first.status, x_cache(&first)),
        (200, "MISS"),
        "the damaged entry is not a HIT"
    );
    assert!(first.body_text() == body(2, size), "the upstream's body");
    let line = server.wait_for_error_log(&format!("cache file \"{}\"", path.display()));
    assert!(line.contains("[crit]"), "{line}");
    wait_until("the entry stored again", PATIENCE, || {
        std::fs::read(path).is_ok_and(|bytes| bytes.ends_with(body(2, size).as_bytes()))
    });
    std::thread::sleep(std::time::Duration::from_millis(250));
    for index in 0..19 {
        let mut client = server.connect();
        client.write(crate::support::get("/d"));
        let response = client
            .try_read_response()
            .unwrap_or_else(|error| panic!("request {index}: a whole response: {error:?}"));
        assert_eq!(response.status, 200, "request {index}");
        assert!(
            response.body_text() == body(2, size),
            "request {index}: never a damaged byte ({} bytes, {:?})",
            response.body.len(),
            x_cache(&response)
        );
        assert_eq!(x_cache(&response), "HIT", "request {index}");
    }
    assert_eq!(asked(upstream), 2);
}

/// A small entry (its body kept in memory with the entry) whose file is zeroed in place.
#[test]
fn a_file_zeroed_in_place_is_never_served() {
    let (server, upstream, path) = stored_and_kept(3000);
    let length = std::fs::metadata(&path).expect("the entry").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open the entry");
    file.write_all_at(&vec![0; length as usize], 0)
        .expect("zero it in place");
    assert_never_served(&server, &upstream, &path, 3000);
}

/// A 64 KiB entry (sent from its file) whose body, not its header, is written over in
/// place: the header still checks, but the file changed since it was checked.
#[test]
fn a_body_written_over_in_place_is_never_served() {
    let size = 64 * 1024;
    let (server, upstream, path) = stored_and_kept(size);
    let length = std::fs::metadata(&path).expect("the entry").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open the entry");
    file.write_all_at(&vec![b'X'; 1000], length - 1000)
        .expect("write over the body's end");
    assert_never_served(&server, &upstream, &path, size);
}

/// A 64 KiB entry cut in place to a few kilobytes: no request is left without an answer
/// (the body is never read past the file's new end).
#[test]
fn a_file_shrunk_in_place_is_never_served_short() {
    let size = 64 * 1024;
    let (server, upstream, path) = stored_and_kept(size);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open the entry");
    file.set_len(5000).expect("cut the file");
    assert_never_served(&server, &upstream, &path, size);
}
