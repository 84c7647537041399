//! `dav_methods`, `dav_access`, `create_full_put_path`, `min_delete_depth`: WebDAV on the
//! files under a root, and bad input (a body where none belongs, destinations that try to
//! leave the root or name another host, bad `Depth` and `Overwrite` headers).

use std::os::unix::fs::PermissionsExt;

use crate::support::Instance;

const DAV: &str = "
server {
    listen 127.0.0.1:8080;
    absolute_redirect off;
    root html;
    location / {
        dav_methods PUT DELETE MKCOL COPY MOVE;
    }
    location /full/ {
        dav_methods PUT;
        create_full_put_path on;
        dav_access user:rw group:r all:r;
    }
    location /deep/ {
        dav_methods PUT DELETE;
        create_full_put_path on;
        min_delete_depth 3;
    }
    location /static/ {
    }
}";

fn request(method: &str, uri: &str, headers: &str, body: &str) -> String {
    format!(
        "{method} {uri} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{headers}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn start() -> Instance {
    let server = Instance::http_builder(DAV).start();
    open_root(&server);
    server
}

/// The root, writable by the workers (`user nobody` when the tests run as root); again
/// after a file written under it, which makes its directories 0755.
fn open_root(server: &Instance) {
    std::fs::set_permissions(
        server.prefix().create_dir("html"),
        std::fs::Permissions::from_mode(0o777),
    )
    .expect("chmod the root");
}

#[test]
fn put_creates_and_replaces_files_with_the_mode_and_the_location() {
    // The rename into a missing directory is logged at `crit`, as nginx logs it.
    let server = Instance::http_builder(DAV).expect_log("[crit]").start();
    open_root(&server);
    let created = server.request(request("PUT", "/file%20sp", "", "0123456789"));
    assert_eq!(created.status, 201);
    assert_eq!(created.header("Location"), Some("/file%20sp"));
    assert_eq!(created.header("Content-Length"), Some("0"));
    assert_eq!(server.prefix().read("html/file sp"), "0123456789");
    let replaced = server.request(request("PUT", "/file%20sp", "", ""));
    assert_eq!(replaced.status, 204);
    assert_eq!(replaced.header("Content-Length"), None);
    assert_eq!(server.prefix().read("html/file sp"), "");
    let chunked = server.request(
        "PUT /chunked HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    assert_eq!(chunked.status, 201);
    assert_eq!(server.prefix().read("html/chunked"), "hello");
    let deep = server.request(request("PUT", "/full/a/b/file", "", "deep"));
    assert_eq!(deep.status, 201);
    let path = server.prefix().join("html/full/a/b/file");
    let mode = std::fs::metadata(&path).expect("put").permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    let directory = std::fs::metadata(server.prefix().join("html/full/a"))
        .expect("made")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(directory, 0o755);
    assert_eq!(
        server
            .request(request("PUT", "/missing/file", "", "x"))
            .status,
        500
    );
    assert_eq!(server.request(request("PUT", "/dir/", "", "x")).status, 409);
    assert_eq!(
        server
            .request(request("PUT", "/r", "Content-Range: bytes 0-0/2\r\n", "x"))
            .status,
        501
    );
    assert_eq!(
        server.request(request("PUT", "/static/x", "", "x")).status,
        405,
        "a location without dav_methods"
    );
    server.wait_for_error_log("cannot PUT to a collection");
}

#[test]
fn delete_mkcol_copy_and_move() {
    let server = start();
    assert_eq!(
        server.request(request("MKCOL", "/col/", "", "")).status,
        201
    );
    assert_eq!(
        server.request(request("MKCOL", "/col/", "", "")).status,
        405
    );
    assert_eq!(
        server.request(request("MKCOL", "/a/b/", "", "")).status,
        409
    );
    assert_eq!(
        server.request(request("MKCOL", "/noslash", "", "")).status,
        409
    );
    assert_eq!(
        server.request(request("MKCOL", "/x/", "", "body")).status,
        415
    );
    assert_eq!(
        server.request(request("PUT", "/col/f", "", "F")).status,
        201
    );
    let copied = server.request(request("COPY", "/col/", "Destination: /copy/\r\n", ""));
    assert_eq!(copied.status, 201);
    assert_eq!(server.prefix().read("html/copy/f"), "F");
    let file = server.request(request(
        "COPY",
        "/col/f",
        "Destination: http://localhost:8080/g\r\n",
        "",
    ));
    assert_eq!(file.status, 204);
    assert_eq!(
        server
            .request(request(
                "COPY",
                "/col/f",
                "Destination: /g\r\nOverwrite: F\r\n",
                ""
            ))
            .status,
        412
    );
    let moved = server.request(request("MOVE", "/g", "Destination: /h\r\n", ""));
    assert_eq!(moved.status, 204);
    assert!(!server.prefix().join("html/g").exists());
    assert_eq!(server.prefix().read("html/h"), "F");
    assert_eq!(
        server.request(request("DELETE", "/col", "", "")).status,
        409,
        "a directory without its final slash"
    );
    assert_eq!(
        server
            .request(request("DELETE", "/col/", "Depth: 0\r\n", ""))
            .status,
        400
    );
    assert_eq!(
        server.request(request("DELETE", "/col/", "", "")).status,
        204
    );
    assert!(!server.prefix().join("html/col").exists());
    assert_eq!(
        server.request(request("DELETE", "/col/", "", "")).status,
        404
    );
    assert_eq!(
        server
            .request(request("PUT", "/deep/a/shallow", "", "x"))
            .status,
        201
    );
    assert_eq!(
        server
            .request(request("DELETE", "/deep/a/shallow", "", ""))
            .status,
        204
    );
    assert_eq!(
        server.request(request("PUT", "/deep/top", "", "x")).status,
        201
    );
    assert_eq!(
        server
            .request(request("DELETE", "/deep/top", "", ""))
            .status,
        409
    );
    server.wait_for_error_log("insufficient URI depth:2 to DELETE");
}

/// No destination leaves the root: `..` above `/` (plain or escaped), other hosts and
/// other schemes are refused, and nothing is written.
#[test]
fn bad_destinations_and_headers_are_refused() {
    let server = start();
    server.prefix().write("html/src", "S");
    open_root(&server);
    for (destination, status) in [
        ("/../escaped", 400),
        ("/a/%2e%2e/%2e%2e/escaped", 400),
        ("/a%00b", 400),
        ("ftp://localhost/x", 400),
        ("http://otherhost/x", 400),
        ("http://localhost", 400),
        ("/dir/", 409),
    ] {
        let answer = server.request(request(
            "COPY",
            "/src",
            &format!("Destination: {destination}\r\n"),
            "",
        ));
        assert_eq!(answer.status, status, "{destination}");
    }
    assert!(!server.prefix().join("escaped").exists());
    // An escaped slash is a slash: the copy lands below the root, where the path says.
    assert_eq!(
        server.request(request("MKCOL", "/sub/", "", "")).status,
        201
    );
    let slash = server.request(request(
        "COPY",
        "/src",
        "Destination: /sub%2Fcopied\r\n",
        "",
    ));
    assert_eq!(slash.status, 204);
    assert_eq!(server.prefix().read("html/sub/copied"), "S");
    for (headers, status) in [
        ("", 400),
        ("Destination: /d\r\nOverwrite: X\r\n", 400),
        ("Destination: /d\r\nDepth: 1\r\n", 400),
        ("Destination: /d\r\nDepth: bogus\r\n", 400),
    ] {
        let answer = server.request(request("COPY", "/src", headers, ""));
        assert_eq!(answer.status, status, "{headers:?}");
    }
    let with_body = server.request(request("MOVE", "/src", "Destination: /d\r\n", "body"));
    assert_eq!(with_body.status, 415);
    assert_eq!(server.prefix().read("html/src"), "S");
    server.wait_for_error_log("client sent no \"Destination\" header");
    server.wait_for_error_log("is handled by different repository than the source URI");
}
