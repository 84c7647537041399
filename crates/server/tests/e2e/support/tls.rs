//! TLS for the e2e tests: certificates made by the `openssl` command (never committed),
//! and a client (rustls) whose options say what a test needs: an SNI name, a client
//! certificate, TLS 1.2 only, the signature schemes it accepts, a session store to
//! resume from.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};

use super::client::Client;
use super::wait::PATIENCE;

pub type TlsStream = rustls::StreamOwned<ClientConnection, TcpStream>;

/// Whether the `openssl` command is there to make certificates; a test without it says
/// so and does nothing else.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
pub fn have_openssl() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        eprintln!("skipped: the openssl command is not installed");
    }
    found
}

fn openssl(directory: &Path, arguments: &[&str]) {
    let output = Command::new("openssl")
        .current_dir(directory)
        .args(arguments)
        .output()
        .expect("run openssl");
    assert!(
        output.status.success(),
        "openssl {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes `NAME.ocsp.der`, a "good" OCSP response for the certificate `NAME` (issued by the
/// CA `issuer` with [`issued`]), signed by that CA.
pub fn ocsp_response(directory: &Path, name: &str, issuer: &str) {
    ocsp_response_signed(directory, name, issuer, issuer, &format!("{name}.ocsp.der"));
}

/// Writes `response`, a "good" OCSP response for the certificate `NAME` of the CA
/// `issuer`, signed by the CA `signer` (which may be another one).
pub fn ocsp_response_signed(
    directory: &Path,
    name: &str,
    issuer: &str,
    signer: &str,
    response: &str,
) {
    let issuer_crt = format!("{issuer}.crt");
    let (signer_crt, signer_key) = (format!("{signer}.crt"), format!("{signer}.key"));
    let (crt, request) = (format!("{name}.crt"), format!("{name}.ocsp-request.der"));
    openssl(
        directory,
        &[
            "ocsp",
            "-issuer",
            &issuer_crt,
            "-cert",
            &crt,
            "-no_nonce",
            "-reqout",
            &request,
        ],
    );
    openssl(
        directory,
        &[
            "ocsp",
            "-index",
            "index.txt",
            "-rsigner",
            &signer_crt,
            "-rkey",
            &signer_key,
            "-CA",
            &issuer_crt,
            "-reqin",
            &request,
            "-respout",
            response,
            "-ndays",
            "1",
        ],
    );
}

/// The kind of key a certificate gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Rsa,
    Ecdsa,
}

fn key_arguments(key: Key) -> &'static [&'static str] {
    match key {
        Key::Rsa => &["-newkey", "rsa:2048"],
        Key::Ecdsa => &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
    }
}

/// Writes `NAME.crt` and `NAME.key` into `directory`: self-signed, for the DNS name `name`,
/// valid for a day.
pub fn self_signed(directory: &Path, name: &str, key: Key) {
    let mut arguments = vec!["req", "-x509", "-nodes", "-days", "1"];
    arguments.extend_from_slice(key_arguments(key));
    let subject = format!("/CN={name}");
    let san = format!("subjectAltName=DNS:{name}");
    let (crt, key_file) = (format!("{name}.crt"), format!("{name}.key"));
    arguments.extend_from_slice(&[
        "-subj", &subject, "-addext", &san, "-keyout", &key_file, "-out", &crt,
    ]);
    openssl(directory, &arguments);
}

/// Writes a CA (`NAME.crt`, `NAME.key`) into `directory`.
pub fn authority(directory: &Path, name: &str) {
    let subject = format!("/CN={name}");
    let (crt, key) = (format!("{name}.crt"), format!("{name}.key"));
    openssl(
        directory,
        &[
            "req",
            "-x509",
            "-nodes",
            "-days",
            "1",
            "-newkey",
            "rsa:2048",
            "-subj",
            &subject,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            &key,
            "-out",
            &crt,
        ],
    );
}

/// Writes `NAME.crt` and `NAME.key` signed by the CA `issuer`, valid from `days_from` to
/// `days_to` days from now (negative for the past).
pub fn issued(directory: &Path, name: &str, issuer: &str, days: (i64, i64)) {
    issued_with(
        directory,
        name,
        issuer,
        days,
        &format!("subjectAltName=DNS:{name}\nbasicConstraints=CA:FALSE\n"),
    );
}

