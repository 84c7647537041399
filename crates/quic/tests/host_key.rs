//! `quic_host_key`: endpoints made with the same host key accept each other's Retry
//! tokens (a client retried by one worker, or by the generation before a reload, is taken
//! by another); with another key the token is refused. Driven without sockets: a
//! `quinn-proto` client's datagrams are handed to the endpoints by the test.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use portico_quic::{Config, Endpoint};
use quinn_proto::DatagramEvent;

mod support;

const CLIENT: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 40000);
const SERVER: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 4433);

fn server(tls: &Arc<rustls::ServerConfig>, key: Option<&[u8]>) -> Endpoint {
    let config = Config {
        retry: true,
        ..Config::default()
    };
    Endpoint::with_host_key(Arc::clone(tls), config, key).expect("endpoint")
}

/// Connects through `first` (which answers with a Retry) and sends the retried Initial
/// to `second`; returns whether `second` took the connection.
fn retried_elsewhere(first: &mut Endpoint, second: &mut Endpoint) -> bool {
    let (certificate, _) = support::certificate();
    let config = support::proto_client_config(certificate);
    let mut client = quinn_proto::Endpoint::new(
        Arc::new(quinn_proto::EndpointConfig::default()),
        None,
        false,
        None,
    );
    let now = Instant::now();
    let (_, mut connection) = client
        .connect(now, config, SERVER, "localhost")
        .expect("connect");
    let mut buffer = Vec::new();
    let initial = connection
        .poll_transmit(now, 1, &mut buffer)
        .expect("an Initial");
    first.receive(now, CLIENT, None, &buffer[..initial.size]);
    let retry = first.poll_transmit(now).expect("a Retry");
    assert_eq!(retry.data[0] & 0xf0, 0xf0, "a Retry packet");
    assert_eq!(first.connections(), 0);
    let mut scratch = Vec::new();
    let data = BytesMut::from(&retry.data[..]);
    match client.handle(now, SERVER, None, None, data, &mut scratch) {
        Some(DatagramEvent::ConnectionEvent(_, event)) => connection.handle_event(event),
        _ => panic!("the client takes the Retry"),
    }
    buffer.clear();
    let retried = connection
        .poll_transmit(now, 1, &mut buffer)
        .expect("the Initial again, with the token");
    second.receive(now, CLIENT, None, &buffer[..retried.size]);
    second.connections() == 1
}

#[test]
fn the_same_host_key_accepts_another_endpoints_retry_token() {
    let (certificate, key) = support::certificate();
    let tls = Arc::new(support::server_tls(certificate, key));
    let key = [42u8; 32];
    let (mut a, mut b) = (server(&tls, Some(&key)), server(&tls, Some(&key)));
    assert!(retried_elsewhere(&mut a, &mut b), "same key: taken");
    let other = [43u8; 32];
    let (mut a, mut c) = (server(&tls, Some(&key)), server(&tls, Some(&other)));
    assert!(!retried_elsewhere(&mut a, &mut c), "another key: refused");
    let (mut a, mut d) = (server(&tls, None), server(&tls, None));
    assert!(!retried_elsewhere(&mut a, &mut d), "random keys: refused");
}
