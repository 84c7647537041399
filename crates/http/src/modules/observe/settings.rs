//! What `status_zone` sets: the zone a location's requests are counted in.

use crate::settings;

settings! {
    /// `status_zone NAME`: the zone's process-wide number (`metrics::Registry::zone`).
    pub struct StatusZoneConf => StatusZone (env) {
        zone: Option<usize> = None,
    }
}
