//! `status_zone` counters: per zone, requests, responses by class, bytes and a duration
//! histogram. Zones are named in the configuration and numbered process-wide the first
//! time a name is seen, so a zone keeps its number (and its counts) across reloads; their
//! number is bounded, so are the metrics' labels.

use crate::workers::{Counter, Gauge};

/// The most zones a process counts.
pub const MAX_STATUS_ZONES: usize = 64;

/// Upper bounds of the request-duration histogram's buckets, in microseconds (`+Inf`
/// implied).
pub const DURATION_BUCKETS_MICROSECONDS: [u64; 11] = [
    5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000,
    10_000_000,
];

/// One zone's counters on one worker (its only writer).
#[derive(Debug, Default)]
pub struct ZoneStats {
    /// Requests of a server zone under way (counted from the start of their phases).
    pub processing: Gauge,
    pub requests: Counter,
    /// Responses by status class: 1xx to 5xx.
    pub responses: [Counter; 5],
    /// Requests that finished without sending a response head (NGINX Plus's meaning).
    pub discarded: Counter,
    pub received_bytes: Counter,
    pub sent_bytes: Counter,
    /// Requests by duration (not cumulative), then beyond the last bound.
    pub duration_buckets: [Counter; 12],
    pub duration_microseconds: Counter,
}

/// What one finished request adds to its zone.
#[derive(Clone, Copy, Debug)]
pub struct Finished {
    pub status: u16,
    /// Whether a response head went out; a request that ends without one is discarded.
    pub responded: bool,
    pub received_bytes: u64,
    pub sent_bytes: u64,
    pub duration_microseconds: u64,
}

impl ZoneStats {
    pub fn record(&self, finished: &Finished) {
        self.requests.add(1);
        if !finished.responded {
            self.discarded.add(1);
        } else if let Some(class) = (finished.status / 100).checked_sub(1)
            && let Some(counter) = self.responses.get(usize::from(class))
        {
            counter.add(1);
        }
        self.received_bytes.add(finished.received_bytes);
        self.sent_bytes.add(finished.sent_bytes);
        let bucket = DURATION_BUCKETS_MICROSECONDS
            .iter()
            .position(|bound| finished.duration_microseconds <= *bound)
            .unwrap_or(DURATION_BUCKETS_MICROSECONDS.len());
        self.duration_buckets[bucket].add(1);
        self.duration_microseconds
            .add(finished.duration_microseconds);
    }

    pub fn snapshot(&self) -> ZoneSnapshot {
        ZoneSnapshot {
            processing: self.processing.get(),
            requests: self.requests.get(),
            responses: std::array::from_fn(|class| self.responses[class].get()),
            discarded: self.discarded.get(),
            received_bytes: self.received_bytes.get(),
            sent_bytes: self.sent_bytes.get(),
            duration_buckets: std::array::from_fn(|bucket| self.duration_buckets[bucket].get()),
            duration_microseconds: self.duration_microseconds.get(),
        }
    }
}

/// A copy of one or more [`ZoneStats`], summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneSnapshot {
    pub processing: u64,
    pub requests: u64,
    pub responses: [u64; 5],
    pub discarded: u64,
    pub received_bytes: u64,
    pub sent_bytes: u64,
    pub duration_buckets: [u64; 12],
    pub duration_microseconds: u64,
}

impl ZoneSnapshot {
    pub fn add(&mut self, other: &ZoneSnapshot) {
        self.processing += other.processing;
        self.requests += other.requests;
        self.discarded += other.discarded;
        for (mine, theirs) in self.responses.iter_mut().zip(other.responses) {
            *mine += theirs;
        }
        self.received_bytes += other.received_bytes;
        self.sent_bytes += other.sent_bytes;
        for (mine, theirs) in self.duration_buckets.iter_mut().zip(other.duration_buckets) {
            *mine += theirs;
        }
        self.duration_microseconds += other.duration_microseconds;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_lands_in_its_class_and_bucket() {
        let zone = ZoneStats::default();
        zone.record(&Finished {
            status: 404,
            responded: true,
            received_bytes: 80,
            sent_bytes: 300,
            duration_microseconds: 30_000,
        });
        zone.record(&Finished {
            status: 0,
            responded: false,
            received_bytes: 10,
            sent_bytes: 0,
            duration_microseconds: 20_000_000,
        });
        let snapshot = zone.snapshot();
        assert_eq!(snapshot.requests, 2);
        assert_eq!(snapshot.responses, [0, 0, 0, 1, 0]);
        assert_eq!(snapshot.discarded, 1, "no response head went out");
        assert_eq!((snapshot.received_bytes, snapshot.sent_bytes), (90, 300));
        assert_eq!(snapshot.duration_buckets[3], 1);
        assert_eq!(snapshot.duration_buckets[11], 1);
    }
}
