//! The read-only NGINX Plus API, version 9: the paths and field names NGINX Plus uses, so
//! that tools written for it (nginx-prometheus-exporter in Plus mode, dashboards) read
//! Portico unchanged. Sections Portico has no data for answer `{}`; `stream` is not listed
//! and answers 404, as NGINX Plus does without a `stream` block (Portico has none).

use std::fmt::Write as _;

use crate::kernel::worker::Generation;

/// The API versions listed at the root; only the newest is served.
const VERSIONS: &str = "[1,2,3,4,5,6,7,8,9]";
const VERSION: &str = "9";

/// The path's segments after the location's own: the request's URI split at `/`, from the
/// version segment on (`/api/9/http/upstreams` gives `["9", "http", "upstreams"]`; the
/// location's prefix gives nothing).
pub fn path_of(uri: &[u8]) -> Vec<String> {
    let segments: Vec<String> = uri
        .split(|byte| *byte == b'/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| String::from_utf8_lossy(segment).into_owned())
        .collect();
    match segments
        .iter()
        .position(|segment| segment.bytes().all(|byte| byte.is_ascii_digit()))
    {
        Some(version) => segments[version..].to_vec(),
        None => Vec::new(),
    }
}

/// When and where a request for the API was made.
#[derive(Clone, Debug)]
pub struct At {
    pub unix_seconds: i64,
    /// The address the request arrived at (NGINX Plus's `address`).
    pub address: String,
}

/// The JSON for `path`, or the status when there is none (404).
pub fn render(generation: &Generation, path: &[String], at: &At) -> Result<String, u16> {
    let Some((version, rest)) = path.split_first() else {
        return Ok(VERSIONS.to_owned());
    };
    if version != VERSION {
        return Err(404);
    }
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let totals = metrics::GLOBAL.totals();
    let json = match rest.as_slice() {
        [] => json_list(&[
            "nginx",
            "processes",
            "connections",
            "slabs",
            "http",
            "resolvers",
            "ssl",
            "workers",
            "portico",
        ]),
        ["nginx"] => nginx(generation, at),
        ["processes"] => "{\"respawned\":0}".to_owned(),
        ["connections"] => connections(&totals),
        ["http"] => json_list(&[
            "requests",
            "server_zones",
            "location_zones",
            "caches",
            "limit_conns",
            "limit_reqs",
            "keyvals",
            "upstreams",
        ]),
        ["http", "requests"] => requests(&totals),
        ["http", "upstreams"] => upstreams(generation),
        ["http", "caches"] => caches(generation),
        ["http", "server_zones"] => status_zones(false),
        ["http", "location_zones"] => status_zones(true),
        ["resolvers"] => resolvers(None).unwrap_or_default(),
        ["resolvers", zone] => resolvers(Some(zone)).ok_or(404_u16)?,
        ["http", "limit_conns" | "limit_reqs" | "keyvals"] | ["ssl" | "slabs"] => "{}".to_owned(),
        ["workers"] => workers(),
        ["portico"] => json_list(&["thread_pools", "workers"]),
        ["portico", "thread_pools"] => thread_pools(generation),
        ["portico", "workers"] => loops(),
        _ => return Err(404),
    };
    Ok(json)
}

fn json_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
    format!("[{}]", quoted.join(","))
}

fn nginx(generation: &Generation, at: &At) -> String {
    let loaded = metrics::GLOBAL
        .loaded_unix_seconds
        .load(std::sync::atomic::Ordering::Relaxed);
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\"version\":\"{}\",\"build\":\"portico-{}\",\"address\":{},\
         \"generation\":{},\"load_timestamp\":\"{}\",\"timestamp\":\"{}\",\"pid\":{},\"ppid\":{}}}",
        crate::kernel::variables::NGINX_COMPATIBLE_VERSION,
        env!("CARGO_PKG_VERSION"),
        quote(&at.address),
        generation.number,
        iso8601(i64::try_from(loaded).unwrap_or(0)),
        iso8601(at.unix_seconds),
        std::process::id(),
        rustix::process::getppid().map_or(0, |pid| pid.as_raw_nonzero().get()),
    );
    out
}

/// NGINX Plus's `connections`: `idle` are the waiting ones, `active` the others.
fn connections(totals: &metrics::WorkerSnapshot) -> String {
    format!(
        "{{\"accepted\":{},\"dropped\":{},\"active\":{},\"idle\":{}}}",
        totals.accepted,
        totals.accepted.saturating_sub(totals.handled),
        totals.active.saturating_sub(totals.waiting),
        totals.waiting
    )
}

fn requests(totals: &metrics::WorkerSnapshot) -> String {
    format!(
        "{{\"total\":{},\"current\":{}}}",
        totals.requests,
        totals.reading + totals.writing
    )
}

