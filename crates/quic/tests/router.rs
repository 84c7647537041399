//! Two endpoints reading one UDP socket, as an old and a new generation's workers do after
//! a reload, with the same host key (`quic_host_key`): each datagram reaches whichever
//! reads first, and the router passes it to the endpoint whose connection it is. Without
//! the router the other endpoint answers an unknown connection with a stateless reset
//! the client believes (the same key), and the connection dies.

use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Buf;
use http3::HeaderField;
use portico_quic::driver::{Shared, drive_routed};
use portico_quic::router::Router;
use portico_quic::{Config, Endpoint, Event};
use tokio::sync::oneshot;

mod support;

const HOST_KEY: [u8; 32] = [7; 32];

/// Answers every request at once with `served by N`.
fn answer(shared: &Shared, event: Event, number: u8) {
    let Event::Http3 { connection, event } = event else {
        return;
    };
    if let http3::Event::Finished { stream_id } = event {
        let mut endpoint = shared.endpoint();
        let head = [HeaderField::new(":status", "200")];
        endpoint
            .send_headers(connection, stream_id, &head, false)
            .expect("head");
        let body = format!("served by {number}");
        endpoint
            .send_data(connection, stream_id, body.as_bytes(), true)
            .expect("body");
    }
}

/// Starts an endpoint on `socket` (a copy of the shared one) as a member of `router`;
/// returns what stops it and how many connections it accepted.
fn start(
    local: &tokio::task::LocalSet,
    router: &Arc<Router>,
    socket: std::net::UdpSocket,
    certificate: &rustls::pki_types::CertificateDer<'static>,
    key: &[u8],
    number: u8,
) -> (oneshot::Sender<()>, Rc<Cell<usize>>) {
    let mut membership = router.join().expect("a tag");
    let config = Config {
        route_tag: Some(membership.tag()),
        ..Config::default()
    };
    let tls = Arc::new(support::server_tls(certificate.clone(), key.to_vec()));
    let endpoint = Endpoint::with_host_key(tls, config, Some(&HOST_KEY)).expect("endpoint");
    let shared = Shared::new(endpoint);
    let accepted = Rc::new(Cell::new(0));
    let (stop, stopped) = oneshot::channel::<()>();
    let counted = Rc::clone(&accepted);
    local.spawn_local(async move {
        socket.set_nonblocking(true).expect("non-blocking");
        let socket = tokio::net::UdpSocket::from_std(socket).expect("registered");
        let handler = |shared: &Shared, event: Event| {
            counted.set(shared.endpoint().connections());
            answer(shared, event, number);
        };
        let stop = async {
            let _ = stopped.await;
        };
        drive_routed(&socket, &shared, Some(&mut membership), handler, stop).await;
    });
    (stop, accepted)
}

async fn get(
    requests: &mut h3::client::SendRequest<h3_quinn::OpenStreams, bytes::Bytes>,
) -> String {
    let request = http::Request::get("https://localhost/")
        .body(())
        .expect("request");
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
    String::from_utf8(body).expect("text")
}

#[tokio::test]
async fn a_connection_lives_on_while_another_endpoint_reads_its_socket() {
    let (certificate, key) = support::certificate();
    let socket = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a socket");
    let address: SocketAddr = socket.local_addr().expect("bound");
    // Any key names the socket in the test; the server uses the socket's inode.
    let router = Router::for_socket(u64::from(address.port()) << 32);
    let local = tokio::task::LocalSet::new();
    let copy = socket.try_clone().expect("a copy");
    let (stop_old, old_accepted) = start(&local, &router, copy, &certificate, &key, 1);
    local
        .run_until(async {
            let client = support::client_endpoint(certificate.clone());
            let quic = client
                .connect(address, "localhost")
                .expect("connect")
                .await
                .expect("handshake");
            let (mut driver, mut requests) =
                h3::client::new(h3_quinn::Connection::new(quic.clone()))
                    .await
                    .expect("h3");
            let closed = tokio::task::spawn_local(async move {
                std::future::poll_fn(|cx| driver.poll_close(cx)).await
            });
            assert_eq!(get(&mut requests).await, "served by 1");
            // A second endpoint now reads the same socket too.
            let (stop_new, new_accepted) = start(&local, &router, socket, &certificate, &key, 2);
            let turns = async {
                for _ in 0..40 {
                    assert_eq!(get(&mut requests).await, "served by 1");
                }
            };
            tokio::time::timeout(Duration::from_secs(20), turns)
                .await
                .expect("forty requests in time");
            assert!(!closed.is_finished(), "the connection is still open");
            assert_eq!(old_accepted.get(), 1);
            assert_eq!(new_accepted.get(), 0, "the new endpoint took no connection");
            quic.close(quinn::VarInt::from_u32(0x100), b"done");
            let _ = stop_old.send(());
            let _ = stop_new.send(());
        })
        .await;
}
