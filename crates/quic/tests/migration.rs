//! A client that moves to another address: the request on the datagram that moved it still
//! sees the old address (`$remote_addr`, as nginx keeps it), the requests after it see the
//! new one. The endpoint and a `quinn-proto` client are driven without I/O.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use portico_quic::{Config, Endpoint};

mod support;

use support::{ProtoClient, exchange};

#[test]
fn the_datagram_that_moves_a_client_keeps_its_old_address_for_requests() {
    let (certificate, key) = support::certificate();
    let tls = Arc::new(support::server_tls(certificate.clone(), key));
    let mut server = Endpoint::new(tls, Config::default()).expect("endpoint");
    let server_address = SocketAddr::from((Ipv4Addr::LOCALHOST, 443));
    let old = SocketAddr::from((Ipv4Addr::LOCALHOST, 50_000));
    let new = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 20), 50_001));
    let mut endpoint = quinn_proto::Endpoint::new(
        Arc::new(quinn_proto::EndpointConfig::default()),
        None,
        false,
        None,
    );
    let now = Instant::now();
    let (handle, connection) = endpoint
        .connect(
            now,
            support::proto_client_config(certificate),
            server_address,
            "localhost",
        )
        .expect("connect");
    let mut client = ProtoClient {
        endpoint,
        handle,
        connection,
    };
    exchange(&mut server, &mut client, now, server_address, old);
    assert!(!client.connection.is_handshaking(), "the handshake is over");
    let [id] = server.connection_ids()[..] else {
        panic!("one connection");
    };
    assert_eq!(server.request_address(id), Some(old));
    // The client moves: its next datagram (a PING, not a probe) comes from `new`.
    let later = now + Duration::from_millis(10);
    client.connection.ping();
    let moved = client.transmits(later);
    assert!(!moved.is_empty());
    for datagram in moved {
        server.receive(later, new, None, &datagram);
    }
    assert_eq!(server.remote_address(id), Some(new), "the connection moved");
    assert_eq!(
        server.request_address(id),
        Some(old),
        "requests on the datagram that moved it keep the old address"
    );
    // The path is validated and the client goes on from `new`.
    while let Some(datagram) = server.poll_transmit(later) {
        client.receive(later, server_address, datagram.data);
    }
    client.connection.ping();
    exchange(&mut server, &mut client, later, server_address, new);
    assert_eq!(server.request_address(id), Some(new));
}
