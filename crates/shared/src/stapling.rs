//! `ssl_stapling on` without `ssl_stapling_file` (http and stream servers): each
//! certificate's OCSP response is fetched from its responder (`ssl_stapling_responder`,
//! else the certificate's own) over HTTP on a worker's loop, checked
//! (`ssl_stapling_verify` adds the signer's check), and stapled to the certificate's
//! handshakes until it is renewed. One worker fetches for all: a certificate's next fetch
//! is claimed under its lock.

use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where a worker's stapling reports a failed fetch or check (its error log, at `error`).
pub type Report = Rc<dyn Fn(std::fmt::Arguments<'_>)>;

/// How long an exchange with a responder may take (nginx's).
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);
/// A response is fetched again this long after a good one at the latest (nginx's hour)...
const REFRESH_MAX: Duration = Duration::from_secs(3600);
/// ...and this long before it expires.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(300);
/// After a failed fetch, the next one (nginx's five minutes).
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(300);
/// A responder's answer is read up to this size.
const RESPONSE_MAX: usize = 1 << 20;

/// One certificate's stapling.
#[derive(Debug)]
pub struct Stapling {
    /// The certificate file, for the error log.
    certificate: String,
    query: tls::OcspQuery,
    slot: Arc<tls::StapleSlot>,
    verify: bool,
    responder: Responder,
    /// When the next fetch is due, and whether a worker is fetching.
    state: Mutex<(Instant, bool)>,
}

/// An `http://host[:port]/path` responder.
#[derive(Debug)]
struct Responder {
    host: String,
    path: String,
    addresses: Vec<SocketAddr>,
}

impl Stapling {
    /// Stapling for `pair` of the certificate file `certificate`; a warning in nginx's
    /// words when it cannot be done (no issuer, no responder, a responder not found).
    pub fn new(
        certificate: &str,
        pair: &tls::CertificatePair,
        trusted: &[impl AsRef<[u8]>],
        responder: Option<&str>,
        verify: bool,
    ) -> Result<(tls::CertificatePair, Stapling), String> {
        let ignored = |reason: &str| format!("\"ssl_stapling\" ignored, {reason}");
        let query = tls::ocsp_query(pair, trusted, responder)
            .map_err(|reason| ignored(&format!("{reason} for certificate \"{certificate}\"")))?;
        let target = Responder::parse(&query.responder).map_err(|reason| ignored(&reason))?;
        let (pair, slot) = pair.with_staple_slot();
        let stapling = Stapling {
            certificate: certificate.to_owned(),
            query,
            slot,
            verify,
            responder: target,
            state: Mutex::new((Instant::now(), false)),
        };
        Ok((pair, stapling))
    }

    /// Takes the next fetch when it is due and no other worker has it; else when to look
    /// again.
    fn claim(&self, now: Instant) -> Result<(), Instant> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let (due, busy) = *state;
        if busy {
            return Err(now + Duration::from_secs(1));
        }
        if due > now {
            return Err(due);
        }
        state.1 = true;
        Ok(())
    }

    fn release(&self, next: Instant) {
        *self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = (next, false);
    }

    /// Fetches and checks the response; the next fetch's time.
    async fn renew(&self, report: &Report) -> Instant {
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch()).await;
        let response = match fetched {
            Ok(Ok(response)) => response,
            Ok(Err(reason)) => return self.failed(report, &reason),
            Err(_) => return self.failed(report, "OCSP responder timed out"),
        };
        match tls::check_ocsp(&self.query, &response, self.verify, SystemTime::now()) {
            Ok(good) => {
                self.slot.staple(response);
                let now = SystemTime::now();
                let until_expiry = good
                    .next_update
                    .and_then(|next| next.duration_since(now).ok())
                    .map(|left| left.saturating_sub(REFRESH_BEFORE_EXPIRY));
                let wait = until_expiry.map_or(REFRESH_MAX, |left| left.min(REFRESH_MAX));
                Instant::now() + wait.max(Duration::from_secs(1))
            }
            Err(reason) => {
                self.slot.clear();
                self.failed(report, &reason)
            }
        }
    }

    fn failed(&self, report: &Report, reason: &str) -> Instant {
        report(format_args!(
            "{reason} (OCSP responder: {}{}) while requesting certificate status, \
                 responder: {}, certificate: \"{}\"",
            self.responder.host, self.responder.path, self.responder.host, self.certificate
        ));
        Instant::now() + RETRY_AFTER_ERROR
    }

    /// One GET to the responder (the request base64-encoded in the path, as nginx asks),
    /// from the first address that takes the connection; the response's body.
    async fn fetch(&self) -> Result<Vec<u8>, String> {
        let mut stream = None;
        let mut last_error = String::from("no address");
        for address in &self.responder.addresses {
            match tokio::net::TcpStream::connect(address).await {
                Ok(connected) => {
                    stream = Some(connected);
                    break;
                }
                Err(error) => last_error = format!("connect() to {address} failed ({error})"),
            }
        }
        let mut stream = stream.ok_or(last_error)?;
        let encoded = self.query.path_segment();
        let separator = if self.responder.path.ends_with('/') {
            ""
        } else {
            "/"
        };
        let head = format!(
            "GET {}{separator}{encoded} HTTP/1.0\r\nHost: {}\r\n\r\n",
            self.responder.path, self.responder.host
        );
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|error| format!("send() failed ({error})"))?;
        let mut answer = Vec::new();
        (&mut stream)
            .take(RESPONSE_MAX as u64)
            .read_to_end(&mut answer)
            .await
            .map_err(|error| format!("recv() failed ({error})"))?;
        body_of(&answer)
    }
}

