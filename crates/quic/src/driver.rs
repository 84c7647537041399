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

use crate::router::{Forwarded, Membership};
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
    on_event: impl FnMut(&Shared, Event),
    stop: impl Future<Output = ()>,
) {
    drive_routed(socket, shared, None, on_event, stop).await;
}

/// [`drive`] for an endpoint that shares its socket with others through a
/// [`crate::router::Router`] (`membership`; its endpoint was made with its tag as
/// [`crate::Config::route_tag`]): datagrams for another member are passed to it, those the
/// others read for this one are taken from the inbox, and new clients' Initials read
/// while shutting down go to the member that takes new connections.
pub async fn drive_routed(
    socket: &UdpSocket,
    shared: &Shared,
    mut membership: Option<&mut Membership>,
    mut on_event: impl FnMut(&Shared, Event),
    stop: impl Future<Output = ()>,
) {
    let mut stop = std::pin::pin!(stop);
    let mut buffer = vec![0u8; DATAGRAM_MAX];
    let forwarder = membership.as_deref().map(Membership::forwarder);
    let take = |endpoint: &mut Endpoint, now: Instant, remote, datagram: &[u8]| {
        if let Some(forwarder) = &forwarder
            && forwarder.is_for_another(datagram)
        {
            let data = datagram.to_vec();
            match forwarder.forward(Forwarded { remote, data }, false) {
                Ok(()) => return,
                // No member has that tag any more: the endpoint answers as for any
                // unknown connection.
                Err(back) => return endpoint.receive(now, remote, None, &back.data),
            }
        }
        endpoint.receive(now, remote, None, datagram);
    };
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
                    take(&mut endpoint, now, remote, &buffer[..length]);
                    for _ in 1..READS_PER_TURN {
                        let Ok((length, remote)) = socket.try_recv_from(&mut buffer) else {
                            break;
                        };
                        take(&mut endpoint, now, remote, &buffer[..length]);
                    }
                }
            }
            Some(forwarded) = next_forwarded(membership.as_deref_mut()) => {
                let now = Instant::now();
                let mut endpoint = shared.endpoint();
                endpoint.receive_forwarded(now, forwarded.remote, &forwarded.data);
                if let Some(membership) = membership.as_deref_mut() {
                    for _ in 1..READS_PER_TURN {
                        let Some(forwarded) = membership.try_next() else { break };
                        endpoint.receive_forwarded(now, forwarded.remote, &forwarded.data);
                    }
                }
            }
            () = timer => shared.endpoint().handle_timeout(Instant::now()),
            () = shared.wake.notified() => {}
        }
        if let Some(forwarder) = &forwarder {
            let handoffs = shared.endpoint().take_handoffs();
            for datagram in handoffs {
                // Without a member taking new connections, the Initial is dropped.
                let _ = forwarder.forward(datagram, true);
            }
        }
        loop {
            let event = shared.endpoint().poll_event();
            let Some(event) = event else { break };
            on_event(shared, event);
        }
        shared.progress.notify_waiters();
    }
}

/// The next datagram another member read for this one; never, without a router.
async fn next_forwarded(membership: Option<&mut Membership>) -> Option<Forwarded> {
    match membership {
        Some(membership) => membership.next().await,
        None => std::future::pending().await,
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
