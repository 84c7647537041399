//! `gzip` and its companions: which responses are compressed, what the head says, and
//! that the body reads back (with the system's `gzip -d`).

use std::io::Write;

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

fn request(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n")
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = std::process::Command::new("gzip")
        .arg("-dc")
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
    assert!(output.status.success(), "not gzip data");
    output.stdout
}

const GZIP: &str = "
server {
    listen 127.0.0.1:8080;
    root site;
    types { text/plain txt; image/png png; }
    gzip on;
    gzip_comp_level 6;
    gzip_min_length 100;
    gzip_types text/plain application/json;
    gzip_http_version 1.0;
    gzip_vary on;
    gzip_buffers 16 8k;
    gzip_disable \"^Old\";
    gzip_proxied expired no-cache;
    location /proxied/ { proxy_pass http://127.0.0.1:8081/; }
    location = /page { return 200 $args; }
}";

#[test]
fn gzip_compresses_what_qualifies() {
    let mut builder = Instance::http_builder(GZIP);
    let text = "hello gzip ".repeat(200);
    let served = text.clone();
    let _upstream = MockUpstream::start(builder.port(8081), move |mut conn| {
        while conn.read_request().is_some() {
            conn.write(format!(
                concat!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n",
                    "Accept-Ranges: bytes\r\nContent-Length: {}\r\n\r\n{}"
                ),
                served.len(),
                served
            ));
        }
    });
    let server = builder
        .file("site/big.txt", &text)
        .file("site/small.txt", "tiny")
        .file("site/data.png", &text)
        .start();
    let accept = "Accept-Encoding: gzip, deflate\r\n";
    let file = server.request(request("/big.txt", accept));
    assert_eq!(file.header("Content-Encoding"), Some("gzip"));
    assert_eq!(
        file.header("Content-Length"),
        None,
        "chunked, as nginx sends it"
    );
    assert_eq!(file.header("Accept-Ranges"), None);
    assert_eq!(file.header("Vary"), Some("Accept-Encoding"));
    assert!(
        file.header("ETag")
            .is_some_and(|etag| etag.starts_with("W/"))
    );
    assert_eq!(gunzip(&file.body), text.as_bytes());
    assert!(file.body.len() < text.len() / 10);
    let proxied = server.request(request("/proxied/x", accept));
    assert_eq!(proxied.header("Content-Encoding"), Some("gzip"));
    assert_eq!(proxied.header("Accept-Ranges"), None);
    assert_eq!(gunzip(&proxied.body), text.as_bytes());
    // Too short, another type, no Accept-Encoding, a disabled agent, a proxied client.
    assert_eq!(
        server
            .request(request("/small.txt", accept))
            .header("Content-Encoding"),
        None
    );
    assert_eq!(
        server
            .request(request("/data.png", accept))
            .header("Content-Encoding"),
        None
    );
    let plain = server.get("/big.txt");
    assert_eq!(
        (plain.header("Content-Encoding"), plain.body.len()),
        (None, text.len())
    );
    assert_eq!(
        plain.header("Vary"),
        Some("Accept-Encoding"),
        "gzip_vary: also when not compressed"
    );
    let old = server.request(request(
        "/big.txt",
        "Accept-Encoding: gzip\r\nUser-Agent: OldBrowser\r\n",
    ));
    assert_eq!(old.header("Content-Encoding"), None);
    let via = server.request(request(
        "/big.txt",
        "Accept-Encoding: gzip\r\nVia: 1.1 proxy\r\n",
    ));
    assert_eq!(
        via.header("Content-Encoding"),
        None,
        "gzip_proxied: no Expires, no no-cache"
    );
    let head = server.request(format!(
        "HEAD /big.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{accept}\r\n"
    ));
    assert_eq!(head.header("Content-Encoding"), Some("gzip"));
}

/// `gzip_static`: `FILE.gz` for a client that takes gzip (`on`), or for all (`always`),
/// with the original's type and `Content-Encoding: gzip`; `FILE` otherwise.
#[test]
fn gzip_static_serves_the_precompressed_file() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root site;
            types { text/plain txt; }
            location /on/ { gzip_static on; gzip_vary on; }
            location /always/ { gzip_static always; }
        }",
    )
    .file("site/on/a.txt", "plain text")
    .file("site/on/a.txt.gz", "pretend gzip")
    .file("site/on/b.txt", "no gz beside it")
    .file("site/always/a.txt", "plain text")
    .file("site/always/a.txt.gz", "pretend gzip")
    .start();
    let accept = "Accept-Encoding: gzip\r\n";
    let gz = server.request(request("/on/a.txt", accept));
    assert_eq!(gz.body, b"pretend gzip");
    assert_eq!(gz.header("Content-Encoding"), Some("gzip"));
    assert_eq!(gz.header("Content-Type"), Some("text/plain"));
    assert_eq!(gz.header("Vary"), Some("Accept-Encoding"));
    let plain = server.get("/on/a.txt");
    assert_eq!(
        (plain.body.as_slice(), plain.header("Content-Encoding")),
        (&b"plain text"[..], None)
    );
    assert_eq!(
        server.request(request("/on/b.txt", accept)).body,
        b"no gz beside it"
    );
    assert_eq!(server.get("/always/a.txt").body, b"pretend gzip");
}

/// `$gzip_ratio`: the original size over the compressed one (gzip header and trailer
/// included) with two decimals, for a compressed file and a compressed proxied body;
/// not found (`-` in the log) for a response that was not compressed.
#[test]
fn gzip_ratio_is_logged() {
    let mut builder = Instance::http_builder(
        "log_format ratio '$uri $gzip_ratio';
        server {
            listen 127.0.0.1:8080;
            root site;
            types { text/plain txt; }
            gzip on;
            gzip_types text/plain;
            access_log logs/ratio.log ratio;
            location /proxied/ { proxy_pass http://127.0.0.1:8081/; }
        }",
    );
    let text = "ratio ".repeat(2000);
    let served = text.clone();
    let _upstream = MockUpstream::start(builder.port(8081), move |mut conn| {
        while conn.read_request().is_some() {
            conn.write(format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{}",
                served.len(),
                served
            ));
        }
    });
    let server = builder.file("site/big.txt", &text).start();
    let accept = "Accept-Encoding: gzip\r\n";
    for path in ["/big.txt", "/proxied/big.txt"] {
        let compressed = server.request(request(path, accept));
        assert_eq!(compressed.header("Content-Encoding"), Some("gzip"));
        let line = server.wait_for_line("logs/ratio.log", &format!("{path} "));
        let ratio: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|ratio| ratio.parse().ok())
            .unwrap_or_else(|| panic!("a ratio: {line}"));
        let expected = text.len() as f64 / compressed.body.len() as f64;
        assert!(
            (ratio - expected).abs() < 0.01,
            "{line}, want {expected:.2}"
        );
    }
    server.get("/big.txt");
    let plain = server.wait_for_line("logs/ratio.log", "/big.txt -");
    assert_eq!(plain, "/big.txt -");
}
