//! The Prometheus exposition: every family Portico exports, in base units, rendered on a
//! pool thread. docs/observability.md lists them with their meanings.

use metrics::exposition::{Exposition, Format, Kind};

use crate::kernel::worker::Generation;

/// The whole exposition for a scrape.
pub fn render(generation: &Generation, format: Format) -> String {
    let mut out = Exposition::new(format);
    build_and_reloads(&mut out);
    connections(&mut out);
    zones(&mut out);
    resolvers(&mut out);
    workers(&mut out);
    thread_pools(&mut out, generation);
    upstreams(&mut out, generation);
    caches(&mut out, generation);
    out.finish()
}

fn build_and_reloads(out: &mut Exposition) {
    use std::sync::atomic::Ordering::Relaxed;
    out.family(
        "portico_build",
        Kind::Info,
        "Portico's version and the nginx version it follows.",
    );
    out.info(&[
        ("version", env!("CARGO_PKG_VERSION")),
        (
            "nginx_version",
            crate::kernel::variables::NGINX_COMPATIBLE_VERSION,
        ),
    ]);
    out.family(
        "portico_config_reloads",
        Kind::Counter,
        "Configuration reloads (HUP) by result: a new generation started, or the old one kept.",
    );
    let reloads = metrics::GLOBAL.reloads.load(Relaxed) as f64;
    let failed = metrics::GLOBAL.reloads_failed.load(Relaxed) as f64;
    out.counter(&[("result", "success")], reloads);
    out.counter(&[("result", "failure")], failed);
}

fn connections(out: &mut Exposition) {
    let totals = metrics::GLOBAL.totals();
    out.family(
        "portico_connections_accepted",
        Kind::Counter,
        "Client connections accepted (stub_status accepts).",
    );
    out.counter(&[], totals.accepted as f64);
    out.family(
        "portico_connections_handled",
        Kind::Counter,
        "Accepted client connections that got a worker_connections slot (stub_status handled).",
    );
    out.counter(&[], totals.handled as f64);
    out.family(
        "portico_connections",
        Kind::Gauge,
        "Open client connections by state: reading a request head, writing (processing and \
         answering a request), waiting for a request.",
    );
    out.gauge(&[("state", "reading")], totals.reading as f64);
    out.gauge(&[("state", "writing")], totals.writing as f64);
    out.gauge(&[("state", "waiting")], totals.waiting as f64);
    out.family(
        "portico_connections_active",
        Kind::Gauge,
        "Open client connections (stub_status Active connections).",
    );
    out.gauge(&[], totals.active as f64);
    let (pinned_files, pinned_bytes) = crate::kernel::file::pin::pinned();
    out.family(
        "portico_pinned_files",
        Kind::Gauge,
        "Files whose pages pin_hot_files holds locked in memory (or is locking).",
    );
    out.gauge(&[], pinned_files as f64);
    out.family(
        "portico_pinned_file_bytes",
        Kind::Gauge,
        "Bytes of the files pin_hot_files holds locked in memory (or is locking).",
    );
    out.gauge(&[], pinned_bytes as f64);
    out.family(
        "portico_http_requests",
        Kind::Counter,
        "Client requests, counted when their first byte arrives (stub_status requests).",
    );
    out.counter(&[], totals.requests as f64);
}

