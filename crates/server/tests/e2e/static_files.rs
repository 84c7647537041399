//! Serving files (the basics; the static module has its own tests later): index, 404,
//! directory redirects, `root` and `alias`, HEAD, methods, and types.

use crate::support::log::message_at;
use crate::support::{Instance, get, get_host};

fn files(builder: crate::support::Builder) -> Instance {
    builder
        .file("html/index.html", "<p>index</p>\n")
        .file("html/dir/file.txt", "text file\n")
        .file("html/dir/data.bin", "binary")
        .file("html/dir/noext", "no extension")
        .file("html/dir/sub/index.html", "sub index\n")
        .file("aliased/file.txt", "aliased file\n")
        .start()
}

const STATIC: &str = "
types {
    text/html html;
    text/plain txt;
}
default_type application/x-default;
server {
    listen 127.0.0.1:8080;
    root html;
    location /alias/ { alias aliased/; }
    location /typed/ { alias html/dir/; types { application/x-custom txt; } }
}";

#[test]
fn index_html_for_a_directory() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.get("/");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "<p>index</p>\n");
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    assert_eq!(server.get("/dir/sub/").body_text(), "sub index\n");
}

#[test]
fn missing_file_is_404_with_an_error_line() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.get("/missing.txt");
    assert_eq!(response.status, 404);
    let line = server.wait_for_error_log("missing.txt");
    let message =
        message_at("error", &line).unwrap_or_else(|| panic!("not an [error] line: {line}"));
    let path = server
        .prefix()
        .join("html/missing.txt")
        .display()
        .to_string();
    assert!(
        message.contains(&format!(
            "open() \"{path}\" failed (2: No such file or directory), client: 127.0.0.1"
        )),
        "{line}"
    );
}

#[test]
fn directory_without_slash_redirects() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.request(get_host("/dir", "localhost"));
    assert_eq!(response.status, 301);
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{}/dir/", server.port()).as_str())
    );
    let response = server.request(get_host("/dir?a=b", "localhost"));
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{}/dir/?a=b", server.port()).as_str())
    );
    // Without Host, nginx names the address the client connected to.
    let response = server.request("GET /dir HTTP/1.0\r\n\r\n");
    assert_eq!(
        response.header("Location"),
        Some(format!("http://127.0.0.1:{}/dir/", server.port()).as_str())
    );
}

#[test]
fn directory_without_index_is_forbidden() {
    let server = files(Instance::http_builder(STATIC));
    assert_eq!(server.get("/dir/").status, 403);
    let line = server.wait_for_error_log("directory index of");
    assert!(
        line.contains("[error]") && line.contains("/html/dir/\" is forbidden"),
        "{line}"
    );
}

#[test]
fn root_and_alias() {
    let server = files(Instance::http_builder(STATIC));
    assert_eq!(server.get("/dir/file.txt").body_text(), "text file\n");
    assert_eq!(server.get("/alias/file.txt").body_text(), "aliased file\n");
    assert_eq!(
        server.get("/alias/../index.html").body_text(),
        "<p>index</p>\n"
    );
}

