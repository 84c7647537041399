//! `flv`: pseudo-streaming from `?start=N` (the FLV header, then the file from byte N),
//! with ranges on top; other `start` values serve the whole file.

use crate::support::Instance;

const HEADER: &[u8] = b"FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00";

fn start() -> (Instance, Vec<u8>) {
    let file: Vec<u8> = (0..1000u32).map(|n| b'0' + (n % 10) as u8).collect();
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root html;
            location / {
                flv;
            }
        }",
    )
    .file("html/t.flv", &file)
    .start();
    (server, file)
}

#[test]
fn start_sends_the_header_and_the_rest_of_the_file() {
    let (server, file) = start();
    let seek = server.get("/t.flv?start=100");
    assert_eq!(seek.status, 200);
    assert_eq!(seek.header("Content-Length"), Some("913"));
    assert_eq!(&seek.body[..13], HEADER);
    assert_eq!(&seek.body[13..], &file[100..]);
    for whole in [
        "/t.flv",
        "/t.flv?start=0",
        "/t.flv?start=1000",
        "/t.flv?start=x1",
    ] {
        let answer = server.get(whole);
        assert_eq!(answer.status, 200, "{whole}");
        assert_eq!(answer.body, file, "{whole}");
    }
    let post = server.request(
        "POST /t.flv HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(post.status, 405);
    assert_eq!(server.get("/none.flv?start=5").status, 404);
}

#[test]
fn ranges_apply_to_what_is_sent() {
    let (server, file) = start();
    let ranged = |range: &str| {
        server.request(format!(
            "GET /t.flv?start=100 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
             Range: {range}\r\n\r\n"
        ))
    };
    let first = ranged("bytes=0-9");
    assert_eq!(first.status, 206);
    assert_eq!(first.header("Content-Range"), Some("bytes 0-9/913"));
    assert_eq!(first.body, &HEADER[..10]);
    let last = ranged("bytes=-10");
    assert_eq!(last.header("Content-Range"), Some("bytes 903-912/913"));
    assert_eq!(last.body, &file[990..]);
    let across = ranged("bytes=10-19");
    assert_eq!(&across.body[..3], &HEADER[10..]);
    assert_eq!(&across.body[3..], &file[100..107]);
}
