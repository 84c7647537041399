//! A generation: the workers, thread pools and log files of one loaded configuration.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use http::{Generation, HttpWorker};
use logging::{Level, LogFiles};
use runtime::accept::{Accepted, WorkerListener, accept_loop};
use runtime::worker::{self, ThreadStart, WorkerContext, WorkerHandle, WorkerSpec};
use runtime::{AcceptSettings, ListenAddress, Phase};
use rustix::thread::CpuSet;
use threadpool::{ThreadPool, ThreadPools};

use crate::config::{Config, CpuAffinity, UserSetting};
use crate::listeners::GenerationSockets;

/// The master's handle on a running generation.
pub struct GenerationHandle {
    pub generation: Arc<Generation>,
    pub workers: Vec<WorkerHandle>,
    pub pools: Vec<ThreadPool>,
    pub log_files: LogFiles,
    /// Kept so that the sockets stay open while this generation's workers run.
    pub sockets: GenerationSockets,
    pub draining: bool,
    /// The `stream` block its workers serve (a reload's groups take over what this
    /// one's `resolve` servers found).
    pub stream: Option<Arc<stream::StreamConf>>,
}

impl GenerationHandle {
    pub fn set_phase(&mut self, phase: Phase) {
        self.draining = phase != Phase::Running;
        for worker in &self.workers {
            worker.set_phase(phase);
        }
    }

    pub fn is_finished(&self) -> bool {
        self.workers.iter().all(WorkerHandle::is_finished)
    }

    /// Joins the workers, then stops the pools (which waits for their running tasks).
    pub fn finish(self) -> Vec<String> {
        let mut panics = Vec::new();
        for worker in self.workers {
            let name = worker.name.clone();
            if let Err(panic) = worker.join() {
                panics.push(format!("worker \"{name}\" panicked: {panic}"));
            }
        }
        for pool in &self.pools {
            pool.shutdown();
        }
        // The sockets may close now, unless a newer generation still holds them.
        drop(self.sockets);
        panics
    }
}

/// Why a generation could not start.
#[derive(Debug)]
pub struct StartError(pub String);

