//! Counting a finished request in its `status_zone`s, on the worker that served it: the
//! zone of its server (a `status_zone` at the server level) and the zone of its location
//! (one the location names itself), as NGINX Plus counts server and location zones.

use std::sync::Arc;

use metrics::WorkerStats;
use metrics::zones::Finished;

use crate::kernel::conf::{Location, Server};
use crate::kernel::request::Request;
use crate::kernel::worker::HttpWorker;

/// The zone a server's own level names.
fn server_zone(worker: &HttpWorker, server: &Server) -> Option<usize> {
    worker
        .conf()
        .location(server.location)
        .settings
        .status_zone
        .zone
}

/// The zone `location` names itself (not inherited from its server), if any.
fn own_zone(location: &Location, server_zone: Option<usize>) -> Option<usize> {
    location
        .settings
        .status_zone
        .zone
        .filter(|zone| Some(*zone) != server_zone)
}

/// At load: the zones locations name themselves are location zones.
pub(crate) fn mark_location_zones(servers: &[Server], locations: &[Location]) {
    for location in locations {
        let Some(server) = servers.get(location.server.0 as usize) else {
            continue;
        };
        if server.location == location.id {
            continue;
        }
        let server_zone = locations
            .get(server.location.0 as usize)
            .and_then(|level| level.settings.status_zone.zone);
        if let Some(zone) = own_zone(location, server_zone) {
            metrics::GLOBAL.mark_location_zone(zone);
        }
    }
}

/// A request under way in its server's zone (`processing`), until the request's cleanups
/// run: when it is over, or the connection ends.
struct Processing {
    stats: Arc<WorkerStats>,
    zone: usize,
}

impl Drop for Processing {
    fn drop(&mut self) {
        if let Some(stats) = self.stats.zones.get(self.zone) {
            stats.processing.decrement();
        }
    }
}

/// A main request starts its phases: it counts as processing in its server's zone.
pub(crate) fn start(worker: &HttpWorker, request: &mut Request<'_>) {
    if request.is_subrequest() {
        return;
    }
    let Some(zone) = request
        .server
        .and_then(|id| server_zone(worker, worker.conf().server(id)))
    else {
        return;
    };
    let Some(stats) = worker.stats.zones.get(zone) else {
        return;
    };
    stats.processing.increment();
    request.cleanups.0.push(Box::new(Processing {
        stats: Arc::clone(&worker.stats),
        zone,
    }));
}

/// Adds a finished request to its server's zone and its location's own zone.
pub(crate) fn record(worker: &HttpWorker, location: &Location, request: &Request<'_>) {
    // A location inherits its server's zone: without one of its own or inherited, the
    // server has none either, and nothing is counted (no look at the server's level).
    if location.settings.status_zone.zone.is_none() {
        return;
    }
    let server_zone = request
        .server
        .and_then(|id| server_zone(worker, worker.conf().server(id)));
    let location_zone = own_zone(location, server_zone);
    if server_zone.is_none() && location_zone.is_none() {
        return;
    }
    let duration = request.started.map_or(0, |started| {
        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
    });
    let finished = Finished {
        status: crate::kernel::special::status_on_wire(request.response.status),
        responded: request.sent.header_bytes > 0,
        received_bytes: request.length,
        sent_bytes: request.sent.header_bytes + request.sent.body_bytes,
        duration_microseconds: duration,
    };
    for zone in [server_zone, location_zone].into_iter().flatten() {
        if let Some(stats) = worker.stats.zones.get(zone) {
            stats.record(&finished);
        }
    }
}
