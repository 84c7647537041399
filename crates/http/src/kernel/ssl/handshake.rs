//! The TLS handshake of a client connection on an `ssl` address: SNI chooses the virtual
//! server (as a `Host` header would), whose certificate and settings finish it.

use std::rc::Rc;

use logging::Level;
use runtime::Stream;
use runtime::tls::{Accepted, Choice};

use crate::kernel::conf::{AddressConf, HttpConf, ServerId};
use crate::kernel::request::ConnectionInfo;
use crate::kernel::worker::HttpWorker;

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
pub(crate) fn server_for(conf: &HttpConf, address: &AddressConf, name: Option<&str>) -> ServerId {
    let Some(name) = name else {
        return address.default_server;
    };
    let host = name.to_ascii_lowercase();
    let mut captures = shared::regex::Captures::default();
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
    let timeout = conf.server(address.default_server).ssl.handshake_timeout;
    let chosen = std::cell::Cell::new(address.default_server);
    let choice_failed = std::cell::Cell::new(false);
    let handshake = async {
        let pending = match runtime::tls::read_hello(tcp).await {
            Ok(pending) => pending,
            Err(accepted) => return accepted,
        };
        let name = pending.server_name();
        chosen.set(server_for(worker.conf(), address, name.as_deref()));
        let choice = choose(worker, address, info, chosen.get(), name.as_deref()).await;
        choice_failed.set(matches!(choice, Choice::Fail(_)));
        pending.finish(choice).await
    };
    let accepted = tokio::time::timeout(timeout, handshake).await;
    let (level, message) = match accepted {
        Ok(Accepted::Tls(stream, handshake)) => return Start::Tls(stream, Rc::new(handshake)),
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
        // A configuration that could not be made was logged when it failed.
        Ok(Accepted::Failed(_)) if choice_failed.get() => return Start::End,
        Ok(Accepted::Failed(reason)) => (
            Level::Info,
            format!("SSL_do_handshake() failed (SSL: {reason}) while SSL handshaking"),
        ),
        Err(_) => (
            Level::Info,
            "client timed out (110: Connection timed out) while SSL handshaking".to_owned(),
        ),
    };
    log(worker, chosen.get(), info, level, &message);
    Start::End
}

/// The configuration for a hello that chose `server`: its own, else the default server's
/// (nginx's "no context" case); with variables in the certificate names, the pair the
/// connection's names resolve to, loaded off the loop. A pair that fails to load is
/// logged here with nginx's `cannot load certificate` line.
async fn choose(
    worker: &HttpWorker,
    address: &AddressConf,
    info: &ConnectionInfo,
    chosen: ServerId,
    name: Option<&str>,
) -> Choice {
    let conf = worker.conf();
    let server = conf.server(chosen);
    if server.ssl.reject_handshake {
        return Choice::Reject;
    }
    let write_chunk = server.ssl.buffer_size as usize;
    let owner = if server.tls.is_some() {
        server
    } else {
        conf.server(address.default_server)
    };
    let Some(tls) = owner.tls.clone() else {
        return Choice::Reject;
    };
    let Some(variable) = &owner.variable_certificates else {
        return Choice::Serve(tls, write_chunk);
    };
    match variable.configuration(worker, info, chosen, name).await {
        Ok(tls) => Choice::Serve(tls, write_chunk),
        Err((level, message)) => {
            log(
                worker,
                chosen,
                info,
                level,
                &format!("{message} while SSL handshaking"),
            );
            Choice::Fail("cert cb error".to_owned())
        }
    }
}

fn log(worker: &HttpWorker, server: ServerId, info: &ConnectionInfo, level: Level, message: &str) {
    crate::kernel::request_log::log_connection_to(
        worker,
        info,
        server,
        level,
        None,
        format_args!("{message}"),
    );
}
