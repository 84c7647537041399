//! Upstream groups: the servers a proxied request may go to, how one is chosen, how
//! failures are counted, and the idle connections kept for reuse.
//!
//! A group is built at config load, from an `upstream NAME { ... }` block or implicitly from
//! the address a `proxy_pass` names. Its peers' failure counters and balancer state live
//! behind one mutex shared by every worker of the generation (so `zone` is implied); idle
//! keep-alive connections are kept per worker ([`keepalive`]).

pub mod balancer;
pub mod keepalive;
pub mod registry;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use balancer::{Selected, Tried};
pub use registry::UpstreamRegistry;

/// A group's index in the configuration's list of groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UpstreamId(pub u32);

/// Where a peer listens.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerAddr {
    Inet(SocketAddr),
    Unix(PathBuf),
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Inet(address) => write!(f, "{address}"),
            PeerAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// One `server` of a group (a name that resolves to several addresses gives several).
#[derive(Clone, Debug)]
pub struct Peer {
    pub address: PeerAddr,
    /// The address as `$upstream_addr` and the error log show it (`127.0.0.1:8080`);
    /// shared with each request's record of its tries.
    pub name: std::sync::Arc<str>,
    /// The `server` parameter as written, for `hash ... consistent` points.
    pub server: Box<str>,
    pub weight: u32,
    pub max_fails: u32,
    pub fail_timeout: Duration,
    /// 0 is no limit.
    pub max_conns: u32,
    pub down: bool,
}

/// How a group chooses a peer.
#[derive(Clone, Debug, Default)]
pub enum Balancer<K> {
    /// Smooth weighted round robin.
    #[default]
    RoundRobin,
    LeastConn,
    IpHash,
    /// `hash KEY [consistent]`.
    Hash {
        key: K,
        consistent: bool,
    },
    /// `random [two [least_conn]]`.
    Random {
        two: bool,
    },
}

/// `keepalive` and its companions in an `upstream` block.
#[derive(Clone, Copy, Debug)]
pub struct KeepaliveConf {
    /// Idle connections each worker keeps for the group.
    pub connections: usize,
    pub requests: u64,
    pub time: Duration,
    pub timeout: Duration,
}

/// Per-peer state shared by every worker.
#[derive(Clone, Debug, Default)]
pub struct PeerState {
    pub current_weight: i64,
    pub effective_weight: i64,
    pub fails: u32,
    /// When the last failure happened.
    pub accessed: Option<Instant>,
    /// When the peer was last chosen or found failed (nginx's `checked`).
    pub checked: Option<Instant>,
    /// Requests in flight to this peer.
    pub conns: u32,
    /// Times the peer was chosen for a try, and tries that failed (for the metrics).
    pub selected: u64,
    pub failures: u64,
    /// Times the peer's failures reached `max_fails` and it became unavailable for
    /// `fail_timeout` (NGINX Plus's `unavail`; each is a `temporarily disabled` warning).
    pub unavailable: u64,
}

/// Upper bounds of the buckets of a peer's connect-time and header-time histograms, in
/// microseconds (`+Inf` implied).
pub const PEER_TIME_BUCKETS_MICROSECONDS: [u64; 11] = [
    1_000, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    10_000_000,
];

/// What the metrics count of a peer's answers, outside the group's lock: relaxed atomics
/// each worker adds to once per response.
#[derive(Debug, Default)]
pub struct PeerCounters {
    /// Responses by status class, 1xx to 5xx.
    pub responses: [std::sync::atomic::AtomicU64; 5],
    /// Responses whose head took a measured time, and the sum of those times.
    pub header_times: std::sync::atomic::AtomicU64,
    pub header_microseconds: std::sync::atomic::AtomicU64,
    /// The head times by bucket of [`PEER_TIME_BUCKETS_MICROSECONDS`], the last `+Inf`.
    pub header_buckets: [std::sync::atomic::AtomicU64; 12],
    /// Connections used for a response (0 for a kept-alive one, as
    /// `$upstream_connect_time`), the sum of their connect times, and their buckets.
    pub connect_times: std::sync::atomic::AtomicU64,
    pub connect_microseconds: std::sync::atomic::AtomicU64,
    pub connect_buckets: [std::sync::atomic::AtomicU64; 12],
    /// Bytes written to the peer (requests) and read from it (responses, heads included),
    /// NGINX Plus's `sent` and `received`.
    pub sent_bytes: std::sync::atomic::AtomicU64,
    pub received_bytes: std::sync::atomic::AtomicU64,
}

impl PeerCounters {
    fn note_time(
        took: Duration,
        count: &std::sync::atomic::AtomicU64,
        sum: &std::sync::atomic::AtomicU64,
        buckets: &[std::sync::atomic::AtomicU64; 12],
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        count.fetch_add(1, Relaxed);
        sum.fetch_add(micros, Relaxed);
        let bucket = PEER_TIME_BUCKETS_MICROSECONDS
            .iter()
            .position(|bound| micros <= *bound)
            .unwrap_or(PEER_TIME_BUCKETS_MICROSECONDS.len());
        buckets[bucket].fetch_add(1, Relaxed);
    }
}

/// The mutable side of a group.
#[derive(Debug, Default)]
pub struct GroupState {
    pub primary: Vec<PeerState>,
    pub backup: Vec<PeerState>,
}

