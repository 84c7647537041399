//! The [`driver`] on a current-thread runtime, as a worker runs it: the socket's task
//! hands each finished request to a task of its own, which answers a moment later
//! through the shared endpoint and wakes the socket's task to send it; the `h3` crate's
//! client on `quinn` runs on the same loop.

use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Buf;
use http3::HeaderField;
use portico_quic::driver::{Shared, drive};
use portico_quic::{Config, Endpoint, Event};
use tokio::sync::oneshot;

mod support;

fn tls(
    certificate: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
) -> rustls::ServerConfig {
    support::server_tls(certificate, key)
}

/// Answers a request from its own task, after a pause, with its path in the body.
fn answer(
    shared: &Rc<Shared>,
    event: Event,
    paths: &mut std::collections::HashMap<(portico_quic::ConnectionId, u64), Vec<u8>>,
) {
    let Event::Http3 { connection, event } = event else {
        return;
    };
    match event {
        http3::Event::Headers {
            stream_id,
            fields,
            trailers: false,
            ..
        } => {
            let path = fields
                .iter()
                .find(|field| field.name == b":path")
                .map(|field| field.value.to_vec());
            paths.insert((connection, stream_id), path.unwrap_or_default());
        }
        http3::Event::Finished { stream_id } => {
            let path = paths.remove(&(connection, stream_id)).unwrap_or_default();
            let shared = Rc::clone(shared);
            tokio::task::spawn_local(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let head = [HeaderField::new(":status", "200")];
                let mut body = b"path=".to_vec();
                body.extend_from_slice(&path);
                {
                    let mut endpoint = shared.endpoint();
                    endpoint
                        .send_headers(connection, stream_id, &head, false)
                        .expect("head");
                    endpoint
                        .send_data(connection, stream_id, &body, true)
                        .expect("body");
                }
                shared.wake();
            });
        }
        _ => {}
    }
}

async fn fetch(certificate: rustls::pki_types::CertificateDer<'static>, server: SocketAddr) {
    let endpoint = support::client_endpoint(certificate);
    let quic = endpoint
        .connect(server, "localhost")
        .expect("connect")
        .await
        .expect("handshake");
    let (mut driver, requests) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .expect("h3");
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    // Ten requests at once on one connection.
    let mut pending = Vec::new();
    for number in 0..10 {
        let mut requests = requests.clone();
        pending.push(tokio::spawn(async move {
            let uri = format!("https://localhost/{number}");
            let request = http::Request::get(uri).body(()).expect("request");
            let mut stream = requests.send_request(request).await.expect("send");
            stream.finish().await.expect("finish");
            let response = stream.recv_response().await.expect("response");
            assert_eq!(response.status(), 200);
            let mut body = Vec::new();
            while let Some(mut chunk) = stream.recv_data().await.expect("data") {
                while chunk.has_remaining() {
                    let piece = chunk.chunk().to_vec();
                    chunk.advance(piece.len());
                    body.extend(piece);
                }
            }
            assert_eq!(body, format!("path=/{number}").into_bytes());
        }));
    }
    for request in pending {
        request.await.expect("a request task");
    }
    drop(requests);
    quic.close(quinn::VarInt::from_u32(0x100), b"done");
    let _ = tokio::time::timeout(Duration::from_secs(2), drive).await;
}

