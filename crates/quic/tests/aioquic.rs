//! Python's `aioquic` HTTP/3 client (with `ls-qpack`, whose encoder uses the dynamic
//! table the server allows) against an [`Endpoint`] driven over a loopback UDP socket.
//! The client is `tests/aioquic_client.py`, run with the Python in `PORTICO_AIOQUIC_PYTHON`,
//! or `python3` if it can import `aioquic`; without one the test says so and is skipped.

use std::net::{Ipv4Addr, UdpSocket};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http3::HeaderField;
use portico_quic::{Config, Endpoint, Event};

mod support;

fn python() -> Option<String> {
    let candidate =
        std::env::var("PORTICO_AIOQUIC_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let imports = Command::new(&candidate)
        .args(["-c", "import aioquic"])
        .stderr(std::process::Stdio::null())
        .status();
    imports
        .is_ok_and(|status| status.success())
        .then_some(candidate)
}

fn tls() -> rustls::ServerConfig {
    let (certificate, key) = support::certificate();
    support::server_tls(certificate, key)
}

/// Answers each request with its path; returns the requests answered.
fn serve(socket: UdpSocket, mut endpoint: Endpoint, stop: Arc<AtomicBool>) -> usize {
    socket
        .set_read_timeout(Some(Duration::from_millis(5)))
        .expect("timeout");
    let mut buffer = vec![0u8; 65_536];
    let mut paths = std::collections::HashMap::new();
    let mut answered = 0;
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
            match event {
                http3::Event::Headers {
                    stream_id, fields, ..
                } => {
                    let repeated = fields.iter().any(|field| {
                        field.name == b"x-repeated" && field.value.starts_with(b"the same value")
                    });
                    assert!(repeated, "the repeated field decoded");
                    let path = fields
                        .iter()
                        .find(|field| field.name == b":path")
                        .map(|field| field.value.to_vec());
                    paths.insert((connection, stream_id), path.unwrap_or_default());
                }
                http3::Event::Finished { stream_id } => {
                    let path = paths.remove(&(connection, stream_id)).unwrap_or_default();
                    let head = [HeaderField::new(":status", "200")];
                    endpoint
                        .send_headers(connection, stream_id, &head, false)
                        .expect("head");
                    endpoint
                        .send_data(connection, stream_id, &path, true)
                        .expect("body");
                    answered += 1;
                }
                _ => {}
            }
        }
        while let Some(datagram) = endpoint.poll_transmit(Instant::now()) {
            socket
                .send_to(&datagram.data, datagram.destination)
                .expect("send");
        }
    }
    answered
}

#[test]
fn aioquic_client_through_the_endpoint() {
    let Some(python) = python() else {
        // Not a failure: the machine has no aioquic (see the module's doc).
        eprintln!("skipped: no Python with aioquic (set PORTICO_AIOQUIC_PYTHON)");
        return;
    };
    let endpoint = Endpoint::new(Arc::new(tls()), Config::default()).expect("endpoint");
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a loopback socket");
    let port = socket.local_addr().expect("bound").port();
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || serve(socket, endpoint, stop))
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/aioquic_client.py");
    let output = Command::new(python)
        .args([script, &port.to_string(), "20"])
        .output()
        .expect("the client runs");
    stop.store(true, Ordering::Relaxed);
    let answered = server.join().expect("the server loop did not panic");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected: Vec<String> = (0..20).map(|number| format!("200 /{number}")).collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected);
    assert_eq!(answered, 20);
}
