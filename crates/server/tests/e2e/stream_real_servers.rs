//! The `stream` block in front of real servers the tests start: MariaDB over TCP (plain,
//! with its own TLS, and behind Portico's TLS termination), dnsmasq over UDP, and TLS
//! passed through by its server name to two HTTPS servers. A test whose server is not
//! installed says so and does nothing.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::support::dns;
use crate::support::dnsmasq::Dnsmasq;
use crate::support::mariadb::{self, MariaDb, Networking};
use crate::support::tls;
use crate::support::{Instance, PATIENCE, TempPrefix, wait_until};

const MARIADB_CONFIG: &str = r#"
worker_processes 1;
events {
}
stream {
    log_format session "$protocol $status $upstream_addr $bytes_received $bytes_sent";
    server {
        listen 127.0.0.1:8080;
        proxy_pass 127.0.0.1:8081;
        access_log logs/mariadb.log session;
    }
    server {
        listen 127.0.0.1:8082 ssl;
        ssl_certificate db.portico.test.crt;
        ssl_certificate_key db.portico.test.key;
        proxy_pass 127.0.0.1:8081;
        access_log logs/tunnel.log session;
    }
}
"#;

/// A MariaDB on nominal port 8081 and Portico in front of it with [`MARIADB_CONFIG`], or
/// `None` when MariaDB or its client is not installed.
fn mariadb_behind_portico() -> Option<(MariaDb, Instance, std::path::PathBuf)> {
    let programs = MariaDb::find()?;
    let client = mariadb::find_client()?;
    if !tls::have_openssl() {
        return None;
    }
    let mut builder = Instance::builder(MARIADB_CONFIG);
    let database = MariaDb::start_with(&programs, Networking::Tcp(builder.port(8081)));
    let instance = tls::with_files(builder, |directory| {
        tls::self_signed(directory, "db.portico.test", tls::Key::Rsa);
    })
    .start();
    Some((database, instance, client))
}

/// The statements both MariaDB tests run through Portico, and what they check: the client
/// the server saw, a table written and read back, 100 kB sent and 1 MB received in one
/// statement each (many relay buffers either way).
fn run_queries(client: &std::path::Path, port: u16, table: &str) {
    // The server saw a TCP client (Portico's upstream connection): its host has a port,
    // which a unix socket client's has not. MariaDB names 127.0.0.1 `localhost`.
    let seen = mariadb::query_over_tcp(
        client,
        port,
        "SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
    );
    let (user, host) = seen.trim_end().split_once('\t').expect("two columns");
    assert_eq!(user, MariaDb::USER);
    let (name, client_port) = host.rsplit_once(':').expect("a TCP client's host:port");
    assert!(
        ["localhost", "127.0.0.1"].contains(&name) && client_port.parse::<u16>().is_ok(),
        "{seen}"
    );
    let long = "p".repeat(100_000);
    mariadb::query_over_tcp(
        client,
        port,
        &format!(
            "CREATE TABLE {table} (id INT PRIMARY KEY, body MEDIUMTEXT);
             INSERT INTO {table} VALUES (1, 'first'), (2, 'second'), (3, '{long}');"
        ),
    );
    let rows = mariadb::query_over_tcp(
        client,
        port,
        &format!("SELECT id, LEFT(body, 6), LENGTH(body) FROM {table} ORDER BY id"),
    );
    assert_eq!(rows, "1\tfirst\t5\n2\tsecond\t6\n3\tpppppp\t100000\n");
    let large = mariadb::query_over_tcp(client, port, "SELECT REPEAT('x', 1000000), 'end'");
    assert_eq!(large.len(), 1_000_000 + "\tend\n".len());
    assert!(large.starts_with("xxxx") && large.ends_with("x\tend\n"));
}

/// The lines of the access log `relative` once it has `count` of them, at most [`PATIENCE`].
fn wait_for_lines(instance: &Instance, relative: &str, count: usize) -> Vec<String> {
    let path = instance.prefix().path().join(relative);
    let mut lines = Vec::new();
    wait_until(&format!("{count} lines in {relative}"), PATIENCE, || {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        lines = text.lines().map(str::to_owned).collect();
        lines.len() >= count
    });
    lines
}

