//! `gunzip`: a gzip-encoded response (proxied, or a `gzip_static always` file) decoded for
//! a client that does not take gzip, with nginx's head (no `Content-Encoding`, chunked,
//! `Vary` with `gzip_vary`), passed as it is to one that does; a broken gzip body is logged
//! and cut short, and the server goes on.

use std::io::Write;

use crate::support::Instance;
use crate::support::client::Client;
use crate::support::upstream::MockUpstream;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = std::process::Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run gzip");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("write to gzip");
    let output = child.wait_with_output().expect("gzip's output");
    assert!(output.status.success());
    output.stdout
}

fn request(method: &str, path: &str, extra: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n")
}

const GUNZIP: &str = "
server {
    listen 127.0.0.1:8080;
    root site;
    gunzip on;
    gunzip_buffers 16 8k;
    gzip_vary on;
    location /buffered/ { proxy_pass http://127.0.0.1:8081/; }
    location /streamed/ { proxy_pass http://127.0.0.1:8081/; proxy_buffering off; }
    location /static/ { gzip_static always; }
    location /off/ { gunzip off; proxy_pass http://127.0.0.1:8081/; }
}";

#[test]
fn gunzip_decodes_for_clients_without_gzip() {
    let mut builder = Instance::http_builder(GUNZIP);
    let text: Vec<u8> = (0..2000)
        .flat_map(|n| format!("X{n:05}XXXX").into_bytes())
        .collect();
    // 4 MiB of zeros inflate a thousandfold: decoded in bounded steps, whole at the end.
    let zeros = vec![0u8; 4 << 20];
    let (one, bomb) = (gzip(&text), gzip(&zeros));
    let two = [one.clone(), one.clone()].concat();
    let mut broken = one.clone();
    let middle = broken.len() / 2;
    broken[middle..middle + 8].copy_from_slice(b"\xffbroken\xff");
    let upstream_bodies = [
        ("/one", one.clone()),
        ("/two", two),
        ("/bomb", bomb),
        ("/broken", broken),
        ("/plain", text.clone()),
    ];
    let _upstream = MockUpstream::start(builder.port(8081), move |mut conn| {
        while let Some(head) = conn.read_request() {
            let line = String::from_utf8_lossy(&head).into_owned();
            let Some((_, body)) = upstream_bodies
                .iter()
                .find(|(path, _)| line.starts_with(&format!("GET {path} ")))
            else {
                conn.write("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
                continue;
            };
            let encoding = if line.starts_with("GET /plain ") {
                ""
            } else {
                "Content-Encoding: gzip\r\n"
            };
            conn.write(format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n{encoding}\
                 ETag: \"abc\"\r\nAccept-Ranges: bytes\r\nContent-Length: {}\r\n\r\n",
                body.len()
            ));
            conn.write(body);
        }
    });
    let server = builder.file("site/static/t1.gz", &one).start();
    for prefix in ["/buffered", "/streamed", "/static"] {
        let path = if prefix == "/static" {
            "/static/t1".to_owned()
        } else {
            format!("{prefix}/one")
        };
        let plain = server.request(request("GET", &path, ""));
        assert_eq!(plain.status, 200, "{path}");
        assert_eq!(plain.header("Content-Encoding"), None, "{path}");
        assert_eq!(plain.header("Content-Length"), None, "{path}: chunked");
        assert_eq!(plain.header("Transfer-Encoding"), Some("chunked"), "{path}");
        assert_eq!(plain.header("Accept-Ranges"), None, "{path}");
        assert_eq!(plain.header("Vary"), Some("Accept-Encoding"), "{path}");
        assert!(
            plain
                .header("ETag")
                .is_some_and(|etag| etag.starts_with("W/"))
        );
        assert_eq!(plain.body, text, "{path}");
        let gzipped = server.request(request("GET", &path, "Accept-Encoding: gzip\r\n"));
        assert_eq!(gzipped.header("Content-Encoding"), Some("gzip"), "{path}");
        assert_eq!(gzipped.header("Vary"), Some("Accept-Encoding"), "{path}");
        assert_eq!(gzipped.body, one, "{path}: passed as it is");
        let head = server.request(request("HEAD", &path, ""));
        assert_eq!(head.header("Content-Encoding"), None, "{path}");
        assert!(head.body.is_empty());
    }
    // Several gzip members one after the other, and a body that inflates a thousandfold.
    for prefix in ["/buffered", "/streamed"] {
        let two = server.get(&format!("{prefix}/two"));
        assert_eq!(two.body, [text.clone(), text.clone()].concat(), "{prefix}");
        let bomb = server.get(&format!("{prefix}/bomb"));
        assert_eq!(bomb.body.len(), zeros.len(), "{prefix}");
        assert!(bomb.body.iter().all(|byte| *byte == 0));
    }
    // Not gzip-encoded, or gunzip off: as it is, with no Vary.
    let plain = server.get("/buffered/plain");
    assert_eq!((plain.header("Vary"), &plain.body), (None, &text));
    let off = server.get("/off/one");
    assert_eq!(off.header("Content-Encoding"), Some("gzip"));
    assert_eq!(off.body, one);
    // A broken gzip body: logged as nginx does, the response cut short; the server goes on.
    let mut client = Client::connect(server.port());
    client.write(request("GET", "/streamed/broken", ""));
    let (_, received) = client.wait_closed();
    let received = String::from_utf8_lossy(&received);
    assert!(received.starts_with("HTTP/1.1 200 OK\r\n"), "{received}");
    assert!(
        !received.ends_with("\r\n0\r\n\r\n"),
        "no last chunk: {received}"
    );
    server.wait_for_error_log("inflate() failed");
    assert_eq!(server.get("/buffered/one").body, text);
}

#[test]
fn gunzip_directives_are_checked() {
    use crate::support::cli::assert_http_body_fails;
    assert_http_body_fails(
        "gunzip_buffers 16 big;",
        "\"gunzip_buffers\" directive invalid value in {conf}:4",
    );
    assert_http_body_fails(
        "gunzip maybe;",
        "invalid value \"maybe\" in \"gunzip\" directive, it must be \"on\" or \"off\" in {conf}:4",
    );
    assert_http_body_fails(
        "gunzip on; gunzip off;",
        "\"gunzip\" directive is duplicate in {conf}:4",
    );
}

/// An SSI include of a gzip answer is decoded before SSI reads it, whatever the client
/// takes: a subrequest is never sent gzip (nginx's gunzip runs before SSI, and declines
/// gzip for subrequests).
#[test]
fn an_included_gzip_answer_is_decoded_for_the_page() {
    let text: Vec<u8> = (0..100)
        .flat_map(|n| format!("X{n:03}XXXXXX").into_bytes())
        .collect();
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root site;
            location / { gunzip on; gzip_static always; }
            location = /t.html { ssi on; }
        }",
    )
    .file("site/t1.gz", gzip(&text))
    .file("site/t.html", "xxx <!--#include virtual=\"/t1\" --> xxx")
    .start();
    let expected = format!("xxx {} xxx", String::from_utf8(text).unwrap());
    for extra in ["", "Accept-Encoding: gzip\r\n"] {
        let response = Client::connect(server.port()).request(request("GET", "/t.html", extra));
        assert_eq!(response.status, 200);
        assert!(!response.has_header("Content-Encoding"), "{extra:?}");
        assert_eq!(response.body_text(), expected, "{extra:?}");
    }
}