/// Starts the workers of `config` on `sockets`.
pub fn start(
    number: u64,
    mut config: Config,
    sockets: GenerationSockets,
    connection_ids: Arc<AtomicU64>,
    cache_zones: &mut crate::cache_zones::ZoneRegistry,
    previous: Option<&GenerationHandle>,
) -> Result<GenerationHandle, StartError> {
    let Some(mut http) = config.http.take() else {
        return Err(StartError(
            "no \"http\" section in configuration".to_owned(),
        ));
    };
    if let Some(previous) = previous {
        let old = &previous.generation.http.upstreams;
        http::kernel::upstream::discovery::carry_over(&http.upstreams, old);
        if let (Some(new), Some(old)) = (&config.stream, &previous.stream) {
            stream::carry_over(new, old);
        }
    }
    // A reload's new paths (the first start made them before it forked).
    crate::work_dirs::prepare(&http, config.user.as_ref()).map_err(StartError)?;
    crate::limit_zones::adopt(&mut http.limit_zones).map_err(StartError)?;
    let cache_zones = cache_zones
        .zones_for(&http.cache_paths, &config.error_log)
        .map_err(StartError)?;
    let privileges = config.user.clone().map(drop_privileges_hook);
    let on_start = Some(loop_start_hook(
        config.worker_priority,
        privileges.clone(),
        &config.error_log,
    ));
    // A lazily started pool's threads are spawned by a worker and would inherit its
    // `worker_cpu_affinity`; they get their own CPUs first (see `pool_cpus`), and
    // `worker_priority` as nginx's pool threads inherit their worker process's.
    let master_cpus = rustix::thread::sched_getaffinity(None)
        .ok()
        .map(|master| pool_cpus(&master, config.cpu_affinity.as_ref(), config.workers));
    let priority = config.worker_priority;
    let pool_log = Arc::clone(&config.error_log);
    let pool_hook: threadpool::ThreadStart = Arc::new(move || {
        if let Some(cpus) = &master_cpus {
            let _ = rustix::thread::sched_setaffinity(None, cpus);
        }
        if let Some(nice) = priority {
            apply_priority(nice, &pool_log);
        }
        if let Some(hook) = &privileges {
            let _ = hook();
        }
    });
    // Each worker has its own instance of every pool, as each nginx worker process has.
    let mut worker_pools = Vec::new();
    for _ in 0..config.workers {
        match ThreadPools::start(&config.thread_pools, Some(Arc::clone(&pool_hook))) {
            Ok(pools) => worker_pools.push(pools),
            Err(error) => {
                for pools in &worker_pools {
                    pools.shutdown();
                }
                return Err(StartError(format!("thread pool could not start: {error}")));
            }
        }
    }
    let all_pools: Vec<ThreadPool> = worker_pools
        .iter()
        .flat_map(|pools| pools.iter().cloned())
        .collect();
    let access_log_buffers = Arc::new(http::kernel::log_buffers::SharedBuffers::with_slots(
        http.access_log_buffers,
    ));
    let stream_conf = config.stream.take().map(Arc::new);
    let http_socket_count = http.sockets.len();
    let generation = Arc::new(Generation {
        number,
        http,
        worker_pools,
        connection_ids,
        temp_numbers: std::sync::atomic::AtomicU64::new(http::kernel::body::temp::first_number()),
        hostname: crate::config::hostname(),
        error_log: Arc::clone(&config.error_log),
        debug_connections: config.debug_connections.clone(),
        cache_zones,
        log_files: Default::default(),
        access_log_buffers,
    });
    let mut workers = Vec::new();
    for index in 0..config.workers {
        let spec = WorkerSpec {
            name: format!("worker {number}.{index}"),
            index,
            cpus: cpus_for(config.cpu_affinity.as_ref(), index),
            // nginx counts a worker's listening sockets among its worker_connections.
            connections_max: config
                .accept
                .worker_connections
                .saturating_sub(sockets.len()),
            on_start: on_start.clone(),
            // Cache writes queued in a turn wake their pool once, at the turn's end.
            before_park: Some(Arc::new(threadpool::wake_deferred)),
        };
        let generation = Arc::clone(&generation);
        let listeners = sockets.clone();
        let accept = config.accept;
        let shutdown_timeout = config.shutdown_timeout;
        let stream = stream_conf.clone().map(|conf| StreamStart {
            conf,
            first_socket: http_socket_count,
        });
        let spawned = worker::spawn(spec, move |context| {
            run_worker(
                context,
                generation,
                listeners,
                stream,
                accept,
                shutdown_timeout,
            )
        });
        match spawned {
            Ok(handle) => workers.push(handle),
            Err(error) => {
                for worker in &workers {
                    worker.set_phase(Phase::Stopping);
                }
                return Err(StartError(format!(
                    "could not start worker thread: {error}"
                )));
            }
        }
    }
    let loaded = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    metrics::GLOBAL
        .loaded_unix_seconds
        .store(loaded, std::sync::atomic::Ordering::Relaxed);
    Ok(GenerationHandle {
        generation,
        workers,
        pools: all_pools,
        log_files: std::mem::take(&mut config.log_files),
        sockets,
        draining: false,
        stream: stream_conf,
    })
}

/// `13: Permission denied`, as nginx writes an errno.
pub(crate) fn errno_text(error: &std::io::Error) -> String {
    let code = error.raw_os_error().unwrap_or(0);
    let text = std::io::Error::from_raw_os_error(code).to_string();
    let text = text
        .rsplit_once(" (os error")
        .map_or(text.as_str(), |(text, _)| text)
        .to_owned();
    format!("{code}: {text}")
}

/// Runs first on every worker thread: `worker_priority`, then `user` (last: a negative
/// priority needs root's privilege).
fn loop_start_hook(
    priority: Option<i32>,
    privileges: Option<ThreadStart>,
    error_log: &Arc<logging::ErrorLog>,
) -> ThreadStart {
    let error_log = Arc::clone(error_log);
    Arc::new(move || {
        if let Some(nice) = priority {
            apply_priority(nice, &error_log);
        }
        match &privileges {
            Some(hook) => hook(),
            None => Ok(()),
        }
    })
}