/// The `status_zone` families: every zone named since the process started.
fn zones(out: &mut Exposition) {
    let zones = metrics::GLOBAL.zones();
    type Field = fn(&metrics::zones::ZoneSnapshot) -> f64;
    let families: [(&str, Kind, &str, Field); 5] = [
        (
            "portico_zone_requests",
            Kind::Counter,
            "Requests finished in each status_zone.",
            |zone| zone.requests as f64,
        ),
        (
            "portico_zone_processing",
            Kind::Gauge,
            "Requests under way in each server zone (0 for a location zone).",
            |zone| zone.processing as f64,
        ),
        (
            "portico_zone_discarded",
            Kind::Counter,
            "Requests of each status_zone that ended without sending a response.",
            |zone| zone.discarded as f64,
        ),
        (
            "portico_zone_received_bytes",
            Kind::Counter,
            "Bytes read from clients (heads and bodies) by each status_zone's requests.",
            |zone| zone.received_bytes as f64,
        ),
        (
            "portico_zone_sent_bytes",
            Kind::Counter,
            "Bytes sent to clients by each status_zone's responses.",
            |zone| zone.sent_bytes as f64,
        ),
    ];
    for (family, kind, help, field) in families {
        out.family(family, kind, help);
        for (name, zone) in &zones {
            match kind {
                Kind::Gauge => out.gauge(&[("zone", name)], field(zone)),
                _ => out.counter(&[("zone", name)], field(zone)),
            }
        }
    }
    out.family(
        "portico_zone_responses",
        Kind::Counter,
        "Responses of each status_zone by status class.",
    );
    for (name, zone) in &zones {
        for (class, count) in ["1xx", "2xx", "3xx", "4xx", "5xx"]
            .iter()
            .zip(zone.responses)
        {
            out.counter(&[("zone", name), ("code", class)], count as f64);
        }
    }
    out.family(
        "portico_zone_request_duration_seconds",
        Kind::Histogram,
        "Time from a request's first byte to its access-log line, by status_zone.",
    );
    let bounds: Vec<f64> = metrics::zones::DURATION_BUCKETS_MICROSECONDS
        .iter()
        .map(|micros| *micros as f64 / 1e6)
        .collect();
    for (name, zone) in &zones {
        let sum = zone.duration_microseconds as f64 / 1e6;
        out.histogram(&[("zone", name)], &bounds, &zone.duration_buckets, sum);
    }
}

/// `resolver ... status_zone=`: lookups and answers of each zone named since the process
/// started.
fn resolvers(out: &mut Exposition) {
    let zones = shared::resolver::zone::zones();
    if zones.is_empty() {
        return;
    }
    out.family(
        "portico_resolver_requests",
        Kind::Counter,
        "Lookups each resolver status_zone sent to its name servers, by type (name, srv).",
    );
    for (zone, counted) in &zones {
        out.counter(&[("zone", zone), ("type", "name")], counted.name as f64);
        out.counter(&[("zone", zone), ("type", "srv")], counted.srv as f64);
    }
    out.family(
        "portico_resolver_responses",
        Kind::Counter,
        "Questions of each resolver status_zone by how they ended: a response code, or timedout.",
    );
    for (zone, counted) in &zones {
        let codes = [
            ("noerror", counted.noerror),
            ("formerr", counted.formerr),
            ("servfail", counted.servfail),
            ("nxdomain", counted.nxdomain),
            ("notimp", counted.notimp),
            ("refused", counted.refused),
            ("timedout", counted.timedout),
            ("unknown", counted.unknown),
        ];
        for (code, value) in codes {
            out.counter(&[("zone", zone), ("code", code)], value as f64);
        }
    }
}

