//! Choosing a peer: smooth weighted round robin, `least_conn`, `ip_hash`, `hash` (plain and
//! consistent), `random`, with nginx's failure accounting (`max_fails`, `fail_timeout`,
//! `max_conns`, `backup`, `down`). The arithmetic is nginx's, so a configuration spreads
//! requests the same way under Portico: the same key lands on the same server.

use std::net::IpAddr;
use std::time::Instant;

use super::{Balancer, Group, Members, Peer, PeerRef, PeerState};

/// A chosen peer: its index among the primary or the backup peers when it was chosen, and
/// its serial, which finds it again after DNS changed the group's members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selected {
    pub backup: bool,
    pub index: usize,
    pub serial: u32,
}

/// What one request has tried so far, and its balancer's per-request state.
#[derive(Clone, Debug, Default)]
pub struct Tried {
    primary: Bits,
    backup: Bits,
    /// The primary peers are exhausted: choose among the backups.
    in_backup: bool,
    /// `ip_hash`/`hash`: the running hash, rehash count and attempts (nginx gives up after
    /// 20 and falls back to round robin).
    hash: u64,
    rehash: u32,
    attempts: u32,
    /// `hash ... consistent`: the position on the ring, once found.
    ring_position: Option<usize>,
}

/// Which peers a request has tried: bits in place for up to 128 peers (no allocation per
/// request), a vector beyond.
#[derive(Clone, Debug, Default)]
pub struct Bits {
    inline: u128,
    heap: Vec<bool>,
}

impl Bits {
    fn new(len: usize) -> Bits {
        Bits {
            inline: 0,
            heap: if len > 128 {
                vec![false; len]
            } else {
                Vec::new()
            },
        }
    }

    fn get(&self, index: usize) -> bool {
        if self.heap.is_empty() {
            index < 128 && self.inline & (1 << index) != 0
        } else {
            self.heap.get(index).copied().unwrap_or(false)
        }
    }

    fn set(&mut self, index: usize) {
        if self.heap.is_empty() {
            if index < 128 {
                self.inline |= 1 << index;
            }
        } else if let Some(bit) = self.heap.get_mut(index) {
            *bit = true;
        }
    }
}

/// What the hash balancers hash.
#[derive(Clone, Copy, Debug, Default)]
pub struct SelectKey<'k> {
    pub client: Option<IpAddr>,
    /// The rendered `hash` key.
    pub hash: &'k [u8],
    /// `sticky`: the id of the peer the request is bound to (empty when none), and for
    /// `learn` the key of the session that bound it.
    pub sticky: &'k [u8],
    pub session: &'k [u8],
}

/// nginx's limit of attempts for the hash balancers before they fall back to round robin.
const HASH_ATTEMPTS_MAX: u32 = 20;

impl Tried {
    pub fn new<K>(group: &Group<K>) -> Tried {
        let (primary, backup) = match &group.fixed {
            Some(members) => (members.primary.len(), members.backup.len()),
            None => {
                let members = group.members();
                (members.primary.len(), members.backup.len())
            }
        };
        Tried {
            primary: Bits::new(primary),
            backup: Bits::new(backup),
            hash: if matches!(group.balancer, Balancer::IpHash) {
                89
            } else {
                0
            },
            ..Tried::default()
        }
    }
}

/// Whether the balancer may choose `peer`: a `drain` peer takes only requests `sticky`
/// binds to it.
fn available(peer: &Peer, state: &PeerState, now: Instant) -> bool {
    !peer.drain && reachable(peer, state, now)
}

/// Whether `peer` may take a request: not down, not failed, not full.
fn reachable(peer: &Peer, state: &PeerState, now: Instant) -> bool {
    if peer.down {
        return false;
    }
    if peer.max_fails > 0
        && state.fails >= peer.max_fails
        && state
            .checked
            .is_some_and(|checked| now.saturating_duration_since(checked) <= peer.fail_timeout)
    {
        return false;
    }
    !(peer.max_conns > 0 && state.conns >= peer.max_conns)
}

/// Marks a chosen peer as checked now when its fail timeout has passed (nginx does this on
/// every choice, so that a success after the timeout clears the failures).
fn touch(peer: &Peer, state: &mut PeerState, now: Instant) {
    if state
        .checked
        .is_none_or(|checked| now.saturating_duration_since(checked) > peer.fail_timeout)
    {
        state.checked = Some(now);
    }
}

