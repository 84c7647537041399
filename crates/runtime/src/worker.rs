//! A worker thread: one single-threaded tokio runtime, pinned if asked, draining on command.

use std::future::Future;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::thread::CpuSet;
use tokio::sync::watch;

use crate::accept::ConnectionGauge;
use crate::clock::Clock;

/// What the master wants a worker to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Accept and serve.
    Running,
    /// Graceful stop (`QUIT`, or an old generation after a reload): stop accepting, finish
    /// the requests in flight, close idle keep-alive connections, exit when none is left or
    /// when `worker_shutdown_timeout` passes.
    Draining,
    /// Fast stop (`TERM`, `INT`): close everything now.
    Stopping,
}

/// Runs first on the worker thread, before the runtime exists (drops privileges to `user`).
pub type ThreadStart = Arc<dyn Fn() -> io::Result<()> + Send + Sync + 'static>;

/// How to start one worker.
#[derive(Clone)]
pub struct WorkerSpec {
    /// The thread's name, e.g. `worker 1.0` (generation 1, worker 0).
    pub name: String,
    /// The worker's index within its generation.
    pub index: usize,
    /// CPUs to pin the thread to (`worker_cpu_affinity`), or `None`.
    pub cpus: Option<Vec<usize>>,
    /// `worker_connections`.
    pub connections_max: usize,
    pub on_start: Option<ThreadStart>,
    /// Run on the worker's thread each time its loop is about to wait for events (nothing
    /// left to run), and once as it ends: the end of a turn.
    pub before_park: Option<BeforePark>,
}

/// See [`WorkerSpec::before_park`].
pub type BeforePark = Arc<dyn Fn() + Send + Sync + 'static>;

/// What a worker's body gets: its identity, the master's commands, and its shared state.
#[derive(Debug)]
pub struct WorkerContext {
    pub index: usize,
    pub phase: watch::Receiver<Phase>,
    /// Set by the master the moment it asks the worker to stop: a cheap check for the
    /// request path, which must not wait for the worker's own task to see the change.
    pub stopping: Arc<AtomicBool>,
    pub gauge: Rc<ConnectionGauge>,
    pub clock: Rc<Clock>,
}

impl WorkerContext {
    /// Resolves when the worker should stop: at once for [`Phase::Stopping`]; for
    /// [`Phase::Draining`], when the last connection closed or `shutdown_timeout` passed.
    pub async fn until_finished(&self, shutdown_timeout: Option<Duration>) {
        let mut phase = self.phase.clone();
        while *phase.borrow_and_update() == Phase::Running {
            if phase.changed().await.is_err() {
                return;
            }
        }
        if *phase.borrow() == Phase::Stopping {
            return;
        }
        let drained = async {
            tokio::select! {
                _ = self.gauge.wait_empty() => {}
                _ = wait_for(&mut phase, Phase::Stopping) => {}
            }
        };
        match shutdown_timeout {
            Some(timeout) => {
                let _ = tokio::time::timeout(timeout, drained).await;
            }
            None => drained.await,
        }
    }
}

async fn wait_for(phase: &mut watch::Receiver<Phase>, wanted: Phase) {
    while *phase.borrow_and_update() != wanted {
        if phase.changed().await.is_err() {
            return;
        }
    }
}

