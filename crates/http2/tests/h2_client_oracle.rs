//! The `h2` crate's server as the oracle for the client role: Portico's `ClientConnection`
//! talks to a real HTTP/2 server (its framing, HPACK, flow control and stream limits)
//! over an in-memory pipe. Request heads, bodies and trailers cross through Portico's
//! encoder and h2's decoder; the answers come back through h2's encoder and Portico's
//! decoder, and every call must come back as the small server below answers it.

use std::collections::HashMap;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use portico_http2::ErrorCode;
use portico_http2::client::{ClientConfig, ClientConnection, ClientEvent, HeadKind};
use portico_http2::hpack::HeaderField;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// Answers one request: `/echo` returns the body and trailers saying its length and the
/// request's `x-sum` trailer, `/big` 1 MiB, `/reset` resets the stream, anything else
/// `hello`.
async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let path = request.uri().path().to_owned();
    let mut body = request.into_body();
    let mut received = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("request body");
        body.flow_control()
            .release_capacity(chunk.len())
            .expect("release");
        received.extend_from_slice(&chunk);
    }
    let request_trailers = body.trailers().await.expect("trailers").unwrap_or_default();
    if path == "/reset" {
        respond.send_reset(h2::Reason::CANCEL);
        return;
    }
    let response = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/grpc")
        .body(())
        .expect("response");
    let mut stream = respond.send_response(response, false).expect("send head");
    let payload = match path.as_str() {
        "/echo" => received.clone(),
        "/big" => (0..1 << 20).map(|index: u32| (index % 251) as u8).collect(),
        _ => b"hello".to_vec(),
    };
    let mut rest = Bytes::from(payload);
    while !rest.is_empty() {
        stream.reserve_capacity(rest.len());
        let capacity = std::future::poll_fn(|context| stream.poll_capacity(context))
            .await
            .expect("capacity")
            .expect("stream open");
        let piece = rest.split_to(capacity.min(rest.len()));
        stream.send_data(piece, false).expect("send data");
    }
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers.insert(
        "x-received",
        HeaderValue::from_str(&received.len().to_string()).expect("digits"),
    );
    if let Some(sum) = request_trailers.get("x-sum") {
        trailers.insert("x-sum", sum.clone());
    }
    stream.send_trailers(trailers).expect("trailers");
}

/// The h2 server on its end of the pipe, one task per request.
async fn serve(io: DuplexStream, max_streams: u32) {
    let mut connection = h2::server::Builder::new()
        .max_concurrent_streams(max_streams)
        .handshake(io)
        .await
        .expect("handshake");
    while let Some(accepted) = connection.accept().await {
        let Ok((request, respond)) = accepted else {
            return;
        };
        tokio::spawn(answer(request, respond));
    }
}

/// One call's answer as the client saw it.
#[derive(Debug, Default)]
struct Answer {
    status: u16,
    body: Vec<u8>,
    trailers: Vec<(String, String)>,
    reset: Option<ErrorCode>,
    done: bool,
}

/// A call to make: its path, its body, and its `x-sum` trailer.
struct Call {
    path: &'static str,
    body: Vec<u8>,
    trailer: Option<&'static str>,
}

fn head(path: &str) -> Vec<HeaderField> {
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "oracle"),
        (":path", path),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    .iter()
    .map(|&(name, value)| HeaderField::new(name, value))
    .collect()
}