fn workers(out: &mut Exposition) {
    let workers = metrics::GLOBAL.by_index();
    let names: Vec<String> = (0..workers.len()).map(|index| index.to_string()).collect();
    out.family(
        "portico_worker_connections",
        Kind::Gauge,
        "Open client connections on each worker.",
    );
    for (worker, name) in workers.iter().zip(&names) {
        out.gauge(&[("worker", name)], worker.active as f64);
    }
    out.family(
        "portico_worker_loop_lag_seconds",
        Kind::Histogram,
        "How late each worker's 10 ms watch timer fired: the time its loop was kept from \
         turning.",
    );
    let bounds: Vec<f64> = metrics::LAG_BUCKETS_MICROSECONDS
        .iter()
        .map(|micros| *micros as f64 / 1e6)
        .collect();
    for (worker, name) in workers.iter().zip(&names) {
        let sum = worker.lag_microseconds as f64 / 1e6;
        out.histogram(&[("worker", name)], &bounds, &worker.lag_buckets, sum);
    }
    out.family(
        "portico_worker_loop_stalls",
        Kind::Counter,
        "Worker loop stalls of at least min_seconds (the stall watcher's counts; 0.1 s and \
         more are also logged at warn).",
    );
    for (worker, name) in workers.iter().zip(&names) {
        for (min, count) in [
            ("0.01", worker.stalls_10ms),
            ("0.1", worker.stalls_100ms),
            ("1", worker.stalls_1000ms),
        ] {
            out.counter(&[("worker", name), ("min_seconds", min)], count as f64);
        }
    }
    out.family(
        "portico_worker_file_body_bytes",
        Kind::Counter,
        "File body bytes read or sent, by route: by the worker from page cache (aio threads \
         with aio_nowait or a resident sendfile), by a pool thread, or by the worker under aio \
         off.",
    );
    for (worker, name) in workers.iter().zip(&names) {
        for (route, bytes) in [
            ("cached_on_worker", worker.file_bytes_cached_on_worker),
            ("pool", worker.file_bytes_on_pool),
            ("aio_off", worker.file_bytes_aio_off),
        ] {
            out.counter(&[("worker", name), ("route", route)], bytes as f64);
        }
    }
    out.family(
        "portico_worker_residency_answers",
        Kind::Counter,
        "What the worker learnt of page cache under aio threads before touching a file: \
         mincore hints on the files whose page-cache state it can see, and reads that may not \
         wait (RWF_NOWAIT), each cached (every byte there) or not_cached (short).",
    );
    for (worker, name) in workers.iter().zip(&names) {
        for (test, answer, count) in [
            ("mincore", "cached", worker.hints_cached),
            ("mincore", "not_cached", worker.hints_not_cached),
            ("nowait_read", "cached", worker.nowait_reads_cached),
            ("nowait_read", "not_cached", worker.nowait_reads_short),
        ] {
            let labels = [
                ("worker", name.as_str()),
                ("test", test),
                ("answer", answer),
            ];
            out.counter(&labels, count as f64);
        }
    }
    out.family(
        "portico_worker_blocking_file_calls",
        Kind::Counter,
        "File calls made on the worker's own thread that may block it (opens, reads and \
         sendfile pieces under aio off).",
    );
    for (worker, name) in workers.iter().zip(&names) {
        out.counter(&[("worker", name)], worker.blocking_calls as f64);
    }
    out.family(
        "portico_worker_blocking_file_seconds",
        Kind::Counter,
        "Time spent in those calls (coarse clock: a few milliseconds of resolution).",
    );
    for (worker, name) in workers.iter().zip(&names) {
        out.counter(
            &[("worker", name)],
            worker.blocking_microseconds as f64 / 1e6,
        );
    }
    out.family(
        "portico_worker_busy_seconds",
        Kind::Counter,
        "CPU time (user and system) of the worker's thread; its rate is the share of a core \
         the worker uses (1 is a saturated worker).",
    );
    for (worker, name) in workers.iter().zip(&names) {
        out.counter(&[("worker", name)], worker.busy_microseconds as f64 / 1e6);
    }
}

/// One row per pool instance: each worker has its own instance of every pool.
pub(crate) struct PoolRow {
    pub pool: String,
    pub worker: String,
    pub threads: usize,
    pub capacity: usize,
    pub started: bool,
    pub counters: threadpool::CountersSnapshot,
}

/// The serving generation's pools, per worker.
pub(crate) fn pool_rows(generation: &Generation) -> Vec<PoolRow> {
    let mut rows = Vec::new();
    for (index, pools) in generation.worker_pools.iter().enumerate() {
        for pool in pools.iter() {
            rows.push(PoolRow {
                pool: pool.name().to_owned(),
                worker: index.to_string(),
                threads: pool.threads(),
                capacity: pool.max_queue(),
                started: pool.is_started(),
                counters: pool.counters(),
            });
        }
    }
    rows
}