/// `worker_priority` on the calling thread; a refusal is logged as nginx logs it and the
/// thread goes on at the priority it has.
fn apply_priority(nice: i32, error_log: &logging::ErrorLog) {
    if let Err(error) = runtime::sys::linux::set_thread_nice(nice)
        && error_log.enabled(Level::Alert)
    {
        error_log.write(
            Level::Alert,
            &runtime::clock::wall_now(),
            None,
            format_args!("setpriority({nice}) failed ({})", errno_text(&error)),
            None,
        );
    }
}

/// Switches the calling thread to `user`: Linux credentials are per thread, so workers
/// and pool threads run as `user` while the master keeps root, as nginx's workers do.
fn drop_privileges_hook(user: UserSetting) -> ThreadStart {
    Arc::new(move || {
        if user.uid == 0 {
            return Ok(());
        }
        let gid = rustix::process::Gid::from_raw(user.gid);
        let uid = rustix::process::Uid::from_raw(user.uid);
        rustix::thread::set_thread_groups(&[gid])?;
        rustix::thread::set_thread_res_gid(gid, gid, gid)?;
        rustix::thread::set_thread_res_uid(uid, uid, uid)?;
        Ok(())
    })
}

/// The CPUs worker `index` is pinned to, if `worker_cpu_affinity` says so.
/// The CPUs of pool threads: the master's, less those `worker_cpu_affinity` pins workers
/// to when any CPU is left. A hash or a copy that a worker hands to its pool then never
/// runs on that worker's CPU, where the woken worker would wait for it (measured: the
/// `auth_basic` bench's loop lag, bench/README.md); nginx's pool threads share their
/// worker process's CPU.
fn pool_cpus(master: &CpuSet, affinity: Option<&CpuAffinity>, workers: usize) -> CpuSet {
    let mut rest = *master;
    for index in 0..workers {
        for cpu in cpus_for(affinity, index).unwrap_or_default() {
            if cpu < CpuSet::MAX_CPU {
                rest.unset(cpu);
            }
        }
    }
    if rest.count() == 0 { *master } else { rest }
}

fn cpus_for(affinity: Option<&CpuAffinity>, index: usize) -> Option<Vec<usize>> {
    match affinity? {
        CpuAffinity::Auto { limit } => {
            let available: Vec<usize> = match limit {
                Some(limit) => limit.clone(),
                None => {
                    let set = rustix::thread::sched_getaffinity(None).ok()?;
                    (0..rustix::thread::CpuSet::MAX_CPU)
                        .filter(|cpu| set.is_set(*cpu))
                        .collect()
                }
            };
            available
                .get(index % available.len().max(1))
                .map(|cpu| vec![*cpu])
        }
        CpuAffinity::Masks(masks) => masks.get(index).or_else(|| masks.last()).cloned(),
    }
}

/// How long the requests `worker_shutdown_timeout` cuts get to log their lines.
const CUT_GRACE: Duration = Duration::from_millis(100);

/// The stream block a worker serves, and where its sockets start in the generation's.
struct StreamStart {
    conf: Arc<stream::StreamConf>,
    first_socket: usize,
}