fn workers() -> String {
    let pid = std::process::id();
    let entries: Vec<String> = metrics::GLOBAL
        .by_index()
        .iter()
        .enumerate()
        .map(|(index, worker)| {
            format!(
                "{{\"id\":{index},\"pid\":{pid},\"connections\":{},\"http\":{{\"requests\":{}}}}}",
                connections(worker),
                requests(worker)
            )
        })
        .collect();
    format!("[{}]", entries.join(","))
}

fn upstreams(generation: &Generation) -> String {
    let rows = super::prometheus::peer_rows(generation);
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for row in &rows {
        let id = groups
            .iter()
            .position(|(name, _)| *name == row.upstream)
            .unwrap_or_else(|| {
                groups.push((&row.upstream, Vec::new()));
                groups.len() - 1
            });
        let peers = &mut groups[id].1;
        let mut peer = String::new();
        let _ = write!(
            peer,
            "{{\"id\":{},\"server\":{},\"name\":{},\"backup\":{},\"weight\":{},\"state\":\"{}\",\
             \"active\":{},\"requests\":{},\"fails\":{},\"unavail\":{},\"max_fails\":{},\
             \"fail_timeout\":\"{}s\",\"responses\":{{\"1xx\":{},\"2xx\":{},\"3xx\":{},\"4xx\":{},\
             \"5xx\":{},\"codes\":{{}},\"total\":{}}},\"header_time\":{},\"sent\":{},\"received\":{},\
             \"health_checks\":{{\"checks\":0,\"fails\":0,\"unhealthy\":0}},\"downtime\":0}}",
            peers.len(),
            quote(&row.peer),
            quote(&row.peer),
            row.backup,
            row.weight,
            row.state,
            row.active,
            row.selected,
            row.fails,
            row.unavailable,
            row.max_fails,
            row.fail_timeout_seconds,
            row.responses[0],
            row.responses[1],
            row.responses[2],
            row.responses[3],
            row.responses[4],
            row.responses.iter().sum::<u64>(),
            row.header_microseconds
                .checked_div(row.header_times)
                .unwrap_or(0)
                / 1000,
            row.sent_bytes,
            row.received_bytes,
        );
        peers.push(peer);
    }
    let idle = super::prometheus::keepalive_idle(generation);
    let entries: Vec<String> = groups
        .iter()
        .map(|(name, peers)| {
            let keepalive = idle
                .iter()
                .find(|(group, _)| group == name)
                .map_or(0, |(_, idle)| *idle);
            format!(
                "{}:{{\"peers\":[{}],\"keepalive\":{keepalive},\"zombies\":0,\"zone\":{}}}",
                quote(name),
                peers.join(","),
                quote(name)
            )
        })
        .collect();
    format!("{{{}}}", entries.join(","))
}

/// Each `proxy_cache_path` zone by name: its size and state. The request-side counts
/// (`hit`, `miss`, `stale`, ...) are not counted yet (see `prometheus::caches`).
fn caches(generation: &Generation) -> String {
    let entries: Vec<String> = generation
        .cache_zones
        .iter()
        .map(|zone| {
            let mut entry = format!("{}:{{\"size\":{}", quote(&zone.params().name), zone.size());
            if let Some(max_size) = zone.params().max_size {
                let _ = write!(entry, ",\"max_size\":{max_size}");
            }
            let _ = write!(entry, ",\"cold\":{}", zone.cold());
            for status in cache::stats::STATUSES {
                let (responses, bytes) = zone.stats().of(status);
                let _ = write!(
                    entry,
                    ",\"{}\":{{\"responses\":{responses},\"bytes\":{bytes}}}",
                    status.to_ascii_lowercase()
                );
            }
            entry.push('}');
            entry
        })
        .collect();
    format!("{{{}}}", entries.join(","))
}

/// The `status_zone`s named at a server's level (`server_zones`) or in locations
/// (`location_zones`), with NGINX Plus's fields (a location zone has no `processing`).
fn status_zones(locations: bool) -> String {
    let entries: Vec<String> = metrics::GLOBAL
        .zones()
        .iter()
        .enumerate()
        .filter(|(number, _)| metrics::GLOBAL.is_location_zone(*number) == locations)
        .map(|(_, (name, zone))| {
            let [r1, r2, r3, r4, r5] = zone.responses;
            let processing = if locations {
                String::new()
            } else {
                format!("\"processing\":{},", zone.processing)
            };
            format!(
                "{}:{{{processing}\"requests\":{},\"responses\":{{\"1xx\":{r1},\
                 \"2xx\":{r2},\"3xx\":{r3},\"4xx\":{r4},\"5xx\":{r5},\"codes\":{{}},\
                 \"total\":{}}},\"discarded\":{},\"received\":{},\"sent\":{}}}",
                quote(name),
                zone.requests,
                r1 + r2 + r3 + r4 + r5,
                zone.discarded,
                zone.received_bytes,
                zone.sent_bytes
            )
        })
        .collect();
    format!("{{{}}}", entries.join(","))
}