fn thread_pools(out: &mut Exposition, generation: &Generation) {
    let rows = pool_rows(generation);
    type Field = fn(&PoolRow) -> f64;
    let gauges: [(&str, &str, Field); 6] = [
        (
            "portico_thread_pool_threads",
            "Threads the pool runs (threads=; 0 until a lazily started pool gets its first task).",
            |row| {
                if row.started { row.threads as f64 } else { 0.0 }
            },
        ),
        (
            "portico_thread_pool_queue_capacity",
            "Tasks the queue holds before it overflows (max_queue=).",
            |row| row.capacity as f64,
        ),
        (
            "portico_thread_pool_queued_tasks",
            "Tasks waiting in the queue now.",
            |row| row.counters.queued as f64,
        ),
        (
            "portico_thread_pool_queued_tasks_max",
            "The most tasks the queue has held at once.",
            |row| row.counters.queued_max as f64,
        ),
        (
            "portico_thread_pool_running_tasks",
            "Tasks running on a pool thread now.",
            |row| row.counters.running as f64,
        ),
        (
            "portico_thread_pool_idle_threads",
            "Started threads with no task.",
            |row| {
                if row.started {
                    (row.threads as f64 - row.counters.running as f64).max(0.0)
                } else {
                    0.0
                }
            },
        ),
    ];
    for (name, help, field) in gauges {
        out.family(name, Kind::Gauge, help);
        for row in &rows {
            out.gauge(&[("pool", &row.pool), ("worker", &row.worker)], field(row));
        }
    }
    let counters: [(&str, &str, Field); 2] = [
        (
            "portico_thread_pool_tasks",
            "Tasks that ran to their end.",
            |row| row.counters.completed as f64,
        ),
        (
            "portico_thread_pool_overflows",
            "Tasks refused because the queue was full (logged as queue overflow; the request fails with 500).",
            |row| row.counters.overflowed as f64,
        ),
    ];
    for (name, help, field) in counters {
        out.family(name, Kind::Counter, help);
        for row in &rows {
            out.counter(&[("pool", &row.pool), ("worker", &row.worker)], field(row));
        }
    }
    out.family(
        "portico_thread_pool_tasks_by_kind",
        Kind::Counter,
        "Tasks that ran to their end, by what they did: open (opens, stats, listings), read, \
         sendfile, write (temporary, cache and log files), other.",
    );
    for row in &rows {
        for kind in threadpool::TaskKind::ALL {
            let labels = [
                ("pool", row.pool.as_str()),
                ("worker", &row.worker),
                ("kind", kind.name()),
            ];
            out.counter(&labels, row.counters.by_kind[kind as usize] as f64);
        }
    }
    let bounds: Vec<f64> = threadpool::TASK_BUCKETS_MICROSECONDS
        .iter()
        .map(|micros| *micros as f64 / 1e6)
        .collect();
    out.family(
        "portico_thread_pool_task_wait_seconds",
        Kind::Histogram,
        "Time tasks spent in the queue before a thread took them.",
    );
    for row in &rows {
        let labels = [("pool", row.pool.as_str()), ("worker", &row.worker)];
        let sum = row.counters.wait_time.as_secs_f64();
        out.histogram(&labels, &bounds, &row.counters.wait_buckets, sum);
    }
    out.family(
        "portico_thread_pool_task_run_seconds",
        Kind::Histogram,
        "Time finished tasks spent running on a pool thread.",
    );
    for row in &rows {
        let labels = [("pool", row.pool.as_str()), ("worker", &row.worker)];
        let sum = row.counters.run_time.as_secs_f64();
        out.histogram(&labels, &bounds, &row.counters.run_buckets, sum);
    }
}

