//! The server's side of TLS 1.3 handshakes in memory, without sockets: full handshakes with
//! an ECDSA P-256 certificate and resumed ones with a ticket, X25519, against Portico's own
//! client configuration (`TLS_AES_256_GCM_SHA384`, as `openssl s_time` negotiates). Only
//! the server's calls are timed: reading the hello, choosing the configuration, the first
//! flight, the client's `Finished` and the tickets after it.
//! `cargo bench -p portico-tls --bench handshake [-- full|resumed]`; prints microseconds per
//! handshake.
// A bench reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use portico_tls::{
    Acceptor, ClientSettings, ClientTls, PemSource, Protocols, ServerSettings, ServerTls, Session,
    SessionCache, TicketKeys, load_pair, parse_curves,
};

/// A throwaway self-signed P-256 certificate for `localhost`, made for this bench.
const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----
MIIBfjCCASWgAwIBAgIUYeRBBa0UrVSuwTaDbAMxEMbadMMwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNjA1MjQwNloYDzIxMjYxMTAy
MDUyNDA2WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATIGKYsKDjIHSEuDY+Gad5LUVxTZ7G1pJ2GnY6hC3YvV1KmXb3s+U13
lSUZKIfp9EXWiF51XUsE4kLx4bWr/sZMo1MwUTAdBgNVHQ4EFgQUcRQKUzeEXHC1
z+ucXS1/DGsoh/wwHwYDVR0jBBgwFoAUcRQKUzeEXHC1z+ucXS1/DGsoh/wwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiAcnddPl4osZtIwdrIpnTC1
eqx+atx3SN1k16zc7lO9VAIgUQ3Nz4bADrn+G2Pa/yAXiajwEjJEffQZwIeMWOde
5W4=
-----END CERTIFICATE-----
";

const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgY2c9454ZtPpVnimw
Mbq5xeyHC2O7812lvFggIUmUEr+hRANCAATIGKYsKDjIHSEuDY+Gad5LUVxTZ7G1
pJ2GnY6hC3YvV1KmXb3s+U13lSUZKIfp9EXWiF51XUsE4kLx4bWr/sZM
-----END PRIVATE KEY-----
";

fn server() -> ServerTls {
    let pem = |name: &str, text: &str| PemSource {
        name: name.to_owned(),
        bytes: text.as_bytes().to_vec(),
    };
    let pair = load_pair(&pem("bench.crt", CERTIFICATE), &pem("bench.key", KEY), &[])
        .expect("the bench's pair loads");
    let lifetime = Duration::from_secs(300);
    let (curves, _) = parse_curves("X25519").expect("a known group");
    ServerTls::new(ServerSettings {
        pairs: vec![pair],
        certificate_names: vec!["bench.crt".to_owned()],
        protocols: Protocols::default(),
        ciphers: None,
        prefer_server_ciphers: false,
        curves,
        session_cache: Some(Arc::new(SessionCache::new(40_000, lifetime))),
        tickets: Some(Arc::new(
            TicketKeys::random(lifetime, true).expect("random ticket keys"),
        )),
        alpn: vec![b"http/1.1".to_vec()],
        verify: None,
        early_data: false,
    })
    .expect("a valid configuration")
}

/// Moves every pending record of `from` into `to` and has `to` process them.
fn deliver(from: &mut Session, to: &mut Session) {
    let mut records = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut records).expect("writes to memory");
    }
    let mut pending = &records[..];
    while !pending.is_empty() {
        to.read_tls(&mut pending).expect("reads from memory");
        to.process().expect("a valid flight");
    }
}

/// One handshake; returns the server's time and whether the session was resumed.
fn handshake(client_tls: &ClientTls, server_tls: &ServerTls) -> (Duration, bool) {
    let mut client = client_tls.connect("localhost").expect("a valid name");
    let mut hello = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut hello).expect("writes to memory");
    }
    let start = Instant::now();
    let mut acceptor = Acceptor::default();
    let mut pending = &hello[..];
    acceptor.read_tls(&mut pending).expect("reads from memory");
    let hello = acceptor
        .accept()
        .expect("a valid hello")
        .expect("a whole hello");
    let mut server = hello.into_session(server_tls).expect("a handshake");
    let mut server_time = start.elapsed();
    deliver(&mut server, &mut client);
    let mut finished = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut finished).expect("writes to memory");
    }
    let start = Instant::now();
    let mut pending = &finished[..];
    while !pending.is_empty() {
        server.read_tls(&mut pending).expect("reads from memory");
        server.process().expect("a valid Finished");
    }
    let mut tickets = Vec::new();
    while server.wants_write() {
        server.write_tls(&mut tickets).expect("writes to memory");
    }
    server_time += start.elapsed();
    let mut pending = &tickets[..];
    while !pending.is_empty() {
        client.read_tls(&mut pending).expect("reads from memory");
        client.process().expect("valid tickets");
    }
    assert!(!server.is_handshaking() && !client.is_handshaking());
    let info = server.info();
    assert_eq!(
        (info.protocol, info.cipher, info.curve),
        ("TLSv1.3", "TLS_AES_256_GCM_SHA384", "X25519")
    );
    (server_time, info.resumed)
}

fn time(name: &str, iterations: u32, resume: bool) {
    let server_tls = server();
    let client_tls = ClientTls::new(ClientSettings {
        server_name: true,
        session_reuse: resume,
        alpn: Vec::new(),
        ..ClientSettings::default()
    })
    .expect("a valid client configuration");
    // The first handshake gives the client its tickets; warm up with a tenth.
    for _ in 0..=iterations / 10 {
        handshake(&client_tls, &server_tls);
    }
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        let (server_time, resumed) = handshake(&client_tls, &server_tls);
        assert_eq!(resumed, resume);
        total += server_time;
    }
    let micros = total.as_secs_f64() * 1e6 / f64::from(iterations);
    println!("{name:<44} {micros:>8.1} us/handshake (server)");
}

/// Runs the cases named on the command line (`full`, `resumed`), or both.
fn main() {
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let chosen = |name: &str| wanted.is_empty() || wanted.iter().any(|arg| arg == name);
    if chosen("full") {
        time("TLS 1.3 full handshake, ECDSA P-256", 2_000, false);
    }
    if chosen("resumed") {
        time("TLS 1.3 resumed handshake (ticket)", 5_000, true);
    }
}
