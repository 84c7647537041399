//! The proxy cache: `proxy_cache_path` zones, and how a proxied request looks up, fills,
//! revalidates and serves cached responses. The file cache itself (entry format, index,
//! fills, manager, loader) is the `cache` crate; this module is what HTTP adds to it.

pub mod directives;
pub mod freshness;
pub mod settings;

use conf::ConfError;

use crate::proxy::cache::settings::{CachePath, CacheUse, CacheZoneId, ProxyCache, Store};

/// Once the whole `http` block is read: a literal `proxy_cache NAME` becomes its zone's id,
/// or the load fails with nginx's `"proxy_cache" zone "NAME" is unknown`. `proxy_store`
/// at a level turns an inherited cache off, as nginx's merge does.
pub fn resolve_zone(settings: &mut ProxyCache, paths: &[CachePath]) -> Result<(), ConfError> {
    if !matches!(settings.store, Store::Off) {
        settings.cache = CacheUse::Off;
        return Ok(());
    }
    if let CacheUse::Named { name, span } = &settings.cache {
        let id = zone_id(paths, name.as_bytes()).ok_or_else(|| {
            ConfError::message(format!("\"proxy_cache\" zone \"{name}\" is unknown"), span)
        })?;
        settings.cache = CacheUse::Zone(id);
    }
    Ok(())
}

/// The zone a name designates.
pub fn zone_id(paths: &[CachePath], name: &[u8]) -> Option<CacheZoneId> {
    paths
        .iter()
        .position(|path| path.name.as_bytes() == name)
        .map(|index| CacheZoneId(index as u32))
}
