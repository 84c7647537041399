//! Upstream groups: the servers a proxied request may go to, how one is chosen, how
//! failures are counted, and the idle connections kept for reuse.
//!
//! A group is built at config load, from an `upstream NAME { ... }` block or implicitly from
//! the address a `proxy_pass` names. Its peers' failure counters and balancer state live
//! behind one mutex shared by every worker of the generation (so `zone` is implied); idle
//! keep-alive connections are kept per worker ([`keepalive`]). A group with `server ...
//! resolve` lines has members that change while it runs: they are replaced as a whole
//! ([`Members`]) and a request in flight keeps the peer it chose.

pub mod balancer;
pub mod discovery;
pub mod keepalive;
pub mod registry;
pub mod server_line;
pub mod sticky;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use balancer::{Selected, Tried};
pub use registry::{NO_PORT, UpstreamRegistry};
use shared::resolver::ResolverConf;

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
    /// `route=`: the id `sticky` names the peer by.
    pub route: Option<Arc<str>>,
    /// `drain`: only requests `sticky` binds to the peer go to it.
    pub drain: bool,
}

/// How a group chooses a peer.
#[derive(Clone, Debug, Default)]
pub enum Balancer<K> {
    /// Smooth weighted round robin.
    #[default]
    RoundRobin,
    LeastConn,
    /// `least_time MEASURE [inflight]`: the least average time to what `measure` says,
    /// per request in flight and weight.
    LeastTime {
        measure: server_line::TimeMeasure,
        inflight: bool,
    },
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
    /// `least_time`: the moving average of the peer's times, in microseconds, when the
    /// last one was measured, and since when requests have been in flight without a break.
    pub time_average: u64,
    pub timed: Option<Instant>,
    pub busy_since: Option<Instant>,
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
    /// The current members of a group with `resolve` servers (`None` for a fixed group).
    pub members: Option<Arc<Members>>,
    /// Per `resolve` server: the peers its last good answer gave, each marked backup or not.
    pub resolved: Vec<Vec<(Peer, bool)>>,
    /// Per `resolve` server: when it is looked up next, and until when a worker that took
    /// the lookup on may hold it (a worker that stops holds it no longer).
    pub due: Vec<Instant>,
    pub claimed_until: Vec<Option<Instant>>,
    /// The serial the next new member gets.
    pub next_serial: u32,
}

/// The peers of a group at one moment: fixed for a group without `resolve` servers, and
/// replaced as a whole, never edited, when DNS changes what a `resolve` server names.
#[derive(Debug, Default)]
pub struct Members {
    pub primary: Vec<Peer>,
    pub backup: Vec<Peer>,
    /// `hash ... consistent`: points on the ring and the primary peer each belongs to.
    pub ring: Vec<(u32, usize)>,
    /// Per peer, primary then backup: a number that stays with the peer's address across
    /// changes (a request in flight finds its peer by it), and the metrics' counters.
    pub serials: Vec<u32>,
    pub counters: Vec<Arc<PeerCounters>>,
    /// Per peer, primary then backup: the id `sticky` names it by (empty without
    /// `sticky`).
    pub ids: Vec<Arc<str>>,
}

impl Members {
    fn new(primary: Vec<Peer>, backup: Vec<Peer>, consistent: bool, serials: Vec<u32>) -> Members {
        let ring = if consistent {
            balancer::ketama_ring(&primary)
        } else {
            Vec::new()
        };
        let counters = serials
            .iter()
            .map(|_| Arc::new(PeerCounters::default()))
            .collect();
        Members {
            primary,
            backup,
            ring,
            serials,
            counters,
            ids: Vec::new(),
        }
    }

    /// Gives every peer its `sticky` id.
    fn name_for_sticky(&mut self) {
        self.ids = self
            .primary
            .iter()
            .chain(self.backup.iter())
            .map(sticky::peer_id)
            .collect();
    }

    /// Where `selected` is now: its index among primary then backup peers, found by its
    /// serial when the members changed since it was chosen; `None` once it is gone.
    #[inline]
    pub fn slot(&self, selected: Selected) -> Option<usize> {
        let slot = if selected.backup {
            self.primary.len() + selected.index
        } else {
            selected.index
        };
        if self.serials.get(slot) == Some(&selected.serial) {
            return Some(slot);
        }
        self.serials
            .iter()
            .position(|serial| *serial == selected.serial)
    }

