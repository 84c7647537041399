//! An HTTP/3 client for the tests: the `h3` crate on `quinn`, trusting the certificate the
//! instance serves; requests sent in turn on one QUIC connection.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// A response as the test sees it.
pub struct Answer {
    pub status: u16,
    pub headers: http_types::HeaderMap,
    pub body: Vec<u8>,
}

/// A request: method, path and an optional body.
pub struct Ask {
    pub method: &'static str,
    pub path: String,
    pub body: Option<Bytes>,
}

pub fn get(path: &str) -> Ask {
    Ask {
        method: "GET",
        path: path.to_owned(),
        body: None,
    }
}

pub fn post(path: &str, body: impl Into<Bytes>) -> Ask {
    Ask {
        method: "POST",
        path: path.to_owned(),
        body: Some(body.into()),
    }
}

/// Accepts exactly the server's certificate (the tests' self-signed ones are marked as
/// CAs, which webpki refuses as a server's), with the handshake's signatures checked.
#[derive(Debug)]
struct Pinned {
    certificate: CertificateDer<'static>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.certificate.as_ref() {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "not the instance's certificate".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, certificate, signature, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, certificate, signature, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A `quinn` client endpoint that accepts the PEM certificate `certificate` and offers
/// `h3`.
fn endpoint(certificate: &[u8]) -> quinn::Endpoint {
    let certificate = CertificateDer::from_pem_slice(certificate).expect("a PEM certificate");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = Arc::new(Pinned {
        certificate,
        provider: Arc::clone(&provider),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut endpoint =
        quinn::Endpoint::client(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("socket");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

/// Sends `asks` in turn on one QUIC connection to `127.0.0.1:port` (SNI `localhost`) and
/// returns their answers in order; each exchange must end within ten seconds.
pub fn exchange(port: u16, certificate: &[u8], asks: Vec<Ask>) -> Vec<Answer> {
    try_exchange(port, certificate, asks, Duration::from_secs(10)).expect("the exchange")
}

/// As [`exchange`], with what went wrong as an error (the handshake and each exchange
/// bounded by `limit`).
pub fn try_exchange(
    port: u16,
    certificate: &[u8],
    asks: Vec<Ask>,
    limit: Duration,
) -> Result<Vec<Answer>, String> {
    let mut answers = try_exchanges(port, certificate, vec![asks], limit)?;
    Ok(answers.pop().unwrap_or_default())
}

/// As [`try_exchange`], one connection after another for each list of `rounds`, from one
/// client that keeps the sessions the server gave it (so the later handshakes may resume).
pub fn try_exchanges(
    port: u16,
    certificate: &[u8],
    rounds: Vec<Vec<Ask>>,
    limit: Duration,
) -> Result<Vec<Vec<Answer>>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a test runtime starts");
    runtime.block_on(async move {
        let endpoint = endpoint(certificate);
        let mut all = Vec::new();
        for asks in rounds {
            all.push(one_connection(&endpoint, port, asks, limit).await?);
        }
        Ok(all)
    })
}

/// Sends `asks` in turn on a new connection from `endpoint`.
async fn one_connection(
    endpoint: &quinn::Endpoint,
    port: u16,
    asks: Vec<Ask>,
    limit: Duration,
) -> Result<Vec<Answer>, String> {
    {
        let server = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let connecting = endpoint.connect(server, "localhost").expect("connect");
        let quic = tokio::time::timeout(limit, connecting)
            .await
            .map_err(|_| "the handshake did not end in time".to_owned())?
            .map_err(|error| format!("handshake: {error}"))?;
        let (mut driver, mut requests) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
            .await
            .map_err(|error| format!("h3: {error}"))?;
        let drive =
            tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        let mut answers = Vec::new();
        for ask in asks {
            let one = async {
                let request = http_types::Request::builder()
                    .method(ask.method)
                    .uri(format!("https://localhost{}", ask.path))
                    .body(())
                    .expect("request");
                let failed = |what: &str, error: &dyn std::fmt::Display| format!("{what}: {error}");
                let mut stream = requests
                    .send_request(request)
                    .await
                    .map_err(|error| failed("send", &error))?;
                if let Some(body) = ask.body {
                    stream
                        .send_data(body)
                        .await
                        .map_err(|error| failed("body", &error))?;
                }
                stream
                    .finish()
                    .await
                    .map_err(|error| failed("finish", &error))?;
                let response = stream
                    .recv_response()
                    .await
                    .map_err(|error| failed("response", &error))?;
                let mut body = Vec::new();
                while let Some(mut chunk) = stream
                    .recv_data()
                    .await
                    .map_err(|error| failed("data", &error))?
                {
                    while chunk.has_remaining() {
                        let piece = chunk.chunk();
                        body.extend_from_slice(piece);
                        let length = piece.len();
                        chunk.advance(length);
                    }
                }
                Ok::<Answer, String>(Answer {
                    status: response.status().as_u16(),
                    headers: response.headers().clone(),
                    body,
                })
            };
            let answer = tokio::time::timeout(limit, one)
                .await
                .map_err(|_| "the exchange did not end in time".to_owned())??;
            answers.push(answer);
        }
        drop(requests);
        quic.close(quinn::VarInt::from_u32(0x100), b"done");
        let _ = tokio::time::timeout(Duration::from_secs(2), drive).await;
        Ok(answers)
    }
}
