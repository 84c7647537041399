//! `open_file_cache`, `open_file_cache_valid`, `open_file_cache_min_uses`,
//! `open_file_cache_errors`: what a cached descriptor or error changes for the client
//! after the file changes on disk. Checked against nginx 1.22
//! (`PORTICO_E2E_BINARY=/usr/sbin/nginx`); one worker, so one cache.

use crate::support::{Instance, PATIENCE, poll};

const CONF: &str = r#"
server {
    listen 127.0.0.1:8080;
    root %%PREFIX%%/html;
    location /cached/ { open_file_cache max=10; open_file_cache_valid 60s; }
    location /short/ { open_file_cache max=10 inactive=10s; open_file_cache_valid 1s; }
    location /errors/ { open_file_cache max=10; open_file_cache_errors on; }
    location /noerrors/ { open_file_cache max=10; }
    location /twice/ { open_file_cache max=10; open_file_cache_min_uses 2; }
    location /plain/ { }
}
"#;

fn start() -> Instance {
    Instance::http_builder(CONF)
        .file("html/cached/a.txt", "A\n")
        .file("html/short/b.txt", "B\n")
        .file("html/twice/once.txt", "ONCE\n")
        .file("html/twice/more.txt", "MORE\n")
        .file("html/plain/p.txt", "P\n")
        .start()
}

fn remove(server: &Instance, relative: &str) {
    std::fs::remove_file(server.prefix().join(relative)).expect("remove the file");
}

#[test]
fn a_cached_descriptor_serves_a_removed_file_while_valid() {
    let server = start();
    assert_eq!(server.get("/cached/a.txt").body_text(), "A\n");
    remove(&server, "html/cached/a.txt");
    let response = server.get("/cached/a.txt");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "A\n");
    // Without the cache the file is gone at once.
    assert_eq!(server.get("/plain/p.txt").status, 200);
    remove(&server, "html/plain/p.txt");
    assert_eq!(server.get("/plain/p.txt").status, 404);
}

#[test]
fn an_entry_is_checked_again_once_not_valid() {
    let server = start();
    assert_eq!(server.get("/short/b.txt").body_text(), "B\n");
    remove(&server, "html/short/b.txt");
    let gone = poll(PATIENCE, || {
        (server.get("/short/b.txt").status == 404).then_some(())
    });
    assert!(gone.is_some(), "the entry outlived open_file_cache_valid");
}

#[test]
fn errors_are_cached_only_with_open_file_cache_errors() {
    let server = start();
    assert_eq!(server.get("/errors/c.txt").status, 404);
    assert_eq!(server.get("/noerrors/d.txt").status, 404);
    server.prefix().write("html/errors/c.txt", "C\n");
    server.prefix().write("html/noerrors/d.txt", "D\n");
    assert_eq!(
        server.get("/errors/c.txt").status,
        404,
        "the error is cached"
    );
    assert_eq!(server.get("/noerrors/d.txt").body_text(), "D\n");
}

#[test]
fn descriptors_are_kept_after_min_uses() {
    let server = start();
    // Used once: not kept, so a removed file is gone.
    assert_eq!(server.get("/twice/once.txt").body_text(), "ONCE\n");
    remove(&server, "html/twice/once.txt");
    assert_eq!(server.get("/twice/once.txt").status, 404);
    // Used twice: kept.
    assert_eq!(server.get("/twice/more.txt").body_text(), "MORE\n");
    assert_eq!(server.get("/twice/more.txt").body_text(), "MORE\n");
    remove(&server, "html/twice/more.txt");
    assert_eq!(server.get("/twice/more.txt").body_text(), "MORE\n");
}

#[test]
fn configuration_errors() {
    let cases = [
        (
            "open_file_cache max=0;",
            "invalid \"open_file_cache\" parameter \"max=0\"",
        ),
        (
            "open_file_cache inactive=10s;",
            "\"open_file_cache\" must have the \"max\" parameter",
        ),
        (
            "open_file_cache max=10 sometimes;",
            "invalid \"open_file_cache\" parameter \"sometimes\"",
        ),
        (
            "open_file_cache_valid forever;",
            "\"open_file_cache_valid\" directive invalid value",
        ),
        (
            "open_file_cache_min_uses x;",
            "\"open_file_cache_min_uses\" directive invalid number",
        ),
    ];
    for (directive, expected) in cases {
        let config = format!("{directive} server {{ listen 127.0.0.1:8080; }}");
        let failure = Instance::http_builder(&config)
            .try_start()
            .expect_err("the configuration is refused");
        let text = format!("{}{}", failure.stderr, failure.error_log);
        assert!(text.contains(expected), "{directive}: {text}");
    }
}