#[test]
fn head_sends_headers_only() {
    let server = files(Instance::http_builder(STATIC));
    let get_response = server.get("/dir/file.txt");
    let mut client = server.connect();
    client.write("HEAD /dir/file.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    client.write(get("/index.html"));
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    for name in ["Content-Length", "Content-Type", "Last-Modified", "ETag"] {
        assert_eq!(head.header(name), get_response.header(name), "{name}");
    }
    assert_eq!(client.read_response().body_text(), "<p>index</p>\n");
}

#[test]
fn post_to_a_file_is_not_allowed() {
    let server = files(Instance::http_builder(STATIC));
    let response = server
        .request("POST /dir/file.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(response.status, 405);
}

#[test]
fn content_type_from_types_and_default_type() {
    let server = files(Instance::http_builder(STATIC));
    assert_eq!(
        server.get("/dir/file.txt").header("Content-Type"),
        Some("text/plain")
    );
    assert_eq!(
        server.get("/dir/data.bin").header("Content-Type"),
        Some("application/x-default")
    );
    assert_eq!(
        server.get("/dir/noext").header("Content-Type"),
        Some("application/x-default")
    );
    assert_eq!(
        server.get("/typed/file.txt").header("Content-Type"),
        Some("application/x-custom")
    );
}

#[test]
fn file_headers() {
    let server = files(Instance::http_builder(STATIC));
    let response = server.get("/dir/file.txt");
    assert_eq!(response.content_length(), Some("text file\n".len()));
    let etag = response.header("ETag").unwrap();
    assert!(
        crate::support::log::matches(r#"^"[0-9a-f]+-a"$"#, etag),
        "ETag: {etag}"
    );
    assert!(response.has_header("Last-Modified"));
}

const STATUSES: &str = "
server {
    listen 127.0.0.1:8080;
    root html;
    location /i/ { alias html/; }
    location /quiet/ { alias html/; log_not_found off; }
}";

fn status_files() -> Instance {
    Instance::http_builder(STATUSES)
        .file("html/file.txt", "file\n")
        .file("html/dir sp/index.html", "spaced\n")
        .file("html/locked.txt", "locked\n")
        .file("html/closed/inner.txt", "inner\n")
        .start()
}

/// Whether workers run as `nobody` (the harness runs as root): only then can a file be
/// unreadable to them.
fn workers_are_not_owner() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn directory_redirects_escape_the_uri_and_keep_arguments() {
    let server = status_files();
    let port = server.port();
    let response = server.request(get_host("/dir%20sp?a=b%20c", "localhost"));
    assert_eq!(response.status, 301);
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{port}/dir%20sp/?a=b%20c").as_str())
    );
    let response = server.request(get_host("/i/dir%20sp", "localhost"));
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{port}/i/dir%20sp/").as_str())
    );
}

#[test]
fn methods_the_static_handler_refuses() {
    let server = status_files();
    for method in ["PUT", "DELETE", "PATCH"] {
        let request =
            format!("{method} /file.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(server.request(request).status, 405, "{method}");
    }
    let post =
        |target: &str| format!("POST {target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(server.request(post("/file.txt")).status, 405);
    assert_eq!(server.request(post("/missing.txt")).status, 404);
    // The index is found for POST too, and the file it leads to refuses POST.
    assert_eq!(server.request(post("/dir%20sp/")).status, 405);
}

#[test]
fn log_not_found_off_keeps_404s_out_of_the_log() {
    let server = status_files();
    assert_eq!(server.get("/quiet/missing-quiet.txt").status, 404);
    assert_eq!(server.get("/quiet/nodir/").status, 404);
    assert_eq!(server.get("/i/missing-loud.txt").status, 404);
    server.wait_for_error_log("missing-loud.txt");
    let log = server.error_log();
    assert!(
        !log.contains("missing-quiet") && !log.contains("nodir"),
        "{log}"
    );
}

#[test]
fn unreadable_files_and_directories_are_403() {
    let server = status_files();
    if !workers_are_not_owner() {
        return;
    }
    let chmod = |relative: &str, mode: u32| {
        let path = server.prefix().join(relative);
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(mode))
            .expect("chmod");
    };
    chmod("html/locked.txt", 0o600);
    chmod("html/closed", 0o700);
    assert_eq!(server.get("/locked.txt").status, 403);
    let path = server
        .prefix()
        .join("html/locked.txt")
        .display()
        .to_string();
    let line = server.wait_for_error_log("locked.txt");
    assert!(
        line.contains("[error]")
            && line.contains(&format!("open() \"{path}\" failed (13: Permission denied)")),
        "{line}"
    );
    assert_eq!(server.get("/closed/inner.txt").status, 403);
    assert_eq!(server.get("/closed/").status, 403);
    let line = server.wait_for_error_log("is forbidden");
    assert!(
        line.contains("/html/closed/index.html\" is forbidden (13: Permission denied)"),
        "{line}"
    );
}

#[test]
fn alias_in_a_named_location_is_refused() {
    let failure =
        Instance::http_builder("server { listen 127.0.0.1:8080; location @x { alias /tmp/; } }")
            .try_start()
            .expect_err("the configuration is refused");
    let text = format!("{}{}", failure.stderr, failure.error_log);
    assert!(
        text.contains("the \"alias\" directive cannot be used inside the named location"),
        "{text}"
    );
}