/// The MariaDB client's sessions through `proxy_pass` to MariaDB's TCP port: the MySQL
/// protocol's handshake, authentication and queries, with answers and statements much
/// larger than a relay buffer, from several clients at once.
#[test]
fn mariadb_answers_queries_through_the_tcp_proxy() {
    let Some((_database, instance, client)) = mariadb_behind_portico() else {
        return;
    };
    run_queries(&client, instance.port(), "notes");
    let at_once: Vec<_> = (0..4)
        .map(|index| {
            let client = client.clone();
            let port = instance.port();
            std::thread::spawn(move || {
                mariadb::query_over_tcp(&client, port, &format!("SELECT {index} * 7"))
            })
        })
        .collect();
    for (index, thread) in at_once.into_iter().enumerate() {
        let answer = thread.join().expect("a client thread");
        assert_eq!(answer, format!("{}\n", index * 7));
    }
    // Four sessions before, four at once: every one logged as proxied to MariaDB.
    let upstream = format!("127.0.0.1:{}", instance.port_of(8081));
    let lines = wait_for_lines(&instance, "logs/mariadb.log", 8);
    for line in &lines {
        assert!(line.starts_with(&format!("TCP 200 {upstream} ")), "{line}");
    }
    let largest_sent = lines
        .iter()
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .max();
    assert!(largest_sent > Some(1_000_000), "{lines:?}");
}

/// MariaDB's own TLS through the plain TCP proxy, the way MySQL clients use TLS: the
/// server requires it (`--require-secure-transport`), the `mariadb` client asks for it
/// after the greeting, and Portico relays the handshake and the encrypted session as bytes.
/// A client that does not ask for TLS is refused by MariaDB, through Portico.
#[test]
fn mariadb_s_own_tls_crosses_the_tcp_proxy() {
    let (Some(programs), Some(client)) = (MariaDb::find(), mariadb::find_client()) else {
        return;
    };
    if !tls::have_openssl() {
        return;
    }
    let certificates = TempPrefix::new();
    tls::self_signed(certificates.path(), "db.portico.test", tls::Key::Ecdsa);
    let mut builder = Instance::builder(MARIADB_CONFIG);
    let networking = Networking::TcpRequiringTls {
        port: builder.port(8081),
        certificate: certificates.path().join("db.portico.test.crt"),
        key: certificates.path().join("db.portico.test.key"),
    };
    let _database = MariaDb::start_with(&programs, networking);
    let instance = tls::with_files(builder, |directory| {
        tls::self_signed(directory, "db.portico.test", tls::Key::Rsa);
    })
    .start();
    let port = instance.port();
    let version = mariadb::query_over_tcp_with(
        &client,
        port,
        &["--ssl"],
        "SHOW SESSION STATUS LIKE 'Ssl_version'",
    )
    .expect("a TLS session");
    assert!(version.starts_with("Ssl_version\tTLSv1."), "{version}");
    let large = mariadb::query_over_tcp_with(
        &client,
        port,
        &["--ssl"],
        "SELECT REPEAT('s', 1000000), 'end'",
    )
    .expect("a TLS session");
    assert_eq!(large.len(), 1_000_000 + "\tend\n".len());
    // MariaDB 10.11 words this refusal as a denied login (as it does talking to the client
    // directly); the same login with TLS just succeeded, so TLS is what was missing.
    let refused = mariadb::query_over_tcp_with(&client, port, &["--skip-ssl"], "SELECT 1")
        .expect_err("a session without TLS");
    assert!(
        refused.contains("insecure transport") || refused.contains("ERROR 1045"),
        "{refused}"
    );
    let lines = wait_for_lines(&instance, "logs/mariadb.log", 3);
    let upstream = format!("127.0.0.1:{}", instance.port_of(8081));
    for line in &lines {
        assert!(line.starts_with(&format!("TCP 200 {upstream} ")), "{line}");
    }
}

/// MariaDB behind Portico's TLS termination (`listen ... ssl`, plain `proxy_pass`).
///
/// A MySQL client does not start TLS on connect: it reads the server's greeting in the
/// clear and asks for TLS inside the protocol, as STARTTLS does, so a `mariadb` client
/// cannot talk to a TLS listener, and `proxy_ssl` from Portico to MariaDB fails the same
/// way. Where TLS termination in front of a database is real is a TLS tunnel: a client-side
/// agent (stunnel's client mode, a sidecar) takes the application's plain connection on
/// the client's machine and carries it over TLS to the proxy, which speaks plain to the
/// database. The test plays that agent (rustls, verifying the name the certificate was made
/// for) for the real `mariadb` client, so every byte of real sessions crosses Portico's
/// TLS both ways. MariaDB's own in-protocol TLS through the plain proxy is the previous
/// test.
#[test]
fn mariadb_answers_queries_through_portico_s_tls_termination() {
    let Some((_database, instance, client)) = mariadb_behind_portico() else {
        return;
    };
    let tunnel = Tunnel::start(instance.port_of(8082), "db.portico.test");
    run_queries(&client, tunnel.port, "tunnelled");
    let lines = wait_for_lines(&instance, "logs/tunnel.log", 4);
    let upstream = format!("127.0.0.1:{}", instance.port_of(8081));
    for line in &lines {
        assert!(line.starts_with(&format!("TCP 200 {upstream} ")), "{line}");
    }
    assert_eq!(
        tunnel.names.lock().expect("the names").as_slice(),
        ["db.portico.test"; 4],
        "the certificate each tunnelled session saw"
    );
}