/// Writes `NAME.crt` and `NAME.key`, an intermediate CA signed by the CA `issuer`.
pub fn intermediate(directory: &Path, name: &str, issuer: &str) {
    issued_with(
        directory,
        name,
        issuer,
        (-1, 1),
        "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n",
    );
}

pub fn issued_with(directory: &Path, name: &str, issuer: &str, days: (i64, i64), extensions: &str) {
    let (csr, key, crt) = (
        format!("{name}.csr"),
        format!("{name}.key"),
        format!("{name}.crt"),
    );
    let subject = format!("/CN={name}/O=Portico Test");
    openssl(
        directory,
        &[
            "req", "-new", "-nodes", "-newkey", "rsa:2048", "-subj", &subject, "-keyout", &key,
            "-out", &csr,
        ],
    );
    let extension_file = format!("{name}.ext");
    std::fs::write(directory.join(&extension_file), extensions).expect("write the extensions file");
    let (start, end) = (offset(days.0), offset(days.1));
    let (issuer_crt, issuer_key) = (format!("{issuer}.crt"), format!("{issuer}.key"));
    ca_files(directory);
    openssl(
        directory,
        &[
            "ca",
            "-batch",
            "-config",
            "ca.conf",
            "-notext",
            "-preserveDN",
            "-in",
            &csr,
            "-cert",
            &issuer_crt,
            "-keyfile",
            &issuer_key,
            "-startdate",
            &start,
            "-enddate",
            &end,
            "-extfile",
            &extension_file,
            "-out",
            &crt,
        ],
    );
}

/// The files `openssl ca` keeps: `ca.conf`, its database, the next serial (0x1234 first)
/// and the next CRL number.
pub fn ca_files(directory: &Path) {
    if directory.join("ca.conf").exists() {
        return;
    }
    let files = [
        (
            "ca.conf",
            "[ ca ]\ndefault_ca = own\n[ own ]\ndatabase = index.txt\nnew_certs_dir = .\n\
             serial = serial\ncrlnumber = crlnumber\ndefault_md = sha256\n\
             default_crl_days = 1\npolicy = anything\n[ anything ]\ncommonName = supplied\n\
             organizationName = optional\n",
        ),
        ("index.txt", ""),
        ("serial", "1234\n"),
        ("crlnumber", "1000\n"),
    ];
    for (name, text) in files {
        std::fs::write(directory.join(name), text).expect("write a CA file");
    }
}

/// An OpenSSL time `days` from now, `YYYYMMDDHHMMSSZ`.
fn offset(days: i64) -> String {
    let output = Command::new("date")
        .args(["-u", "-d", &format!("{days} days"), "+%Y%m%d%H%M%SZ"])
        .output()
        .expect("run date");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// What a test client offers.
#[derive(Clone, Default)]
pub struct Options {
    pub server_name: Option<String>,
    /// `(certificate, key)` files for client authentication.
    pub certificate: Option<(PathBuf, PathBuf)>,
    pub tls12_only: bool,
    /// The signature schemes offered; `None` is rustls's list.
    pub schemes: Option<Vec<SignatureScheme>>,
    /// Connections given the same value share one client configuration and its session
    /// cache, and so resume (rustls resumes only with the configuration that made the
    /// session).
    pub sessions: Option<Sessions>,
    pub alpn: Vec<Vec<u8>>,
    /// Bytes written before the handshake: a PROXY protocol header.
    pub preamble: Vec<u8>,
}

impl Options {
    pub fn sni(name: &str) -> Options {
        Options {
            server_name: Some(name.to_owned()),
            ..Options::default()
        }
    }
}

/// The shared configuration of [`Options::sessions`], made by the first connection.
pub type Sessions = Arc<std::sync::Mutex<Option<Arc<ClientConfig>>>>;

/// A new [`Sessions`].
pub fn session_store() -> Sessions {
    Arc::new(std::sync::Mutex::new(None))
}

/// Accepts any server certificate (the tests look at it themselves) and checks the
/// handshake signature; offers only `schemes` when given.
#[derive(Debug)]
struct AnyCertificate {
    schemes: Vec<SignatureScheme>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = provider().signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, &algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = provider().signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, &algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes.clone()
    }
}

fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

