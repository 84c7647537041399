//! What the QUIC tests and the bench share: a self-signed certificate for `localhost`, the
//! server's TLS configuration (TLS 1.3, ALPN `h3`), and a `quinn` client endpoint that
//! trusts the certificate.

// Each test target uses part of it.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use portico_quic::Endpoint;

use rustls::pki_types::CertificateDer;

/// A new self-signed certificate for `localhost` and its PKCS#8 key.
pub fn certificate() -> (CertificateDer<'static>, Vec<u8>) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    (
        certified.cert.der().clone(),
        certified.signing_key.serialize_der(),
    )
}

/// The server's TLS configuration: TLS 1.3 only, ALPN `h3`, the one certificate.
pub fn server_tls(certificate: CertificateDer<'static>, key: Vec<u8>) -> rustls::ServerConfig {
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key);
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![certificate], key.into())
        .expect("the key matches");
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls
}

/// A client's TLS configuration: TLS 1.3, trusting `certificate`, offering `h3`.
pub fn client_tls(certificate: CertificateDer<'static>) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate).expect("a root");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls
}

/// A `quinn-proto` client configuration from [`client_tls`], for tests that drive a
/// client without I/O.
pub fn proto_client_config(certificate: CertificateDer<'static>) -> quinn_proto::ClientConfig {
    let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(client_tls(certificate))
        .expect("QUIC TLS");
    quinn_proto::ClientConfig::new(Arc::new(crypto))
}

/// A `quinn` client endpoint on a loopback port that trusts `certificate` and offers `h3`.
pub fn client_endpoint(certificate: CertificateDer<'static>) -> quinn::Endpoint {
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(client_tls(certificate))
        .expect("QUIC TLS");
    let mut endpoint =
        quinn::Endpoint::client(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("socket");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

/// A `quinn-proto` client and its one connection.
pub struct ProtoClient {
    pub endpoint: quinn_proto::Endpoint,
    pub handle: quinn_proto::ConnectionHandle,
    pub connection: quinn_proto::Connection,
}

impl ProtoClient {
    /// The client's datagrams, until it has none to send.
    pub fn transmits(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let mut buffer = Vec::new();
            let Some(transmit) = self.connection.poll_transmit(now, 1, &mut buffer) else {
                return out;
            };
            buffer.truncate(transmit.size);
            out.push(buffer);
        }
    }

    pub fn receive(&mut self, now: Instant, server: SocketAddr, data: Vec<u8>) {
        let mut buffer = Vec::new();
        let event =
            self.endpoint
                .handle(now, server, None, None, data.as_slice().into(), &mut buffer);
        if let Some(quinn_proto::DatagramEvent::ConnectionEvent(handle, event)) = event {
            assert_eq!(handle, self.handle);
            self.connection.handle_event(event);
        }
        while let Some(event) = self.connection.poll_endpoint_events() {
            if let Some(event) = self.endpoint.handle_event(self.handle, event) {
                self.connection.handle_event(event);
            }
        }
    }
}

/// Passes datagrams both ways until neither side has any, the client sending from `from`.
pub fn exchange(
    server: &mut Endpoint,
    client: &mut ProtoClient,
    now: Instant,
    server_address: SocketAddr,
    from: SocketAddr,
) {
    for _ in 0..50 {
        let sent = client.transmits(now);
        let mut quiet = sent.is_empty();
        for datagram in sent {
            server.receive(now, from, None, &datagram);
        }
        while let Some(datagram) = server.poll_transmit(now) {
            quiet = false;
            client.receive(now, server_address, datagram.data);
        }
        if quiet {
            return;
        }
    }
}
