//! An [`Endpoint`] driven from a worker's loop: one task per UDP socket reads datagrams
//! into it, runs its timers, hands its events to the caller and writes what it sends.
//! Responses made elsewhere on the worker (a request's own task) go through
//! [`Shared::endpoint`], followed by [`Shared::wake`] so that the task writes them.

use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::io;
use std::time::Instant;

use tokio::net::UdpSocket;
use tokio::sync::Notify;

use crate::{Endpoint, Event};

/// Datagrams read in one turn before the endpoint's output is written.
const READS_PER_TURN: usize = 64;
/// The largest datagram read (QUIC's own limit is 65,527 bytes of payload).
const DATAGRAM_MAX: usize = 65_535;

/// The endpoint as the socket's task and the requests' tasks share it.
#[derive(Debug)]
pub struct Shared {
    endpoint: RefCell<Endpoint>,
    wake: Notify,
    /// Notified at the end of every turn: acknowledgements may have opened flow control,
    /// events were handed over. Writers waiting for room look again.
    progress: Notify,
}

impl Shared {
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint: RefCell::new(endpoint),
            wake: Notify::new(),
            progress: Notify::new(),
        }
    }

    /// The endpoint, to answer requests with. Never held across an `.await`.
    pub fn endpoint(&self) -> RefMut<'_, Endpoint> {
        self.endpoint.borrow_mut()
    }

    /// Has the socket's task write what the endpoint has to send.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves after the socket's task has taken its next turn (created before a look
    /// at the endpoint, it also catches a turn that ends between the look and the await).
    pub fn progress(&self) -> tokio::sync::futures::Notified<'_> {
        self.progress.notified()
    }
}

/// Runs `shared`'s endpoint on `socket` until `stop` completes, calling `on_event` for each
/// of its events (in the socket's task: it must not block, and answers what it can at
/// once or hands the request to a task of its own).
pub async fn drive(
    socket: &UdpSocket,
    shared: &Shared,
    mut on_event: impl FnMut(&Shared, Event),
    stop: impl Future<Output = ()>,
) {
    let mut stop = std::pin::pin!(stop);
    let mut buffer = vec![0u8; DATAGRAM_MAX];
    loop {
        // A send that fails (a full socket buffer, an unreachable client) loses the
        // datagram, as a network would: QUIC retransmits what matters.
        let _ = flush(socket, shared).await;
        let timeout = shared.endpoint().poll_timeout();
        let timer = async {
            match timeout {
                Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = &mut stop => return,
            received = socket.recv_from(&mut buffer) => {
                if let Ok((length, remote)) = received {
                    let now = Instant::now();
                    let mut endpoint = shared.endpoint();
                    endpoint.receive(now, remote, None, &buffer[..length]);
                    for _ in 1..READS_PER_TURN {
                        let Ok((length, remote)) = socket.try_recv_from(&mut buffer) else {
                            break;
                        };
                        endpoint.receive(now, remote, None, &buffer[..length]);
                    }
                }
            }
            () = timer => shared.endpoint().handle_timeout(Instant::now()),
            () = shared.wake.notified() => {}
        }
        loop {
            let event = shared.endpoint().poll_event();
            let Some(event) = event else { break };
            on_event(shared, event);
        }
        shared.progress.notify_waiters();
    }
}

/// Writes every datagram the endpoint has.
async fn flush(socket: &UdpSocket, shared: &Shared) -> io::Result<()> {
    loop {
        let datagram = shared.endpoint().poll_transmit(Instant::now());
        let Some(datagram) = datagram else {
            return Ok(());
        };
        socket.send_to(&datagram.data, datagram.destination).await?;
    }
}
