//! The `limit_req_zone` and `limit_conn_zone` zones across reloads: a zone a reloaded
//! configuration declares again with the same name, kind and size is the same zone, its
//! keys and counts included, as nginx keeps a shared zone whose name and size did not
//! change. A zone lives as long as a generation that declares it; one that no running
//! generation declares is gone, as nginx frees a zone the new configuration dropped.
//!
//! The registry holds weak references only, so it needs no stop of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use http::modules::limit::settings::LimitZones;
use http::modules::limit::settings::zone::{ConnZone, ReqZone};

#[derive(Default)]
struct Registry {
    /// Every live zone of each name: the running generations' and, during a reload, the
    /// new configuration's (which may differ in size; a failed start drops its own).
    req: HashMap<String, Vec<Weak<ReqZone>>>,
    conn: HashMap<String, Vec<Weak<ConnZone>>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// Swaps each zone of a new configuration for the running zone of the same name, kind
/// and size, and records the new ones. A kept zone whose key changed fails the start with
/// nginx's words.
pub fn adopt(zones: &mut LimitZones) -> Result<(), String> {
    let mut registry = REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let registry = registry.get_or_insert_with(Registry::default);
    for used in &mut zones.req {
        let name = &used.zone.name;
        if let Some(old) = live(registry.req.get(name), used.zone.size, |zone| zone.size) {
            if old.key_text != used.zone.key_text {
                return Err(format!(
                    "limit_req \"{name}\" uses the \"{}\" key while previously it used the \"{}\" key",
                    used.zone.key_text, old.key_text
                ));
            }
            used.zone = old;
        }
    }
    for used in &mut zones.conn {
        let name = &used.zone.name;
        if let Some(old) = live(registry.conn.get(name), used.zone.size, |zone| zone.size) {
            if old.key_text != used.zone.key_text {
                return Err(format!(
                    "limit_conn_zone \"{name}\" uses the \"{}\" key while previously it used the \"{}\" key",
                    used.zone.key_text, old.key_text
                ));
            }
            used.zone = old;
        }
    }
    registry.req.retain(|_, zones| {
        zones.retain(|zone| zone.strong_count() > 0);
        !zones.is_empty()
    });
    registry.conn.retain(|_, zones| {
        zones.retain(|zone| zone.strong_count() > 0);
        !zones.is_empty()
    });
    for used in &zones.req {
        let known = registry.req.entry(used.zone.name.clone()).or_default();
        if !known
            .iter()
            .any(|zone| zone.ptr_eq(&Arc::downgrade(&used.zone)))
        {
            known.push(Arc::downgrade(&used.zone));
        }
    }
    for used in &zones.conn {
        let known = registry.conn.entry(used.zone.name.clone()).or_default();
        if !known
            .iter()
            .any(|zone| zone.ptr_eq(&Arc::downgrade(&used.zone)))
        {
            known.push(Arc::downgrade(&used.zone));
        }
    }
    Ok(())
}

/// A live zone of this name and size.
fn live<Z>(known: Option<&Vec<Weak<Z>>>, size: u64, size_of: impl Fn(&Z) -> u64) -> Option<Arc<Z>> {
    known?
        .iter()
        .filter_map(Weak::upgrade)
        .find(|zone| size_of(zone) == size)
}
