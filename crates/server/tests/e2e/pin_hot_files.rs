//! `pin_hot_files`: a file served `uses` times is locked in memory within the budget, a
//! larger one never is, the pins show in the metrics and in the process's locked memory,
//! and the directive's values are checked.

use crate::support::cli::assert_fails;
use crate::support::{Instance, PATIENCE, wait_until};

const KIB: usize = 1024;

fn scrape(server: &Instance) -> String {
    let response = server.get("/metrics");
    assert_eq!(response.status, 200);
    response.body_text()
}

fn value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name} in:\n{text}"))
        .parse()
        .expect("a number")
}

/// The process's locked memory (`VmLck`), in KiB.
fn locked_kib(server: &Instance) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid()))
        .expect("the server's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmLck:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmLck")
}

#[test]
fn a_file_served_uses_times_is_locked_within_the_budget() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root html;
            location /hot/ { aio threads; pin_hot_files 1m uses=3; }
            location /cold/ { aio threads; }
            location = /metrics { portico_metrics; }
        }",
    )
    .file("html/hot/a.bin", vec![b'a'; 256 * KIB])
    .file("html/hot/big.bin", vec![b'b'; 2048 * KIB])
    .file("html/cold/c.bin", vec![b'c'; 256 * KIB])
    .start();
    let before = locked_kib(&server);
    for _ in 0..5 {
        assert_eq!(server.get("/cold/c.bin").body.len(), 256 * KIB);
        assert_eq!(server.get("/hot/big.bin").body.len(), 2048 * KIB);
    }
    for _ in 0..2 {
        assert_eq!(server.get("/hot/a.bin").body.len(), 256 * KIB);
    }
    let text = scrape(&server);
    assert_eq!(value(&text, "portico_pinned_files"), 0.0, "{text}");
    // The third request makes it hot; a pool thread locks it.
    let response = server.get("/hot/a.bin");
    assert_eq!(response.status, 200);
    assert!(response.body == vec![b'a'; 256 * KIB]);
    wait_until("the file is pinned", PATIENCE, || {
        value(&scrape(&server), "portico_pinned_file_bytes") == (256 * KIB) as f64
    });
    assert_eq!(value(&scrape(&server), "portico_pinned_files"), 1.0);
    wait_until("the pages are locked", PATIENCE, || {
        locked_kib(&server) >= before + 256
    });
    // Served the same from the pinned file.
    assert!(server.get("/hot/a.bin").body == vec![b'a'; 256 * KIB]);
}

#[test]
fn pin_hot_files_values_are_checked() {
    let conf = |directive: &str| format!("events {{\n}}\nhttp {{\n    {directive}\n}}\n");
    assert_fails(
        &conf("pin_hot_files 0;"),
        "\"pin_hot_files\" directive invalid value in {conf}:4",
    );
    assert_fails(
        &conf("pin_hot_files lots;"),
        "\"pin_hot_files\" directive invalid value in {conf}:4",
    );
    assert_fails(
        &conf("pin_hot_files 64m uses=0;"),
        "invalid \"pin_hot_files\" parameter \"uses=0\" in {conf}:4",
    );
    assert_fails(
        &conf("pin_hot_files 64m often;"),
        "invalid \"pin_hot_files\" parameter \"often\" in {conf}:4",
    );
    assert_fails(
        &conf("pin_hot_files off 64m;"),
        "\"pin_hot_files\" directive invalid value in {conf}:4",
    );
}