/// Drives the client over the pipe until every call has ended; opens calls as the
/// server's stream limit allows.
async fn run_calls(io: &mut DuplexStream, calls: Vec<Call>) -> Vec<Answer> {
    let mut client = ClientConnection::new(ClientConfig::default());
    let mut answers: Vec<Answer> = calls.iter().map(|_| Answer::default()).collect();
    let mut by_stream: HashMap<u32, usize> = HashMap::new();
    let mut next_call = 0;
    // Calls the server refused before its SETTINGS told the client its stream limit.
    let mut refused: Vec<usize> = Vec::new();
    let mut input = Vec::new();
    let mut buffer = vec![0; 32 * 1024];
    while answers.iter().any(|answer| !answer.done) {
        while (next_call < calls.len() || !refused.is_empty()) && client.can_open_stream() {
            let index = refused.pop().unwrap_or_else(|| {
                next_call += 1;
                next_call - 1
            });
            let call = &calls[index];
            let stream_id = client
                .open_stream(&head(call.path), false)
                .expect("a stream");
            client
                .send_data(stream_id, &call.body, call.trailer.is_none())
                .expect("body");
            if let Some(sum) = call.trailer {
                client
                    .send_trailers(stream_id, vec![HeaderField::new("x-sum", sum)])
                    .expect("trailers");
            }
            by_stream.insert(stream_id, index);
        }
        client.flush();
        let output = client.output().to_vec();
        let (mut reader, mut writer) = tokio::io::split(&mut *io);
        let read = tokio::select! {
            written = writer.write(&output), if !output.is_empty() => {
                client.advance_output(written.expect("write"));
                continue;
            }
            read = reader.read(&mut buffer) => read.expect("read"),
        };
        assert!(read > 0, "the server closed with calls left");
        input.extend_from_slice(&buffer[..read]);
        let used = client.receive(&input).expect("the server speaks HTTP/2");
        input.drain(..used);
        while let Some(event) = client.poll_event() {
            match event {
                ClientEvent::Headers {
                    stream_id,
                    kind,
                    status,
                    fields,
                    end_stream,
                } => {
                    let answer = &mut answers[by_stream[&stream_id]];
                    match kind {
                        HeadKind::Response => answer.status = status,
                        HeadKind::Trailers => {
                            answer.trailers = fields
                                .iter()
                                .map(|field| {
                                    (
                                        String::from_utf8_lossy(field.name).into_owned(),
                                        String::from_utf8_lossy(field.value).into_owned(),
                                    )
                                })
                                .collect();
                        }
                        HeadKind::Interim => {}
                    }
                    answer.done |= end_stream;
                }
                ClientEvent::Data {
                    stream_id,
                    data,
                    end_stream,
                } => {
                    client.release(stream_id, u32::try_from(data.len()).expect("frame sized"));
                    let answer = &mut answers[by_stream[&stream_id]];
                    answer.body.extend_from_slice(&data);
                    answer.done |= end_stream;
                }
                ClientEvent::Reset {
                    stream_id,
                    code: ErrorCode::REFUSED_STREAM,
                    by_peer: true,
                    ..
                } => refused.push(by_stream[&stream_id]),
                ClientEvent::Reset {
                    stream_id, code, ..
                } => {
                    let answer = &mut answers[by_stream[&stream_id]];
                    answer.reset = Some(code);
                    answer.done = true;
                }
                ClientEvent::GoAway { .. } => panic!("the server went away"),
            }
        }
    }
    answers
}

fn run(calls: Vec<Call>, max_streams: u32) -> Vec<Answer> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (mut client_io, server_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(serve(server_io, max_streams));
        let limit = std::time::Duration::from_secs(60);
        tokio::time::timeout(limit, run_calls(&mut client_io, calls))
            .await
            .expect("the calls end within 60 s")
    })
}

fn trailer<'a>(answer: &'a Answer, name: &str) -> Option<&'a str> {
    answer
        .trailers
        .iter()
        .find(|(field, _)| field == name)
        .map(|(_, value)| value.as_str())
}

#[test]
fn calls_with_bodies_and_trailers_both_ways() {
    let calls = vec![
        Call {
            path: "/echo",
            body: b"\0\0\0\0\x05hello".to_vec(),
            trailer: Some("17"),
        },
        Call {
            path: "/hello",
            body: Vec::new(),
            trailer: None,
        },
        Call {
            path: "/big",
            body: Vec::new(),
            trailer: None,
        },
    ];
    let answers = run(calls, 100);
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].body, b"\0\0\0\0\x05hello");
    assert_eq!(trailer(&answers[0], "x-sum"), Some("17"));
    assert_eq!(trailer(&answers[0], "grpc-status"), Some("0"));
    assert_eq!(answers[1].body, b"hello");
    let big: Vec<u8> = (0..1 << 20).map(|index: u32| (index % 251) as u8).collect();
    assert_eq!(answers[2].body, big, "1 MiB through the windows");
}

#[test]
fn large_request_bodies_on_many_streams_within_the_servers_limit() {
    // Each body is larger than h2's default stream window, and all of them together
    // larger than its connection window: the client must wait for WINDOW_UPDATEs.
    let calls: Vec<Call> = (0..40)
        .map(|index| Call {
            path: "/echo",
            body: (0..100_000 + index * 1000)
                .map(|byte| (byte % 7) as u8)
                .collect(),
            trailer: None,
        })
        .collect();
    let lengths: Vec<usize> = calls.iter().map(|call| call.body.len()).collect();
    let answers = run(calls, 8);
    for (answer, length) in answers.iter().zip(lengths) {
        assert_eq!(answer.reset, None);
        assert_eq!(answer.body.len(), length);
        assert_eq!(
            trailer(answer, "x-received"),
            Some(length.to_string().as_str())
        );
    }
}

#[test]
fn a_reset_from_the_server_ends_only_its_call() {
    let calls = vec![
        Call {
            path: "/reset",
            body: b"x".to_vec(),
            trailer: None,
        },
        Call {
            path: "/hello",
            body: Vec::new(),
            trailer: None,
        },
    ];
    let answers = run(calls, 100);
    assert_eq!(answers[0].reset, Some(ErrorCode::CANCEL));
    assert_eq!(answers[1].body, b"hello");
}
