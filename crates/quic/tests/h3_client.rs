//! The `h3` crate's client on `quinn` against an [`Endpoint`] that a plain loop in this
//! test drives over a loopback UDP socket, as a worker will: datagrams in, requests
//! answered from the endpoint's events, datagrams out, timers run when due.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Buf;
use http3::HeaderField;
use portico_quic::{Config, Endpoint, Event};

mod support;

fn tls(
    certificate: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
) -> rustls::ServerConfig {
    let mut tls = support::server_tls(certificate, key);
    tls.max_early_data_size = u32::MAX;
    tls
}

/// The server loop: one socket, one endpoint, a fixed answer per request except `/held`,
/// which is never answered. Returns the requests answered, the Retry packets sent and the
/// requests aborted.
fn serve(
    socket: UdpSocket,
    mut endpoint: Endpoint,
    stop: Arc<AtomicBool>,
) -> (usize, usize, usize) {
    socket
        .set_read_timeout(Some(Duration::from_millis(5)))
        .expect("timeout");
    let mut buffer = vec![0u8; 65_536];
    let mut answered = 0;
    let mut retries = 0;
    let mut aborted = 0;
    let mut held = std::collections::HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        if let Ok((length, remote)) = socket.recv_from(&mut buffer) {
            endpoint.receive(Instant::now(), remote, None, &buffer[..length]);
        }
        if endpoint
            .poll_timeout()
            .is_some_and(|at| at <= Instant::now())
        {
            endpoint.handle_timeout(Instant::now());
        }
        while let Some(event) = endpoint.poll_event() {
            let Event::Http3 { connection, event } = event else {
                continue;
            };
            if let http3::Event::Headers {
                stream_id, fields, ..
            } = &event
                && fields.iter().any(|field| field.value == b"/held")
            {
                held.insert((connection, *stream_id));
            }
            if let http3::Event::Aborted { .. } = event {
                aborted += 1;
            }
            if let http3::Event::Finished { stream_id } = event {
                if held.contains(&(connection, stream_id)) {
                    continue;
                }
                let head = [
                    HeaderField::new(":status", "200"),
                    HeaderField::new("content-type", "text/plain"),
                ];
                endpoint
                    .send_headers(connection, stream_id, &head, false)
                    .expect("head");
                let body = vec![b'x'; 3_000_000];
                endpoint
                    .send_data(connection, stream_id, &body, true)
                    .expect("body");
                answered += 1;
            }
        }
        while let Some(datagram) = endpoint.poll_transmit(Instant::now()) {
            // A long header whose type bits say Retry (RFC 9000 §17.2.5).
            if datagram.data[0] & 0xf0 == 0xf0 {
                retries += 1;
            }
            socket
                .send_to(&datagram.data, datagram.destination)
                .expect("send");
        }
    }
    (answered, retries, aborted)
}

async fn client(certificate: rustls::pki_types::CertificateDer<'static>, server: SocketAddr) {
    let endpoint = support::client_endpoint(certificate);
    let quic = endpoint
        .connect(server, "localhost")
        .expect("connect")
        .await
        .expect("handshake");
    let (mut driver, mut requests) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .expect("h3");
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    for path in ["/", "/again"] {
        let request = http::Request::get(format!("https://localhost{path}"))
            .body(())
            .expect("request");
        let mut stream = requests.send_request(request).await.expect("send");
        stream.finish().await.expect("finish");
        let response = stream.recv_response().await.expect("response");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/plain");
        let mut length = 0;
        while let Some(chunk) = stream.recv_data().await.expect("data") {
            assert!(chunk.chunk().iter().all(|&byte| byte == b'x'));
            length += chunk.remaining();
        }
        assert_eq!(length, 3_000_000);
    }
    // A request the client stops reading: the server must reset its sending side
    // (RFC 9000 §3.5), which the client's QUIC counts.
    let request = http::Request::get("https://localhost/held")
        .body(())
        .expect("request");
    let mut stream = requests.send_request(request).await.expect("send");
    stream.finish().await.expect("finish");
    stream.stop_sending(h3::error::Code::H3_REQUEST_CANCELLED);
    let reset = async {
        while quic.stats().frame_rx.reset_stream == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), reset)
        .await
        .expect("the server reset the stream it was asked to stop");
    drop(requests);
    quic.close(quinn::VarInt::from_u32(0x100), b"done");
    let _ = tokio::time::timeout(Duration::from_secs(2), drive).await;
    endpoint.wait_idle().await;
}

async fn serve_and_fetch(config: Config) -> usize {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let certificate = certified.cert.der().clone();
    let key = certified.signing_key.serialize_der();
    let endpoint =
        Endpoint::new(Arc::new(tls(certificate.clone(), key)), config).expect("endpoint");
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a loopback socket");
    let address = socket.local_addr().expect("bound");
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || serve(socket, endpoint, stop))
    };
    tokio::time::timeout(Duration::from_secs(30), client(certificate, address))
        .await
        .expect("the client finished in time");
    stop.store(true, Ordering::Relaxed);
    let (answered, retries, aborted) = server.join().expect("the server loop did not panic");
    assert_eq!(answered, 2);
    assert_eq!(aborted, 1, "the stopped request was aborted");
    retries
}

#[tokio::test]
async fn h3_client_through_the_endpoint() {
    assert_eq!(serve_and_fetch(Config::default()).await, 0);
}

/// With `retry`, the client's first Initial gets a Retry and its second, carrying the
/// token, a connection.
#[tokio::test]
async fn h3_client_through_a_retry() {
    assert_eq!(
        serve_and_fetch(Config {
            retry: true,
            ..Config::default()
        })
        .await,
        1
    );
}
