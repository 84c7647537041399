//! `listen ... proxy_protocol`: the PROXY protocol header a load balancer sends before
//! anything else on the connection (before the TLS handshake on an `ssl` address).
//!
//! The header is looked at with `MSG_PEEK` until it is whole, then exactly its bytes are
//! read, so nothing of what follows is taken from the socket: the TLS handshake and the
//! request head are read afterwards as on any connection. nginx judges the bytes of its
//! first read; Portico waits for a header that arrives in pieces, within the default
//! server's `client_header_timeout`, as nginx bounds the wait for the header.

use std::io;
use std::time::Duration;

use logging::Level;
use runtime::Stream;
use shared::proxy_protocol::{MAX_HEADER, Parsed};

use crate::kernel::conf::{AddressConf, ServerId};
use crate::kernel::request::ConnectionInfo;
use crate::kernel::worker::HttpWorker;

pub use shared::proxy_protocol::{ProxyHeader, TlvName};

/// What the connection's error-log lines say it was doing.
const ACTION: &str = "reading PROXY protocol";

/// How reading the header ended, when it did not give one.
enum Failure {
    /// The client closed before sending a byte.
    Closed,
    /// Logged already, or nothing worth a line (a failed system call).
    Quiet,
    Broken(shared::proxy_protocol::Broken),
}

/// On a `proxy_protocol` address, reads a new connection's header into `info`, under the
/// default server's `client_header_timeout`; `false` when the connection must close.
pub(crate) async fn start(
    worker: &HttpWorker,
    address: &AddressConf,
    stream: &Stream,
    info: &mut ConnectionInfo,
) -> bool {
    if !address.proxy_protocol {
        return true;
    }
    let server = address.default_server;
    let timeout = worker.conf().server(server).core.client_header_timeout;
    match read(worker, stream, info, server, timeout).await {
        Some(header) => {
            info.proxy_protocol = header.map(Box::new);
            true
        }
        None => false,
    }
}

/// Reads the PROXY header of a new connection on a `proxy_protocol` address: `Some` with
/// what it said (`None` inside for `UNKNOWN` and `LOCAL`), or `None` when the connection
/// must close (the reason is logged as nginx logs it: a broken header at `error`, a
/// timeout or an early close at `info`).
async fn read(
    worker: &HttpWorker,
    stream: &Stream,
    info: &ConnectionInfo,
    server: ServerId,
    timeout: Duration,
) -> Option<Option<ProxyHeader>> {
    let result = tokio::time::timeout(timeout, read_header(worker, stream)).await;
    let (level, message) = match result {
        Ok(Ok(header)) => return Some(header),
        Ok(Err(Failure::Quiet)) => return None,
        Ok(Err(Failure::Closed)) => (Level::Info, "client closed connection".to_owned()),
        Ok(Err(Failure::Broken(broken))) => (Level::Error, broken.to_string()),
        Err(_) => (
            Level::Info,
            "client timed out (110: Connection timed out)".to_owned(),
        ),
    };
    crate::kernel::request_log::log_connection_to(
        worker,
        info,
        server,
        level,
        Some(ACTION),
        format_args!("{message}"),
    );
    None
}

/// Peeks until the header is whole, then consumes exactly its bytes. A connection that
/// has sent nothing yet is idle to a draining worker, which closes it quietly.
async fn read_header(worker: &HttpWorker, stream: &Stream) -> Result<Option<ProxyHeader>, Failure> {
    let mut buf = vec![0u8; MAX_HEADER];
    // The client closed its side: what has arrived is all there will be.
    let mut closed = false;
    loop {
        let peeked = match stream.try_peek(&mut buf) {
            Ok(0) if worker.idle_grace_over() => return Err(Failure::Quiet),
            Ok(0) => return Err(Failure::Closed),
            Ok(peeked) => peeked,
            // Nothing is queued: no byte of the header has arrived.
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                if worker.idle_grace_over() {
                    return Err(Failure::Quiet);
                }
                let _idle = worker.register_idle(stream.raw_fd());
                closed = stream
                    .readable_or_closed()
                    .await
                    .map_err(|_| Failure::Quiet)?;
                continue;
            }
            Err(_) => return Err(Failure::Quiet),
        };
        match shared::proxy_protocol::parse(&buf[..peeked], closed) {
            Parsed::Done { len, header } => {
                consume(stream, &mut buf[..len]).await?;
                return Ok(header);
            }
            Parsed::Invalid(broken) => return Err(Failure::Broken(broken)),
            Parsed::Incomplete => {
                stream.clear_readable();
                closed = stream
                    .readable_or_closed()
                    .await
                    .map_err(|_| Failure::Quiet)?;
            }
        }
    }
}

/// Reads the header's bytes, which the peek showed are already there.
async fn consume(stream: &Stream, buf: &mut [u8]) -> Result<(), Failure> {
    let mut done = 0;
    while done < buf.len() {
        match stream.try_read(&mut buf[done..]) {
            Ok(0) => return Err(Failure::Quiet),
            Ok(read) => done += read,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                stream.readable().await.map_err(|_| Failure::Quiet)?;
            }
            Err(_) => return Err(Failure::Quiet),
        }
    }
    Ok(())
}