/// One row per peer of an `upstream` block.
pub(crate) struct PeerRow {
    pub upstream: String,
    pub peer: String,
    pub backup: bool,
    pub weight: u32,
    pub state: &'static str,
    pub active: u32,
    pub selected: u64,
    pub fails: u64,
    pub max_fails: u32,
    pub fail_timeout_seconds: u64,
    /// Responses by class 1xx to 5xx; heads timed and their total time.
    pub responses: [u64; 5],
    pub header_times: u64,
    pub header_microseconds: u64,
    /// The head and connect times by bucket (`upstream::PEER_TIME_BUCKETS_MICROSECONDS`),
    /// with the connect times' sum.
    pub header_buckets: [u64; 12],
    pub connect_buckets: [u64; 12],
    pub connect_microseconds: u64,
    /// Times it became unavailable (`max_fails` reached).
    pub unavailable: u64,
    /// Bytes written to it and read from it.
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// Idle keep-alive connections to it now.
    pub idle: usize,
}

/// The peers of every `upstream` block (groups `proxy_pass` made from an address are left
/// out, as NGINX Plus shows only groups with a zone).
pub(crate) fn peer_rows(generation: &Generation) -> Vec<PeerRow> {
    let now = std::time::Instant::now();
    let mut rows = Vec::new();
    for group in generation
        .http
        .upstreams
        .iter()
        .filter(|group| !group.implicit)
    {
        // Counted before the state is locked: no lock is held while taking the other.
        let members = group.members();
        let idle: Vec<usize> = {
            let cache = group
                .idle
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            (0..members.serials.len())
                .map(|slot| cache.len_for(members.at(slot)))
                .collect()
        };
        let state = group
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let peers = members
            .primary
            .iter()
            .zip(&state.primary)
            .map(|pair| (false, pair));
        let backups = members
            .backup
            .iter()
            .zip(&state.backup)
            .map(|pair| (true, pair));
        for (index, (backup, (peer, peer_state))) in peers.chain(backups).enumerate() {
            use std::sync::atomic::Ordering::Relaxed;
            let counters = members.counters.get(index);
            let responses = std::array::from_fn(|class| {
                counters.map_or(0, |counters| counters.responses[class].load(Relaxed))
            });
            let header_times = counters.map_or(0, |counters| counters.header_times.load(Relaxed));
            let header_microseconds =
                counters.map_or(0, |counters| counters.header_microseconds.load(Relaxed));
            let header_buckets = std::array::from_fn(|bucket| {
                counters.map_or(0, |counters| counters.header_buckets[bucket].load(Relaxed))
            });
            let connect_buckets = std::array::from_fn(|bucket| {
                counters.map_or(0, |counters| counters.connect_buckets[bucket].load(Relaxed))
            });
            let connect_microseconds =
                counters.map_or(0, |counters| counters.connect_microseconds.load(Relaxed));
            let failed = peer.max_fails > 0
                && peer_state.fails >= peer.max_fails
                && peer_state
                    .checked
                    .is_some_and(|checked| now.duration_since(checked) <= peer.fail_timeout);
            let state = if peer.down {
                "down"
            } else if failed {
                "unavail"
            } else {
                "up"
            };
            rows.push(PeerRow {
                upstream: group.name.to_string(),
                peer: peer.name.to_string(),
                backup,
                weight: peer.weight,
                state,
                active: peer_state.conns,
                selected: peer_state.selected,
                fails: peer_state.failures,
                max_fails: peer.max_fails,
                fail_timeout_seconds: peer.fail_timeout.as_secs(),
                responses,
                header_times,
                header_microseconds,
                header_buckets,
                connect_buckets,
                connect_microseconds,
                unavailable: peer_state.unavailable,
                sent_bytes: counters.map_or(0, |counters| counters.sent_bytes.load(Relaxed)),
                received_bytes: counters
                    .map_or(0, |counters| counters.received_bytes.load(Relaxed)),
                idle: idle.get(index).copied().unwrap_or(0),
            });
        }
    }
    rows
}