    /// The slot's peer, as primary or backup and index.
    #[inline]
    pub fn at(&self, slot: usize) -> Selected {
        let serial = self.serials[slot];
        if slot < self.primary.len() {
            Selected {
                backup: false,
                index: slot,
                serial,
            }
        } else {
            Selected {
                backup: true,
                index: slot - self.primary.len(),
                serial,
            }
        }
    }

    #[inline]
    pub fn peer_at(&self, slot: usize) -> &Peer {
        if slot < self.primary.len() {
            &self.primary[slot]
        } else {
            &self.backup[slot - self.primary.len()]
        }
    }

    /// One primary peer and no backup: nginx never marks it failed and never retries it.
    #[inline]
    pub fn is_single(&self) -> bool {
        self.primary.len() == 1 && self.backup.is_empty()
    }
}

/// A group's members, borrowed from a fixed group or held while a `resolve` group changes.
#[derive(Debug)]
pub enum MembersRef<'g> {
    Fixed(&'g Members),
    Shared(Arc<Members>),
}

impl std::ops::Deref for MembersRef<'_> {
    type Target = Members;
    #[inline]
    fn deref(&self) -> &Members {
        match self {
            MembersRef::Fixed(members) => members,
            MembersRef::Shared(members) => members,
        }
    }
}

/// A chosen peer, valid for as long as the request uses it even if DNS removes it.
#[derive(Debug)]
pub struct PeerRef<'g> {
    members: MembersRef<'g>,
    slot: usize,
}

impl std::ops::Deref for PeerRef<'_> {
    type Target = Peer;
    #[inline]
    fn deref(&self) -> &Peer {
        self.members.peer_at(self.slot)
    }
}

/// A `server NAME resolve` line: its addresses come from DNS while the server runs.
#[derive(Clone, Debug)]
pub struct Resolvable {
    /// The name looked up: the host for A/AAAA records, or the SRV name (`service=`).
    pub host: String,
    pub port: u16,
    pub service: Option<String>,
    /// `weight=`, `max_fails=` and the others, for each peer the name gives.
    pub template: Peer,
    pub backup: bool,
}

/// One `server` line of a group, in the order written.
#[derive(Clone, Debug)]
pub enum Source {
    Fixed { peers: Vec<Peer>, backup: bool },
    Resolve(Resolvable),
}

/// An upstream group.
#[derive(Debug)]
pub struct Group<K> {
    pub name: std::sync::Arc<str>,
    pub balancer: Balancer<K>,
    pub keepalive: Option<KeepaliveConf>,
    /// Made from a `proxy_pass` address rather than an `upstream` block.
    pub implicit: bool,
    /// The port an implicit group was made for (a `proxy_pass` with variables finds it by
    /// name and port).
    pub port: Option<u16>,
    /// The members of a group without `resolve` servers.
    pub(crate) fixed: Option<Members>,
    /// The `server` lines of a group with `resolve` servers.
    pub sources: Vec<Source>,
    pub state: Mutex<GroupState>,
    /// Idle keep-alive connections (`keepalive`), shared by the workers.
    pub idle: Mutex<keepalive::KeepaliveCache>,
    /// The name servers and `resolver_timeout` the `resolve` servers are looked up with.
    pub resolver: Option<(Arc<ResolverConf>, Duration)>,
    /// `sticky`: session affinity.
    pub sticky: Option<sticky::Sticky<K>>,
}

