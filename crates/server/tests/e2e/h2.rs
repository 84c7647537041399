//! HTTP/2 with prior knowledge (h2c) on a cleartext address where `http2 on`, with the
//! `h2` crate as the client: the preface is detected (HTTP/1 still works on the same
//! port), a stream's head runs the phases as any request, and responses come back as
//! HEADERS and DATA under flow control, several streams at once on one connection.

use bytes::Bytes;
use http_types::{Method, Request};

use crate::support::Instance;
use crate::support::h2::{exchange, exchange_in_turn, get, with_method};
use crate::support::proxy::OK;
use crate::support::upstream::MockUpstream;

const CONFIG: &str = r#"server {
    listen 127.0.0.1:8080;
    http2 on;
    root html;
    access_log logs/access.log;
    location = /vars { return 200 "$server_protocol $http2 $scheme [$request]"; }
    location = /small { client_max_body_size 10; return 200 "length $content_length"; }
    location = /redirect { return 302 /elsewhere; }
    location = /trailers { add_trailer X-Checksum "42 $request_method"; return 200 "body"; }
}"#;

fn start() -> Instance {
    let big: Vec<u8> = (0..1_000_000u32).map(|index| (index % 251) as u8).collect();
    Instance::http_builder(CONFIG)
        .file("html/index.html", "hello h2\n")
        .file("html/big.bin", big)
        .start()
}

#[test]
fn h2c_with_prior_knowledge_runs_the_phases() {
    let server = start();
    let answers = exchange(
        server.port(),
        vec![get("/vars"), get("/index.html"), get("/missing")],
    );
    assert_eq!(answers[0].status, 200);
    assert_eq!(
        String::from_utf8_lossy(&answers[0].body),
        "HTTP/2.0 h2c http [GET /vars HTTP/2.0]"
    );
    assert_eq!(answers[0].headers["server"], "portico/0.1.0");
    assert!(answers[0].headers.get("connection").is_none());
    assert_eq!(answers[1].status, 200);
    assert_eq!(answers[1].body, b"hello h2\n");
    assert_eq!(answers[1].headers["content-length"], "9");
    assert_eq!(answers[1].headers["content-type"], "text/html");
    assert_eq!(answers[2].status, 404);
    assert!(String::from_utf8_lossy(&answers[2].body).contains("404 Not Found"));
    let line = server.wait_for_line("logs/access.log", "/vars");
    assert!(line.contains("\"GET /vars HTTP/2.0\" 200 38"), "{line}");
    // HTTP/1 on the same port is unchanged.
    let response = server.get("/vars");
    assert_eq!(response.body_text(), "HTTP/1.1  http [GET /vars HTTP/1.1]");
}

#[test]
fn a_large_file_goes_out_under_flow_control_beside_other_streams() {
    let server = start();
    let big: Vec<u8> = (0..1_000_000u32).map(|index| (index % 251) as u8).collect();
    let requests = vec![
        get("/big.bin"),
        get("/vars"),
        get("/big.bin"),
        get("/index.html"),
    ];
    let answers = exchange(server.port(), requests);
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].body.len(), big.len());
    assert!(answers[0].body == big, "the first file arrived intact");
    assert!(answers[2].body == big, "the second file arrived intact");
    assert_eq!(answers[1].status, 200);
    assert_eq!(answers[3].body, b"hello h2\n");
}

