//! `server NAME resolve` in an `upstream` block, against Debian's dnsmasq: members added
//! and removed as the records change, without a reload and without failing a request,
//! and the last good members kept while the name server is down.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::Instance;
use crate::support::dnsmasq::Dnsmasq;

/// A backend on `ip`:`port` answering every request with its own last address byte.
struct Backend {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Backend {
    fn start(ip: Ipv4Addr, port: u16) -> Backend {
        let address = SocketAddr::from((ip, port));
        let listener = TcpListener::bind(address).expect("bind a backend");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let body = ip.octets()[3].to_string();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Acquire) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let body = body.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n")
                        && stream.read(&mut byte).is_ok_and(|n| n == 1)
                    {
                        head.push(byte[0]);
                    }
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        Backend {
            address,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.address);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// One request; the status and the body.
fn get(port: u16) -> (u16, String) {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = stream.write_all(b"GET / HTTP/1.0\r\nHost: tier\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Asks until the bodies of `window` answers in a row are exactly `wanted` (in any order
/// and number); how long that took.
fn wait_for_members(port: u16, wanted: &[&str]) -> Duration {
    let started = Instant::now();
    let window = 8;
    let mut seen: Vec<String> = Vec::new();
    while started.elapsed() < Duration::from_secs(15) {
        let (_, body) = get(port);
        seen.push(body);
        if seen.len() >= window {
            let last = &seen[seen.len() - window..];
            let all_wanted = last.iter().all(|body| wanted.contains(&body.as_str()));
            let every = wanted
                .iter()
                .all(|want| last.iter().any(|body| body == want));
            if all_wanted && every {
                return started.elapsed();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "members never became {wanted:?}: {:?}",
        &seen[seen.len().saturating_sub(20)..]
    );
}

#[test]
fn resolved_members_follow_dnsmasq_without_a_reload_or_a_failed_request() {
    let Some(program) = Dnsmasq::find() else {
        return;
    };
    let mut builder = Instance::http_builder(
        "upstream tier {
             zone tier 64k;
             server cache.portico.test:%%PORT_8081%% resolve;
             resolver 127.0.0.1:%%PORT_8082%% valid=1s ipv6=off;
             resolver_timeout 1s;
         }
         server {
             listen 127.0.0.1:8080;
             location / { proxy_pass http://tier; }
         }",
    );
    let port = builder.port(8081);
    let dnsmasq = Dnsmasq::start(
        &program,
        builder.port(8082),
        "127.0.0.2 cache.portico.test\n",
    );
    let _two = Backend::start(Ipv4Addr::new(127, 0, 0, 2), port);
    let _three = Backend::start(Ipv4Addr::new(127, 0, 0, 3), port);
    let server = builder.start();
    let front = server.port();
    wait_for_members(front, &["2"]);
    // Requests run all along; not one may fail while the members change.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let (stop, sent, failed) = (Arc::clone(&stop), Arc::clone(&sent), Arc::clone(&failed));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                sent.fetch_add(1, Ordering::AcqRel);
                if get(front).0 != 200 {
                    failed.fetch_add(1, Ordering::AcqRel);
                }
            }
        })
    };
    dnsmasq.set_hosts("127.0.0.2 cache.portico.test\n127.0.0.3 cache.portico.test\n");
    let added = wait_for_members(front, &["2", "3"]);
    dnsmasq.set_hosts("127.0.0.3 cache.portico.test\n");
    let removed = wait_for_members(front, &["3"]);
    // `valid=1s`, plus the time to see eight answers in a row.
    assert!(added < Duration::from_secs(4), "{added:?}");
    assert!(removed < Duration::from_secs(4), "{removed:?}");
    stop.store(true, Ordering::Release);
    load.join().expect("the load");
    assert!(sent.load(Ordering::Acquire) > 10);
    assert_eq!(
        failed.load(Ordering::Acquire),
        0,
        "of {}",
        sent.load(Ordering::Acquire)
    );
    // The name server goes away: the last good members stay, and the log says why.
    drop(dnsmasq);
    server
        .wait_for_error_log("cache.portico.test could not be resolved (110: Operation timed out)");
    for _ in 0..5 {
        assert_eq!(get(front), (200, "3".to_owned()));
    }
}

#[test]
fn resolve_needs_a_zone_and_a_resolver() {
    crate::support::cli::assert_http_body_fails(
        "upstream u { server cache.portico.test resolve; resolver 127.0.0.1; }
         server { listen 127.0.0.1:8080; location / { proxy_pass http://u; } }",
        "resolving names at run time requires upstream \"u\" in {conf}:4 to be in shared memory in {conf}:4",
    );
    crate::support::cli::assert_http_body_fails(
        "upstream u { zone u 64k; server cache.portico.test resolve; }
         server { listen 127.0.0.1:8080; location / { proxy_pass http://u; } }",
        "no resolver defined to resolve names at run time in upstream \"u\" in {conf}:4",
    );
    crate::support::cli::assert_http_body_fails(
        "upstream u { zone u 64k; server cache.portico.test:80 service=http resolve;
                      resolver 127.0.0.1; }",
        "service upstream \"cache.portico.test:80\" may not have port in {conf}:4",
    );
}