/// `resolver ... status_zone=`: every zone by name, or the one named (`None` when there
/// is no such zone).
fn resolvers(only: Option<&str>) -> Option<String> {
    use shared::resolver::zone;
    let zones = zone::zones();
    let render = |counted: &zone::ZoneSnapshot| {
        format!(
            "{{\"requests\":{{\"name\":{},\"srv\":{},\"addr\":{}}},\"responses\":{{\
             \"noerror\":{},\"formerr\":{},\"servfail\":{},\"nxdomain\":{},\"notimp\":{},\
             \"refused\":{},\"timedout\":{},\"unknown\":{}}}}}",
            counted.name,
            counted.srv,
            counted.addr,
            counted.noerror,
            counted.formerr,
            counted.servfail,
            counted.nxdomain,
            counted.notimp,
            counted.refused,
            counted.timedout,
            counted.unknown
        )
    };
    match only {
        Some(wanted) => zones
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, counted)| render(counted)),
        None => {
            let entries: Vec<String> = zones
                .iter()
                .map(|(name, counted)| format!("{}:{}", quote(name), render(counted)))
                .collect();
            Some(format!("{{{}}}", entries.join(",")))
        }
    }
}

/// Portico's own section: each pool by name, one entry per worker's instance.
fn thread_pools(generation: &Generation) -> String {
    let rows = super::prometheus::pool_rows(generation);
    let mut pools: Vec<(&str, Vec<String>)> = Vec::new();
    for row in &rows {
        let entry = format!(
            "{{\"worker\":{},\"threads\":{},\"queue_capacity\":{},\"queued\":{},\
             \"queued_max\":{},\"running\":{},\"tasks\":{},\"overflows\":{},\
             \"wait_seconds\":{:.6},\"run_seconds\":{:.6}}}",
            row.worker,
            if row.started { row.threads } else { 0 },
            row.capacity,
            row.counters.queued,
            row.counters.queued_max,
            row.counters.running,
            row.counters.completed,
            row.counters.overflowed,
            row.counters.wait_time.as_secs_f64(),
            row.counters.run_time.as_secs_f64(),
        );
        match pools.iter_mut().find(|(name, _)| *name == row.pool) {
            Some((_, entries)) => entries.push(entry),
            None => pools.push((&row.pool, vec![entry])),
        }
    }
    let entries: Vec<String> = pools
        .iter()
        .map(|(name, entries)| format!("{}:[{}]", quote(name), entries.join(",")))
        .collect();
    format!("{{{}}}", entries.join(","))
}

/// Portico's own section: each worker index's loop figures.
fn loops() -> String {
    let entries: Vec<String> = metrics::GLOBAL
        .by_index()
        .iter()
        .enumerate()
        .map(|(index, worker)| {
            format!(
                "{{\"id\":{index},\"loop_stalls\":{{\"10ms\":{},\"100ms\":{},\"1000ms\":{}}},\
                 \"loop_lag_seconds\":{:.6},\"loop_ticks\":{},\"blocking_file_calls\":{},\
                 \"blocking_file_seconds\":{:.6},\"busy_seconds\":{:.6}}}",
                worker.stalls_10ms,
                worker.stalls_100ms,
                worker.stalls_1000ms,
                worker.lag_microseconds as f64 / 1e6,
                worker.lag_count,
                worker.blocking_calls,
                worker.blocking_microseconds as f64 / 1e6,
                worker.busy_microseconds as f64 / 1e6,
            )
        })
        .collect();
    format!("[{}]", entries.join(","))
}

/// A JSON string.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            control if u32::from(control) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

/// `2026-11-25T20:00:00.000Z`.
fn iso8601(unix_seconds: i64) -> String {
    let civil = logging::time::Civil::from_unix(unix_seconds);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.000Z",
        civil.year, civil.month, civil.day, civil.hour, civil.minute, civil.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_starts_at_the_version() {
        assert_eq!(
            path_of(b"/api/9/http/upstreams"),
            ["9", "http", "upstreams"]
        );
        assert!(path_of(b"/api/").is_empty());
        assert_eq!(path_of(b"/status/api/9"), ["9"]);
    }

    #[test]
    fn strings_and_times_are_json() {
        assert_eq!(quote("a\"b\\\n"), "\"a\\\"b\\\\\\u000a\"");
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
    }
}