/// Idle keep-alive connections each `upstream` block keeps now (`keepalive`).
pub(crate) fn keepalive_idle(generation: &Generation) -> Vec<(String, usize)> {
    generation
        .http
        .upstreams
        .iter()
        .filter(|group| !group.implicit)
        .map(|group| {
            let idle = group
                .idle
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .len();
            (group.name.to_string(), idle)
        })
        .collect()
}

fn upstreams(out: &mut Exposition, generation: &Generation) {
    out.family(
        "portico_upstream_keepalive_connections",
        Kind::Gauge,
        "Idle keep-alive connections each upstream block keeps for reuse.",
    );
    for (name, idle) in keepalive_idle(generation) {
        out.gauge(&[("upstream", &name)], idle as f64);
    }
    let rows = peer_rows(generation);
    out.family(
        "portico_upstream_peer_state",
        Kind::Gauge,
        "1 for the state each peer of an upstream block is in (up, down, unavail).",
    );
    for row in &rows {
        for state in ["up", "down", "unavail"] {
            let labels = [
                ("upstream", row.upstream.as_str()),
                ("peer", &row.peer),
                ("state", state),
            ];
            out.gauge(&labels, f64::from(u8::from(row.state == state)));
        }
    }
    out.family(
        "portico_upstream_peer_active_requests",
        Kind::Gauge,
        "Requests in flight to each peer.",
    );
    for row in &rows {
        out.gauge(
            &[("upstream", &row.upstream), ("peer", &row.peer)],
            f64::from(row.active),
        );
    }
    out.family(
        "portico_upstream_peer_selected",
        Kind::Counter,
        "Times each peer was chosen for a try.",
    );
    for row in &rows {
        out.counter(
            &[("upstream", &row.upstream), ("peer", &row.peer)],
            row.selected as f64,
        );
    }
    out.family(
        "portico_upstream_peer_responses",
        Kind::Counter,
        "Responses each peer sent, by status class.",
    );
    for row in &rows {
        for (class, count) in ["1xx", "2xx", "3xx", "4xx", "5xx"]
            .iter()
            .zip(row.responses)
        {
            let labels = [
                ("upstream", row.upstream.as_str()),
                ("peer", &row.peer),
                ("code", class),
            ];
            out.counter(&labels, count as f64);
        }
    }
    out.family(
        "portico_upstream_peer_header_seconds",
        Kind::Counter,
        "Time from the start of a try to the end of the peer's response head, summed over \
         responses (divide by portico_upstream_peer_headers_total for the mean).",
    );
    for row in &rows {
        let labels = [("upstream", row.upstream.as_str()), ("peer", &row.peer)];
        out.counter(&labels, row.header_microseconds as f64 / 1e6);
    }
    out.family(
        "portico_upstream_peer_headers",
        Kind::Counter,
        "Response heads timed for portico_upstream_peer_header_seconds_total.",
    );
    for row in &rows {
        let labels = [("upstream", row.upstream.as_str()), ("peer", &row.peer)];
        out.counter(&labels, row.header_times as f64);
    }
    let bounds: Vec<f64> = upstream::PEER_TIME_BUCKETS_MICROSECONDS
        .iter()
        .map(|micros| *micros as f64 / 1e6)
        .collect();
    out.family(
        "portico_upstream_peer_connect_duration_seconds",
        Kind::Histogram,
        "Time to open the connection each response came on (0 for a kept-alive one, as \
         $upstream_connect_time).",
    );
    for row in &rows {
        let labels = [("upstream", row.upstream.as_str()), ("peer", &row.peer)];
        let sum = row.connect_microseconds as f64 / 1e6;
        out.histogram(&labels, &bounds, &row.connect_buckets, sum);
    }
    out.family(
        "portico_upstream_peer_header_duration_seconds",
        Kind::Histogram,
        "Time from the start of a try to the end of the peer's response head.",
    );
    for row in &rows {
        let labels = [("upstream", row.upstream.as_str()), ("peer", &row.peer)];
        let sum = row.header_microseconds as f64 / 1e6;
        out.histogram(&labels, &bounds, &row.header_buckets, sum);
    }
    out.family(
        "portico_upstream_peer_fails",
        Kind::Counter,
        "Tries of each peer that failed (as proxy_next_upstream counts failures).",
    );
    for row in &rows {
        out.counter(
            &[("upstream", &row.upstream), ("peer", &row.peer)],
            row.fails as f64,
        );
    }
    type PeerField = fn(&PeerRow) -> f64;
    let counters: [(&str, &str, PeerField); 3] = [
        (
            "portico_upstream_peer_unavailable",
            "Times each peer's failures reached max_fails and it was left out for fail_timeout.",
            |row| row.unavailable as f64,
        ),
        (
            "portico_upstream_peer_sent_bytes",
            "Bytes written to each peer (requests and their bodies).",
            |row| row.sent_bytes as f64,
        ),
        (
            "portico_upstream_peer_received_bytes",
            "Bytes read from each peer (response heads and bodies).",
            |row| row.received_bytes as f64,
        ),
    ];
    for (name, help, field) in counters {
        out.family(name, Kind::Counter, help);
        for row in &rows {
            out.counter(
                &[("upstream", &row.upstream), ("peer", &row.peer)],
                field(row),
            );
        }
    }
    out.family(
        "portico_upstream_peer_keepalive_connections",
        Kind::Gauge,
        "Idle keep-alive connections to each peer now.",
    );
    for row in &rows {
        out.gauge(
            &[("upstream", &row.upstream), ("peer", &row.peer)],
            row.idle as f64,
        );
    }
}