/// `sticky`: the first peer named `wanted` that the request has not tried and that may
/// take it. The balancer's state is left alone, so bound requests do not skew how the
/// others are spread.
fn sticky_pick(
    peers: &[Peer],
    ids: &[std::sync::Arc<str>],
    states: &mut [PeerState],
    tried: &Bits,
    wanted: &[u8],
    now: Instant,
) -> Option<usize> {
    let index = (0..peers.len()).find(|index| {
        ids.get(*index).is_some_and(|id| id.as_bytes() == wanted)
            && !tried.get(*index)
            && reachable(&peers[*index], &states[*index], now)
    })?;
    touch(&peers[index], &mut states[index], now);
    Some(index)
}

/// Smooth weighted round robin among the peers `eligible` accepts.
fn weighted_pick(
    peers: &[Peer],
    states: &mut [PeerState],
    tried: &Bits,
    now: Instant,
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut best: Option<usize> = None;
    let mut total = 0i64;
    for index in 0..peers.len() {
        if tried.get(index) || !eligible(index) || !available(&peers[index], &states[index], now) {
            continue;
        }
        let state = &mut states[index];
        state.current_weight += state.effective_weight;
        total += state.effective_weight;
        if state.effective_weight < i64::from(peers[index].weight) {
            state.effective_weight += 1;
        }
        let current = state.current_weight;
        if best.is_none_or(|best| current > states[best].current_weight) {
            best = Some(index);
        }
    }
    let best = best?;
    states[best].current_weight -= total;
    touch(&peers[best], &mut states[best], now);
    Some(best)
}

/// `least_conn`: the fewest connections per weight; ties go round robin.
fn least_conn_pick(
    peers: &[Peer],
    states: &mut [PeerState],
    tried: &Bits,
    now: Instant,
) -> Option<usize> {
    let loads: Vec<u64> = states.iter().map(|state| u64::from(state.conns)).collect();
    least_load_pick(peers, states, tried, now, &loads)
}

/// `least_time`: a peer's average fades to nothing over its `fail_timeout` without a new
/// measure, and over this long at least, so that a peer that was slow is tried again
/// about when a failed one would be.
const TIME_FADE_MIN: std::time::Duration = std::time::Duration::from_secs(3);

/// `least_time`: what a peer is expected to take, in milliseconds: its average, faded by
/// the time since it was measured; with `inflight`, at least as long as its requests have
/// been in flight without a break.
fn expected_millis(peer: &Peer, state: &PeerState, now: Instant, inflight: bool) -> u64 {
    let fade = peer.fail_timeout.max(TIME_FADE_MIN);
    let mut micros = match state.timed {
        None => 0,
        Some(at) => {
            let left = fade.saturating_sub(now.saturating_duration_since(at));
            let faded = u128::from(state.time_average) * left.as_micros() / fade.as_micros();
            u64::try_from(faded).unwrap_or(u64::MAX)
        }
    };
    if inflight && let Some(since) = state.busy_since {
        let busy = now.saturating_duration_since(since).as_micros();
        micros = micros.max(u64::try_from(busy).unwrap_or(u64::MAX));
    }
    micros / 1000
}

/// `least_time`: the least expected time, times the requests in flight plus this one,
/// per weight; ties go round robin.
fn least_time_pick(
    peers: &[Peer],
    states: &mut [PeerState],
    tried: &Bits,
    now: Instant,
    inflight: bool,
) -> Option<usize> {
    let loads: Vec<u64> = states
        .iter()
        .zip(peers)
        .map(|(state, peer)| {
            let expected = expected_millis(peer, state, now, inflight).saturating_add(1);
            expected.saturating_mul(u64::from(state.conns) + 1)
        })
        .collect();
    least_load_pick(peers, states, tried, now, &loads)
}

/// The least load per weight among the peers not tried and available; ties go round robin.
fn least_load_pick(
    peers: &[Peer],
    states: &mut [PeerState],
    tried: &Bits,
    now: Instant,
    loads: &[u64],
) -> Option<usize> {
    let less = |a: usize, b: usize| {
        u128::from(loads[a]) * u128::from(peers[b].weight)
            < u128::from(loads[b]) * u128::from(peers[a].weight)
    };
    let mut best: Option<usize> = None;
    for index in 0..peers.len() {
        if tried.get(index) || !available(&peers[index], &states[index], now) {
            continue;
        }
        if best.is_none_or(|best| less(index, best)) {
            best = Some(index);
        }
    }
    let best = best?;
    let ties: Vec<bool> = (0..peers.len())
        .map(|index| !less(index, best) && !less(best, index))
        .collect();
    weighted_pick(peers, states, tried, now, |index| ties[index])
}

