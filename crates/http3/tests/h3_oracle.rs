//! The `h3` crate's client, on `quinn`, against `Connection` driven over loopback QUIC by
//! a small driver in this test: the driver moves QUIC stream data into the codec and the
//! codec's output onto QUIC streams, and answers requests from the codec's events. What
//! is checked is what each side understood of the other: heads, bodies, trailers, and the
//! client's GREASE (reserved frames, settings and stream types) being skipped.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use portico_http3::connection::{Config, Connection, Event, Output};
use portico_http3::{Code, FieldList, HeaderField};
use tokio::sync::mpsc;

/// One piece of a client stream, as the driver hands it to the codec.
enum Incoming {
    Data {
        stream_id: u64,
        data: Bytes,
        fin: bool,
    },
    Reset {
        stream_id: u64,
        code: u64,
    },
}

fn certificate() -> (rustls::pki_types::CertificateDer<'static>, Vec<u8>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("a self-signed certificate");
    let key = certified.signing_key.serialize_der();
    (certified.cert.der().clone(), key)
}

fn server_endpoint(
    certificate: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
) -> quinn::Endpoint {
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key);
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![certificate], key.into())
        .expect("the key matches");
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    quinn::Endpoint::server(config, SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .expect("a loopback UDP socket")
}

fn client_endpoint(certificate: rustls::pki_types::CertificateDer<'static>) -> quinn::Endpoint {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate).expect("a root");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut endpoint = quinn::Endpoint::client(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .expect("a loopback UDP socket");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

/// Reads a client stream to its end, handing each chunk to the driver.
fn read_stream(
    stream_id: u64,
    mut recv: quinn::RecvStream,
    incoming: mpsc::UnboundedSender<Incoming>,
) {
    tokio::spawn(async move {
        loop {
            match recv.read_chunk(64 * 1024, true).await {
                Ok(Some(chunk)) => {
                    let data = chunk.bytes;
                    let _ = incoming.send(Incoming::Data {
                        stream_id,
                        data,
                        fin: false,
                    });
                }
                Ok(None) => {
                    let data = Bytes::new();
                    let _ = incoming.send(Incoming::Data {
                        stream_id,
                        data,
                        fin: true,
                    });
                    return;
                }
                Err(quinn::ReadError::Reset(code)) => {
                    let code = code.into_inner();
                    let _ = incoming.send(Incoming::Reset { stream_id, code });
                    return;
                }
                Err(_) => return,
            }
        }
    });
}

/// What the driver saw of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Seen {
    head: Vec<HeaderField>,
    body: Vec<u8>,
    trailers: Vec<HeaderField>,
}

fn owned(fields: &FieldList) -> Vec<HeaderField> {
    fields
        .iter()
        .map(|field| HeaderField {
            name: field.name.to_vec(),
            value: field.value.to_vec(),
            sensitive: field.sensitive,
        })
        .collect()
}

fn value<'a>(fields: &'a [HeaderField], name: &str) -> &'a [u8] {
    fields
        .iter()
        .find(|field| field.name == name.as_bytes())
        .map_or(&b""[..], |field| &field.value[..])
}

/// Answers a finished request: `/echo` sends the body back with a trailer counting it,
/// anything else a fixed greeting.
fn respond(connection: &mut Connection, stream_id: u64, seen: &Seen) {
    let field = |name: &str, value: &str| HeaderField::new(name, value);
    if value(&seen.head, ":path") == b"/echo" {
        let head = [
            field(":status", "200"),
            field("content-type", "application/octet-stream"),
        ];
        connection
            .send_headers(stream_id, &head, false)
            .expect("head");
        for piece in seen.body.chunks(10_000) {
            connection.send_data(stream_id, piece, false).expect("data");
        }
        let length = seen.body.len().to_string();
        let trailers = [
            field("x-length", &length),
            field("x-trailers-seen", &seen.trailers.len().to_string()),
        ];
        connection
            .send_trailers(stream_id, &trailers)
            .expect("trailers");
    } else {
        let head = [
            field(":status", "200"),
            field("server", "portico"),
            field("x-custom", "yes"),
        ];
        connection
            .send_headers(stream_id, &head, false)
            .expect("head");
        connection
            .send_data(stream_id, b"hello from portico", true)
            .expect("data");
    }
}

/// The server side: accepts one connection and drives the codec until the client closes.
async fn serve(endpoint: quinn::Endpoint) -> Vec<Seen> {
    let connecting = endpoint.accept().await.expect("a connection");
    let quic = connecting.await.expect("handshake");
    let mut connection = Connection::new(Config::default());
    let (incoming, mut from_streams) = mpsc::unbounded_channel();
    let mut sending: HashMap<u64, quinn::SendStream> = HashMap::new();
    for expected in [3u64, 7, 11] {
        let send = quic.open_uni().await.expect("a server stream");
        assert_eq!(
            u64::from(send.id()),
            expected,
            "the codec's unidirectional ids"
        );
        sending.insert(expected, send);
    }
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    let mut finished = Vec::new();
    loop {
        flush(&mut connection, &mut sending).await;
        let piece = tokio::select! {
            stream = quic.accept_bi() => {
                let Ok((send, recv)) = stream else { break };
                let stream_id = u64::from(send.id());
                sending.insert(stream_id, send);
                read_stream(stream_id, recv, incoming.clone());
                continue;
            }
            stream = quic.accept_uni() => {
                let Ok(recv) = stream else { break };
                read_stream(u64::from(recv.id()), recv, incoming.clone());
                continue;
            }
            piece = from_streams.recv() => piece.expect("the driver holds a sender"),
        };
        let result = match piece {
            Incoming::Data {
                stream_id,
                data,
                fin,
            } => connection.receive(stream_id, &data, fin),
            Incoming::Reset { stream_id, code } => connection.stream_reset(stream_id, code),
        };
        if let Err(error) = result {
            panic!("the codec failed the connection: {error}");
        }
        while let Some(event) = connection.poll_event() {
            match event {
                Event::Headers {
                    stream_id,
                    fields,
                    trailers,
                    ..
                } => {
                    let entry = seen.entry(stream_id).or_default();
                    if trailers {
                        entry.trailers = owned(&fields);
                    } else {
                        entry.head = owned(&fields);
                    }
                }
                Event::Data { stream_id, data } => {
                    seen.entry(stream_id)
                        .or_default()
                        .body
                        .extend_from_slice(&data);
                }
                Event::Finished { stream_id } => {
                    let request = seen.remove(&stream_id).unwrap_or_default();
                    respond(&mut connection, stream_id, &request);
                    finished.push(request);
                }
                Event::Aborted { stream_id, code } => panic!("stream {stream_id} aborted: {code}"),
                Event::GoAway { .. } => {}
            }
        }
    }
    finished
}