/// File pieces go to the streams as the buffers they were read into, under `aio off` and
/// `aio threads`, in pieces that do not line up with DATA frames; many streams share the
/// connection and its reused buffers, and every byte arrives in its place.
#[test]
fn files_read_in_pieces_arrive_whole_on_many_streams() {
    let config = r#"server {
        listen 127.0.0.1:8080;
        http2 on;
        root html;
        location /off/ { output_buffers 1 7k; }
        location /threads/ { aio threads; output_buffers 3 5k; }
    }"#;
    let large: Vec<u8> = (0..100_003u32).map(|index| (index % 253) as u8).collect();
    let small: Vec<u8> = (0..2_049u32).map(|index| (index % 7) as u8).collect();
    let server = Instance::http_builder(config)
        .file("html/off/large.bin", large.clone())
        .file("html/off/small.bin", small.clone())
        .file("html/threads/large.bin", large.clone())
        .start();
    let paths = ["/off/large.bin", "/off/small.bin", "/threads/large.bin"];
    let requests = (0..30).map(|index| get(paths[index % 3])).collect();
    let answers = exchange(server.port(), requests);
    for (index, answer) in answers.iter().enumerate() {
        let want = if index % 3 == 1 { &small } else { &large };
        assert_eq!(answer.status, 200, "stream {index}");
        let length = want.len().to_string();
        assert_eq!(answer.headers["content-length"], length.as_str());
        assert!(answer.body == *want, "stream {index}: {}", paths[index % 3]);
    }
}

#[test]
fn heads_bodies_and_redirects_as_over_http1() {
    let server = start();
    let answers = exchange(
        server.port(),
        vec![
            with_method(Method::HEAD, "/index.html", None),
            with_method(Method::POST, "/small", Some(b"0123456789")),
            with_method(Method::POST, "/small", Some(b"0123456789a")),
            get("/redirect"),
        ],
    );
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].headers["content-length"], "9");
    assert!(answers[0].body.is_empty());
    assert_eq!(answers[1].status, 200);
    assert_eq!(answers[1].body, b"length 10");
    assert_eq!(answers[2].status, 413);
    assert_eq!(answers[3].status, 302);
    let port = server.port();
    assert_eq!(
        answers[3].headers["location"],
        format!("http://localhost:{port}/elsewhere").as_str()
    );
}

#[test]
fn http2_off_leaves_the_preface_to_http1() {
    let server =
        Instance::http("server { listen 127.0.0.1:8080; location / { return 200 \"http1\"; } }");
    let response = server.request("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assert_eq!(response.status, 400);
    let response = server.get("/");
    assert_eq!(response.body_text(), "http1");
}

#[test]
fn add_trailer_sends_a_trailer_section() {
    let server = start();
    let answers = exchange(server.port(), vec![get("/trailers"), get("/index.html")]);
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].body, b"body");
    // As over HTTP/1.1, where the body would be chunked: no content-length.
    assert!(answers[0].headers.get("content-length").is_none());
    let trailers = answers[0].trailers.as_ref().expect("a trailer section");
    assert_eq!(trailers["x-checksum"], "42 GET");
    assert!(answers[1].trailers.is_none());
}

#[test]
fn a_request_body_is_read_while_the_request_runs() {
    let config = r#"server {
        listen 127.0.0.1:8080;
        http2 on;
        http2_body_preread_size 16k;
        location / { proxy_pass http://127.0.0.1:8081; }
        location = /static { return 200 "static"; }
    }"#;
    let mut builder = Instance::http_builder(config);
    let upstream = MockUpstream::answering(builder.port(8081), OK);
    let server = builder.start();
    // 100 KiB without content-length: more than the stream window, so the body must be
    // read (and the window given back) while the request runs; it goes upstream whole.
    let body: &'static [u8] = Box::leak(vec![b'x'; 100 * 1024].into_boxed_slice());
    let post = Request::builder()
        .method(Method::POST)
        .uri("http://localhost/upload")
        .body(())
        .expect("a valid request");
    // The first request makes sure the client has acknowledged our SETTINGS: before
    // that, a body on a window smaller than 65,535 is refused (as nginx refuses it).
    let answers = exchange_in_turn(
        server.port(),
        vec![get("/static"), (post, Some(Bytes::from_static(body)))],
    );
    assert_eq!(answers[0].body, b"static");
    let answers = &answers[1..];
    assert_eq!(answers[0].status, 200);
    let requests = upstream.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert!(
        request.starts_with("POST /upload HTTP/1.0\r\n"),
        "{request}"
    );
    assert!(request.contains("Content-Length: 102400\r\n"), "{request}");
    assert!(request.ends_with(&"x".repeat(100 * 1024)));
}
