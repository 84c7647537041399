//! bench/tls.sh's handshake load: PARALLEL threads, each making one TLS 1.3 connection after
//! another until the time is up: a new TCP connection, a full handshake (with `--reuse`, a
//! resumption of the thread's previous session), `GET / HTTP/1.0` as `openssl s_time -www /`
//! sends it, the whole answer, a `close_notify`, close. Only connections that got through
//! all of it, with TLS 1.3 and an answer starting `HTTP/1.`, are counted. The server's
//! chain is not checked (the benchmark's certificate is self-signed); the signature of its
//! handshake is, as `proxy_ssl_verify off` does.
//!
//! Blocking sockets and rustls with aws-lc: a handshake costs the client less than with Go's
//! `crypto/tls` (bench/README.md, "Scenario tls").
//!
//! ```text
//! cargo build --release -p portico-tls --example handshakes
//! handshakes --connect 127.0.0.1:PORT [--time SECONDS] [--parallel N] [--reuse]
//! ```
//!
//! Prints "N connections in S real seconds" (the line bench/tls.sh reads), then the
//! client's own CPU time per connection, what the handshakes agreed on and how many of them
//! resumed a session (with `--reuse`, all but each thread's first).
// A load generator reports on stdout and stderr; that is its whole job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustls::client::Resumption;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{WebPkiSupportedAlgorithms, aws_lc_rs};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, Error, SignatureScheme};

/// The request of every connection, as `openssl s_time -www /` sends it.
const REQUEST: &[u8] = b"GET / HTTP/1.0\r\n\r\n";

/// How long a connection may take to connect, and then to answer each read or write.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(10);

struct Options {
    address: SocketAddr,
    time: Duration,
    parallel: usize,
    reuse: bool,
}