/// The `proxy_cache_path` zones: their sizes, and their responses and body bytes by
/// `$upstream_cache_status` (counted by `send::log_request` into `cache::Zone::stats`).
fn caches(out: &mut Exposition, generation: &Generation) {
    let zones = &generation.cache_zones;
    type Field = fn(&cache::Zone) -> f64;
    let gauges: [(&str, &str, Field); 5] = [
        (
            "portico_cache_size_bytes",
            "Bytes of the zone's cached files on disk.",
            |zone| zone.size() as f64,
        ),
        (
            "portico_cache_max_size_bytes",
            "max_size= (0 when not set).",
            |zone| zone.params().max_size.unwrap_or(0) as f64,
        ),
        (
            "portico_cache_entries",
            "Entries in the zone's index (a fill in progress counts).",
            |zone| zone.count() as f64,
        ),
        (
            "portico_cache_entries_max",
            "Entries the keys zone holds (from its size).",
            |zone| zone.capacity() as f64,
        ),
        (
            "portico_cache_cold",
            "1 until the cache loader has walked the whole cache path.",
            |zone| f64::from(u8::from(zone.cold())),
        ),
    ];
    for (name, help, field) in gauges {
        out.family(name, Kind::Gauge, help);
        for zone in zones {
            out.gauge(&[("zone", &zone.params().name)], field(zone));
        }
    }
    for (family, help, bytes) in [
        (
            "portico_cache_responses",
            "Responses by $upstream_cache_status.",
            false,
        ),
        (
            "portico_cache_response_bytes",
            "Body bytes sent by $upstream_cache_status.",
            true,
        ),
    ] {
        out.family(family, Kind::Counter, help);
        for zone in zones {
            for status in cache::stats::STATUSES {
                let (responses, sent) = zone.stats().of(status);
                let value = if bytes { sent } else { responses };
                let status = status.to_ascii_lowercase();
                out.counter(
                    &[("zone", &zone.params().name), ("status", &status)],
                    value as f64,
                );
            }
        }
    }
}
