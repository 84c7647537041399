//! `server NAME resolve` and `server NAME service=NAME resolve`: the names of an
//! `upstream` block's servers looked up again while the server runs, when the last answer's
//! TTL (or the resolver's `valid=`) runs out, and the group's members replaced with what
//! DNS says, without a reload. The `http` and `stream` blocks' groups both follow their
//! names here; each block says where its groups are and where the lines go ([`BlockGroups`]).
//!
//! A group lives in the generation and its members in the group's zone, shared by every
//! worker: each worker follows every name, but a worker takes a lookup on only when it is
//! due and no other worker holds it, so a name is asked once per TTL whatever the number
//! of workers, and a worker that stops cannot hold it for longer than the lookup may take.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use logging::Level;
use shared::resolver::{ResolveError, ResolverConf};

use crate::{Group, Peer, PeerAddr, Resolvable};

/// What a block (`http` or `stream`) gives the worker that follows its `resolve` servers:
/// its groups, and its error log.
pub trait BlockGroups: 'static {
    /// The type of the groups' `hash` key.
    type Key: 'static;

    /// Every group of the block, in the order the configuration declares them.
    fn groups(&self) -> &[Group<Self::Key>];

    /// Writes a line to the error log a lookup's outcome goes to (the main one, as nginx's
    /// resolver writes to it).
    fn log(&self, level: Level, message: std::fmt::Arguments<'_>);
}

/// The shortest time between two lookups of a name: a TTL of 0 is asked again after it,
/// not in a loop.
const RESOLVE_INTERVAL_MIN: Duration = Duration::from_secs(1);
/// How soon a name whose lookup failed is asked again (the last good members stay).
const RESOLVE_RETRY: Duration = Duration::from_secs(1);

/// Follows every `resolve` server of the generation's groups until the worker stops
/// (the task is dropped then, and its lookups with it).
pub async fn follow_resolvable_servers<B: BlockGroups>(block: Rc<B>) {
    let mut followers = tokio::task::JoinSet::new();
    for (index, group) in block.groups().iter().enumerate() {
        for ordinal in 0..group.resolvables().count() {
            followers.spawn_local(follow(Rc::clone(&block), index, ordinal));
        }
    }
    while followers.join_next().await.is_some() {}
}

/// Gives a reloaded configuration's groups what the running one's `resolve` servers
/// last found (groups matched by name), and its `sticky learn` sessions (zones matched
/// by name).
pub fn carry_over<K>(new: &[Group<K>], old: &[Group<K>]) {
    for sessions in new.iter().filter_map(learned_sessions) {
        if let Some(previous) = old
            .iter()
            .filter_map(learned_sessions)
            .find(|previous| previous.zone == sessions.zone)
        {
            sessions.adopt(previous);
        }
    }
    for group in new
        .iter()
        .filter(|group| group.resolvables().next().is_some())
    {
        if let Some(previous) = old
            .iter()
            .find(|previous| !previous.implicit && previous.name == group.name)
        {
            group.carry_over(previous);
        }
    }
}

fn learned_sessions<K>(group: &Group<K>) -> Option<&crate::sticky::Sessions> {
    match &group.sticky {
        Some(crate::sticky::Sticky::Learn(learn)) => Some(&learn.sessions),
        _ => None,
    }
}

/// One `resolve` server of one group, forever.
async fn follow<B: BlockGroups>(block: Rc<B>, index: usize, ordinal: usize) {
    let group = &block.groups()[index];
    let Some((resolver, timeout)) = group.resolver.clone() else {
        return;
    };
    let Some(resolvable) = group.resolvables().nth(ordinal).cloned() else {
        return;
    };
    loop {
        let now = Instant::now();
        let wait = {
            let mut state = group.lock_state();
            let held = state.claimed_until[ordinal].filter(|until| *until > now);
            match held {
                Some(until) => Some(until),
                None if state.due[ordinal] > now => Some(state.due[ordinal]),
                None => {
                    state.claimed_until[ordinal] = Some(now + timeout + RESOLVE_RETRY);
                    None
                }
            }
        };
        if let Some(until) = wait {
            tokio::time::sleep_until(tokio::time::Instant::from_std(until)).await;
            continue;
        }
        let (next, found) = look_up(&*block, group, &resolvable, &resolver, timeout).await;
        let changed = found.map(|peers| {
            let shown = listing(&peers);
            (group.update_resolved(ordinal, peers), shown)
        });
        let mut state = group.lock_state();
        state.due[ordinal] = Instant::now() + next.max(RESOLVE_INTERVAL_MIN);
        state.claimed_until[ordinal] = None;
        drop(state);
        if let Some((true, shown)) = changed {
            block.log(
                Level::Notice,
                format_args!(
                    "upstream \"{}\": \"{}\" resolved to {shown}",
                    group.name,
                    resolvable.service.as_deref().unwrap_or(&resolvable.host)
                ),
            );
        }
    }
}