/// What the threads count together.
#[derive(Default)]
struct Tally {
    done: AtomicU64,
    /// Of those done, how many resumed a session.
    resumed: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
    /// The suite and group of the first connection that got through.
    agreed: OnceLock<String>,
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("handshakes: {message}");
            eprintln!(
                "usage: handshakes --connect HOST:PORT [--time SECONDS] [--parallel N] [--reuse]"
            );
            return ExitCode::from(2);
        }
    };
    let tally = Tally::default();
    let started = Instant::now();
    let deadline = started + options.time;
    std::thread::scope(|scope| {
        for _ in 0..options.parallel {
            scope.spawn(|| run_client(&options, deadline, &tally));
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let done = tally.done.load(Ordering::Relaxed);
    println!("{done} connections in {elapsed:.2} real seconds");
    if let (Some(cpu), true) = (own_cpu_time(), done > 0) {
        let per_connection = cpu.as_secs_f64() * 1e6 / done as f64;
        println!("client CPU {per_connection:.0} us per connection");
    }
    if let Some(agreed) = tally.agreed.get() {
        println!("agreed {agreed}");
    }
    println!(
        "resumed {} of {done}",
        tally.resumed.load(Ordering::Relaxed)
    );
    let failed = tally.failed.load(Ordering::Relaxed);
    if failed > 0 {
        let first = tally
            .first_error
            .lock()
            .map(|first| first.clone())
            .ok()
            .flatten();
        eprintln!(
            "{failed} connections failed, the first: {}",
            first.unwrap_or_default()
        );
        if done == 0 {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        address: SocketAddr::from(([127, 0, 0, 1], 443)),
        time: Duration::from_secs(5),
        parallel: 4,
        reuse: false,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        // `-connect` as Go's flags spell it, or `--connect`.
        match arg.trim_start_matches('-') {
            "connect" => {
                let value = value()?;
                options.address = value.parse().map_err(|_| format!("bad address {value}"))?;
            }
            "time" => {
                let value = value()?;
                let seconds: f64 = value
                    .trim_end_matches('s')
                    .parse()
                    .map_err(|_| format!("bad time {value}"))?;
                options.time = Duration::from_secs_f64(seconds);
            }
            "parallel" => {
                let value = value()?;
                options.parallel = value.parse().map_err(|_| format!("bad count {value}"))?;
            }
            "reuse" => options.reuse = true,
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    Ok(options)
}

/// The client's configuration: TLS 1.3 only, an X25519 key share (the group both servers
/// take; nginx's OpenSSL 3.0 has no post-quantum one), `TLS_AES_128_GCM_SHA256` first, as
/// Go's `crypto/tls` and the browsers order the suites on CPUs with AES instructions.
fn client_config(reuse: bool) -> Result<Arc<ClientConfig>, Error> {
    let mut provider = aws_lc_rs::default_provider();
    provider.kx_groups = vec![aws_lc_rs::kx_group::X25519];
    provider.cipher_suites = vec![
        aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256,
        aws_lc_rs::cipher_suite::TLS13_AES_256_GCM_SHA384,
        aws_lc_rs::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ];
    let verifier = Arc::new(AnyCertificate(provider.signature_verification_algorithms));
    let mut config = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.resumption = if reuse {
        Resumption::in_memory_sessions(16)
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(config))
}

/// Any certificate: the benchmark's is self-signed. The signature of the handshake is
/// still checked with the certificate's key, which is the cost a real client pays.
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// One client: connections one after another until `deadline`.
fn run_client(options: &Options, deadline: Instant, tally: &Tally) {
    let config = match client_config(options.reuse) {
        Ok(config) => config,
        Err(error) => {
            fail(tally, error.to_string());
            return;
        }
    };
    let mut buffer = vec![0u8; 16 * 1024];
    while Instant::now() < deadline {
        match connection(&config, options.address, &mut buffer) {
            Ok((agreed, resumed)) => {
                tally.done.fetch_add(1, Ordering::Relaxed);
                if resumed {
                    tally.resumed.fetch_add(1, Ordering::Relaxed);
                }
                if tally.agreed.get().is_none() {
                    let _ = tally.agreed.set(agreed);
                }
            }
            Err(error) => fail(tally, error.to_string()),
        }
    }
}

fn fail(tally: &Tally, message: String) {
    tally.failed.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut first) = tally.first_error.lock() {
        first.get_or_insert(message);
    }
}

/// One connection: handshake, request, the whole answer, close. Returns what the
/// handshake agreed on, and whether it resumed a session.
fn connection(
    config: &Arc<ClientConfig>,
    address: SocketAddr,
    buffer: &mut [u8],
) -> io::Result<(String, bool)> {
    let mut tcp = TcpStream::connect_timeout(&address, SOCKET_TIMEOUT)?;
    tcp.set_read_timeout(Some(SOCKET_TIMEOUT))?;
    tcp.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    tcp.set_nodelay(true)?;
    let name = ServerName::try_from("localhost").map_err(io::Error::other)?;
    let mut session = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
    loop {
        send(&mut session, &mut tcp)?;
        if !session.is_handshaking() {
            break;
        }
        receive(&mut session, &mut tcp)?;
    }
    if session.protocol_version() != Some(rustls::ProtocolVersion::TLSv1_3) {
        return Err(io::Error::other("not TLS 1.3"));
    }
    let agreed = format!(
        "{:?} {:?}",
        session.negotiated_cipher_suite().map(|suite| suite.suite()),
        session
            .negotiated_key_exchange_group()
            .map(|group| group.name()),
    );
    let resumed = session.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    session.writer().write_all(REQUEST)?;
    send(&mut session, &mut tcp)?;
    let mut answer_start = [0u8; 7];
    let mut answered = 0;
    'answer: loop {
        let ended = match receive(&mut session, &mut tcp) {
            Ok(()) => false,
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => true,
            Err(error) => return Err(error),
        };
        loop {
            match session.reader().read(buffer) {
                Ok(0) => break 'answer,
                Ok(read) => {
                    let take = read.min(answer_start.len() - answered);
                    answer_start[answered..answered + take].copy_from_slice(&buffer[..take]);
                    answered += take;
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => break 'answer,
                Err(error) => return Err(error),
            }
        }
        if ended {
            break;
        }
    }
    if &answer_start[..answered] != b"HTTP/1." {
        return Err(io::Error::other("no HTTP answer"));
    }
    session.send_close_notify();
    let _ = send(&mut session, &mut tcp);
    Ok((agreed, resumed))
}

/// Writes every pending record.
fn send(session: &mut ClientConnection, tcp: &mut TcpStream) -> io::Result<()> {
    while session.wants_write() {
        session.write_tls(tcp)?;
    }
    Ok(())
}

/// Reads once and processes what came; the end of the stream is `UnexpectedEof`.
fn receive(session: &mut ClientConnection, tcp: &mut TcpStream) -> io::Result<()> {
    if session.read_tls(tcp as &mut dyn Read)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    session
        .process_new_packets()
        .map(|_| ())
        .map_err(io::Error::other)
}

/// The process's user and system time so far, every thread's (`/proc/self/stat`, in the
/// kernel's fixed 100 ticks a second).
fn own_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 10))
}