/// What [`staple_pairs`] made of a server's pairs.
pub struct Stapled {
    /// The pairs, with a slot each where they could be stapled.
    pub pairs: Vec<tls::CertificatePair>,
    /// The staplings for the workers to follow.
    pub staplings: Vec<Arc<Stapling>>,
    /// nginx's warnings for the certificates that cannot be stapled (they are served
    /// without), for the load to print.
    pub warnings: Vec<conf::ConfError>,
}

/// `ssl_stapling on` without a file: each of `pairs` (of the files `certificates`) gets a
/// slot its fetched responses go to.
pub fn staple_pairs(
    pairs: Vec<tls::CertificatePair>,
    certificates: &[String],
    trusted: &[impl AsRef<[u8]>],
    responder: Option<&str>,
    verify: bool,
) -> Stapled {
    let mut stapled = Stapled {
        pairs: Vec::with_capacity(pairs.len()),
        staplings: Vec::new(),
        warnings: Vec::new(),
    };
    for (pair, certificate) in pairs.into_iter().zip(certificates) {
        match Stapling::new(certificate, &pair, trusted, responder, verify) {
            Ok((pair, stapling)) => {
                stapled.staplings.push(Arc::new(stapling));
                stapled.pairs.push(pair);
            }
            Err(warning) => {
                stapled.warnings.push(conf::ConfError::new(
                    conf::ConfErrorKind::Message(warning),
                    None,
                ));
                stapled.pairs.push(pair);
            }
        }
    }
    stapled
}

impl Responder {
    fn parse(url: &str) -> Result<Responder, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("invalid URL prefix in OCSP responder \"{url}\""))?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let with_port = if authority.rsplit_once(':').is_some_and(|(_, port)| {
            !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit())
        }) {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let addresses: Vec<SocketAddr> = with_port
            .to_socket_addrs()
            .map(Iterator::collect)
            .unwrap_or_default();
        if addresses.is_empty() {
            return Err(format!("host not found in OCSP responder \"{url}\""));
        }
        Ok(Responder {
            host: authority.to_owned(),
            path: path.to_owned(),
            addresses,
        })
    }
}

/// The body of an HTTP/1 response to the GET, which must be a 200.
fn body_of(answer: &[u8]) -> Result<Vec<u8>, String> {
    // The head ends at an empty line; its lines may end with a bare LF, as nginx takes.
    let (end, body_start) = (0..answer.len())
        .find_map(|at| {
            let rest = &answer[at..];
            if rest.starts_with(b"\n\r\n") {
                Some((at, at + 3))
            } else if rest.starts_with(b"\n\n") {
                Some((at, at + 2))
            } else {
                None
            }
        })
        .ok_or("OCSP responder sent an incomplete response")?;
    let head = String::from_utf8_lossy(&answer[..end]);
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or("OCSP responder sent an invalid response")?;
    if status != 200 {
        return Err(format!("OCSP responder sent unexpected status {status}"));
    }
    let body = &answer[body_start..];
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    Ok(match length {
        Some(length) => body
            .get(..length)
            .ok_or("OCSP responder sent a short body")?,
        None => body,
    }
    .to_vec())
}

/// Follows `staplings` on this worker: fetches each when it is due and no other worker
/// does, until the worker stops (the caller aborts the task).
pub async fn follow(staplings: Vec<Arc<Stapling>>, report: Report) {
    let mut followers = tokio::task::JoinSet::new();
    for stapling in staplings {
        let report = Rc::clone(&report);
        followers.spawn_local(async move {
            loop {
                match stapling.claim(Instant::now()) {
                    Ok(()) => {
                        let next = stapling.renew(&report).await;
                        stapling.release(next);
                    }
                    Err(until) => {
                        tokio::time::sleep_until(tokio::time::Instant::from_std(until)).await;
                    }
                }
            }
        });
    }
    while followers.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_body_is_taken_only_from_a_200() {
        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef";
        assert_eq!(body_of(answer).expect("body"), b"abc");
        let answer = b"HTTP/1.0 200 OK\r\n\r\nabcdef";
        assert_eq!(body_of(answer).expect("to the end"), b"abcdef");
        let answer = b"HTTP/1.1 200 OK\nConnection: close\n\nabc";
        assert_eq!(body_of(answer).expect("bare LF lines"), b"abc");
        let answer = b"HTTP/1.1 404 Not Found\r\n\r\n";
        assert_eq!(
            body_of(answer).expect_err("not a 200"),
            "OCSP responder sent unexpected status 404"
        );
        assert!(body_of(b"HTTP/1.1 200 OK\r\n").is_err(), "no end of head");
    }

    #[test]
    fn only_http_responders_with_a_known_host() {
        let responder = Responder::parse("http://127.0.0.1:8081/ocsp").expect("parsed");
        assert_eq!(responder.path, "/ocsp");
        assert_eq!(responder.addresses, ["127.0.0.1:8081".parse().unwrap()]);
        let responder = Responder::parse("http://127.0.0.1").expect("parsed");
        assert_eq!(
            (responder.path.as_str(), responder.addresses[0].port()),
            ("/", 80)
        );
        assert!(
            Responder::parse("https://127.0.0.1/")
                .expect_err("https")
                .contains("invalid URL prefix")
        );
    }
}
