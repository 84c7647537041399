//! Idle upstream connections kept by one worker for reuse (`keepalive N` in an `upstream`
//! block). Each group keeps at most N; the least recently used is closed to make room. A
//! connection is put back only after a response that was read to its framed end, and it is
//! checked for a close or stray bytes from the server before it is used again.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use runtime::Stream;

use super::{KeepaliveConf, Selected, UpstreamId};

/// An idle connection to one peer.
#[derive(Debug)]
pub struct Idle {
    pub stream: Stream,
    /// When the connection was opened (`keepalive_time`).
    pub opened: Instant,
    /// Requests it has carried (`keepalive_requests`).
    pub requests: u64,
    /// Since when it has been idle (`keepalive_timeout`).
    idle_since: Instant,
}

/// The idle connections of one worker, by group.
#[derive(Debug, Default)]
pub struct KeepaliveCache {
    groups: HashMap<UpstreamId, VecDeque<(Selected, Idle)>>,
}

impl KeepaliveCache {
    /// The most recently used live idle connection to `peer`, if any.
    pub fn take(
        &mut self,
        group: UpstreamId,
        peer: Selected,
        conf: &KeepaliveConf,
        now: Instant,
    ) -> Option<Idle> {
        let idle = self.groups.get_mut(&group)?;
        // Connections idle beyond the timeout are closed, whatever their peer.
        idle.retain(|(_, connection)| {
            now.saturating_duration_since(connection.idle_since) <= conf.timeout
        });
        while let Some(position) = idle.iter().rposition(|(selected, _)| *selected == peer) {
            let (_, connection) = idle.remove(position)?;
            if still_open(&connection.stream) {
                return Some(connection);
            }
        }
        None
    }

    /// Keeps a connection whose response ended cleanly, unless it has carried
    /// `keepalive_requests` requests or lived `keepalive_time`.
    #[allow(clippy::too_many_arguments)]
    pub fn put(
        &mut self,
        group: UpstreamId,
        peer: Selected,
        conf: &KeepaliveConf,
        stream: Stream,
        opened: Instant,
        requests: u64,
        now: Instant,
    ) {
        if requests >= conf.requests || now.saturating_duration_since(opened) > conf.time {
            return;
        }
        let idle = self.groups.entry(group).or_default();
        if idle.len() >= conf.connections {
            idle.pop_front();
        }
        idle.push_back((
            peer,
            Idle {
                stream,
                opened,
                requests,
                idle_since: now,
            },
        ));
    }

    /// Closes every idle connection (the worker is stopping).
    pub fn clear(&mut self) {
        self.groups.clear();
    }
}

/// An idle connection is usable while the server has neither closed it nor sent anything.
fn still_open(stream: &Stream) -> bool {
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
