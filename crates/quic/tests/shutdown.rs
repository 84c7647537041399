//! A graceful shutdown does not wait on a client that never finished its handshake: after
//! a reload such a client may have given up, or its later packets may reach another
//! socket of the `reuseport` group, and the connection would otherwise hold the worker
//! until its idle timeout. The endpoint is driven without I/O and with a simulated clock.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use portico_quic::{Config, Endpoint};

mod support;

/// A `quinn-proto` client's first datagram (its Initial) for a server at `server`.
fn client_initial(
    certificate: rustls::pki_types::CertificateDer<'static>,
    server: SocketAddr,
) -> Vec<u8> {
    let config = support::proto_client_config(certificate);
    let mut client = quinn_proto::Endpoint::new(
        Arc::new(quinn_proto::EndpointConfig::default()),
        None,
        false,
        None,
    );
    let (_, mut connection) = client
        .connect(Instant::now(), config, server, "localhost")
        .expect("connect");
    let mut buffer = Vec::new();
    let transmit = connection
        .poll_transmit(Instant::now(), 1, &mut buffer)
        .expect("the client's Initial");
    buffer.truncate(transmit.size);
    buffer
}

/// Runs the endpoint's timers, sending nothing anywhere, until it has shut down or
/// `limit` of simulated time has passed; returns the simulated time it took.
fn run_until_shut_down(
    endpoint: &mut Endpoint,
    start: Instant,
    limit: Duration,
) -> Option<Duration> {
    let mut now = start;
    while now - start < limit {
        while endpoint.poll_transmit(now).is_some() {}
        if endpoint.is_shut_down() {
            return Some(now - start);
        }
        let next = endpoint.poll_timeout()?;
        now = next.max(now + Duration::from_millis(1));
        endpoint.handle_timeout(now);
    }
    None
}

#[test]
fn a_connection_still_in_its_handshake_does_not_hold_a_shutdown() {
    let (certificate, key) = support::certificate();
    let tls = Arc::new(support::server_tls(certificate.clone(), key));
    let config = Config {
        idle_timeout: Duration::from_secs(75),
        ..Config::default()
    };
    let mut endpoint = Endpoint::new(tls, config).expect("endpoint");
    let server = SocketAddr::from((Ipv4Addr::LOCALHOST, 443));
    let client = SocketAddr::from((Ipv4Addr::LOCALHOST, 50_000));
    let start = Instant::now();
    endpoint.receive(start, client, None, &client_initial(certificate, server));
    assert_eq!(endpoint.connections(), 1, "the Initial opened a connection");
    // The client is never heard from again.
    endpoint.shutdown(start);
    let took = run_until_shut_down(&mut endpoint, start, Duration::from_secs(60))
        .expect("the endpoint shut down before the idle timeout");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// While it shuts down, an endpoint on a routed socket hands a new client's Initial off
/// (for the endpoint that takes new connections) instead of only dropping it; one handed
/// to it by another endpoint is not handed off again, and without a router nothing is.
#[test]
fn a_new_clients_initial_is_handed_off_during_a_shutdown() {
    let (certificate, key) = support::certificate();
    let server = SocketAddr::from((Ipv4Addr::LOCALHOST, 443));
    let client = SocketAddr::from((Ipv4Addr::LOCALHOST, 50_000));
    let now = Instant::now();
    let routed = |route_tag| {
        let tls = Arc::new(support::server_tls(certificate.clone(), key.clone()));
        let config = Config {
            route_tag,
            ..Config::default()
        };
        let mut endpoint = Endpoint::new(tls, config).expect("endpoint");
        endpoint.shutdown(now);
        endpoint
    };
    let initial = client_initial(certificate.clone(), server);
    let mut endpoint = routed(Some(3));
    endpoint.receive(now, client, None, &initial);
    let handoffs = endpoint.take_handoffs();
    assert_eq!(handoffs.len(), 1);
    assert_eq!(handoffs[0].data, initial);
    assert_eq!(handoffs[0].remote, client);
    assert_eq!(endpoint.connections(), 0, "not accepted here");
    endpoint.receive_forwarded(now, client, &initial);
    assert!(
        endpoint.take_handoffs().is_empty(),
        "never handed off twice"
    );
    let mut endpoint = routed(None);
    endpoint.receive(now, client, None, &initial);
    assert!(endpoint.take_handoffs().is_empty(), "no router, no handoff");
}
