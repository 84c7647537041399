//! The proxy cache zones of every generation: a zone declared again by a reloaded
//! configuration (same name, same path and levels) is the same zone, index and fills
//! included, as nginx keeps its shared zones across reloads.

use std::collections::HashMap;
use std::sync::Arc;

use cache::loader::{Loader, LoaderHandle};
use cache::manager::{Manager, ManagerHandle};
use cache::{Layout, Levels, Zone, ZoneParams};
use http::modules::proxy::cache::settings::CachePath;
use logging::{ErrorLog, Level};

/// The zones the master has started, by name, with their manager and loader threads.
#[derive(Default)]
pub struct ZoneRegistry {
    zones: HashMap<String, Running>,
}

struct Running {
    zone: Arc<Zone>,
    manager: Option<ManagerHandle>,
    loader: Option<LoaderHandle>,
}

impl ZoneRegistry {
    /// The zones of a configuration's cache paths, in their order: existing ones kept
    /// (their limits updated), new ones created (their directories are made by
    /// `work_dirs::prepare` first). A zone whose path or levels changed fails the load
    /// with nginx's words.
    pub fn zones_for(
        &mut self,
        paths: &[CachePath],
        error_log: &Arc<ErrorLog>,
    ) -> Result<Vec<Arc<Zone>>, String> {
        let mut zones = Vec::with_capacity(paths.len());
        for path in paths {
            let params = params_of(path);
            if let Some(running) = self.zones.get(&path.name) {
                let zone = &running.zone;
                let old = &zone.params().layout;
                if old.root != params.layout.root {
                    return Err(format!(
                        "cache \"{}\" uses the \"{}\" cache path while previously it used the \"{}\" cache path",
                        path.name,
                        params.layout.root.display(),
                        old.root.display()
                    ));
                }
                if old.levels != params.layout.levels {
                    return Err(format!(
                        "cache \"{}\" had previously different levels",
                        path.name
                    ));
                }
                zones.push(Arc::clone(zone));
                continue;
            }
            let zone = Zone::new(params);
            let manager = Manager::spawn(Arc::clone(&zone), logger(error_log))
                .map_err(|error| format!("cache manager could not start: {error}"))?;
            let loader = Loader::spawn(Arc::clone(&zone), logger(error_log))
                .map_err(|error| format!("cache loader could not start: {error}"))?;
            self.zones.insert(
                path.name.clone(),
                Running {
                    zone: Arc::clone(&zone),
                    manager: Some(manager),
                    loader: Some(loader),
                },
            );
            zones.push(zone);
        }
        Ok(zones)
    }

    /// At a stop: the threads end, and each zone's index is saved for the next start.
    pub fn shutdown(&mut self, error_log: &ErrorLog) {
        for (_, mut running) in self.zones.drain() {
            if let Some(loader) = running.loader.take() {
                loader.stop();
            }
            if let Some(manager) = running.manager.take() {
                manager.stop();
            }
            if running.zone.read_only() {
                // Nothing can be saved there; the next start walks the directory.
                continue;
            }
            if let Err(error) =
                cache::persist::write_snapshot(&running.zone, std::time::Instant::now())
            {
                write_log(
                    error_log,
                    Level::Crit,
                    &format!(
                        "cache \"{}\" index could not be saved ({})",
                        running.zone.params().name,
                        match error.raw_os_error() {
                            Some(_) => crate::generation::errno_text(&error),
                            None => error.to_string(),
                        }
                    ),
                );
            }
        }
    }
}

/// The error-log sink of a zone's threads.
fn logger(error_log: &Arc<ErrorLog>) -> impl Fn(Level, String) + Send + 'static {
    let error_log = Arc::clone(error_log);
    move |level, text| write_log(&error_log, level, &text)
}

fn write_log(error_log: &ErrorLog, level: Level, text: &str) {
    if error_log.enabled(level) {
        error_log.write(
            level,
            &runtime::clock::wall_now(),
            None,
            format_args!("{text}"),
            None,
        );
    }
}

/// The `cache` crate's parameters of a `proxy_cache_path`.
fn params_of(path: &CachePath) -> ZoneParams {
    let levels_text = path
        .levels
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(":");
    let levels = Levels::parse(&levels_text).unwrap_or(Levels::NONE);
    let layout = Layout {
        root: path.path.clone(),
        levels,
    };
    let mut params = ZoneParams::new(&path.name, layout, path.keys_zone_size);
    params.inactive = path.inactive;
    params.max_size = path.max_size;
    params.max_size_slack = path.max_size_slack;
    params.min_free = path.min_free;
    params.manager_files = usize::try_from(path.manager_files).unwrap_or(usize::MAX);
    params.manager_sleep = path.manager_sleep;
    params.manager_threshold = path.manager_threshold;
    params.loader_files = usize::try_from(path.loader_files).unwrap_or(usize::MAX);
    params.loader_sleep = path.loader_sleep;
    params.loader_threshold = path.loader_threshold;
    params.use_temp_path = path.use_temp_path;
    params.purger = path.purger;
    params.purger_files = usize::try_from(path.purger_files).unwrap_or(usize::MAX);
    params.purger_sleep = path.purger_sleep;
    params.purger_threshold = path.purger_threshold;
    params
}
