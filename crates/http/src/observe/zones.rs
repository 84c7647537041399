//! Counting a finished request in its `status_zone`, on the worker that served it.

use metrics::zones::Finished;

use crate::observe::settings::StatusZone;
use crate::request::Request;
use crate::worker::HttpWorker;

/// Adds a finished request to its location's zone, if it has one.
pub(crate) fn record(worker: &HttpWorker, settings: &StatusZone, request: &Request<'_>) {
    let Some(zone) = settings.zone.and_then(|zone| worker.stats.zones.get(zone)) else {
        return;
    };
    let duration = request.started.map_or(0, |started| {
        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
    });
    zone.record(&Finished {
        status: crate::special::status_on_wire(request.response.status),
        received_bytes: request.length,
        sent_bytes: request.sent.header_bytes + request.sent.body_bytes,
        duration_microseconds: duration,
    });
}