/// The body of a worker thread.
async fn run_worker(
    context: WorkerContext,
    generation: Arc<Generation>,
    sockets: GenerationSockets,
    stream_start: Option<StreamStart>,
    accept: AcceptSettings,
    shutdown_timeout: Option<Duration>,
) {
    // This thread's loop wakes the pools at the end of each turn (`before_park`).
    threadpool::defer_wakes_on_this_thread();
    let pools = generation
        .worker_pools
        .get(context.index)
        .cloned()
        .expect("one pool set is started per worker");
    let stream_pool = pools.default_pool().clone();
    let worker = Rc::new(HttpWorker::new(
        Arc::clone(&generation),
        pools,
        Rc::clone(&context.clock),
        context.phase.clone(),
        Arc::clone(&context.stopping),
        context.index,
    ));
    let http_sockets = stream_start
        .as_ref()
        .map_or(sockets.len(), |start| start.first_socket);
    let stream_worker = stream_start.map(|start| {
        Rc::new(stream::StreamWorker::new(
            start.conf,
            Rc::clone(&context.clock),
            Arc::clone(&generation.connection_ids),
            generation.hostname.clone(),
            context.phase.clone(),
            Some(stream_pool),
        ))
    });
    if let Some(stream_worker) = &stream_worker {
        stream_worker.set_pass_hook(crate::stream_accept::pass_hook(&worker, http_sockets));
        for (socket_index, listeners) in sockets[http_sockets..].iter().enumerate() {
            let Some(listener) = listeners.get(context.index % listeners.len().max(1)) else {
                continue;
            };
            crate::stream_accept::start(
                stream_worker,
                socket_index,
                listener,
                &context,
                accept,
                &worker,
            );
        }
    }
    for (socket_index, listeners) in sockets[..http_sockets].iter().enumerate() {
        let Some(listener) = listeners.get(context.index % listeners.len().max(1)) else {
            continue;
        };
        if listener.is_datagram() {
            start_quic(&worker, socket_index, listener, &context);
            continue;
        }
        let registered = match &listener.address {
            ListenAddress::Inet(_) => listener.to_tokio_tcp().map(WorkerListener::Tcp),
            ListenAddress::Unix(_) => listener.to_tokio_unix().map(WorkerListener::Unix),
        };
        let registered = match registered {
            Ok(registered) => registered,
            Err(error) => {
                let text = runtime::sys::linux::error_text(&error);
                log(
                    &worker,
                    Level::Alert,
                    format_args!(
                        "listener {} could not be registered ({text})",
                        listener.address
                    ),
                );
                continue;
            }
        };
        let accepting = Rc::clone(&worker);
        let phase = context.phase.clone();
        let gauge = Rc::clone(&context.gauge);
        tokio::task::spawn_local(async move {
            let handler = Rc::clone(&accepting);
            accept_loop(
                registered,
                phase,
                gauge,
                accept,
                move |accepted| match accepted {
                    Accepted::Connection {
                        stream,
                        peer,
                        guard,
                    } => {
                        handler.stats.accepted.add(1);
                        handler.stats.handled.add(1);
                        // The time is read once per turn of the connection's task.
                        tokio::task::spawn_local(runtime::clock::turn_clocked(
                            http::assembly::connection::serve(
                                Rc::clone(&handler),
                                socket_index,
                                stream,
                                peer,
                                guard,
                            ),
                        ));
                    }
                    Accepted::LimitReached { .. } => {
                        // nginx counts it accepted, not handled.
                        handler.stats.accepted.add(1);
                        let configured = accept.worker_connections;
                        log(
                            &handler,
                            Level::Alert,
                            format_args!("{configured} worker_connections are not enough"),
                        );
                    }
                    Accepted::Failed(error) => {
                        let text = runtime::sys::linux::error_text(&error);
                        log(
                            &handler,
                            Level::Crit,
                            format_args!("accept4() failed ({text})"),
                        );
                    }
                },
            )
            .await;
        });
    }
    // The accept loops hold their own duplicates; the master's handles must not outlive
    // them here, or a stopping master could not close its sockets.
    drop(sockets);
    let flusher = tokio::task::spawn_local(Rc::clone(&worker).flush_access_logs_periodically());
    let stream_flusher = stream_worker
        .as_ref()
        .map(|stream| tokio::task::spawn_local(Rc::clone(stream).flush_access_logs_periodically()));
    tokio::task::spawn_local(Rc::clone(&worker).watch_phase());
    let stall_watcher = tokio::task::spawn_local(Rc::clone(&worker).watch_loop_stalls());
    let discovery = tokio::task::spawn_local(
        http::kernel::upstream::discovery::follow_resolvable_servers(Rc::clone(&worker)),
    );
    let stapling = tokio::task::spawn_local(http::kernel::ssl::stapling::follow_staplings(
        Rc::clone(&worker),
    ));
    let stream_discovery = stream_worker
        .as_ref()
        .map(|stream| tokio::task::spawn_local(Rc::clone(stream).follow_resolvable_servers()));
    let stream_stapling = stream_worker
        .as_ref()
        .map(|stream| tokio::task::spawn_local(Rc::clone(stream).follow_staplings()));
    let log_lines = tokio::task::spawn_local(hand_over_log_lines());
    context.until_finished(shutdown_timeout).await;
    // A graceful stop whose `worker_shutdown_timeout` passed: the requests still running
    // log their lines before the runtime drops them (a fast stop logs none, as nginx's).
    if *context.phase.borrow() != Phase::Stopping {
        worker.cut_requests(CUT_GRACE).await;
    }
    flusher.abort();
    if let Some(stream_flusher) = stream_flusher {
        stream_flusher.abort();
    }
    if let Some(stream) = &stream_worker {
        stream.flush_access_logs();
    }
    stall_watcher.abort();
    discovery.abort();
    stapling.abort();
    if let Some(stream_discovery) = stream_discovery {
        stream_discovery.abort();
    }
    if let Some(stream_stapling) = stream_stapling {
        stream_stapling.abort();
    }
    log_lines.abort();
    worker.report_stall_counts();
    worker.flush_access_logs();
    logging::writer::hand_over_here();
}