/// The client end of a TLS tunnel: each connection accepted on 127.0.0.1:`port` is carried
/// over a new TLS connection to Portico. It runs until the test process ends.
struct Tunnel {
    port: u16,
    /// The common name of the certificate each connection was served.
    names: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Tunnel {
    fn start(portico_port: u16, server_name: &'static str) -> Tunnel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the tunnel");
        let port = listener.local_addr().expect("the tunnel's address").port();
        let names = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = std::sync::Arc::clone(&names);
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(plain) = connection else {
                    continue;
                };
                let seen = std::sync::Arc::clone(&seen);
                std::thread::spawn(move || {
                    let options = tls::Options::sni(server_name);
                    let Ok(secure) = tls::connect_stream(portico_port, &options) else {
                        return;
                    };
                    seen.lock()
                        .expect("the names")
                        .push(tls::stream_common_name(&secure));
                    relay(plain, secure);
                });
            }
        });
        Tunnel { port, names }
    }
}

/// Moves bytes both ways between a plain and a TLS connection until either ends or
/// [`PATIENCE`] passes; one thread, each side read with a short timeout in turn.
fn relay(mut plain: TcpStream, mut secure: tls::TlsStream) {
    const TURN: Duration = Duration::from_millis(2);
    let _ = plain.set_read_timeout(Some(TURN));
    let _ = secure.sock.set_read_timeout(Some(TURN));
    let deadline = Instant::now() + PATIENCE;
    let mut buf = vec![0u8; 64 * 1024];
    let waiting = |error: &std::io::Error| {
        matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
    };
    while Instant::now() < deadline {
        match plain.read(&mut buf) {
            Ok(0) => break,
            Ok(read) => {
                if secure
                    .write_all(&buf[..read])
                    .and_then(|()| secure.flush())
                    .is_err()
                {
                    break;
                }
            }
            Err(error) if waiting(&error) => {}
            Err(_) => break,
        }
        match secure.read(&mut buf) {
            Ok(0) => break,
            Ok(read) => {
                if plain.write_all(&buf[..read]).is_err() {
                    break;
                }
            }
            Err(error) if waiting(&error) => {}
            Err(_) => break,
        }
    }
    secure.conn.send_close_notify();
    let _ = secure.flush();
}

/// The names dnsmasq is asked for: the response code and the addresses expected.
const DNS_QUESTIONS: [(&str, u8, &[Ipv4Addr]); 4] = [
    ("db.portico.test", 0, &[Ipv4Addr::new(127, 0, 0, 42)]),
    (
        "www.portico.test",
        0,
        &[Ipv4Addr::new(192, 0, 2, 7), Ipv4Addr::new(192, 0, 2, 8)],
    ),
    ("mail.portico.test", 0, &[Ipv4Addr::new(198, 51, 100, 25)]),
    ("missing.portico.test", 3, &[]),
];

