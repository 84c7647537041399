//! The stream block's listening sockets on a worker: TCP and Unix sockets accept within
//! `worker_connections` (the same gauge as the http block's), UDP sockets read datagrams.

use std::rc::Rc;

use http::HttpWorker;
use logging::Level;
use runtime::accept::{Accepted, WorkerListener, accept_loop};
use runtime::{AcceptSettings, ListenAddress, Listener, WorkerContext};
use stream::StreamWorker;

/// Registers `listener` (stream socket `socket_index`) with this worker and starts serving
/// it.
pub fn start(
    stream_worker: &Rc<StreamWorker>,
    socket_index: usize,
    listener: &Listener,
    context: &WorkerContext,
    accept: AcceptSettings,
    http_worker: &Rc<HttpWorker>,
) {
    if listener.is_datagram() {
        // Without `reuseport` one worker reads a UDP socket, so that a client's datagrams
        // all reach the same session; with it, the kernel keeps a client on one worker.
        if !listener.options().reuseport && context.index != 0 {
            return;
        }
        match listener.to_tokio_udp() {
            Ok(socket) => {
                let gauge = Rc::clone(&context.gauge);
                tokio::task::spawn_local(stream::udp::serve_socket(
                    Rc::clone(stream_worker),
                    socket_index,
                    socket,
                    gauge,
                ));
            }
            Err(error) => not_registered(http_worker, listener, &error),
        }
        return;
    }
    let registered = match &listener.address {
        ListenAddress::Inet(_) => listener.to_tokio_tcp().map(WorkerListener::Tcp),
        ListenAddress::Unix(_) => listener.to_tokio_unix().map(WorkerListener::Unix),
    };
    let registered = match registered {
        Ok(registered) => registered,
        Err(error) => {
            not_registered(http_worker, listener, &error);
            return;
        }
    };
    let phase = context.phase.clone();
    let gauge = Rc::clone(&context.gauge);
    let handler = Rc::clone(stream_worker);
    let log_worker = Rc::clone(http_worker);
    tokio::task::spawn_local(async move {
        accept_loop(
            registered,
            phase,
            gauge,
            accept,
            move |accepted| match accepted {
                Accepted::Connection {
                    stream,
                    peer,
                    guard,
                } => {
                    log_worker.stats.accepted.add(1);
                    log_worker.stats.handled.add(1);
                    tokio::task::spawn_local(runtime::clock::turn_clocked(stream::serve(
                        Rc::clone(&handler),
                        socket_index,
                        stream,
                        peer,
                        guard,
                    )));
                }
                Accepted::LimitReached { .. } => {
                    log_worker.stats.accepted.add(1);
                    let configured = accept.worker_connections;
                    crate::generation::log(
                        &log_worker,
                        Level::Alert,
                        format_args!("{configured} worker_connections are not enough"),
                    );
                }
                Accepted::Failed(error) => {
                    let text = runtime::sys::linux::error_text(&error);
                    crate::generation::log(
                        &log_worker,
                        Level::Crit,
                        format_args!("accept4() failed ({text})"),
                    );
                }
            },
        )
        .await;
    });
}

fn not_registered(worker: &HttpWorker, listener: &Listener, error: &std::io::Error) {
    let text = runtime::sys::linux::error_text(error);
    crate::generation::log(
        worker,
        Level::Alert,
        format_args!(
            "listener {} could not be registered ({text})",
            listener.address
        ),
    );
}

/// Where the stream block's `pass` sends a connection to an address it does not listen on
/// itself: the http block's socket there (or its wildcard socket of that port), served as
/// if it had been accepted on it.
pub fn pass_hook(http_worker: &Rc<HttpWorker>, http_sockets: usize) -> stream::worker::PassHook {
    let worker = Rc::clone(http_worker);
    Box::new(move |address, stream, peer, guard| {
        let sockets = &worker.generation.http.sockets;
        let matches = |socket_address: &ListenAddress| match (socket_address, address) {
            (ListenAddress::Inet(listen), ListenAddress::Inet(wanted)) => {
                listen == wanted || (listen.ip().is_unspecified() && listen.port() == wanted.port())
            }
            (listen, wanted) => listen == wanted,
        };
        let found = sockets
            .iter()
            .take(http_sockets)
            .position(|socket| socket.address == *address)
            .or_else(|| {
                sockets
                    .iter()
                    .take(http_sockets)
                    .position(|socket| matches(&socket.address))
            });
        let Some(socket_index) = found else {
            return Err((stream, guard));
        };
        tokio::task::spawn_local(runtime::clock::turn_clocked(
            http::assembly::connection::serve(
                Rc::clone(&worker),
                socket_index,
                stream,
                peer,
                guard,
            ),
        ));
        Ok(())
    })
}