/// Serves a `listen ... quic` socket on this worker: with `reuseport` each worker has its
/// own socket (the kernel keeps a client's datagrams on one of them); without it the
/// first worker alone reads the one socket, so that a connection's datagrams all reach
/// the worker that holds it.
fn start_quic(
    worker: &Rc<HttpWorker>,
    socket_index: usize,
    listener: &runtime::Listener,
    context: &WorkerContext,
) {
    if !listener.options().reuseport && context.index != 0 {
        return;
    }
    match listener.to_tokio_udp() {
        Ok(socket) => {
            // Taken now, before any reload can ask the worker to drain.
            let guard = context.gauge.try_acquire();
            tokio::task::spawn_local(http::assembly::v3::socket::serve_socket(
                Rc::clone(worker),
                socket_index,
                socket,
                guard,
            ));
        }
        Err(error) => {
            let text = runtime::sys::linux::error_text(&error);
            log(
                worker,
                Level::Alert,
                format_args!(
                    "listener {} could not be registered ({text})",
                    listener.address
                ),
            );
        }
    }
}

/// This worker's log lines wait until the end of the loop's turn in which they were logged,
/// then go to the log writer thread together (`logging::writer`): one lock and at most one
/// wake-up of the writer per turn, not per line.
async fn hand_over_log_lines() {
    let first_line = Rc::new(tokio::sync::Notify::new());
    logging::writer::batch_here({
        let first_line = Rc::clone(&first_line);
        move || first_line.notify_one()
    });
    loop {
        first_line.notified().await;
        // Behind every task that is ready now: they log into the same batch.
        tokio::task::yield_now().await;
        logging::writer::hand_over_here();
    }
}

pub(crate) fn log(worker: &HttpWorker, level: Level, message: std::fmt::Arguments<'_>) {
    let error_log = &worker.generation.error_log;
    if error_log.enabled(level) {
        error_log.write(level, &worker.clock.wall(), None, message, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cpus: &[usize]) -> CpuSet {
        let mut set = CpuSet::new();
        for &cpu in cpus {
            set.set(cpu);
        }
        set
    }

    fn listed(set: &CpuSet) -> Vec<usize> {
        (0..8).filter(|cpu| set.is_set(*cpu)).collect()
    }

    #[test]
    fn pool_threads_leave_the_pinned_workers_cpus_when_others_remain() {
        let master = set(&[0, 1, 2, 3]);
        let masks = CpuAffinity::Masks(vec![vec![0], vec![1]]);
        assert_eq!(listed(&pool_cpus(&master, Some(&masks), 2)), [2, 3]);
        let auto = CpuAffinity::Auto {
            limit: Some(vec![2, 3]),
        };
        assert_eq!(listed(&pool_cpus(&master, Some(&auto), 1)), [0, 1, 3]);
    }

    #[test]
    fn pool_threads_keep_every_cpu_without_affinity_or_a_free_cpu() {
        let master = set(&[0, 1]);
        assert_eq!(listed(&pool_cpus(&master, None, 2)), [0, 1]);
        let masks = CpuAffinity::Masks(vec![vec![0], vec![1]]);
        assert_eq!(listed(&pool_cpus(&master, Some(&masks), 2)), [0, 1]);
        // The last mask repeats for further workers, as nginx's does.
        let one = CpuAffinity::Masks(vec![vec![1]]);
        assert_eq!(listed(&pool_cpus(&master, Some(&one), 3)), [0]);
    }
}