/// Writes what the codec queued onto the QUIC streams.
async fn flush(connection: &mut Connection, sending: &mut HashMap<u64, quinn::SendStream>) {
    while let Some(output) = connection.poll_output() {
        match output {
            Output::Data {
                stream_id,
                data,
                fin,
            } => {
                let send = sending.get_mut(&stream_id).expect("a stream we hold");
                send.write_all(&data).await.expect("write");
                if fin {
                    send.finish().expect("finish");
                    sending.remove(&stream_id);
                }
            }
            Output::Reset { stream_id, code } => {
                if let Some(mut send) = sending.remove(&stream_id) {
                    let _ = send.reset(quinn::VarInt::from_u64(code.value()).expect("a varint"));
                }
            }
            // The client's GREASE stream: its bytes are dropped by the codec.
            Output::StopSending { .. } => {}
        }
    }
}

async fn body_of<S: h3::quic::RecvStream>(
    stream: &mut h3::client::RequestStream<S, Bytes>,
) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.expect("data") {
        while chunk.has_remaining() {
            let piece = chunk.chunk().to_vec();
            chunk.advance(piece.len());
            body.extend(piece);
        }
    }
    body
}

async fn client(endpoint: quinn::Endpoint, server: SocketAddr) {
    let quic = endpoint
        .connect(server, "localhost")
        .expect("connect")
        .await
        .expect("handshake");
    let (mut driver, mut requests) = h3::client::builder()
        .send_grease(true)
        .build::<_, _, Bytes>(h3_quinn::Connection::new(quic.clone()))
        .await
        .expect("HTTP/3 client");
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });

    for path in ["/", "/second"] {
        let request = http::Request::get(format!("https://localhost{path}"))
            .body(())
            .expect("request");
        let mut stream = requests.send_request(request).await.expect("send");
        stream.finish().await.expect("finish");
        let response = stream.recv_response().await.expect("response");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["server"], "portico");
        assert_eq!(response.headers()["x-custom"], "yes");
        assert_eq!(body_of(&mut stream).await, b"hello from portico");
    }

    let body: Vec<u8> = (0..100_000u32).map(|n| (n % 251) as u8).collect();
    let request = http::Request::post("https://localhost/echo")
        .header("content-type", "application/octet-stream")
        .body(())
        .expect("request");
    let mut stream = requests.send_request(request).await.expect("send");
    for piece in body.chunks(7_000) {
        stream
            .send_data(Bytes::copy_from_slice(piece))
            .await
            .expect("body");
    }
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-checksum", http::HeaderValue::from_static("abc"));
    stream.send_trailers(trailers).await.expect("trailers");
    stream.finish().await.expect("finish");
    let response = stream.recv_response().await.expect("response");
    assert_eq!(response.status(), 200);
    assert_eq!(body_of(&mut stream).await, body);
    let trailers = stream
        .recv_trailers()
        .await
        .expect("trailers")
        .expect("some");
    assert_eq!(trailers["x-length"], "100000");
    assert_eq!(trailers["x-trailers-seen"], "1");

    drop(requests);
    quic.close(
        quinn::VarInt::from_u32(Code::NoError.value() as u32),
        b"done",
    );
    let _ = tokio::time::timeout(Duration::from_secs(5), drive).await;
}

#[tokio::test]
async fn h3_client_talks_to_the_codec() {
    let (certificate, key) = certificate();
    let server = server_endpoint(certificate.clone(), key);
    let address = server.local_addr().expect("bound");
    let serving = tokio::spawn(serve(server));
    let talking = client(client_endpoint(certificate), address);
    tokio::time::timeout(Duration::from_secs(30), talking)
        .await
        .expect("the client finished in time");
    let seen = tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server finished in time")
        .expect("the server did not panic");
    assert_eq!(seen.len(), 3);
    assert_eq!(value(&seen[0].head, ":method"), b"GET");
    assert_eq!(value(&seen[0].head, ":scheme"), b"https");
    assert_eq!(value(&seen[0].head, ":authority"), b"localhost");
    assert_eq!(value(&seen[1].head, ":path"), b"/second");
    assert_eq!(value(&seen[2].head, ":method"), b"POST");
    assert_eq!(seen[2].body.len(), 100_000);
    assert_eq!(seen[2].trailers, [HeaderField::new("x-checksum", "abc")]);
}
