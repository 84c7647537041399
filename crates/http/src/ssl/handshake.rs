//! The TLS handshake of a client connection on an `ssl` address: SNI chooses the virtual
//! server (as a `Host` header would), whose certificate and settings finish it.

use std::rc::Rc;

use logging::Level;
use runtime::Stream;
use runtime::tls::Accepted;

use crate::conf::{AddressConf, ServerId};
use crate::request::ConnectionInfo;
use crate::worker::HttpWorker;

/// How the start of a connection on an `ssl` address went.
pub(crate) enum Start {
    /// Handshake done: the stream carries TLS.
    Tls(Stream, Rc<tls::HandshakeInfo>),
    /// The client spoke plain HTTP: it gets nginx's 400 "The plain HTTP request was sent to
    /// HTTPS port" once its head is read.
    Plain(Stream),
    /// Nothing more to do: closed, failed, timed out or rejected (logged).
    End,
}

/// The server a hello's SNI name selects on `address`.
fn server_for(worker: &HttpWorker, address: &AddressConf, name: Option<&str>) -> ServerId {
    let conf = worker.conf();
    let Some(name) = name else {
        return address.default_server;
    };
    let host = name.to_ascii_lowercase();
    let mut captures = crate::conf::regex::Captures::default();
    address
        .names
        .find(
            host.as_bytes(),
            |index| &conf.server_regexes[index],
            &mut captures,
        )
        .map_or(address.default_server, |(server, _)| server)
}

/// Runs the handshake under the default server's `ssl_handshake_timeout`.
pub(crate) async fn start(
    worker: &HttpWorker,
    address: &AddressConf,
    stream: Stream,
    info: &ConnectionInfo,
) -> Start {
    let Stream::Tcp(tcp) = stream else {
        return Start::Plain(stream);
    };
    let conf = worker.conf();
    let default_server = conf.server(address.default_server);
    let timeout = default_server.ssl.handshake_timeout;
    let mut chosen = address.default_server;
    let mut choose = |name: Option<&str>| {
        chosen = server_for(worker, address, name);
        let server = conf.server(chosen);
        if server.ssl.reject_handshake {
            return None;
        }
        let tls = server.tls.clone().or_else(|| default_server.tls.clone())?;
        Some((tls, server.ssl.buffer_size as usize))
    };
    let accepted = tokio::time::timeout(timeout, runtime::tls::accept(tcp, &mut choose)).await;
    let (level, message) = match accepted {
        Ok(Accepted::Tls(stream)) => {
            let handshake = stream.tls_info().cloned().unwrap_or_default();
            return Start::Tls(stream, Rc::new(handshake));
        }
        Ok(Accepted::Plain(stream)) => return Start::Plain(stream),
        Ok(Accepted::Closed) => (
            Level::Info,
            "peer closed connection in SSL handshake while SSL handshaking".to_owned(),
        ),
        Ok(Accepted::Rejected) => (
            Level::Info,
            "SSL_do_handshake() failed (SSL: error:0A0000E0:SSL routines::tlsv1 alert \
             unrecognized name) while SSL handshaking"
                .to_owned(),
        ),
        Ok(Accepted::Failed(reason)) => (
            Level::Info,
            format!("SSL_do_handshake() failed (SSL: {reason}) while SSL handshaking"),
        ),
        Err(_) => (
            Level::Info,
            "client timed out (110: Connection timed out) while SSL handshaking".to_owned(),
        ),
    };
    log(worker, chosen, info, level, &message);
    Start::End
}

fn log(worker: &HttpWorker, server: ServerId, info: &ConnectionInfo, level: Level, message: &str) {
    let conf = worker.conf();
    let error_log = &conf
        .location(conf.server(server).location)
        .settings
        .core
        .error_log;
    if !error_log.enabled(level) {
        return;
    }
    let context = crate::request::RequestLogContext {
        request: None,
        connection: info,
        conf,
        action: None,
    };
    error_log.write(
        level,
        &worker.clock.wall(),
        Some(info.id),
        format_args!("{message}"),
        Some(&context),
    );
}
