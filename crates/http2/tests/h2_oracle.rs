//! The `h2` crate as the oracle: a real HTTP/2 client (its framing, HPACK, flow control
//! and stream limits) talks to Portico's `Connection` over an in-memory pipe, and every
//! request must come back as the small server below answers it. Request headers cross
//! the pipe through h2's HPACK encoder and Portico's decoder; the echoed ones come back
//! through Portico's encoder and h2's decoder.

use std::collections::HashMap;

use bytes::Bytes;
use http::{Request, StatusCode};
use portico_http2::connection::{Config, Connection, Event};
use portico_http2::hpack::HeaderField;
use portico_http2::request::{self, FieldPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// A request being read: its path, the `x-echo` fields it sent, and its body so far.
#[derive(Default)]
struct Pending {
    path: Vec<u8>,
    echo: Vec<Vec<u8>>,
    body: Vec<u8>,
}

/// Answers one stream: `/echo` returns the body, `/big` 1 MiB, `/trailers` adds trailers,
/// anything else `hello world`; every `x-echo` field comes back as `x-echoed`.
fn respond(connection: &mut Connection, stream_id: u32, pending: Pending) {
    let mut head = vec![
        HeaderField::new(":status", "200"),
        HeaderField::new("server", "portico"),
    ];
    head.extend(
        pending
            .echo
            .into_iter()
            .map(|value| HeaderField::new("x-echoed", value)),
    );
    let body = match &pending.path[..] {
        b"/echo" => pending.body,
        b"/big" => (0..1 << 20).map(|index: u32| (index % 251) as u8).collect(),
        _ => b"hello world".to_vec(),
    };
    head.push(HeaderField::new("content-length", body.len().to_string()));
    connection
        .send_headers(stream_id, &head, false)
        .expect("stream open");
    if pending.path == b"/trailers" {
        connection
            .send_data(stream_id, &body, false)
            .expect("stream open");
        connection
            .send_trailers(stream_id, vec![HeaderField::new("x-checksum", "42")])
            .expect("stream open");
    } else {
        connection
            .send_data(stream_id, &body, true)
            .expect("stream open");
    }
}

/// Runs the server side until the client goes away; returns the connection for checks.
async fn serve(mut io: DuplexStream, config: Config) -> Connection {
    let mut connection = Connection::new(config);
    let mut pending: HashMap<u32, Pending> = HashMap::new();
    let mut input = Vec::new();
    let mut buffer = vec![0; 32 * 1024];
    loop {
        connection.flush();
        if connection.is_done() && !connection.wants_write() {
            return connection;
        }
        // Read and write at once, as a server's loop does: a peer that writes a body while
        // we write a response must not wait on us.
        let output = connection.output_to_vec();
        let (mut reader, mut writer) = tokio::io::split(&mut io);
        let read = tokio::select! {
            written = writer.write(&output), if !output.is_empty() => {
                match written {
                    Ok(written) => connection.advance_output(written),
                    Err(_) => return connection,
                }
                continue;
            }
            read = reader.read(&mut buffer) => read.unwrap_or(0),
        };
        if read == 0 {
            return connection;
        }
        input.extend_from_slice(&buffer[..read]);
        let Ok(used) = connection.receive(&input) else {
            continue;
        };
        input.drain(..used);
        while let Some(event) = connection.poll_event() {
            match event {
                Event::Headers {
                    stream_id,
                    fields,
                    end_stream,
                    trailers: false,
                    ..
                } => {
                    let head = request::parse(fields, FieldPolicy::default())
                        .expect("h2 sends valid requests");
                    let echo = head
                        .fields()
                        .filter(|field| field.name == b"x-echo")
                        .map(|field| field.value.to_vec())
                        .collect();
                    let request = Pending {
                        path: head.path().unwrap_or_default().to_vec(),
                        echo,
                        body: Vec::new(),
                    };
                    if end_stream {
                        respond(&mut connection, stream_id, request);
                    } else {
                        pending.insert(stream_id, request);
                    }
                }
                Event::Data {
                    stream_id,
                    data,
                    end_stream,
                } => {
                    connection.release(stream_id, u32::try_from(data.len()).expect("frame sized"));
                    let request = pending.entry(stream_id).or_default();
                    request.body.extend_from_slice(&data);
                    if end_stream {
                        let request = pending.remove(&stream_id).unwrap_or_default();
                        respond(&mut connection, stream_id, request);
                    }
                }
                Event::Headers {
                    stream_id,
                    trailers: true,
                    ..
                } => {
                    let request = pending.remove(&stream_id).unwrap_or_default();
                    respond(&mut connection, stream_id, request);
                }
                Event::Reset { stream_id, .. } => {
                    pending.remove(&stream_id);
                }
                Event::GoAway { .. } => {}
            }
        }
    }
}

/// Reads a whole response body, giving the window back as h2 wants.
async fn read_body(body: &mut h2::RecvStream) -> Vec<u8> {
    let mut all = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("body chunk");
        body.flow_control()
            .release_capacity(chunk.len())
            .expect("release");
        all.extend_from_slice(&chunk);
    }
    all
}