/// Asks for a server's records: how long the answer holds, and the peers it gives
/// (`None` when the lookup failed and the last good members stay, as in nginx; a name
/// that does not exist, or has no records, leaves the server without members).
async fn look_up<B: BlockGroups>(
    block: &B,
    group: &Group<B::Key>,
    resolvable: &Resolvable,
    resolver: &ResolverConf,
    timeout: Duration,
) -> (Duration, Option<Vec<(Peer, bool)>>) {
    let mut notes = Vec::new();
    let mut failed = Vec::new();
    let result = match &resolvable.service {
        None => shared::resolver::lookup(resolver, timeout, &resolvable.host, &mut notes)
            .await
            .map(|found| {
                let peers = found
                    .addresses
                    .iter()
                    .map(|ip| {
                        let address = SocketAddr::new(*ip, resolvable.port);
                        (member(resolvable, address, None), resolvable.backup)
                    })
                    .collect();
                (found.valid, peers)
            }),
        Some(service) => {
            shared::resolver::lookup_services(resolver, timeout, service, &mut notes, &mut failed)
                .await
                .map(|found| (found.valid, service_members(resolvable, &found.services)))
        }
    };
    for note in &notes {
        let level = if note.is_error() {
            Level::Error
        } else {
            Level::Info
        };
        block.log(
            level,
            format_args!("{note} while resolving in upstream \"{}\"", group.name),
        );
    }
    for (target, error) in &failed {
        block.log(
            Level::Error,
            format_args!("{target} could not be resolved ({error})"),
        );
    }
    match result {
        Ok((valid, peers)) => (valid, Some(peers)),
        Err(error) => {
            let name = resolvable.service.as_deref().unwrap_or(&resolvable.host);
            block.log(
                Level::Error,
                format_args!("{name} could not be resolved ({error})"),
            );
            if error == ResolveError::NOT_FOUND {
                (RESOLVE_RETRY, Some(Vec::new()))
            } else {
                (RESOLVE_RETRY, None)
            }
        }
    }
}

/// The peers of SRV records: the records of the lowest priority number are primary
/// servers and the others backup ones; a `backup` server takes the first as backup
/// servers and ignores the others (nginx's rule). Ports and weights are the records'.
fn service_members(
    resolvable: &Resolvable,
    services: &[shared::resolver::Service],
) -> Vec<(Peer, bool)> {
    let best = services.iter().map(|service| service.priority).min();
    let mut peers = Vec::new();
    for service in services {
        let first = Some(service.priority) == best;
        let backup = match (resolvable.backup, first) {
            (false, first) => !first,
            (true, true) => true,
            (true, false) => continue,
        };
        for ip in &service.addresses {
            let address = SocketAddr::new(*ip, service.port);
            let weight = u32::from(service.weight.max(1));
            peers.push((member(resolvable, address, Some(weight)), backup));
        }
    }
    peers
}

/// A peer at `address` with the server line's parameters. Its ring points for
/// `hash ... consistent` come from its own address, so that keys stay on an address
/// while others come and go.
fn member(resolvable: &Resolvable, address: SocketAddr, weight: Option<u32>) -> Peer {
    let name: std::sync::Arc<str> = address.to_string().into();
    Peer {
        address: PeerAddr::Inet(address),
        server: name.as_ref().into(),
        name,
        weight: weight.unwrap_or(resolvable.template.weight),
        ..resolvable.template.clone()
    }
}

/// `127.0.0.1:8080 127.0.0.2:8080` for the log, or `nothing`.
fn listing(peers: &[(Peer, bool)]) -> String {
    if peers.is_empty() {
        return "nothing".to_owned();
    }
    let names: Vec<&str> = peers.iter().map(|(peer, _)| peer.name.as_ref()).collect();
    names.join(" ")
}
