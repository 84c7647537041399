//! Session affinity (`sticky`): a client's later requests go to the peer its first one
//! went to. The peer is named by an id: its `route=` when it has one, else the MD5 (in
//! hex) of its address. The id travels in a cookie Portico sets (`cookie`), in whatever
//! the request carries (`route`), or in a table of sessions learned from the upstream's
//! answers (`learn`). A named peer that is down, failed, full (`max_conns`) or already
//! tried by the request is passed over: the group's balancer chooses then.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use md5::{Digest, Md5};

use super::{Peer, PeerAddr};

/// `sticky` in an `upstream` block; `K` is a template the request fills in.
#[derive(Debug)]
pub enum Sticky<K> {
    Cookie(CookieConf<K>),
    /// The first non-empty value is the route.
    Route(Vec<K>),
    Learn(LearnConf<K>),
}

/// `sticky cookie NAME [expires=] [domain=] [path=] [secure] [httponly] [samesite=]`.
#[derive(Debug)]
pub struct CookieConf<K> {
    pub name: String,
    pub expires: CookieExpires,
    pub domain: Option<K>,
    pub path: Option<K>,
    pub samesite: Option<SameSite<K>>,
    pub secure: bool,
    pub httponly: bool,
}

/// `expires=`: absent (a browser-session cookie), `max`, or a time from now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieExpires {
    Session,
    Max,
    After(Duration),
}

/// `samesite=`: a value, or a template whose value picks one (another value means
/// `strict`, an empty one leaves the attribute out).
#[derive(Debug)]
pub enum SameSite<K> {
    Strict,
    Lax,
    None,
    Variable(K),
}

/// `sticky learn create= lookup= zone= [timeout=] [header] [sync]`.
#[derive(Debug)]
pub struct LearnConf<K> {
    /// Evaluated on the answer: a non-empty value starts (or renews) a session.
    pub create: K,
    /// Evaluated on the request: the session it names chooses the peer.
    pub lookup: K,
    /// Sessions start when the answer's head is in, not when its body has ended.
    pub header: bool,
    pub sessions: Arc<Sessions>,
}

/// The id `sticky` names a peer by: its route, else the MD5 of its address in hex.
pub fn peer_id(peer: &Peer) -> Arc<str> {
    if let Some(route) = &peer.route {
        return Arc::clone(route);
    }
    let digest = match &peer.address {
        PeerAddr::Inet(_) => Md5::digest(peer.name.as_bytes()),
        PeerAddr::Unix(path) => Md5::digest(path.as_os_str().as_encoded_bytes()),
    };
    let mut hex = String::with_capacity(32);
    for byte in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    hex.into()
}

/// What one session holds: the peer's id, when the session was last used, and its place
/// in the order of use.
#[derive(Clone, Debug)]
struct Session {
    id: Arc<str>,
    used: Instant,
    turn: u64,
}

/// The sessions by key, and their keys in the order they were last used (oldest first), so
/// that making room costs a logarithm, not a scan, however large the zone.
#[derive(Debug, Default)]
struct Table {
    sessions: HashMap<Box<[u8]>, Session>,
    by_use: BTreeMap<(Instant, u64), Box<[u8]>>,
    next_turn: u64,
}

impl Table {
    fn remove(&mut self, key: &[u8]) {
        if let Some(session) = self.sessions.remove(key) {
            self.by_use.remove(&(session.used, session.turn));
        }
    }

    /// Binds `key` to `id`, used at `used`, as the most recently used session.
    fn put(&mut self, key: &[u8], id: Arc<str>, used: Instant) {
        self.remove(key);
        let turn = self.next_turn;
        self.next_turn += 1;
        self.by_use.insert((used, turn), key.into());
        self.sessions.insert(key.into(), Session { id, used, turn });
    }

    /// Drops the sessions used longest ago until there is room for one more.
    fn make_room(&mut self, capacity: usize) {
        while self.sessions.len() >= capacity {
            let Some((_, key)) = self.by_use.pop_first() else {
                return;
            };
            self.sessions.remove(&key);
        }
    }
}

/// Roughly what one session costs in a zone, for the number a zone's size holds.
const SESSION_BYTES: u64 = 128;

/// The sessions `sticky learn` keeps in its zone, shared by every worker and carried
/// across reloads by the zone's name. Bounded: when full, the session used longest ago
/// (an expired one first, as it is the oldest) makes room.
#[derive(Debug)]
pub struct Sessions {
    pub zone: String,
    pub size: u64,
    pub timeout: Duration,
    capacity: usize,
    table: Mutex<Table>,
}