/// dnsmasq behind `listen ... udp` with `proxy_responses 1`: questions from several
/// clients at once, each answered from dnsmasq's hosts file (one name with two addresses,
/// a name it does not have), each answer matched to its question by id.
#[test]
fn dnsmasq_answers_queries_through_the_udp_proxy() {
    let Some(program) = Dnsmasq::find() else {
        return;
    };
    let mut builder = Instance::builder(
        r#"
worker_processes 1;
events {
}
stream {
    log_format dns "$protocol $status $upstream_addr $bytes_received $bytes_sent";
    server {
        listen 127.0.0.1:8080 udp;
        proxy_pass 127.0.0.1:8081;
        proxy_responses 1;
        proxy_timeout 5s;
        access_log logs/dns.log dns;
    }
}
"#,
    );
    let hosts = "127.0.0.42 db.portico.test\n\
                 192.0.2.7 www.portico.test\n\
                 192.0.2.8 www.portico.test\n\
                 198.51.100.25 mail.portico.test\n";
    let _dnsmasq = Dnsmasq::start(&program, builder.port(8081), hosts);
    let instance = builder.start();
    const CLIENTS: u16 = 4;
    const ROUNDS: u16 = 3;
    let port = instance.port();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            std::thread::spawn(move || {
                let socket = UdpSocket::bind("127.0.0.1:0").expect("bind a client");
                socket.set_read_timeout(Some(PATIENCE)).expect("timeout");
                for round in 0..ROUNDS {
                    for (index, (name, code, addresses)) in (0u16..).zip(DNS_QUESTIONS) {
                        let id = client * 1000 + round * 10 + index;
                        socket
                            .send_to(&dns::query(id, name), ("127.0.0.1", port))
                            .expect("send a question");
                        let mut packet = [0u8; 512];
                        let len = socket.recv(&mut packet).expect("an answer");
                        let answer = dns::answer(&packet[..len]).expect("a DNS answer");
                        let mut got = answer.addresses.clone();
                        got.sort();
                        assert_eq!(
                            (answer.id, answer.code, got.as_slice()),
                            (id, code, addresses),
                            "{name}"
                        );
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("a client");
    }
    // With one answer expected, every question was a session of its own.
    let total = usize::from(CLIENTS * ROUNDS) * DNS_QUESTIONS.len();
    let upstream = format!("127.0.0.1:{}", instance.port_of(8081));
    let lines = wait_for_lines(&instance, "logs/dns.log", total);
    assert_eq!(lines.len(), total);
    for line in &lines {
        assert!(line.starts_with(&format!("UDP 200 {upstream} ")), "{line}");
    }
}

/// TLS passed through untouched by the name in the client's hello: `ssl_preread` and a
/// `map` of `$ssl_preread_server_name` choose between two HTTPS servers (a second Portico,
/// each with its own certificate), and each client's TLS session ends there: the
/// certificate it was served and the answer are that server's. A hello without a name
/// goes to the `map`'s default; TLS 1.2 and 1.3 hellos alike.
#[test]
fn tls_is_passed_through_by_server_name_to_two_https_servers() {
    if !tls::have_openssl() {
        return;
    }
    let backends = tls::with_files(
        Instance::builder(
            r#"
worker_processes 1;
events {
}
http {
    server {
        listen 127.0.0.1:8081 ssl;
        ssl_certificate alpha.portico.test.crt;
        ssl_certificate_key alpha.portico.test.key;
        location / {
            return 200 "alpha [$ssl_server_name] $ssl_protocol";
        }
    }
    server {
        listen 127.0.0.1:8082 ssl;
        ssl_certificate beta.portico.test.crt;
        ssl_certificate_key beta.portico.test.key;
        location / {
            return 200 "beta [$ssl_server_name] $ssl_protocol";
        }
    }
}
"#,
        ),
        |directory| {
            tls::self_signed(directory, "alpha.portico.test", tls::Key::Rsa);
            tls::self_signed(directory, "beta.portico.test", tls::Key::Ecdsa);
        },
    )
    .start();
    let (alpha, beta) = (backends.port_of(8081), backends.port_of(8082));
    let proxy = Instance::start(
        &r#"
worker_processes 1;
events {
}
stream {
    log_format sni "[$ssl_preread_server_name] $ssl_preread_protocol $upstream_addr $status";
    map $ssl_preread_server_name $backend {
        alpha.portico.test  127.0.0.1:ALPHA;
        beta.portico.test   127.0.0.1:BETA;
        default             127.0.0.1:ALPHA;
    }
    server {
        listen 127.0.0.1:8080;
        ssl_preread on;
        proxy_pass $backend;
        access_log logs/sni.log sni;
    }
}
"#
        .replace("ALPHA", &alpha.to_string())
        .replace("BETA", &beta.to_string()),
    );
    let cases = [
        (
            Some("alpha.portico.test"),
            false,
            "alpha [alpha.portico.test] TLSv1.3",
            alpha,
        ),
        (
            Some("beta.portico.test"),
            false,
            "beta [beta.portico.test] TLSv1.3",
            beta,
        ),
        (
            Some("beta.portico.test"),
            true,
            "beta [beta.portico.test] TLSv1.2",
            beta,
        ),
        (None, false, "alpha [] TLSv1.3", alpha),
        (
            Some("alpha.portico.test"),
            true,
            "alpha [alpha.portico.test] TLSv1.2",
            alpha,
        ),
    ];
    for (name, tls12_only, body, _) in &cases {
        let options = tls::Options {
            server_name: name.map(str::to_owned),
            tls12_only: *tls12_only,
            ..tls::Options::default()
        };
        let mut client = tls::connect(proxy.port(), &options).expect("a TLS handshake");
        let certificate = tls::peer_common_name(&client);
        let response = client.request("GET / HTTP/1.0\r\nHost: portico.test\r\n\r\n");
        assert_eq!(response.status, 200);
        assert_eq!(response.body_text(), *body, "{name:?}");
        let expected_name = if body.starts_with("alpha") {
            "alpha.portico.test"
        } else {
            "beta.portico.test"
        };
        assert_eq!(certificate, expected_name, "{name:?}");
    }
    // A session is logged when it ends, which may be after the next one began.
    let mut lines = wait_for_lines(&proxy, "logs/sni.log", cases.len());
    lines.sort();
    let mut expected: Vec<String> = cases
        .iter()
        .map(|(name, tls12_only, _, port)| {
            let protocol = if *tls12_only { "TLSv1.2" } else { "TLSv1.3" };
            format!("[{}] {protocol} 127.0.0.1:{port} 200", name.unwrap_or("-"))
        })
        .collect();
    expected.sort();
    assert_eq!(lines, expected);
}