async fn client(
    builder: h2::client::Builder,
    config: Config,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::task::JoinHandle<Connection>,
) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(serve(server_io, config));
    let (send_request, connection) = builder.handshake(client_io).await.expect("handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    (send_request, server)
}

/// Sends a request on a fresh handle, so that no handle outlives the test's own (the
/// client connection ends when the last one is dropped).
async fn send(
    send_request: &h2::client::SendRequest<Bytes>,
    request: Request<()>,
    end_of_stream: bool,
) -> (h2::client::ResponseFuture, h2::SendStream<Bytes>) {
    let mut ready = send_request.clone().ready().await.expect("ready");
    ready.send_request(request, end_of_stream).expect("send")
}

/// Runs one exchange on a single-threaded runtime; a protocol bug that leaves both sides
/// waiting fails the test instead of hanging it.
fn run(exchange: impl Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let limit = std::time::Duration::from_secs(60);
        tokio::time::timeout(limit, exchange)
            .await
            .expect("the exchange ends within 60 s");
    });
}

fn get(path: &str) -> Request<()> {
    Request::get(format!("http://localhost{path}"))
        .body(())
        .expect("request")
}

#[test]
fn many_concurrent_requests_with_varied_headers() {
    run(exchange_many_concurrent_requests_with_varied_headers());
}

async fn exchange_many_concurrent_requests_with_varied_headers() {
    let (send_request, server) = client(h2::client::Builder::new(), Config::default()).await;
    let mut responses = Vec::new();
    for index in 0..200 {
        let value = format!("{}-{}", "v".repeat(index % 40), index);
        let request = Request::get(format!("http://localhost/item/{index}"))
            .header("x-echo", &value)
            .header("x-repeated", "the same value every time")
            .header("user-agent", "h2-oracle")
            .body(())
            .expect("request");
        let (response, _) = send(&send_request, request, true).await;
        responses.push((value, response));
    }
    for (value, response) in responses {
        let response = response.await.expect("response");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["x-echoed"], value.as_str());
        assert_eq!(response.headers()["server"], "portico");
        let mut body = response.into_body();
        assert_eq!(read_body(&mut body).await, b"hello world");
    }
    drop(send_request);
    let connection = server.await.expect("server");
    assert_eq!(connection.counters().streams_opened, 200);
}

#[test]
fn large_bodies_both_ways_under_flow_control() {
    run(exchange_large_bodies_both_ways_under_flow_control());
}