impl Sessions {
    pub fn new(zone: String, size: u64, timeout: Duration) -> Sessions {
        let capacity = usize::try_from((size / SESSION_BYTES).max(8)).unwrap_or(usize::MAX);
        Sessions {
            zone,
            size,
            timeout,
            capacity,
            table: Mutex::default(),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The id of the peer the session `key` is bound to, unless it expired (it is
    /// removed then).
    pub fn lookup(&self, key: &[u8], now: Instant) -> Option<Arc<str>> {
        let mut table = self.table();
        let session = table.sessions.get(key)?;
        if now.saturating_duration_since(session.used) > self.timeout {
            table.remove(key);
            return None;
        }
        Some(Arc::clone(&session.id))
    }

    /// Counts the session as used now: it lives for another `timeout`.
    pub fn touch(&self, key: &[u8], now: Instant) {
        let mut table = self.table();
        if let Some(id) = table
            .sessions
            .get(key)
            .map(|session| Arc::clone(&session.id))
        {
            table.put(key, id, now);
        }
    }

    /// Binds the session `key` to the peer `id` (a new session, or one moved to another
    /// peer).
    pub fn learn(&self, key: &[u8], id: Arc<str>, now: Instant) {
        let mut table = self.table();
        if !table.sessions.contains_key(key) {
            table.make_room(self.capacity);
        }
        table.put(key, id, now);
    }

    /// Takes over the sessions of a running configuration's zone of the same name (the
    /// most recently used ones when this zone is smaller).
    pub fn adopt(&self, old: &Sessions) {
        let old_table = old.table();
        let mut table = self.table();
        for key in old_table.by_use.values().rev() {
            if table.sessions.len() >= self.capacity {
                break;
            }
            if let Some(session) = old_table.sessions.get(key)
                && !table.sessions.contains_key(key)
            {
                table.put(key, Arc::clone(&session.id), session.used);
            }
        }
    }

    /// How many sessions the zone holds now.
    pub fn len(&self) -> usize {
        self.table().sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_route_or_the_address_digest() {
        let address: std::net::SocketAddr = "127.0.0.1:8081".parse().unwrap();
        let peer = Peer {
            name: address.to_string().into(),
            server: "127.0.0.1:8081".into(),
            address: PeerAddr::Inet(address),
            weight: 1,
            max_fails: 1,
            fail_timeout: Duration::from_secs(10),
            max_conns: 0,
            down: false,
            route: None,
            drain: false,
        };
        assert_eq!(&*peer_id(&peer), "df2b80dc43705d28db9be6f29fe58da3");
        let routed = Peer {
            route: Some("a".into()),
            ..peer
        };
        assert_eq!(&*peer_id(&routed), "a");
    }

    #[test]
    fn sessions_expire_renew_and_stay_bounded() {
        let start = Instant::now();
        let sessions = Sessions::new("z".into(), 8 * SESSION_BYTES, Duration::from_secs(2));
        sessions.learn(b"one", "p1".into(), start);
        assert_eq!(sessions.lookup(b"one", start).as_deref(), Some("p1"));
        // Used at 1.5 s, so alive at 3 s; gone 2 s after its last use.
        sessions.touch(b"one", start + Duration::from_millis(1500));
        assert!(
            sessions
                .lookup(b"one", start + Duration::from_secs(3))
                .is_some()
        );
        assert!(
            sessions
                .lookup(b"one", start + Duration::from_secs(4))
                .is_none()
        );
        assert!(sessions.is_empty());
        // A second binding moves the session.
        sessions.learn(b"two", "p1".into(), start);
        sessions.learn(b"two", "p2".into(), start);
        assert_eq!(sessions.lookup(b"two", start).as_deref(), Some("p2"));
        // Full: the one used longest ago makes room.
        for n in 0..20u8 {
            let at = start + Duration::from_millis(u64::from(n));
            sessions.learn(&[n], "p".into(), at);
        }
        assert_eq!(sessions.len(), 8);
        assert!(sessions.lookup(&[19], start).is_some());
        assert!(sessions.lookup(&[0], start).is_none());
        // A session used again is the last to go.
        let later = start + Duration::from_millis(100);
        sessions.touch(&[12], later);
        for n in 20..27u8 {
            sessions.learn(&[n], "p".into(), later);
        }
        assert!(sessions.lookup(&[12], later).is_some());
        assert!(sessions.lookup(&[13], later).is_none());
        assert_eq!(sessions.len(), 8);
    }

    #[test]
    fn a_reloaded_zone_keeps_its_sessions() {
        let now = Instant::now();
        let old = Sessions::new("z".into(), 1 << 20, Duration::from_secs(60));
        old.learn(b"sid", "p2".into(), now);
        let new = Sessions::new("z".into(), 1 << 20, Duration::from_secs(60));
        new.adopt(&old);
        assert_eq!(new.lookup(b"sid", now).as_deref(), Some("p2"));
    }
}