fn config(options: &Options) -> ClientConfig {
    let versions: &[&rustls::SupportedProtocolVersion] = if options.tls12_only {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let schemes = options.schemes.clone().unwrap_or_else(|| {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    });
    let builder = ClientConfig::builder_with_provider(Arc::new(provider()))
        .with_protocol_versions(versions)
        .expect("valid versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate { schemes }));
    let mut config = match &options.certificate {
        Some((certificate, key)) => {
            let chain = CertificateDer::pem_file_iter(certificate)
                .expect("read the client certificate")
                .collect::<Result<Vec<_>, _>>()
                .expect("parse the client certificate");
            let key = PrivateKeyDer::from_pem_file(key).expect("read the client key");
            builder
                .with_client_auth_cert(chain, key)
                .expect("a valid client certificate")
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = options.alpn.clone();
    config.enable_sni = options.server_name.is_some();
    config
}

/// Connects to 127.0.0.1:`port` and completes a handshake; the error says why one failed.
pub fn connect(port: u16, options: &Options) -> std::io::Result<Client> {
    connect_stream(port, options).map(Client::from_tls)
}

/// [`connect`], but the TLS stream itself, for a test that relays bytes over it.
pub fn connect_stream(port: u16, options: &Options) -> std::io::Result<TlsStream> {
    let name = options
        .server_name
        .clone()
        .unwrap_or_else(|| "127.0.0.1".to_owned());
    let server_name = ServerName::try_from(name).expect("a valid server name");
    let config = match &options.sessions {
        Some(sessions) => {
            let mut shared = sessions.lock().expect("the sessions lock");
            shared
                .get_or_insert_with(|| Arc::new(config(options)))
                .clone()
        }
        None => Arc::new(config(options)),
    };
    let connection = ClientConnection::new(config, server_name).map_err(std::io::Error::other)?;
    let mut socket = TcpStream::connect(("127.0.0.1", port))?;
    socket.set_read_timeout(Some(PATIENCE))?;
    std::io::Write::write_all(&mut socket, &options.preamble)?;
    let mut stream = rustls::StreamOwned::new(connection, socket);
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(stream)
}

/// The leaf certificate the server presented, as its subject's common name.
pub fn peer_common_name(client: &Client) -> String {
    stream_common_name(client.tls().expect("a TLS client"))
}

/// [`peer_common_name`] of a TLS stream.
pub fn stream_common_name(stream: &TlsStream) -> String {
    let certificate = stream
        .conn
        .peer_certificates()
        .and_then(|chain| chain.first())
        .expect("the server sent a certificate");
    let output = Command::new("openssl")
        .args(["x509", "-noout", "-subject", "-inform", "DER"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("a stdin pipe")
                .write_all(certificate.as_ref())?;
            child.wait_with_output()
        })
        .expect("run openssl x509");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.split("CN = ")
        .nth(1)
        .or_else(|| text.split("CN=").nth(1))
        .unwrap_or("")
        .split(',')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// How many certificates the server sent.
pub fn peer_chain_len(client: &Client) -> usize {
    let stream = client.tls().expect("a TLS client");
    stream.conn.peer_certificates().map_or(0, <[_]>::len)
}

/// Whether the connection resumed a session.
pub fn resumed(client: &Client) -> bool {
    let stream = client.tls().expect("a TLS client");
    stream.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}

/// `GET PATH` with a `Host` over a new TLS connection; the response.
pub fn get(port: u16, options: &Options, path: &str) -> super::Response {
    let host = options
        .server_name
        .clone()
        .unwrap_or_else(|| "localhost".to_owned());
    let mut client = connect(port, options).expect("a TLS handshake");
    client.request(super::get_host(path, &host))
}

/// Adds to `builder` every file `make` writes into a scratch directory (certificates and
/// keys made for this test).
pub fn with_files(mut builder: super::Builder, make: impl FnOnce(&Path)) -> super::Builder {
    let scratch = super::TempPrefix::new();
    make(scratch.path());
    let mut entries: Vec<_> = std::fs::read_dir(scratch.path())
        .expect("read the scratch directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(&path).expect("read a made file");
        builder = builder.file(&name, bytes);
    }
    builder
}

/// An instance serving `body` with `localhost.crt`/`.key` (RSA) made for it.
pub fn start(body: &str) -> super::Instance {
    with_files(super::Instance::http_builder(body), |directory| {
        self_signed(directory, "localhost", Key::Rsa);
    })
    .start()
}