/// Initial balancer state for `peers`.
fn initial_states(peers: &[Peer]) -> Vec<PeerState> {
    peers
        .iter()
        .map(|peer| PeerState {
            effective_weight: peer.weight.into(),
            ..PeerState::default()
        })
        .collect()
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
        let consistent = matches!(
            balancer,
            Balancer::Hash {
                consistent: true,
                ..
            }
        );
        let count = primary.len() + backup.len();
        let state = GroupState {
            primary: initial_states(&primary),
            backup: initial_states(&backup),
            next_serial: u32::try_from(count).unwrap_or(u32::MAX),
            ..GroupState::default()
        };
        let serials = (0..count)
            .map(|slot| u32::try_from(slot).unwrap_or(u32::MAX))
            .collect();
        Group {
            state: Mutex::new(state),
            name,
            balancer,
            keepalive,
            implicit,
            port,
            fixed: Some(Members::new(primary, backup, consistent, serials)),
            sources: Vec::new(),
            idle: Mutex::default(),
            resolver: None,
            sticky: None,
        }
    }

    /// Turns `sticky` on: every peer, now and after DNS changes, gets its id.
    pub fn with_sticky(mut self, sticky: sticky::Sticky<K>) -> Group<K> {
        self.sticky = Some(sticky);
        if let Some(members) = &mut self.fixed {
            members.name_for_sticky();
        } else {
            self.rebuild(&mut self.lock_state());
        }
        self
    }

    /// A group with `resolve` servers: the fixed ones are members at once, the others when
    /// their names resolve.
    pub fn with_sources(
        name: std::sync::Arc<str>,
        sources: Vec<Source>,
        balancer: Balancer<K>,
        keepalive: Option<KeepaliveConf>,
        resolver: (Arc<ResolverConf>, Duration),
        now: Instant,
    ) -> Group<K> {
        let resolvable = sources
            .iter()
            .filter(|source| matches!(source, Source::Resolve(_)))
            .count();
        let group = Group {
            state: Mutex::new(GroupState {
                members: Some(Arc::new(Members::default())),
                resolved: vec![Vec::new(); resolvable],
                due: vec![now; resolvable],
                claimed_until: vec![None; resolvable],
                ..GroupState::default()
            }),
            name,
            balancer,
            keepalive,
            implicit: false,
            port: None,
            fixed: None,
            sources,
            idle: Mutex::default(),
            resolver: Some(resolver),
            sticky: None,
        };
        group.rebuild(&mut group.lock_state());
        group
    }

    pub fn lock_state(&self) -> std::sync::MutexGuard<'_, GroupState> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The members now.
    #[inline]
    pub fn members(&self) -> MembersRef<'_> {
        match &self.fixed {
            Some(members) => MembersRef::Fixed(members),
            None => MembersRef::Shared(self.lock_state().members.clone().unwrap_or_default()),
        }
    }

    /// The `resolve` servers, in order.
    pub fn resolvables(&self) -> impl Iterator<Item = &Resolvable> {
        self.sources.iter().filter_map(|source| match source {
            Source::Resolve(resolvable) => Some(resolvable),
            Source::Fixed { .. } => None,
        })
    }

    /// Replaces the peers `resolve` server `ordinal` gives (each marked backup or not),
    /// kept in address order. Peers whose address stays keep their state and counters;
    /// requests in flight keep the peer they chose. Returns whether the members changed.
    pub fn update_resolved(&self, ordinal: usize, mut peers: Vec<(Peer, bool)>) -> bool {
        // Name servers rotate their answers: in address order, the same answer is the
        // same list.
        peers.sort_by(|(a, a_backup), (b, b_backup)| {
            (a_backup, a.name.as_ref()).cmp(&(b_backup, b.name.as_ref()))
        });
        let mut state = self.lock_state();
        let Some(slot) = state.resolved.get_mut(ordinal) else {
            return false;
        };
        let same = slot.len() == peers.len()
            && slot
                .iter()
                .zip(&peers)
                .all(|((old, old_backup), (new, new_backup))| {
                    old.address == new.address
                        && old.weight == new.weight
                        && old_backup == new_backup
                });
        if same {
            return false;
        }
        *slot = peers;
        self.rebuild(&mut state);
        true
    }

    /// What the `resolve` servers of `old` (a reloaded configuration's group of the same
    /// name) last found, taken as this group's first members: a reload does not wait for
    /// DNS, nor lose its members when DNS fails then (nginx keeps them too). Addresses are
    /// taken over; ports and parameters are this configuration's.
    pub fn carry_over(&self, old: &Group<K>) {
        let old_state = old.lock_state();
        let mut new_state = self.lock_state();
        let mut changed = false;
        for (ordinal, resolvable) in self.resolvables().enumerate() {
            let previous = old.resolvables().position(|was| {
                was.host.eq_ignore_ascii_case(&resolvable.host) && was.service == resolvable.service
            });
            let Some(found) = previous.and_then(|index| old_state.resolved.get(index)) else {
                continue;
            };
            new_state.resolved[ordinal] = found
                .iter()
                .map(|(peer, backup)| {
                    let mut address = peer.address.clone();
                    if let (PeerAddr::Inet(socket), None) = (&mut address, &resolvable.service) {
                        socket.set_port(resolvable.port);
                    }
                    let name: Arc<str> = address.to_string().into();
                    let weight = if resolvable.service.is_some() {
                        peer.weight
                    } else {
                        resolvable.template.weight
                    };
                    let carried = Peer {
                        address,
                        server: name.as_ref().into(),
                        name,
                        weight,
                        ..resolvable.template.clone()
                    };
                    (carried, *backup)
                })
                .collect();
            changed = true;
        }
        drop(old_state);
        if changed {
            self.rebuild(&mut new_state);
        }
    }

    /// Makes the members from the sources and the last answers, carrying each kept
    /// address's serial, balancer state and counters over.
    fn rebuild(&self, state: &mut GroupState) {
        let consistent = matches!(
            self.balancer,
            Balancer::Hash {
                consistent: true,
                ..
            }
        );
        let mut listed: Vec<(Peer, bool)> = Vec::new();
        let mut ordinal = 0;
        for source in &self.sources {
            match source {
                Source::Fixed { peers, backup } => {
                    listed.extend(peers.iter().map(|peer| (peer.clone(), *backup)));
                }
                Source::Resolve(_) => {
                    listed.extend(state.resolved[ordinal].iter().cloned());
                    ordinal += 1;
                }
            }
        }
        let old = state.members.clone().unwrap_or_default();
        let mut primary = Vec::new();
        let mut backup = Vec::new();
        let (mut primary_states, mut backup_states) = (Vec::new(), Vec::new());
        let mut kept: Vec<(bool, u32, Arc<PeerCounters>)> = Vec::new();
        for (peer, is_backup) in listed {
            let previous = (0..old.serials.len()).find(|slot| {
                let was = old.at(*slot);
                was.backup == is_backup
                    && old.peer_at(*slot).address == peer.address
                    && !kept.iter().any(|(_, serial, _)| *serial == was.serial)
            });
            let (serial, counters, peer_state) = match previous {
                Some(slot) => {
                    let was = old.at(slot);
                    let states = if was.backup {
                        &state.backup
                    } else {
                        &state.primary
                    };
                    let mut peer_state = states.get(was.index).cloned().unwrap_or_default();
                    peer_state.effective_weight =
                        peer_state.effective_weight.min(i64::from(peer.weight));
                    (was.serial, Arc::clone(&old.counters[slot]), peer_state)
                }
                None => {
                    let serial = state.next_serial;
                    state.next_serial = state.next_serial.wrapping_add(1);
                    let peer_state = PeerState {
                        effective_weight: peer.weight.into(),
                        ..PeerState::default()
                    };
                    (serial, Arc::new(PeerCounters::default()), peer_state)
                }
            };
            kept.push((is_backup, serial, counters));
            if is_backup {
                backup.push(peer);
                backup_states.push(peer_state);
            } else {
                primary.push(peer);
                primary_states.push(peer_state);
            }
        }
        // Serials and counters in slot order: primary peers first.
        let (primary_kept, backup_kept): (Vec<_>, Vec<_>) =
            kept.into_iter().partition(|(is_backup, _, _)| !is_backup);
        let ordered: Vec<_> = primary_kept.into_iter().chain(backup_kept).collect();
        let mut members = Members::new(
            primary,
            backup,
            consistent,
            ordered.iter().map(|(_, serial, _)| *serial).collect(),
        );
        members.counters = ordered
            .into_iter()
            .map(|(_, _, counters)| counters)
            .collect();
        if self.sticky.is_some() {
            members.name_for_sticky();
        }
        state.primary = primary_states;
        state.backup = backup_states;
        state.members = Some(Arc::new(members));
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

    /// The metrics' counters of a peer (`None` once DNS removed it).
    pub fn counters(&self, selected: Selected) -> Option<Arc<PeerCounters>> {
        let members = self.members();
        let slot = members.slot(selected)?;
        members.counters.get(slot).cloned()
    }

    /// Runs `count` on a peer's counters: borrowed in a fixed group (no reference count
    /// touched on the request path), found by serial in a `resolve` group.
    #[inline]
    fn with_counters(&self, selected: Selected, count: impl FnOnce(&PeerCounters)) {
        if let Some(members) = &self.fixed {
            // A fixed group's serials are its slots.
            if let Some(counters) = members.counters.get(selected.serial as usize) {
                count(counters);
            }
            return;
        }
        let members = self.members();
        if let Some(counters) = members
            .slot(selected)
            .and_then(|slot| members.counters.get(slot))
        {
            count(counters);
        }
    }

    /// Counts a peer's response with `status`, whose try started at `started`, whose
    /// connection took `connect_time` to open and whose head took `header_time` (which
    /// `least_time header` measures).
    pub fn note_response(
        &self,
        selected: Selected,
        status: u16,
        connect_time: Option<Duration>,
        header_time: Option<Duration>,
        started: Instant,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        if let (Some(server_line::TimeMeasure::FirstByte), Some(took)) =
            (self.measures_time(), header_time)
        {
            self.note_time(selected, took, started + took);
        }
        self.with_counters(selected, |counters| {
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
        });
    }

    /// `least_time`: a time the peer took, to its head or to its last byte as the group
    /// measures; it moves the peer's average halfway to it.
    pub fn note_time(&self, selected: Selected, took: Duration, now: Instant) {
        let mut guard = self.lock_state();
        let state = &mut *guard;
        let slot = match &self.fixed {
            Some(_) => Some(selected),
            None => {
                let members = state.members.clone().unwrap_or_default();
                members.slot(selected).map(|slot| members.at(slot))
            }
        };
        let Some(current) = slot else {
            return;
        };
        let states = if current.backup {
            &mut state.backup
        } else {
            &mut state.primary
        };
        if let Some(peer) = states.get_mut(current.index) {
            let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
            peer.time_average = match peer.timed {
                None => micros,
                Some(_) => peer.time_average / 2 + micros / 2,
            };
            peer.timed = Some(now);
        }
    }

    /// Which time `least_time` measures; `None` without `least_time`.
    #[inline]
    pub fn measures_time(&self) -> Option<server_line::TimeMeasure> {
        match self.balancer {
            Balancer::LeastTime { measure, .. } => Some(measure),
            _ => None,
        }
    }

    /// Counts bytes written to and read from a peer.
    pub fn note_bytes(&self, selected: Selected, sent: u64, received: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.with_counters(selected, |counters| {
            counters.sent_bytes.fetch_add(sent, Relaxed);
            counters.received_bytes.fetch_add(received, Relaxed);
        });
    }

    /// The id `sticky` names a chosen peer by; `None` without `sticky`, or once DNS
    /// removed the peer.
    pub fn sticky_id(&self, selected: Selected) -> Option<Arc<str>> {
        let members = self.members();
        let slot = members.slot(selected)?;
        members.ids.get(slot).cloned()
    }

    /// The peer a request chose; `None` once DNS removed it.
    pub fn peer(&self, selected: Selected) -> Option<PeerRef<'_>> {
        let members = self.members();
        let slot = members.slot(selected)?;
        Some(PeerRef { members, slot })
    }

    /// How many peers a request may try: every one not marked `down` (nginx's `tries`).
    #[inline]
    pub fn peer_count(&self) -> usize {
        let count = |members: &Members| {
            members
                .primary
                .iter()
                .chain(members.backup.iter())
                .filter(|peer| !peer.down)
                .count()
        };
        match &self.fixed {
            Some(members) => count(members),
            None => count(&self.members()),
        }
    }

    /// One primary peer and no backup: nginx never marks it failed and never retries it.
    #[inline]
    pub fn is_single(&self) -> bool {
        match &self.fixed {
            Some(members) => members.is_single(),
            None => self.members().is_single(),
        }
    }
}
