//! Files are never served from outside `root`/`alias`: dot segments, encoded dots and
//! slashes, and symbolic links out of the root with `disable_symlinks`. Statuses and log
//! lines were checked against nginx 1.22 (`PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use crate::support::Instance;

const CONF: &str = r#"
server {
    listen 127.0.0.1:8080;
    root %%PREFIX%%/html;
    location /on/ { alias %%PREFIX%%/html/; disable_symlinks on; }
    location /owner/ { alias %%PREFIX%%/html/; disable_symlinks if_not_owner; }
    location /from/ {
        alias %%PREFIX%%/rootlink/;
        disable_symlinks on from=%%PREFIX%%/rootlink;
    }
    location /nofrom/ { alias %%PREFIX%%/rootlink/; disable_symlinks on; }
    location /tf/ { alias %%PREFIX%%/html/; disable_symlinks on; try_files $uri =410; }
    location /ix/ { alias %%PREFIX%%/html/; disable_symlinks on; index flink; }
    location /iff/ {
        alias %%PREFIX%%/html/;
        disable_symlinks on;
        if (-f $request_filename) { return 200 "file\n"; }
        return 200 "no file\n";
    }
}
"#;

/// The server, with `html/flink` → `secret.txt` and `html/dlink` → `outside/`, both out
/// of the root, and `rootlink` → `html`.
fn start() -> Instance {
    let server = Instance::http_builder(CONF)
        .file("secret.txt", "SECRET\n")
        .file("outside/o.txt", "OUTSIDE\n")
        .file("html/sub/f.txt", "inside\n")
        .start();
    let prefix = server.prefix();
    let link = |target: &str, name: &str| {
        std::os::unix::fs::symlink(prefix.join(target), prefix.join(name)).expect("symlink");
    };
    link("secret.txt", "html/flink");
    link("outside", "html/dlink");
    link("html", "rootlink");
    server
}

#[test]
fn dot_segments_and_encoded_separators_never_leave_the_root() {
    let server = start();
    for target in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/sub/%2e%2e/%2e%2e/secret.txt",
        "/sub%2f..%2f..%2fsecret.txt",
        "/sub/..%2f..%2fsecret.txt",
        "/sub/f.txt%00.html",
    ] {
        let response = server.get(target);
        assert_eq!(response.status, 400, "{target}");
        assert!(!response.body_text().contains("SECRET"), "{target}");
    }
    // Encoded slashes and dots that stay inside the root are decoded and served.
    for target in [
        "/sub%2F%2E%2E%2Fsub%2Ff.txt",
        "/sub/./f.txt",
        "//sub//f.txt",
    ] {
        let response = server.get(target);
        assert_eq!(response.status, 200, "{target}");
        assert_eq!(response.body_text(), "inside\n", "{target}");
    }
}

#[test]
fn links_are_followed_by_default() {
    let server = start();
    assert_eq!(server.get("/flink").body_text(), "SECRET\n");
    assert_eq!(server.get("/dlink/o.txt").body_text(), "OUTSIDE\n");
}

#[test]
fn on_refuses_a_link_as_the_file_with_403() {
    let server = start();
    assert_eq!(server.get("/on/flink").status, 403);
    let line = server.wait_for_error_log("flink");
    let path = server.prefix().join("html/flink").display().to_string();
    assert!(
        line.contains("[error]")
            && line.contains(&format!(
                "openat() \"{path}\" failed (40: Too many levels of symbolic links)"
            )),
        "{line}"
    );
    // A file below the root without links is served.
    assert_eq!(server.get("/on/sub/f.txt").body_text(), "inside\n");
}

#[test]
fn on_refuses_a_link_as_a_directory_with_404() {
    let server = start();
    // The link is opened itself (O_PATH|O_NOFOLLOW): what is below it is "not a directory".
    assert_eq!(server.get("/on/dlink/o.txt").status, 404);
    let line = server.wait_for_error_log("o.txt");
    let path = server
        .prefix()
        .join("html/dlink/o.txt")
        .display()
        .to_string();
    assert!(
        line.contains(&format!("openat() \"{path}\" failed (20: Not a directory)")),
        "{line}"
    );
    assert_eq!(server.get("/on/dlink").status, 403);
    assert_eq!(server.get("/on/dlink/").status, 404);
}

#[test]
fn try_files_and_index_do_not_follow_refused_links() {
    let mut server = start();
    // nginx's try_files logs a refused link at crit and goes on to the next parameter.
    server.expect_log("[crit]");
    assert_eq!(server.get("/tf/flink").status, 410);
    let line = server.wait_for_error_log("[crit]");
    assert!(
        line.contains("flink\" failed (40: Too many levels of symbolic links)"),
        "{line}"
    );
    assert_eq!(server.get("/tf/dlink/o.txt").status, 410);
    assert_eq!(server.get("/ix/").status, 403);
}

#[test]
fn file_tests_in_if_follow_disable_symlinks() {
    let mut server = start();
    server.expect_log("[crit]");
    assert_eq!(server.get("/iff/sub/f.txt").body_text(), "file\n");
    assert_eq!(server.get("/iff/flink").body_text(), "no file\n");
    let line = server.wait_for_error_log("[crit]");
    assert!(
        line.contains("flink\" failed (40: Too many levels of symbolic links)"),
        "{line}"
    );
}

#[test]
fn from_leaves_the_leading_part_unchecked() {
    let server = start();
    assert_eq!(server.get("/from/sub/f.txt").body_text(), "inside\n");
    assert_eq!(server.get("/nofrom/sub/f.txt").status, 404);
}

#[test]
fn if_not_owner_compares_the_owners_of_link_and_target() {
    let server = start();
    // Same owner: allowed.
    assert_eq!(server.get("/owner/flink").body_text(), "SECRET\n");
    // A link owned by someone else than its target's owner is refused (root may lchown).
    let link = server.prefix().join("html/flink");
    if std::os::unix::fs::lchown(&link, Some(65534), None).is_ok() {
        assert_eq!(server.get("/owner/flink").status, 403);
    }
}

#[test]
fn configuration_errors() {
    let cases = [
        ("disable_symlinks maybe;", "invalid parameter \"maybe\""),
        (
            "disable_symlinks from=/x;",
            "must have \"off\", \"on\" or \"if_not_owner\"",
        ),
        (
            "disable_symlinks off from=/x;",
            "\"from=\" cannot be used with \"off\" parameter",
        ),
        (
            "disable_symlinks on off;",
            "duplicate parameters \"on off\"",
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