/// Whether `a` has fewer connections per weight than `b`.
fn ratio_less(peers: &[Peer], states: &[PeerState], a: usize, b: usize) -> bool {
    u64::from(states[a].conns) * u64::from(peers[b].weight)
        < u64::from(states[b].conns) * u64::from(peers[a].weight)
}

/// The peer a weight offset falls on (peers laid out by weight, as nginx walks them).
fn by_weight(peers: &[Peer], mut w: u64) -> usize {
    for (index, peer) in peers.iter().enumerate() {
        let weight = u64::from(peer.weight);
        if w < weight {
            return index;
        }
        w -= weight;
    }
    peers.len() - 1
}

fn total_weight(peers: &[Peer]) -> u64 {
    peers
        .iter()
        .map(|peer| u64::from(peer.weight))
        .sum::<u64>()
        .max(1)
}

/// The hash balancers' search: `next` names a candidate (by weight) per attempt; the first
/// one not tried and available wins. `None` after nginx's 20 attempts: round robin then.
fn probe(
    members: &Members,
    states: &[PeerState],
    tried: &mut Tried,
    now: Instant,
    mut next: impl FnMut(&mut Tried) -> u64,
) -> Option<usize> {
    let total = total_weight(&members.primary);
    loop {
        let index = by_weight(&members.primary, next(tried) % total);
        if !tried.primary.get(index) && available(&members.primary[index], &states[index], now) {
            return Some(index);
        }
        tried.attempts += 1;
        if tried.attempts > HASH_ATTEMPTS_MAX {
            return None;
        }
    }
}

/// `ip_hash`: the first three bytes of an IPv4 client address (all of IPv6) pick the peer.
fn ip_hash_pick(
    members: &Members,
    states: &mut [PeerState],
    tried: &mut Tried,
    client: Option<IpAddr>,
    now: Instant,
) -> Option<usize> {
    let bytes: Vec<u8> = match client {
        Some(IpAddr::V4(ip)) => ip.octets()[..3].to_vec(),
        Some(IpAddr::V6(ip)) => match ip.to_ipv4_mapped() {
            Some(v4) => v4.octets()[..3].to_vec(),
            None => ip.octets().to_vec(),
        },
        None => vec![0; 3],
    };
    let index = probe(members, states, tried, now, |tried| {
        for byte in &bytes {
            tried.hash = (tried.hash * 113 + u64::from(*byte)) % 6271;
        }
        tried.hash
    })?;
    touch(&members.primary[index], &mut states[index], now);
    Some(index)
}

/// `hash KEY`: CRC32 of the key (with the rehash count in front after the first attempt).
fn hash_pick(
    members: &Members,
    states: &mut [PeerState],
    tried: &mut Tried,
    key: &[u8],
    now: Instant,
) -> Option<usize> {
    let index = probe(members, states, tried, now, |tried| {
        let mut crc = Crc32::new();
        if tried.rehash > 0 {
            crc.update(tried.rehash.to_string().as_bytes());
        }
        crc.update(key);
        tried.hash += u64::from((crc.finish() >> 16) & 0x7fff);
        tried.rehash += 1;
        tried.hash
    })?;
    touch(&members.primary[index], &mut states[index], now);
    Some(index)
}

/// `hash KEY consistent`: the first ring point at or after the key's CRC32; peers that
/// share the point's server are balanced round robin.
fn chash_pick(
    members: &Members,
    states: &mut [PeerState],
    tried: &mut Tried,
    key: &[u8],
    now: Instant,
) -> Option<usize> {
    if members.ring.is_empty() {
        return None;
    }
    let mut position = *tried.ring_position.get_or_insert_with(|| {
        let hash = crc32(key);
        members.ring.partition_point(|(point, _)| *point < hash)
    });
    loop {
        let (_, owner) = members.ring[position % members.ring.len()];
        let server = &members.primary[owner].server;
        let chosen = weighted_pick(&members.primary, states, &tried.primary, now, |index| {
            members.primary[index].server == *server
        });
        if let Some(index) = chosen {
            tried.ring_position = Some(position);
            return Some(index);
        }
        position += 1;
        tried.ring_position = Some(position);
        tried.attempts += 1;
        if tried.attempts > HASH_ATTEMPTS_MAX {
            return None;
        }
    }
}

