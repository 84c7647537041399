//! Endpoints that read the same UDP socket pass each other the datagrams that belong to
//! the other.
//!
//! After a reload, a worker of the old generation and one of the new read the same
//! `reuseport` socket until the old one's connections have ended, and the kernel gives
//! each datagram to whichever reads first. Without help, half of an old connection's
//! packets would reach the new endpoint, which knows nothing of it (and, with a shared
//! `quic_host_key`, would answer with a stateless reset the client believes), and new
//! clients' Initials would reach the old endpoint, which no longer accepts connections.
//!
//! So each endpoint on a socket joins the socket's [`Router`] and gets a tag of its own;
//! the connection IDs it issues begin with that tag (`TaggedCids`), and a datagram whose
//! destination connection ID carries another member's tag goes to that member's inbox. A
//! new client's Initial read by an endpoint that is shutting down goes to the newest
//! member still accepting. A forwarded datagram is never forwarded again. (nginx does the
//! same with `quic_bpf`, in the kernel.)

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use quinn_proto::{ConnectionId, ConnectionIdGenerator};
use tokio::sync::mpsc;

/// The length of the connection IDs a tagged endpoint issues: the tag, then eight random
/// bytes.
pub const TAGGED_CID_LEN: usize = 9;

/// A datagram one endpoint read for another.
#[derive(Debug)]
pub struct Forwarded {
    pub remote: SocketAddr,
    pub data: Vec<u8>,
}

/// The endpoints reading one socket.
#[derive(Debug, Default)]
pub struct Router {
    members: Mutex<Vec<Member>>,
}

#[derive(Debug)]
struct Member {
    tag: u8,
    inbox: mpsc::UnboundedSender<Forwarded>,
    accepting: bool,
    /// Order of joining: the newest accepting member takes new clients.
    joined: u64,
}

/// Every socket's router, by the socket's identity (its inode: the descriptors each
/// generation's worker holds for it are copies of one socket).
static ROUTERS: Mutex<Option<HashMap<u64, Weak<Router>>>> = Mutex::new(None);

impl Router {
    /// The router of the socket `key` names, made when its first endpoint joins.
    pub fn for_socket(key: u64) -> Arc<Router> {
        let mut routers = ROUTERS.lock().unwrap_or_else(PoisonError::into_inner);
        let routers = routers.get_or_insert_with(HashMap::new);
        routers.retain(|_, router| router.strong_count() > 0);
        if let Some(router) = routers.get(&key).and_then(Weak::upgrade) {
            return router;
        }
        let router = Arc::new(Router::default());
        routers.insert(key, Arc::downgrade(&router));
        router
    }

    /// Joins with a tag no other member has; `None` when all 256 are taken.
    pub fn join(self: &Arc<Self>) -> Option<Membership> {
        let mut members = self.lock();
        let joined = members.iter().map(|member| member.joined + 1).max();
        let joined = joined.unwrap_or(0);
        // Tags are handed out in turn, so that a tag just given back is not reused at
        // once by a member that could get its late packets.
        let tag = (0..=255u8)
            .map(|offset| (joined as u8).wrapping_add(offset))
            .find(|tag| members.iter().all(|member| member.tag != *tag))?;
        let (sender, inbox) = mpsc::unbounded_channel();
        members.push(Member {
            tag,
            inbox: sender,
            accepting: true,
            joined,
        });
        Some(Membership {
            router: Arc::clone(self),
            tag,
            inbox,
        })
    }

    /// Hands `datagram` to the member tagged `tag`; false when there is none.
    fn forward_to(&self, tag: u8, datagram: Forwarded) -> Result<(), Forwarded> {
        let members = self.lock();
        match members.iter().find(|member| member.tag == tag) {
            Some(member) => member.inbox.send(datagram).map_err(|error| error.0),
            None => Err(datagram),
        }
    }

    /// Hands a new client's Initial to the newest member that accepts connections.
    fn forward_new(&self, from: u8, datagram: Forwarded) -> Result<(), Forwarded> {
        let members = self.lock();
        let newest = members
            .iter()
            .filter(|member| member.accepting && member.tag != from)
            .max_by_key(|member| member.joined);
        match newest {
            Some(member) => member.inbox.send(datagram).map_err(|error| error.0),
            None => Err(datagram),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Member>> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An endpoint's place in its socket's router; it leaves when dropped.
#[derive(Debug)]
pub struct Membership {
    router: Arc<Router>,
    tag: u8,
    inbox: mpsc::UnboundedReceiver<Forwarded>,
}

impl Membership {
    /// The first byte of the connection IDs this endpoint issues.
    pub fn tag(&self) -> u8 {
        self.tag
    }

    /// The endpoint no longer accepts connections: new clients go to another member.
    pub fn stop_accepting(&self) {
        let mut members = self.router.lock();
        if let Some(member) = members.iter_mut().find(|member| member.tag == self.tag) {
            member.accepting = false;
        }
    }

    /// What passes datagrams on for this member, apart from its inbox.
    pub fn forwarder(&self) -> Forwarder {
        Forwarder {
            router: Arc::clone(&self.router),
            tag: self.tag,
        }
    }

    /// The next datagram another member read for this one.
    pub async fn next(&mut self) -> Option<Forwarded> {
        self.inbox.recv().await
    }

    /// A datagram waiting in the inbox, without waiting.
    pub fn try_next(&mut self) -> Option<Forwarded> {
        self.inbox.try_recv().ok()
    }
}

/// Passes datagrams one member read to the others.
#[derive(Debug, Clone)]
pub struct Forwarder {
    router: Arc<Router>,
    tag: u8,
}

impl Forwarder {
    /// Whether `datagram`'s destination connection ID names another member: it is
    /// then not this member's to handle.
    pub fn is_for_another(&self, datagram: &[u8]) -> bool {
        destination_tag(datagram).is_some_and(|tag| tag != self.tag)
    }

    /// Passes `datagram` to the member its destination connection ID names, or, for a
    /// new client's Initial (`new_client`), to the newest member accepting connections.
    /// Gives it back when no other member takes it.
    pub fn forward(&self, datagram: Forwarded, new_client: bool) -> Result<(), Forwarded> {
        if new_client {
            return self.router.forward_new(self.tag, datagram);
        }
        match destination_tag(&datagram.data) {
            Some(tag) if tag != self.tag => self.router.forward_to(tag, datagram),
            _ => Err(datagram),
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.router.lock().retain(|member| member.tag != self.tag);
    }
}

/// The tag of a datagram's destination connection ID, when it has the length of the IDs
/// tagged endpoints issue: a short-header packet's ID follows its first byte; a long
/// header's follows the version and the ID's length.
pub fn destination_tag(datagram: &[u8]) -> Option<u8> {
    let first = *datagram.first()?;
    if first & 0x80 == 0 {
        return (datagram.len() > TAGGED_CID_LEN).then(|| datagram[1]);
    }
    let length = usize::from(*datagram.get(5)?);
    (length == TAGGED_CID_LEN).then(|| datagram.get(6).copied())?
}

/// Connection IDs that begin with an endpoint's tag, the rest random.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaggedCids {
    pub(crate) tag: u8,
}

impl ConnectionIdGenerator for TaggedCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut bytes = [0u8; TAGGED_CID_LEN];
        bytes[0] = self.tag;
        aws_lc_rs::rand::fill(&mut bytes[1..]).expect("the system's random source");
        ConnectionId::new(&bytes)
    }

    fn cid_len(&self) -> usize {
        TAGGED_CID_LEN
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

#[cfg(test)]
mod tests;