/// An upstream group.
#[derive(Debug)]
pub struct Group<K> {
    pub name: std::sync::Arc<str>,
    pub primary: Vec<Peer>,
    pub backup: Vec<Peer>,
    pub balancer: Balancer<K>,
    pub keepalive: Option<KeepaliveConf>,
    /// Made from a `proxy_pass` address rather than an `upstream` block.
    pub implicit: bool,
    /// The port an implicit group was made for (a `proxy_pass` with variables finds it by
    /// name and port).
    pub port: Option<u16>,
    /// `hash ... consistent`: points on the ring and the primary peer each belongs to.
    pub ring: Vec<(u32, usize)>,
    pub state: Mutex<GroupState>,
    /// Idle keep-alive connections (`keepalive`), shared by the workers.
    pub idle: Mutex<keepalive::KeepaliveCache>,
    /// Per peer, primary then backup: answers counted for the metrics.
    pub counters: Vec<PeerCounters>,
}

impl<K> Group<K> {
    pub fn new(
        name: std::sync::Arc<str>,
        primary: Vec<Peer>,
        backup: Vec<Peer>,
        balancer: Balancer<K>,
        keepalive: Option<KeepaliveConf>,
        implicit: bool,
        port: Option<u16>,
    ) -> Group<K> {
        let initial = |peers: &[Peer]| {
            peers
                .iter()
                .map(|peer| PeerState {
                    effective_weight: peer.weight.into(),
                    ..PeerState::default()
                })
                .collect()
        };
        let (primary_count, backup_count) = (primary.len(), backup.len());
        let ring = match &balancer {
            Balancer::Hash {
                consistent: true, ..
            } => balancer::ketama_ring(&primary),
            _ => Vec::new(),
        };
        Group {
            state: Mutex::new(GroupState {
                primary: initial(&primary),
                backup: initial(&backup),
            }),
            name,
            primary,
            backup,
            balancer,
            keepalive,
            implicit,
            port,
            ring,
            idle: Mutex::default(),
            counters: (0..primary_count + backup_count)
                .map(|_| PeerCounters::default())
                .collect(),
        }
    }

    /// A live idle connection to `peer` opened for `purpose` (see [`keepalive::Idle`]),
    /// moved to the calling worker if another left it.
    pub fn take_idle(&self, peer: Selected, purpose: u64, now: Instant) -> Option<keepalive::Idle> {
        let conf = self.keepalive.as_ref()?;
        loop {
            let taken = self
                .idle
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .take(peer, purpose, conf, now);
            let (mut idle, own) = taken?;
            if !own {
                match keepalive::adopt(idle.stream) {
                    Ok(stream) => idle.stream = stream,
                    Err(_) => continue,
                }
            }
            // A connection this worker's poller has seen nothing on is alive without a
            // system call; anything else is looked at.
            if (own && !idle.stream.read_ready_hint()) || keepalive::still_open(&idle.stream) {
                return Some(idle);
            }
        }
    }

    /// Keeps a connection for reuse.
    pub fn put_idle(&self, peer: Selected, idle: keepalive::Idle, now: Instant) {
        if let Some(conf) = &self.keepalive {
            self.idle
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .put(peer, conf, idle, now);
        }
    }

    /// The metrics' counters of a peer.
    pub fn counters(&self, selected: Selected) -> Option<&PeerCounters> {
        let index = if selected.backup {
            self.primary.len() + selected.index
        } else {
            selected.index
        };
        self.counters.get(index)
    }

    /// Counts a peer's response with `status`, whose connection took `connect_time` to open
    /// and whose head took `header_time`.
    pub fn note_response(
        &self,
        selected: Selected,
        status: u16,
        connect_time: Option<Duration>,
        header_time: Option<Duration>,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(counters) = self.counters(selected) else {
            return;
        };
        if let Some(class) = (status / 100).checked_sub(1)
            && let Some(counter) = counters.responses.get(usize::from(class))
        {
            counter.fetch_add(1, Relaxed);
        }
        if let Some(took) = header_time {
            PeerCounters::note_time(
                took,
                &counters.header_times,
                &counters.header_microseconds,
                &counters.header_buckets,
            );
        }
        if let Some(took) = connect_time {
            PeerCounters::note_time(
                took,
                &counters.connect_times,
                &counters.connect_microseconds,
                &counters.connect_buckets,
            );
        }
    }

    /// Counts bytes written to and read from a peer.
    pub fn note_bytes(&self, selected: Selected, sent: u64, received: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(counters) = self.counters(selected) {
            counters.sent_bytes.fetch_add(sent, Relaxed);
            counters.received_bytes.fetch_add(received, Relaxed);
        }
    }

    pub fn peer(&self, selected: Selected) -> &Peer {
        if selected.backup {
            &self.backup[selected.index]
        } else {
            &self.primary[selected.index]
        }
    }

    /// How many peers a request may try: every one not marked `down` (nginx's `tries`).
    pub fn peer_count(&self) -> usize {
        self.primary
            .iter()
            .chain(self.backup.iter())
            .filter(|peer| !peer.down)
            .count()
    }

    /// One primary peer and no backup: nginx never marks it failed and never retries it.
    pub fn is_single(&self) -> bool {
        self.primary.len() == 1 && self.backup.is_empty()
    }
}