#[tokio::test]
async fn requests_answered_from_their_own_tasks() {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let certificate = certified.cert.der().clone();
    let key = certified.signing_key.serialize_der();
    let endpoint = Endpoint::new(Arc::new(tls(certificate.clone(), key)), Config::default())
        .expect("endpoint");
    let socket = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("a loopback socket");
    let address = socket.local_addr().expect("bound");
    let shared = Rc::new(Shared::new(endpoint));
    let local = tokio::task::LocalSet::new();
    let (stop, stopped) = oneshot::channel::<()>();
    let closed = Rc::new(std::cell::Cell::new(0));
    let server = {
        let shared = Rc::clone(&shared);
        let closed = Rc::clone(&closed);
        local.spawn_local(async move {
            let mut paths = std::collections::HashMap::new();
            let handler = |_: &Shared, event: Event| {
                if let Event::Closed { .. } = event {
                    closed.set(closed.get() + 1);
                }
                answer(&shared, event, &mut paths);
            };
            drive(&socket, &Rc::clone(&shared), handler, async {
                let _ = stopped.await;
            })
            .await;
        })
    };
    local
        .run_until(async {
            tokio::time::timeout(Duration::from_secs(30), fetch(certificate, address))
                .await
                .expect("the client finished in time");
            // The client's CONNECTION_CLOSE reaches the endpoint, which reports it.
            let reported = async {
                while closed.get() == 0 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(5), reported)
                .await
                .expect("the close was reported");
            let _ = stop.send(());
            server.await.expect("the driver task ended cleanly");
        })
        .await;
    assert_eq!(closed.get(), 1, "reported once");
}

/// A graceful shutdown with a response in flight: the client gets all of it, then a close
/// with H3_NO_ERROR, and the endpoint ends up with no connection.
#[tokio::test]
async fn shutdown_lets_responses_finish() {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let certificate = certified.cert.der().clone();
    let key = certified.signing_key.serialize_der();
    let endpoint = Endpoint::new(Arc::new(tls(certificate.clone(), key)), Config::default())
        .expect("endpoint");
    let socket = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("a loopback socket");
    let address = socket.local_addr().expect("bound");
    let shared = Rc::new(Shared::new(endpoint));
    let local = tokio::task::LocalSet::new();
    let (stop, stopped) = oneshot::channel::<()>();
    // The server starts its shutdown as soon as the request is in, then answers it with
    // a body larger than one flight of packets.
    let server = {
        let shared = Rc::clone(&shared);
        local.spawn_local(async move {
            let handler = |shared: &Shared, event: Event| {
                let Event::Http3 { connection, event } = event else {
                    return;
                };
                if let http3::Event::Finished { stream_id } = event {
                    let mut endpoint = shared.endpoint();
                    endpoint.shutdown(std::time::Instant::now());
                    let head = [HeaderField::new(":status", "200")];
                    endpoint
                        .send_headers(connection, stream_id, &head, false)
                        .expect("head");
                    let body = vec![b'y'; 1_000_000];
                    endpoint
                        .send_data(connection, stream_id, &body, true)
                        .expect("body");
                }
            };
            drive(&socket, &shared, handler, async {
                let _ = stopped.await;
            })
            .await;
        })
    };
    let client = async {
        let endpoint = support::client_endpoint(certificate);
        let quic = endpoint
            .connect(address, "localhost")
            .expect("connect")
            .await
            .expect("handshake");
        let (mut driver, mut requests) = h3::client::new(h3_quinn::Connection::new(quic))
            .await
            .expect("h3");
        let closed =
            tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        let request = http::Request::get("https://localhost/big")
            .body(())
            .expect("request");
        let mut stream = requests.send_request(request).await.expect("send");
        stream.finish().await.expect("finish");
        let response = stream.recv_response().await.expect("response");
        assert_eq!(response.status(), 200);
        let mut length = 0;
        while let Some(chunk) = stream.recv_data().await.expect("data") {
            length += chunk.remaining();
        }
        assert_eq!(length, 1_000_000, "the whole response before the close");
        let error = closed.await.expect("the h3 driver task");
        assert!(error.is_h3_no_error(), "a graceful close: {error:?}");
    };
    local
        .run_until(async {
            tokio::time::timeout(Duration::from_secs(30), client)
                .await
                .expect("the client finished in time");
            let drained = async {
                while !shared.endpoint().is_shut_down() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(10), drained)
                .await
                .expect("the endpoint drained its connection");
            let _ = stop.send(());
            server.await.expect("the driver task ended cleanly");
        })
        .await;
}
