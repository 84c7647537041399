//! `resolver ... status_zone=NAME`: what a resolver asked and what its name servers
//! answered, counted for the API (`/api/9/resolvers`) and the Prometheus endpoint. A zone
//! lives for the whole process: a reload that names it again goes on counting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One zone's counters.
#[derive(Debug, Default)]
pub struct ZoneCounters {
    /// Lookups of names' addresses (A and AAAA) sent to the name servers.
    name: AtomicU64,
    /// Lookups of SRV records.
    srv: AtomicU64,
    /// Answers by response code, and questions no server answered in time.
    noerror: AtomicU64,
    formerr: AtomicU64,
    servfail: AtomicU64,
    nxdomain: AtomicU64,
    notimp: AtomicU64,
    refused: AtomicU64,
    timedout: AtomicU64,
    unknown: AtomicU64,
}

/// What a lookup is for.
#[derive(Clone, Copy, Debug)]
pub enum Asked {
    Name,
    Srv,
}

/// How one question ended.
#[derive(Clone, Copy, Debug)]
pub enum Answered {
    /// A response code: 0 NOERROR, 1 FORMERR, ... (RFC 1035 §4.1.1).
    Code(u8),
    TimedOut,
}

impl ZoneCounters {
    pub fn asked(&self, what: Asked) {
        let counter = match what {
            Asked::Name => &self.name,
            Asked::Srv => &self.srv,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn answered(&self, how: Answered) {
        let counter = match how {
            Answered::Code(0) => &self.noerror,
            Answered::Code(1) => &self.formerr,
            Answered::Code(2) => &self.servfail,
            Answered::Code(3) => &self.nxdomain,
            Answered::Code(4) => &self.notimp,
            Answered::Code(5) => &self.refused,
            Answered::Code(_) => &self.unknown,
            Answered::TimedOut => &self.timedout,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ZoneSnapshot {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ZoneSnapshot {
            name: read(&self.name),
            srv: read(&self.srv),
            addr: 0,
            noerror: read(&self.noerror),
            formerr: read(&self.formerr),
            servfail: read(&self.servfail),
            nxdomain: read(&self.nxdomain),
            notimp: read(&self.notimp),
            refused: read(&self.refused),
            timedout: read(&self.timedout),
            unknown: read(&self.unknown),
        }
    }
}

/// A zone's counters at one moment, with NGINX Plus's names. `addr` (reverse lookups)
/// is always 0: Portico never asks for names of addresses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneSnapshot {
    pub name: u64,
    pub srv: u64,
    pub addr: u64,
    pub noerror: u64,
    pub formerr: u64,
    pub servfail: u64,
    pub nxdomain: u64,
    pub notimp: u64,
    pub refused: u64,
    pub timedout: u64,
    pub unknown: u64,
}

/// Every zone named since the process started, in the order they were first named.
static ZONES: Mutex<Vec<(String, Arc<ZoneCounters>)>> = Mutex::new(Vec::new());

/// The counters of zone `name`, made when first named.
pub fn named(name: &str) -> Arc<ZoneCounters> {
    let mut zones = ZONES.lock().unwrap_or_else(|poison| poison.into_inner());
    if let Some((_, counters)) = zones.iter().find(|(known, _)| known == name) {
        return Arc::clone(counters);
    }
    let counters = Arc::new(ZoneCounters::default());
    zones.push((name.to_owned(), Arc::clone(&counters)));
    counters
}

/// Every zone's counters now.
pub fn zones() -> Vec<(String, ZoneSnapshot)> {
    let zones = ZONES.lock().unwrap_or_else(|poison| poison.into_inner());
    zones
        .iter()
        .map(|(name, counters)| (name.clone(), counters.snapshot()))
        .collect()
}
