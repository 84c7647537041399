//! One large response over loopback QUIC, timed: `cargo bench -p portico-quic`. The server
//! is an [`Endpoint`] run by [`driver::drive`] on a current-thread runtime, as a worker
//! runs it; the client is the `h3` crate on `quinn`, on the same thread (so the figure is
//! both sides' CPU on one core). Prints the size, the time and the rate.
// A bench reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Buf;
use http3::HeaderField;
use portico_quic::driver::{Shared, drive};
use portico_quic::{Config, Endpoint, Event};

#[path = "../tests/support/mod.rs"]
mod support;

const SIZE: usize = 100 * 1024 * 1024;
const PIECE: usize = 256 * 1024;

fn server_tls(
    certificate: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
) -> rustls::ServerConfig {
    support::server_tls(certificate, key)
}

/// Answers each request with SIZE bytes, handed to the endpoint a piece at a time as QUIC
/// takes them (the caller's side of flow control: it waits while much is unsent).
fn answer(shared: &Rc<Shared>, event: Event) {
    let Event::Http3 {
        connection,
        event: http3::Event::Finished { stream_id },
    } = event
    else {
        return;
    };
    let shared = Rc::clone(shared);
    tokio::task::spawn_local(async move {
        let head = [HeaderField::new(":status", "200")];
        shared
            .endpoint()
            .send_headers(connection, stream_id, &head, false)
            .expect("head");
        let piece = vec![b'z'; PIECE];
        let mut sent = 0;
        while sent < SIZE {
            let end = sent + PIECE >= SIZE;
            shared
                .endpoint()
                .send_data(connection, stream_id, &piece, end)
                .expect("data");
            sent += PIECE;
            shared.wake();
            // Let the socket's task write before the next piece.
            while shared.endpoint().unsent_bytes(connection) > 4 * PIECE {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        }
        shared.wake();
    });
}

async fn fetch(
    certificate: rustls::pki_types::CertificateDer<'static>,
    server: SocketAddr,
) -> usize {
    let endpoint = support::client_endpoint(certificate);
    let quic = endpoint
        .connect(server, "localhost")
        .expect("connect")
        .await
        .expect("handshake");
    let (mut driver, mut requests) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .expect("h3");
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let request = http::Request::get("https://localhost/big")
        .body(())
        .expect("request");
    let mut stream = requests.send_request(request).await.expect("send");
    stream.finish().await.expect("finish");
    stream.recv_response().await.expect("response");
    let mut length = 0;
    while let Some(chunk) = stream.recv_data().await.expect("data") {
        length += chunk.remaining();
    }
    quic.close(quinn::VarInt::from_u32(0x100), b"done");
    length
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
        let certificate = certified.cert.der().clone();
        let key = certified.signing_key.serialize_der();
        let endpoint = Endpoint::new(
            Arc::new(server_tls(certificate.clone(), key)),
            Config::default(),
        )
        .expect("endpoint");
        let socket = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("socket");
        let address = socket.local_addr().expect("bound");
        let shared = Rc::new(Shared::new(endpoint));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = {
            let shared = Rc::clone(&shared);
            tokio::task::spawn_local(async move {
                let handler = |_: &Shared, event: Event| answer(&shared, event);
                drive(&socket, &Rc::clone(&shared), handler, async {
                    let _ = stopped.await;
                })
                .await;
            })
        };
        let start = Instant::now();
        let length = fetch(certificate, address).await;
        let elapsed = start.elapsed();
        let _ = stop.send(());
        let _ = server.await;
        assert_eq!(length, SIZE);
        let rate = length as f64 / elapsed.as_secs_f64() / (1024.0 * 1024.0);
        println!(
            "{} MiB in {:.2} s: {rate:.0} MiB/s (client and server on one thread)",
            length >> 20,
            elapsed.as_secs_f64()
        );
    });
}
