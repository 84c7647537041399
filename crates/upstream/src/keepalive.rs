//! Idle upstream connections kept for reuse (`keepalive N` in an `upstream` block).
//!
//! The cache belongs to the group and is shared by the generation's workers: each worker
//! keeps at most N idle connections in it (nginx's per-worker count), closing its least
//! recently used one to make room. A worker takes its own connections first, at no cost; a
//! connection another worker left is moved to this worker's poller (two `epoll_ctl`
//! calls) rather than opened anew. A connection is put back only after a response that
//! was read to its framed end, and it is checked for a close or stray bytes from the
//! server before it is used again.

use std::collections::VecDeque;
use std::io;
use std::thread::ThreadId;
use std::time::Instant;

use runtime::Stream;

use super::{KeepaliveConf, Selected};

/// An idle connection to one peer.
#[derive(Debug)]
pub struct Idle {
    pub stream: Stream,
    /// When the connection was opened (`keepalive_time`).
    pub opened: Instant,
    /// Requests it has carried (`keepalive_requests`).
    pub requests: u64,
    /// What it was opened for: 0 for plain HTTP, else an identity of the TLS settings and
    /// the server name it was secured with. A connection is reused only for the same, so an
    /// `https` location never gets a plain connection, nor a plain one a TLS session.
    pub purpose: u64,
    /// What the protocol keeps with the connection between requests (an HTTP/2
    /// connection's state: its HPACK tables, windows and stream ids); the caller knows
    /// its type.
    pub state: Option<Box<dyn std::any::Any + Send>>,
}

#[derive(Debug)]
struct Entry {
    peer: Selected,
    /// The worker thread whose poller the socket is registered with.
    owner: ThreadId,
    idle_since: Instant,
    idle: Idle,
}

impl Entry {
    fn fits(&self, peer: Selected, purpose: u64) -> bool {
        self.peer == peer && self.idle.purpose == purpose
    }
}

/// The idle connections of one group.
#[derive(Debug, Default)]
pub struct KeepaliveCache {
    entries: VecDeque<Entry>,
}

impl KeepaliveCache {
    /// Removes and returns an idle connection to `peer` opened for `purpose`, the calling
    /// worker's own most recently used first. Connections idle beyond the timeout are closed.
    pub fn take(
        &mut self,
        peer: Selected,
        purpose: u64,
        conf: &KeepaliveConf,
        now: Instant,
    ) -> Option<(Idle, bool)> {
        // Entries are kept in the order they went idle: the expired ones are at the front.
        while self
            .entries
            .front()
            .is_some_and(|entry| now.saturating_duration_since(entry.idle_since) > conf.timeout)
        {
            self.entries.pop_front();
        }
        let me = this_thread();
        let position = self
            .entries
            .iter()
            .rposition(|entry| entry.fits(peer, purpose) && entry.owner == me)
            .or_else(|| {
                self.entries
                    .iter()
                    .rposition(|entry| entry.fits(peer, purpose))
            })?;
        let entry = self.entries.remove(position)?;
        Some((entry.idle, entry.owner == me))
    }

    /// Keeps a connection whose response ended cleanly, unless it has carried
    /// `keepalive_requests` requests or lived `keepalive_time`.
    pub fn put(&mut self, peer: Selected, conf: &KeepaliveConf, idle: Idle, now: Instant) {
        if idle.requests >= conf.requests || now.saturating_duration_since(idle.opened) > conf.time
        {
            return;
        }
        let me = this_thread();
        // This worker's own are counted only when all together could be too many.
        if self.entries.len() >= conf.connections
            && self
                .entries
                .iter()
                .filter(|entry| entry.owner == me)
                .count()
                >= conf.connections
            && let Some(oldest) = self.entries.iter().position(|entry| entry.owner == me)
        {
            self.entries.remove(oldest);
        }
        self.entries.push_back(Entry {
            peer,
            owner: me,
            idle_since: now,
            idle,
        });
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The idle connections to `peer`, whatever they were opened for.
    pub fn len_for(&self, peer: Selected) -> usize {
        self.entries
            .iter()
            .filter(|entry| entry.peer == peer)
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The calling worker thread, looked up once per thread (`thread::current()` clones a
/// handle each time).
fn this_thread() -> ThreadId {
    thread_local! {
        static ME: ThreadId = std::thread::current().id();
    }
    ME.with(|me| *me)
}

/// Moves a socket registered with another worker's poller to the calling worker's.
pub fn adopt(stream: Stream) -> io::Result<Stream> {
    Ok(match stream {
        Stream::Tcp(stream) => Stream::Tcp(tokio::net::TcpStream::from_std(stream.into_std()?)?),
        Stream::Unix(stream) => Stream::Unix(tokio::net::UnixStream::from_std(stream.into_std()?)?),
        Stream::Tls(stream) => Stream::Tls(stream.adopt()?),
    })
}

/// An idle connection is usable while the server has neither closed it nor sent anything.
pub fn still_open(stream: &Stream) -> bool {
    if let Stream::Tls(stream) = stream {
        // Records that carry no data (a TLS 1.3 server's session tickets) are read here.
        return stream.idle_usable();
    }
    let mut byte = [0u8; 1];
    matches!(
        rustix::net::recv(
            stream,
            &mut byte,
            rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT,
        ),
        Err(rustix::io::Errno::AGAIN)
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn conf() -> KeepaliveConf {
        KeepaliveConf {
            connections: 8,
            requests: 1000,
            time: Duration::from_secs(3600),
            timeout: Duration::from_secs(60),
        }
    }

    fn idle(purpose: u64) -> Idle {
        let (one, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        one.set_nonblocking(true).unwrap();
        Idle {
            stream: Stream::Unix(tokio::net::UnixStream::from_std(one).unwrap()),
            opened: Instant::now(),
            requests: 0,
            purpose,
            state: None,
        }
    }

    #[test]
    fn a_connection_is_reused_only_for_the_purpose_it_was_opened_for() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let _entered = runtime.enter();
        let peer = Selected {
            backup: false,
            index: 0,
            serial: 0,
        };
        let other_peer = Selected {
            backup: false,
            index: 1,
            serial: 1,
        };
        let now = Instant::now();
        let mut cache = KeepaliveCache::default();
        cache.put(peer, &conf(), idle(0), now);
        cache.put(peer, &conf(), idle(7), now);
        // Neither another TLS identity, nor another peer, gets either connection.
        assert!(cache.take(peer, 9, &conf(), now).is_none());
        assert!(cache.take(other_peer, 0, &conf(), now).is_none());
        assert_eq!(cache.len(), 2);
        let (tls, own) = cache.take(peer, 7, &conf(), now).unwrap();
        assert_eq!(tls.purpose, 7);
        assert!(own);
        let (plain, _) = cache.take(peer, 0, &conf(), now).unwrap();
        assert_eq!(plain.purpose, 0);
        assert!(cache.is_empty());
    }
}
