//! A small HTTP/3 load client for measuring a running Portico (`bench/h3.sh` runs it):
//! `h3_load PORT PATH REQUESTS CONNECTIONS STREAMS` opens CONNECTIONS QUIC connections to
//! 127.0.0.1:PORT (SNI `localhost`, any certificate accepted), each keeping STREAMS
//! requests for PATH in flight, until REQUESTS are answered; prints requests/s and bytes.
//! The `h3` crate on `quinn`, on one thread.
// A load client reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::Buf;
use std::cell::Cell;

/// Accepts whatever certificate the server shows: the bench measures, it does not check.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &rustls::pki_types::CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, certificate, signature, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &rustls::pki_types::CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, certificate, signature, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn endpoint() -> quinn::Endpoint {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = Arc::new(AnyCertificate(Arc::clone(&provider)));
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut endpoint =
        quinn::Endpoint::client(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("socket");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

/// One connection's streams, taking requests from `left` until none is left.
async fn connection(
    server: SocketAddr,
    path: Rc<str>,
    streams: usize,
    left: Rc<Cell<usize>>,
) -> usize {
    let endpoint = endpoint();
    let quic = endpoint
        .connect(server, "localhost")
        .expect("connect")
        .await
        .expect("handshake");
    let (mut driver, requests) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .expect("h3");
    tokio::task::spawn_local(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let mut workers = Vec::new();
    for _ in 0..streams {
        let mut requests = requests.clone();
        let left = Rc::clone(&left);
        let path = Rc::clone(&path);
        workers.push(tokio::task::spawn_local(async move {
            let mut bytes = 0;
            while left.get() > 0 {
                left.set(left.get() - 1);
                let request = http::Request::get(format!("https://localhost{path}"))
                    .body(())
                    .expect("request");
                let mut stream = requests.send_request(request).await.expect("send");
                stream.finish().await.expect("finish");
                let response = stream.recv_response().await.expect("response");
                assert_eq!(response.status(), 200);
                while let Some(chunk) = stream.recv_data().await.expect("data") {
                    bytes += chunk.remaining();
                }
            }
            bytes
        }));
    }
    let mut bytes = 0;
    for worker in workers {
        bytes += worker.await.expect("a stream worker");
    }
    quic.close(quinn::VarInt::from_u32(0x100), b"done");
    endpoint.wait_idle().await;
    bytes
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [port, path, requests, connections, streams] = &arguments[..] else {
        println!("usage: h3_load PORT PATH REQUESTS CONNECTIONS STREAMS");
        return;
    };
    let number = |text: &str| text.parse::<usize>().expect("a number");
    let server = SocketAddr::from((Ipv4Addr::LOCALHOST, number(port) as u16));
    let (requests, connections, streams) = (number(requests), number(connections), number(streams));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let left = Rc::new(Cell::new(requests));
        let path: Rc<str> = Rc::from(path.as_str());
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let (path, left) = (Rc::clone(&path), Rc::clone(&left));
            tasks.push(tokio::task::spawn_local(connection(
                server, path, streams, left,
            )));
        }
        let mut bytes = 0;
        for task in tasks {
            bytes += task.await.expect("a connection");
        }
        let elapsed = start.elapsed().as_secs_f64();
        println!(
            "{requests} requests in {elapsed:.3} s: {:.0} req/s, {bytes} body bytes",
            requests as f64 / elapsed
        );
    });
}