async fn exchange_large_bodies_both_ways_under_flow_control() {
    let (send_request, server) = client(h2::client::Builder::new(), Config::default()).await;
    let upload: Vec<u8> = (0..3_000_000u32).map(|index| (index % 97) as u8).collect();
    let request = Request::post("http://localhost/echo")
        .body(())
        .expect("request");
    let (response, mut stream) = send(&send_request, request, false).await;
    stream
        .send_data(Bytes::from(upload.clone()), true)
        .expect("body");
    let mut echoed = response.await.expect("response").into_body();
    assert_eq!(read_body(&mut echoed).await, upload);
    let (response, _) = send(&send_request, get("/big"), true).await;
    let mut body = response.await.expect("response").into_body();
    let big = read_body(&mut body).await;
    assert_eq!(big.len(), 1 << 20);
    assert!(
        big.iter()
            .enumerate()
            .all(|(index, &byte)| byte == (index % 251) as u8)
    );
    drop((send_request, stream, echoed, body));
    server.await.expect("server");
}

#[test]
fn trailers_both_ways() {
    run(exchange_trailers_both_ways());
}

async fn exchange_trailers_both_ways() {
    let (send_request, server) = client(h2::client::Builder::new(), Config::default()).await;
    let request = Request::post("http://localhost/trailers")
        .body(())
        .expect("request");
    let (response, mut stream) = send(&send_request, request, false).await;
    stream
        .send_data(Bytes::from_static(b"abc"), false)
        .expect("body");
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-request-checksum", "7".parse().expect("value"));
    stream.send_trailers(trailers).expect("trailers");
    let mut body = response.await.expect("response").into_body();
    assert_eq!(read_body(&mut body).await, b"hello world");
    let trailers = body
        .trailers()
        .await
        .expect("trailers")
        .expect("some trailers");
    assert_eq!(trailers["x-checksum"], "42");
    drop((send_request, stream, body));
    server.await.expect("server");
}

#[test]
fn a_client_without_a_dynamic_table_and_a_stream_limit() {
    run(exchange_a_client_without_a_dynamic_table_and_a_stream_limit());
}

async fn exchange_a_client_without_a_dynamic_table_and_a_stream_limit() {
    let mut builder = h2::client::Builder::new();
    builder
        .header_table_size(0)
        .initial_window_size(1000)
        .max_frame_size(20_000);
    let mut config = Config::default();
    config.limits.max_concurrent_streams = 3;
    let (send_request, server) = client(builder, config).await;
    let mut responses = Vec::new();
    for index in 0..30 {
        let request = Request::get("http://localhost/big")
            .header("x-echo", format!("e{index}"))
            .body(())
            .expect("request");
        let (response, _) = send(&send_request, request, true).await;
        responses.push((index, response));
    }
    for (index, response) in responses {
        let response = response
            .await
            .expect("h2 keeps within our stream limit: nothing refused");
        assert_eq!(response.headers()["x-echoed"], format!("e{index}").as_str());
        let mut body = response.into_body();
        assert_eq!(read_body(&mut body).await.len(), 1 << 20);
    }
    drop(send_request);
    let connection = server.await.expect("server");
    assert_eq!(connection.counters().streams_refused, 0);
}

#[test]
fn ping_pong_and_cancelled_streams() {
    run(exchange_ping_pong_and_cancelled_streams());
}

async fn exchange_ping_pong_and_cancelled_streams() {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(serve(server_io, Config::default()));
    let (send_request, mut connection) = h2::client::handshake(client_io).await.expect("handshake");
    let mut ping_pong = connection.ping_pong().expect("ping pong");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    ping_pong.ping(h2::Ping::opaque()).await.expect("pong");
    // A request whose body never ends, dropped: h2 resets the stream.
    let request = Request::post("http://localhost/echo")
        .body(())
        .expect("request");
    let (response, mut stream) = send(&send_request, request, false).await;
    stream
        .send_data(Bytes::from_static(b"partial"), false)
        .expect("body");
    stream.send_reset(h2::Reason::CANCEL);
    drop(response);
    let (response, _) = send(&send_request, get("/after"), true).await;
    let mut body = response.await.expect("the connection goes on").into_body();
    assert_eq!(read_body(&mut body).await, b"hello world");
    drop((send_request, stream, ping_pong, body));
    server.await.expect("server");
}
