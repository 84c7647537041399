//! NEW_TOKEN: with `quic_retry on` a client's first connection goes through a Retry; the
//! server then gives it a token, and the client's next connection, presenting it, is
//! accepted without a Retry. Driven without I/O.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use portico_quic::{Config, Endpoint};

mod support;

use support::{ProtoClient, exchange};

/// Whether a server datagram is a Retry packet (long header, type 3).
fn is_retry(datagram: &[u8]) -> bool {
    datagram.first().is_some_and(|first| first & 0xf0 == 0xf0)
}

/// Connects `endpoint`'s client and returns the server's answers to its first datagrams.
fn first_answers(
    server: &mut Endpoint,
    client: &mut ProtoClient,
    now: Instant,
    server_address: SocketAddr,
    from: SocketAddr,
) -> Vec<Vec<u8>> {
    for datagram in client.transmits(now) {
        server.receive(now, from, None, &datagram);
    }
    let mut answers = Vec::new();
    while let Some(datagram) = server.poll_transmit(now) {
        answers.push(datagram.data.clone());
        client.receive(now, server_address, datagram.data);
    }
    answers
}

#[test]
fn a_client_back_with_its_new_token_skips_the_retry() {
    let (certificate, key) = support::certificate();
    let tls = Arc::new(support::server_tls(certificate.clone(), key));
    let config = Config {
        retry: true,
        ..Config::default()
    };
    let mut server = Endpoint::new(tls, config).expect("endpoint");
    let server_address = SocketAddr::from((Ipv4Addr::LOCALHOST, 443));
    let from = SocketAddr::from((Ipv4Addr::LOCALHOST, 50_000));
    let client_config = support::proto_client_config(certificate);
    let mut endpoint = quinn_proto::Endpoint::new(
        Arc::new(quinn_proto::EndpointConfig::default()),
        None,
        false,
        None,
    );
    let mut now = Instant::now();
    let mut connections = Vec::new();
    for round in 0..2 {
        let (handle, connection) = endpoint
            .connect(now, client_config.clone(), server_address, "localhost")
            .expect("connect");
        let mut client = ProtoClient {
            endpoint,
            handle,
            connection,
        };
        let answers = first_answers(&mut server, &mut client, now, server_address, from);
        let retried = answers.iter().any(|datagram| is_retry(datagram));
        assert_eq!(
            retried,
            round == 0,
            "round {round}: a Retry only the first time"
        );
        exchange(&mut server, &mut client, now, server_address, from);
        assert!(
            !client.connection.is_handshaking(),
            "round {round}: connected"
        );
        endpoint = client.endpoint;
        connections.push(client.connection);
        now += Duration::from_millis(50);
    }
}
