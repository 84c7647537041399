//! Accepting connections on a worker, within `worker_connections`.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{Notify, watch};

use crate::stream::{PeerAddress, Stream};
use crate::worker::Phase;

/// `events { worker_connections N; multi_accept on|off; }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptSettings {
    pub worker_connections: usize,
    pub multi_accept: bool,
}

/// After `accept4()` fails for lack of file descriptors, nginx stops accepting for a moment
/// instead of spinning on a listener that stays readable.
const ACCEPT_PAUSE_AFTER_EMFILE: Duration = Duration::from_millis(500);

/// Counts a worker's open client connections and wakes the drain when the last one closes.
#[derive(Debug)]
pub struct ConnectionGauge {
    active: Cell<usize>,
    limit: usize,
    emptied: Notify,
}

impl ConnectionGauge {
    pub fn new(limit: usize) -> ConnectionGauge {
        ConnectionGauge {
            active: Cell::new(0),
            limit,
            emptied: Notify::new(),
        }
    }

    pub fn active(&self) -> usize {
        self.active.get()
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes a slot, or `None` when `worker_connections` are all in use.
    pub fn try_acquire(self: &Rc<Self>) -> Option<ConnectionGuard> {
        let active = self.active.get();
        if active >= self.limit {
            return None;
        }
        self.active.set(active + 1);
        Some(ConnectionGuard {
            gauge: Rc::clone(self),
        })
    }

    /// Resolves once no connection is open.
    pub async fn wait_empty(&self) {
        while self.active.get() > 0 {
            self.emptied.notified().await;
        }
    }
}

/// A connection's slot; dropping it frees the slot.
#[derive(Debug)]
pub struct ConnectionGuard {
    gauge: Rc<ConnectionGauge>,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let active = self.gauge.active.get();
        debug_assert!(active > 0, "a guard exists, so the count is positive");
        self.gauge.active.set(active.saturating_sub(1));
        if active == 1 {
            self.gauge.emptied.notify_waiters();
        }
    }
}

/// What happened on one turn of the accept loop; the caller logs and serves.
#[derive(Debug)]
pub enum Accepted {
    Connection {
        stream: Stream,
        peer: PeerAddress,
        guard: ConnectionGuard,
    },
    /// A connection arrived with every slot in use; it has been closed. nginx logs
    /// `N worker_connections are not enough`.
    LimitReached { limit: usize },
    /// `accept4()` failed with something other than a transient error.
    Failed(io::Error),
}

/// A listener registered with this worker's runtime.
#[derive(Debug)]
pub enum WorkerListener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl WorkerListener {
    async fn accept(&self) -> io::Result<(Stream, PeerAddress)> {
        match self {
            WorkerListener::Tcp(listener) => {
                let (stream, peer) = listener.accept().await?;
                Ok((Stream::Tcp(stream), PeerAddress::Inet(peer)))
            }
            WorkerListener::Unix(listener) => {
                let (stream, _) = listener.accept().await?;
                Ok((Stream::Unix(stream), PeerAddress::Unix))
            }
        }
    }
}

/// Accepts on `listener` until the worker stops running, handing every event to `handle`.
///
/// With `multi_accept off` the loop yields to the worker's other tasks after each accepted
/// connection, like nginx taking one connection per event; with `on` it accepts until the
/// backlog is empty (tokio's cooperative budget still bounds one turn).
pub async fn accept_loop(
    listener: WorkerListener,
    mut phase: watch::Receiver<Phase>,
    gauge: Rc<ConnectionGauge>,
    settings: AcceptSettings,
    mut handle: impl FnMut(Accepted),
) {
    loop {
        if *phase.borrow_and_update() != Phase::Running {
            return;
        }
        let result = tokio::select! {
            biased;
            _ = phase.changed() => continue,
            result = listener.accept() => result,
        };
        match result {
            Ok((stream, peer)) => match gauge.try_acquire() {
                Some(guard) => handle(Accepted::Connection {
                    stream,
                    peer,
                    guard,
                }),
                None => handle(Accepted::LimitReached {
                    limit: gauge.limit(),
                }),
            },
            Err(error) if is_transient(&error) => continue,
            Err(error) => {
                let pause = is_out_of_descriptors(&error);
                handle(Accepted::Failed(error));
                if pause {
                    tokio::time::sleep(ACCEPT_PAUSE_AFTER_EMFILE).await;
                }
                continue;
            }
        }
        if !settings.multi_accept {
            tokio::task::yield_now().await;
        }
    }
}

/// Errors that only concern one aborted connection (RFC-less folklore from accept(2)).
fn is_transient(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ECONNABORTED | libc::EINTR | libc::EAGAIN | libc::EPROTO | libc::EPERM)
    )
}

fn is_out_of_descriptors(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauge_enforces_the_limit_and_frees_slots() {
        let gauge = Rc::new(ConnectionGauge::new(2));
        let first = gauge.try_acquire().unwrap();
        let second = gauge.try_acquire().unwrap();
        assert!(gauge.try_acquire().is_none());
        assert_eq!(gauge.active(), 2);
        drop(first);
        assert_eq!(gauge.active(), 1);
        let third = gauge.try_acquire().unwrap();
        drop(second);
        drop(third);
        assert_eq!(gauge.active(), 0);
    }

    #[test]
    fn wait_empty_wakes_when_the_last_connection_closes() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let gauge = Rc::new(ConnectionGauge::new(4));
            let guard = gauge.try_acquire().unwrap();
            let waiter = tokio::task::spawn_local({
                let gauge = Rc::clone(&gauge);
                async move { gauge.wait_empty().await }
            });
            tokio::task::yield_now().await;
            assert!(!waiter.is_finished());
            drop(guard);
            tokio::time::timeout(Duration::from_secs(5), waiter)
                .await
                .unwrap()
                .unwrap();
        });
    }
}
