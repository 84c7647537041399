//! The http servers' OCSP stapling ([`shared::stapling`]) followed on a worker, its
//! failures in the worker's error log.

use std::rc::Rc;

use logging::Level;

use crate::kernel::worker::HttpWorker;

/// Follows the http servers' staplings on this worker until it stops.
pub async fn follow_staplings(worker: Rc<HttpWorker>) {
    let staplings = worker.conf().staplings.clone();
    if staplings.is_empty() {
        return;
    }
    let reporter = Rc::clone(&worker);
    let report: shared::stapling::Report = Rc::new(move |message| {
        let error_log = &reporter.generation.error_log;
        if error_log.enabled(Level::Error) {
            error_log.write(Level::Error, &reporter.clock.wall(), None, message, None);
        }
    });
    shared::stapling::follow(staplings, report).await;
}