/// The master's handle on a worker thread.
#[derive(Debug)]
pub struct WorkerHandle {
    pub name: String,
    control: watch::Sender<Phase>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl WorkerHandle {
    pub fn set_phase(&self, phase: Phase) {
        self.stopping
            .store(phase != Phase::Running, Ordering::Release);
        self.control.send_replace(phase);
    }

    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the thread to end; `Err` carries a panic message if the worker panicked.
    pub fn join(mut self) -> Result<(), String> {
        match self.thread.take() {
            Some(thread) => thread.join().map_err(|panic| panic_text(&panic)),
            None => Ok(()),
        }
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// Why a worker could not start.
#[derive(Debug)]
pub enum WorkerStartError {
    Spawn(io::Error),
}

/// Starts a worker thread that runs `body` on a fresh single-threaded runtime with a
/// `LocalSet`, so the body may `spawn_local` tasks that are not `Send`. When `body`
/// returns, the runtime is dropped and every task still running on it is cancelled (their
/// sockets close).
pub fn spawn<F, Fut>(spec: WorkerSpec, body: F) -> io::Result<WorkerHandle>
where
    F: FnOnce(WorkerContext) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let (control, phase) = watch::channel(Phase::Running);
    let stopping = Arc::new(AtomicBool::new(false));
    let name = spec.name.clone();
    let worker_stopping = Arc::clone(&stopping);
    let thread = std::thread::Builder::new()
        .name(spec.name.clone())
        .spawn(move || {
            run(spec, phase, worker_stopping, body);
        })?;
    Ok(WorkerHandle {
        name,
        control,
        stopping,
        thread: Some(thread),
    })
}

fn run<F, Fut>(spec: WorkerSpec, phase: watch::Receiver<Phase>, stopping: Arc<AtomicBool>, body: F)
where
    F: FnOnce(WorkerContext) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    if let Some(cpus) = &spec.cpus {
        let mut set = CpuSet::new();
        for &cpu in cpus {
            set.set(cpu);
        }
        // Affinity is an optimisation; a refused mask (cgroup cpuset) leaves the thread free.
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    if let Some(on_start) = &spec.on_start
        && on_start().is_err()
    {
        return;
    }
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    if let Some(hook) = &spec.before_park {
        let hook = Arc::clone(hook);
        builder.on_thread_park(move || hook());
    }
    let runtime = match builder.build() {
        Ok(runtime) => runtime,
        Err(_) => return,
    };
    let local = tokio::task::LocalSet::new();
    let context = WorkerContext {
        index: spec.index,
        phase,
        stopping,
        gauge: Rc::new(ConnectionGauge::new(spec.connections_max)),
        clock: Rc::new(Clock::new()),
    };
    local.block_on(&runtime, body(context));
    drop(local);
    runtime.shutdown_timeout(Duration::from_millis(100));
    if let Some(hook) = &spec.before_park {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn spec(name: &str) -> WorkerSpec {
        WorkerSpec {
            name: name.to_owned(),
            index: 0,
            cpus: Some(vec![0]),
            connections_max: 8,
            on_start: None,
            before_park: None,
        }
    }

    #[test]
    fn draining_waits_for_connections_then_exits() {
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let worker = spawn(spec("drain"), move |context| async move {
            let guard = context.gauge.try_acquire().unwrap();
            tokio::task::spawn_local(async move {
                // Hold the connection until the test releases it.
                while release_rx.try_recv().is_err() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                drop(guard);
            });
            context.until_finished(None).await;
        })
        .unwrap();
        worker.set_phase(Phase::Draining);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!worker.is_finished(), "a connection is still open");
        release_tx.send(()).unwrap();
        worker.join().unwrap();
    }

    #[test]
    fn shutdown_timeout_bounds_the_drain() {
        let worker = spawn(spec("timeout"), |context| async move {
            let guard = context.gauge.try_acquire().unwrap();
            std::mem::forget(guard);
            context
                .until_finished(Some(Duration::from_millis(50)))
                .await;
        })
        .unwrap();
        let start = Instant::now();
        worker.set_phase(Phase::Draining);
        worker.join().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn stopping_exits_at_once() {
        let worker = spawn(spec("stop"), |context| async move {
            let guard = context.gauge.try_acquire().unwrap();
            std::mem::forget(guard);
            context.until_finished(None).await;
        })
        .unwrap();
        worker.set_phase(Phase::Stopping);
        worker.join().unwrap();
    }

    #[test]
    fn failing_start_hook_ends_the_worker() {
        let mut failing = spec("hook");
        failing.on_start = Some(Arc::new(|| Err(io::Error::other("no such user"))));
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ran_in_body = Arc::clone(&ran);
        let worker = spawn(failing, move |_context| async move {
            ran_in_body.store(true, std::sync::atomic::Ordering::SeqCst);
        })
        .unwrap();
        worker.join().unwrap();
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    }
}