/// `random [two [least_conn]]`.
fn random_pick(
    members: &Members,
    states: &mut [PeerState],
    tried: &mut Tried,
    two: bool,
    now: Instant,
) -> Option<usize> {
    let first = probe(members, states, tried, now, |_| random_u64())?;
    let chosen = if two && members.primary.len() > 1 {
        // Two different peers are compared, as nginx's `random two` does: a second pick
        // of the first would send a request to a busy peer while another is idle.
        let second = loop {
            match probe(members, states, tried, now, |_| random_u64()) {
                Some(index) if index == first => {
                    tried.attempts += 1;
                    if tried.attempts > HASH_ATTEMPTS_MAX {
                        break first;
                    }
                }
                Some(index) => break index,
                None => break first,
            }
        };
        if ratio_less(&members.primary, states, second, first) {
            second
        } else {
            first
        }
    } else {
        first
    };
    touch(&members.primary[chosen], &mut states[chosen], now);
    Some(chosen)
}

thread_local! {
    static RANDOM: std::cell::Cell<u64> = std::cell::Cell::new(seed());
}

fn seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0x9e37_79b9_7f4a_7c15u64) | 1
}

/// xorshift64*: a per-thread generator, enough for spreading requests.
fn random_u64() -> u64 {
    RANDOM.with(|cell| {
        let mut x = cell.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        cell.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

impl<K> Group<K> {
    /// Chooses a peer for a request that has tried `tried` so far, and counts a connection
    /// to it. `None` is nginx's "no live upstreams": every peer is down or failed (their
    /// failure counts are then cleared, so that they are tried again soon).
    pub fn select(&self, tried: &mut Tried, key: &SelectKey<'_>, now: Instant) -> Option<Selected> {
        self.select_peer(tried, key, now)
            .map(|(selected, _)| selected)
    }

    /// [`Group::select`], with the peer chosen: it stays valid while the request uses it,
    /// whatever DNS does to the group meanwhile.
    pub fn select_peer(
        &self,
        tried: &mut Tried,
        key: &SelectKey<'_>,
        now: Instant,
    ) -> Option<(Selected, PeerRef<'_>)> {
        let mut guard = self.lock_state();
        let state = &mut *guard;
        let members = match &self.fixed {
            // The common case, kept as short as it was before groups could change.
            Some(members) => super::MembersRef::Fixed(members),
            None => super::MembersRef::Shared(state.members.clone().unwrap_or_default()),
        };
        let (primary, backup) = (&mut state.primary, &mut state.backup);
        let selected = choose(&self.balancer, &members, primary, backup, tried, key, now)?;
        drop(guard);
        let slot = if selected.backup {
            members.primary.len() + selected.index
        } else {
            selected.index
        };
        if !key.session.is_empty() {
            self.renew_session(&members, slot, key, now);
        }
        Some((selected, PeerRef { members, slot }))
    }

    /// `sticky learn`: a session whose peer was chosen by it lives on, unless the peer
    /// drains (its sessions then run out).
    fn renew_session(&self, members: &Members, slot: usize, key: &SelectKey<'_>, now: Instant) {
        if let Some(crate::sticky::Sticky::Learn(learn)) = &self.sticky
            && !members.peer_at(slot).drain
            && members
                .ids
                .get(slot)
                .is_some_and(|id| id.as_bytes() == key.sticky)
        {
            learn.sessions.touch(key.session, now);
        }
    }

    /// Ends a request's use of a peer: counts a failure (and says whether the peer just
    /// reached `max_fails`), or clears the failures of a peer that answered after its
    /// fail timeout. A peer DNS removed meanwhile has nothing left to count.
    pub fn release(&self, selected: Selected, failed: bool, now: Instant) -> bool {
        let mut guard = self.lock_state();
        let state = &mut *guard;
        let members = match &self.fixed {
            Some(members) => super::MembersRef::Fixed(members),
            None => super::MembersRef::Shared(state.members.clone().unwrap_or_default()),
        };
        // A fixed group's peers never move: the choice is where it was.
        let current = if self.fixed.is_some() {
            selected
        } else {
            let Some(slot) = members.slot(selected) else {
                return false;
            };
            members.at(slot)
        };
        let peer = if current.backup {
            &members.backup[current.index]
        } else {
            &members.primary[current.index]
        };
        let states = if current.backup {
            &mut state.backup
        } else {
            &mut state.primary
        };
        let state = &mut states[current.index];
        state.conns = state.conns.saturating_sub(1);
        if state.conns == 0 {
            state.busy_since = None;
        }
        state.failures += u64::from(failed);
        if members.is_single() {
            return false;
        }
        if failed {
            state.fails += 1;
            state.accessed = Some(now);
            state.checked = Some(now);
            let mut disabled = false;
            if let Some(share) = peer.weight.checked_div(peer.max_fails) {
                state.effective_weight -= i64::from(share);
                disabled = state.fails >= peer.max_fails;
            }
            if state.effective_weight < 0 {
                state.effective_weight = 0;
            }
            state.unavailable += u64::from(disabled);
            disabled
        } else {
            if state.accessed < state.checked {
                state.fails = 0;
            }
            false
        }
    }

    /// Counts a try that reached its peer without ending its use of it (a stream session
    /// that stays connected): a peer whose fail timeout had passed is live again at once,
    /// not when the session ends. [`Group::release`] still follows.
    pub fn note_success(&self, selected: Selected) {
        let mut guard = self.lock_state();
        let members = match &self.fixed {
            Some(members) => super::MembersRef::Fixed(members),
            None => super::MembersRef::Shared(guard.members.clone().unwrap_or_default()),
        };
        let Some(slot) = members.slot(selected) else {
            return;
        };
        let current = members.at(slot);
        let states = if current.backup {
            &mut guard.backup
        } else {
            &mut guard.primary
        };
        let state = &mut states[current.index];
        if state.accessed < state.checked {
            state.fails = 0;
        }
    }
}

/// Counts a request in flight to a chosen peer; `least_time ... inflight` also notes
/// when the peer became busy.
#[inline]
fn take(state: &mut PeerState, now: Instant, inflight: bool) {
    if inflight && state.conns == 0 {
        state.busy_since = Some(now);
    }
    state.conns += 1;
    state.selected += 1;
}

/// The choice itself, on the members and their states under the group's lock.
#[inline]
fn choose<K>(
    balancer: &Balancer<K>,
    members: &Members,
    primary: &mut [PeerState],
    backup: &mut [PeerState],
    tried: &mut Tried,
    key: &SelectKey<'_>,
    now: Instant,
) -> Option<Selected> {
    let serial = |backup: bool, index: usize| {
        let slot = if backup {
            members.primary.len() + index
        } else {
            index
        };
        members.serials[slot]
    };
    if members.is_single() {
        let peer = &members.primary[0];
        let peer_state = &mut primary[0];
        if peer.down
            || (peer.max_conns > 0 && peer_state.conns >= peer.max_conns)
            || (peer.drain && key.sticky.is_empty())
        {
            return None;
        }
        peer_state.conns += 1;
        peer_state.selected += 1;
        return Some(Selected {
            backup: false,
            index: 0,
            serial: serial(false, 0),
        });
    }
    let inflight = matches!(balancer, Balancer::LeastTime { inflight: true, .. });
    let sticky = |peers: &[Peer], states: &mut [PeerState], tried: &Bits, offset: usize| {
        if key.sticky.is_empty() {
            return None;
        }
        let ids = members.ids.get(offset..).unwrap_or_default();
        sticky_pick(peers, ids, states, tried, key.sticky, now)
    };
    if !tried.in_backup {
        if let Some(index) = sticky(&members.primary, primary, &tried.primary, 0) {
            tried.primary.set(index);
            take(&mut primary[index], now, inflight);
            return Some(Selected {
                backup: false,
                index,
                serial: serial(false, index),
            });
        }
        // The hash methods pick by key (falling back to round robin as nginx does:
        // fewer than two servers, an empty key, or 20 unavailable picks).
        let hashed = match balancer {
            _ if members.primary.len() < 2 => None,
            Balancer::RoundRobin | Balancer::LeastConn | Balancer::LeastTime { .. } => None,
            Balancer::IpHash => ip_hash_pick(members, primary, tried, key.client, now),
            Balancer::Hash { .. } if key.hash.is_empty() => None,
            Balancer::Hash {
                consistent: true, ..
            } => chash_pick(members, primary, tried, key.hash, now),
            Balancer::Hash { .. } => hash_pick(members, primary, tried, key.hash, now),
            Balancer::Random { two } => random_pick(members, primary, tried, *two, now),
        };
        let chosen = match (hashed, balancer) {
            (Some(index), _) => Some(index),
            (None, Balancer::LeastConn) => {
                least_conn_pick(&members.primary, primary, &tried.primary, now)
            }
            (None, Balancer::LeastTime { inflight, .. }) => {
                least_time_pick(&members.primary, primary, &tried.primary, now, *inflight)
            }
            (None, _) => weighted_pick(&members.primary, primary, &tried.primary, now, |_| true),
        };
        if let Some(index) = chosen {
            tried.primary.set(index);
            take(&mut primary[index], now, inflight);
            return Some(Selected {
                backup: false,
                index,
                serial: serial(false, index),
            });
        }
        tried.in_backup = true;
    }
    let offset = members.primary.len();
    let chosen = match sticky(&members.backup, backup, &tried.backup, offset) {
        Some(index) => Some(index),
        None => match balancer {
            Balancer::LeastConn => least_conn_pick(&members.backup, backup, &tried.backup, now),
            Balancer::LeastTime { inflight, .. } => {
                least_time_pick(&members.backup, backup, &tried.backup, now, *inflight)
            }
            _ => weighted_pick(&members.backup, backup, &tried.backup, now, |_| true),
        },
    };
    if let Some(index) = chosen {
        tried.backup.set(index);
        take(&mut backup[index], now, inflight);
        return Some(Selected {
            backup: true,
            index,
            serial: serial(true, index),
        });
    }
    // Every peer failed: count them live again for a quick recovery, as nginx does.
    for peer in primary.iter_mut().chain(backup.iter_mut()) {
        peer.fails = 0;
    }
    None
}

/// The points of a `hash ... consistent` ring: 160 per unit of weight for each primary
/// peer, from CRC32 of the server's host, a NUL, its port, and the previous point.
pub fn ketama_ring(peers: &[Peer]) -> Vec<(u32, usize)> {
    let mut ring = Vec::new();
    for (index, peer) in peers.iter().enumerate() {
        let server = peer.server.as_bytes();
        let (host, port): (&[u8], &[u8]) =
            if server.len() >= 5 && server[..5].eq_ignore_ascii_case(b"unix:") {
                (&server[5..], b"")
            } else {
                split_port(server)
            };
        let mut base = Crc32::new();
        base.update(host);
        base.update(b"\0");
        base.update(port);
        let mut previous = 0u32;
        for _ in 0..peer.weight * 160 {
            let mut point = base.clone();
            point.update(&previous.to_le_bytes());
            let hash = point.finish();
            ring.push((hash, index));
            previous = hash;
        }
    }
    ring.sort_by_key(|(hash, _)| *hash);
    ring.dedup_by_key(|(hash, _)| *hash);
    ring
}

/// `host:port` split at a trailing run of digits after `:`, as nginx splits a server.
fn split_port(server: &[u8]) -> (&[u8], &[u8]) {
    for (j, &byte) in server.iter().rev().enumerate() {
        if byte == b':' {
            let colon = server.len() - j - 1;
            return (&server[..colon], &server[colon + 1..]);
        }
        if !byte.is_ascii_digit() {
            break;
        }
    }
    (server, b"")
}

/// CRC-32 (IEEE 802.3, reflected), as nginx's `ngx_crc32_*`.
#[derive(Clone, Debug)]
pub struct Crc32(u32);

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

impl Crc32 {
    pub fn new() -> Crc32 {
        Crc32(0xffff_ffff)
    }

    pub fn update(&mut self, bytes: &[u8]) {
        let mut crc = self.0;
        for &byte in bytes {
            crc = CRC_TABLE[((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8);
        }
        self.0 = crc;
    }

    pub fn finish(&self) -> u32 {
        self.0 ^ 0xffff_ffff
    }
}

impl Default for Crc32 {
    fn default() -> Self {
        Crc32::new()
    }
}

pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = Crc32::new();
    crc.update(bytes);
    crc.finish()
}

#[cfg(test)]
mod tests;
