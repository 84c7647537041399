//! What a `stream` block's upstream groups share with the http block's: `server NAME
//! resolve` following Debian's dnsmasq without a reload, `least_time` choosing the peer
//! that answers first, the settings refused at load; and `proxy_ssl_alpn`.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::Instance;
use crate::support::dnsmasq::Dnsmasq;
use crate::support::tls;

const TIMEOUT: Duration = Duration::from_secs(10);

/// A TCP backend on `ip`:`port` that writes `answer` after `delay` to every connection,
/// then closes it.
struct Backend {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Backend {
    fn start(ip: Ipv4Addr, port: u16, answer: &str, delay: Duration) -> Backend {
        let address = SocketAddr::from((ip, port));
        let listener = TcpListener::bind(address).expect("bind a backend");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let answer = answer.to_owned();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Acquire) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let answer = answer.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    let _ = stream.write_all(answer.as_bytes());
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

/// One session: what the server sent until it closed (empty when none could be opened).
fn session(port: u16) -> String {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// Opens sessions until the answers of `window` in a row are exactly `wanted` (in any
/// order and number); how long that took.
fn wait_for_members(port: u16, wanted: &[&str]) -> Duration {
    let started = Instant::now();
    let window = 8;
    let mut seen: Vec<String> = Vec::new();
    while started.elapsed() < Duration::from_secs(15) {
        seen.push(session(port));
        if seen.len() >= window {
            let last = &seen[seen.len() - window..];
            let all_wanted = last.iter().all(|answer| wanted.contains(&answer.as_str()));
            let every = wanted
                .iter()
                .all(|want| last.iter().any(|answer| answer == want));
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
fn stream_resolved_members_follow_dnsmasq_without_a_reload_or_a_failed_session() {
    let Some(program) = Dnsmasq::find() else {
        return;
    };
    // The resolver is the stream block's, written after the group.
    let mut builder = Instance::builder(
        "worker_processes 2;
         events {
         }
         stream {
             upstream tier {
                 zone tier 64k;
                 server cache.portico.test:%%PORT_8081%% resolve;
             }
             resolver 127.0.0.1:%%PORT_8082%% valid=1s ipv6=off;
             resolver_timeout 1s;
             server {
                 listen 127.0.0.1:8080;
                 proxy_pass tier;
             }
         }",
    );
    let port = builder.port(8081);
    let dnsmasq = Dnsmasq::start(
        &program,
        builder.port(8082),
        "127.0.0.2 cache.portico.test\n",
    );
    let _two = Backend::start(Ipv4Addr::new(127, 0, 0, 2), port, "2", Duration::ZERO);
    let _three = Backend::start(Ipv4Addr::new(127, 0, 0, 3), port, "3", Duration::ZERO);
    let server = builder.start();
    let front = server.port();
    wait_for_members(front, &["2"]);
    // Sessions run all along; not one may fail while the members change.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let (stop, sent, failed) = (Arc::clone(&stop), Arc::clone(&sent), Arc::clone(&failed));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                sent.fetch_add(1, Ordering::AcqRel);
                if !matches!(session(front).as_str(), "2" | "3") {
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
    server.wait_for_error_log(&format!(
        "upstream \"tier\": \"cache.portico.test\" resolved to 127.0.0.3:{port}"
    ));
    // The name server goes away: the last good members stay, and the log says why.
    drop(dnsmasq);
    server
        .wait_for_error_log("cache.portico.test could not be resolved (110: Operation timed out)");
    for _ in 0..5 {
        assert_eq!(session(front), "3");
    }
}

#[test]
fn stream_least_time_first_byte_sends_sessions_to_the_peer_that_answers_first() {
    let mut builder = Instance::builder(
        "worker_processes 1;
         events {
         }
         stream {
             upstream u {
                 least_time first_byte;
                 server 127.0.0.1:8081;
                 server 127.0.0.1:8082;
             }
             log_format times '$upstream_addr $upstream_first_byte_time';
             server {
                 listen 127.0.0.1:8080;
                 proxy_pass u;
                 access_log logs/times.log times;
             }
         }",
    );
    let slow = builder.port(8081);
    let fast = builder.port(8082);
    let _slow = Backend::start(
        Ipv4Addr::LOCALHOST,
        slow,
        "slow",
        Duration::from_millis(300),
    );
    let _fast = Backend::start(Ipv4Addr::LOCALHOST, fast, "fast", Duration::ZERO);
    let server = builder.start();
    // Unmeasured peers tie: round robin tries both once.
    let mut first = vec![session(server.port()), session(server.port())];
    first.sort();
    assert_eq!(first, ["fast", "slow"]);
    let rest: Vec<String> = (0..10).map(|_| session(server.port())).collect();
    assert!(rest.iter().all(|answer| answer == "fast"), "{rest:?}");
    // The slow peer's first byte came 300 ms after the connect began.
    let line = server.wait_for_line("logs/times.log", &format!("127.0.0.1:{slow} "));
    let took: f64 = line
        .rsplit(' ')
        .next()
        .and_then(|time| time.parse().ok())
        .expect("a first byte time");
    assert!((0.3..2.0).contains(&took), "{line}");
}

#[test]
fn stream_resolve_and_least_time_settings_are_checked_at_load() {
    let stream = |body: &str| format!("events {{\n}}\nstream {{\n{body}\n}}\n");
    crate::support::cli::assert_fails(
        &stream(
            "upstream u { server cache.portico.test:80 resolve; resolver 127.0.0.1; }
             server { listen 127.0.0.1:8080; proxy_pass u; }",
        ),
        "resolving names at run time requires upstream \"u\" in {conf}:4 to be in shared memory in {conf}:4",
    );
    crate::support::cli::assert_fails(
        &stream(
            "upstream u { zone u 64k; server cache.portico.test:80 resolve; }
             server { listen 127.0.0.1:8080; proxy_pass u; }",
        ),
        "no resolver defined to resolve names at run time in upstream \"u\" in {conf}:4",
    );
    crate::support::cli::assert_fails(
        &stream("upstream u { zone u 64k; server cache.portico.test resolve; }"),
        "no port in upstream \"cache.portico.test\" in {conf}:4",
    );
    crate::support::cli::assert_fails(
        &stream("upstream u { server cache.portico.test:80 service=http resolve; }"),
        "service upstream \"cache.portico.test:80\" may not have port in {conf}:4",
    );
    crate::support::cli::assert_fails(
        &stream("upstream u { least_time header; server 127.0.0.1:80; }"),
        "invalid parameter \"header\" in {conf}:4",
    );
    crate::support::cli::assert_fails(
        &stream("upstream u { zone u; zone v; server 127.0.0.1:80; }"),
        "\"zone\" directive is duplicate in {conf}:4",
    );
    let (_, output) = crate::support::cli::test_config(&stream(
        "upstream u { zone u 64k; server cache.portico.test resolve service=http;
                      resolver 127.0.0.1 valid=5s; resolver_timeout 2s;
                      least_time last_byte inflight; }
         server { listen 127.0.0.1:8080; proxy_pass u; }",
    ));
    output.assert_code(0);
}

#[test]
fn stream_proxy_ssl_alpn_offers_the_values_that_are_not_empty() {
    let builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
stream {
    proxy_ssl on;
    ssl_certificate localhost.crt;
    ssl_certificate_key localhost.key;
    server {
        listen 127.0.0.1:8080 ssl;
        ssl_alpn v1 v2;
        proxy_pass 127.0.0.1:8081;
        proxy_ssl_alpn $ssl_alpn_protocol v2;
    }
    server {
        listen 127.0.0.1:8082 ssl;
        ssl_alpn v1 v2;
        proxy_pass 127.0.0.1:8081;
        proxy_ssl_alpn $ssl_alpn_protocol;
    }
    server {
        listen 127.0.0.1:8081 ssl;
        ssl_alpn v1 v2;
        return "[$ssl_alpn_protocol]";
    }
}
"#,
    );
    let instance = tls::with_files(builder, |directory| {
        tls::self_signed(directory, "localhost", tls::Key::Rsa);
    })
    .start();
    let answer = |port: u16, alpn: &[&[u8]]| {
        let options = tls::Options {
            alpn: alpn.iter().map(|protocol| protocol.to_vec()).collect(),
            ..tls::Options::default()
        };
        let mut stream = tls::connect_stream(port, &options).expect("a TLS handshake");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    };
    let many = instance.port();
    let one = instance.port_of(8082);
    assert_eq!(answer(many, &[b"v1"]), "[v1]");
    assert_eq!(answer(many, &[]), "[v2]");
    assert_eq!(answer(one, &[b"v2"]), "[v2]");
    // The only value is empty: no protocol is offered.
    assert_eq!(answer(one, &[]), "[]");
}
