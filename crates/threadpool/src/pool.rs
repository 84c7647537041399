//! The pool: a bounded queue, fixed threads, completions through oneshot channels.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::counters::{Counters, CountersSnapshot, TaskKind};

/// What `thread_pool NAME threads=N max_queue=M` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    pub name: String,
    pub threads: usize,
    pub max_queue: usize,
}

impl PoolSettings {
    /// The pool nginx creates when `aio threads` names no pool and none called `default`
    /// was declared: 32 threads, 65536 queued tasks.
    pub fn default_pool() -> PoolSettings {
        PoolSettings {
            name: "default".to_owned(),
            threads: 32,
            max_queue: 65_536,
        }
    }
}

/// A submission refused because `max_queue` tasks were already waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueOverflow {
    pub waiting: usize,
}

/// The task never delivered a result: it panicked, or the pool shut down before running it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLost;

impl fmt::Display for TaskLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("thread pool task was lost")
    }
}

impl std::error::Error for TaskLost {}

/// A queued task: it runs the work, tells the pool its thread is free again
/// ([`Shared::returning`]), then hands the result to the submitter.
type Job = Box<dyn FnOnce(&Shared) + Send + 'static>;

/// Tasks queued by [`ThreadPool::submit_deferred_as`] before their pool is woken at once:
/// the woken thread takes them one after the other, and at most this many ever wait behind
/// one that is slow.
const DEFERRED_MAX: usize = 4;

thread_local! {
    /// Whether this thread wakes pools at the end of its loop's turn
    /// ([`defer_wakes_on_this_thread`]).
    static DEFERS_WAKES: Cell<bool> = const { Cell::new(false) };
    /// The pools this thread queued tasks on without waking them, and how many tasks.
    static DEFERRED: RefCell<Vec<(Arc<Shared>, usize)>> = const { RefCell::new(Vec::new()) };
}

/// Lets [`ThreadPool::submit_deferred_as`] leave the wake of a pool to [`wake_deferred`] on
/// this thread: for a worker whose loop calls it before it waits for events, so that the
/// tasks its connections queue in one turn cost the pool one wake, not one each.
pub fn defer_wakes_on_this_thread() {
    DEFERS_WAKES.with(|defers| defers.set(true));
}

/// Wakes a thread of every pool this thread queued tasks on without waking it.
pub fn wake_deferred() {
    let deferred = DEFERRED.with(|deferred| std::mem::take(&mut *deferred.borrow_mut()));
    for (shared, _) in deferred {
        shared.available.notify_one();
    }
}

struct Queued {
    job: Job,
    since: Instant,
    kind: TaskKind,
}

struct State {
    jobs: VecDeque<Queued>,
    /// Tasks submitted with [`ThreadPool::submit_urgent_as`]: taken before any of `jobs`.
    urgent: VecDeque<Queued>,
    /// Threads running a task from `jobs` now.
    running_jobs: usize,
    /// Threads waiting for a task now.
    idle: usize,
    closed: bool,
}

impl State {
    fn queued(&self) -> usize {
        self.jobs.len() + self.urgent.len()
    }
}

/// How many of a pool's threads never take an ordinary task: they are kept for urgent
/// ones ([`ThreadPool::submit_urgent_as`]), so that a pool whose other threads all wait for
/// the disk still starts an urgent task at once. A quarter of the threads, at most this
/// many (a pool of 32 keeps 4; a pool of 1 to 3 keeps none, and its urgent tasks only go
/// ahead of the queue).
const URGENT_THREADS_MAX: usize = 4;

/// The threads of a pool of `threads` that only take urgent tasks.
fn urgent_only_threads(threads: usize) -> usize {
    (threads / 4).min(URGENT_THREADS_MAX)
}

struct Shared {
    name: String,
    max_queue: usize,
    /// The most threads that run ordinary tasks at once: the pool's threads less the
    /// ones kept for urgent tasks ([`urgent_only_threads`]).
    jobs_running_max: usize,
    state: Mutex<State>,
    available: Condvar,
    counters: Counters,
    /// Threads whose task has its result but which have not come back for the next task
    /// yet: the submitter may be woken and ask [`ThreadPool::starts_urgent_within`] before
    /// such a thread counts as idle again, and it will be within moments.
    returning: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A job never runs while the lock is held, so a poisoned lock can only come from a
        // panic in this module's own short critical sections; the state is still consistent.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A named pool of threads. Cloning gives another handle to the same pool.
#[derive(Clone)]
pub struct ThreadPool {
    shared: Arc<Shared>,
    threads: Arc<Threads>,
}

/// The pool's threads, started at once or on the first submission.
struct Threads {
    count: usize,
    on_start: Option<ThreadStart>,
    started: AtomicBool,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("name", &self.shared.name)
            .finish()
    }
}

/// A hook run first on every pool thread, e.g. to drop privileges like the workers do.
pub type ThreadStart = Arc<dyn Fn() + Send + Sync + 'static>;

impl ThreadPool {
    /// Starts `settings.threads` threads named `pool NAME`.
    pub fn start(settings: &PoolSettings, on_start: Option<ThreadStart>) -> io::Result<ThreadPool> {
        let pool = ThreadPool::start_lazily(settings, on_start);
        pool.start_threads()?;
        Ok(pool)
    }

    /// A pool whose threads start with its first task: nginx's `default` pool exists only
    /// when something uses it, and a pool nobody submits to costs no threads.
    pub fn start_lazily(settings: &PoolSettings, on_start: Option<ThreadStart>) -> ThreadPool {
        assert!(
            settings.threads > 0,
            "the thread_pool directive rejects threads=0"
        );
        let shared = Arc::new(Shared {
            name: settings.name.clone(),
            max_queue: settings.max_queue,
            jobs_running_max: settings.threads - urgent_only_threads(settings.threads),
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                urgent: VecDeque::new(),
                running_jobs: 0,
                idle: 0,
                closed: false,
            }),
            available: Condvar::new(),
            returning: AtomicUsize::new(0),
            counters: Counters::default(),
        });
        ThreadPool {
            shared,
            threads: Arc::new(Threads {
                count: settings.threads,
                on_start,
                started: AtomicBool::new(false),
                handles: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Whether the pool's threads have been started.
    pub fn is_started(&self) -> bool {
        self.threads.started.load(Ordering::Acquire)
    }

    fn start_threads(&self) -> io::Result<()> {
        let mut handles = self.lock_threads();
        if self.threads.started.load(Ordering::Acquire) || self.shared.lock().closed {
            return Ok(());
        }
        for _ in 0..self.threads.count {
            let shared = Arc::clone(&self.shared);
            let on_start = self.threads.on_start.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("pool {}", self.shared.name))
                .spawn(move || {
                    if let Some(hook) = on_start {
                        hook();
                    }
                    run_thread(&shared);
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    drop(handles);
                    self.shutdown();
                    return Err(error);
                }
            }
        }
        self.threads.started.store(true, Ordering::Release);
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Queues `work` and returns a future of its result. Never blocks: when `max_queue`
    /// tasks are already waiting, the task is refused and nothing runs. Counted as
    /// [`TaskKind::Other`].
    pub fn submit<T, F>(&self, work: F) -> Result<Completion<T>, QueueOverflow>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.submit_as(TaskKind::Other, work)
    }

    /// [`ThreadPool::submit`], the task counted as `kind`.
    pub fn submit_as<T, F>(&self, kind: TaskKind, work: F) -> Result<Completion<T>, QueueOverflow>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let completion = self.queue(kind, work)?;
        self.shared.available.notify_one();
        Ok(completion)
    }

    /// [`ThreadPool::submit_as`] for a task that can wait for the end of the submitting
    /// worker's turn: on a thread that [defers wakes](defer_wakes_on_this_thread) the pool
    /// is woken by [`wake_deferred`], or at once when `DEFERRED_MAX` tasks wait for it.
    /// Elsewhere the same as `submit_as`.
    pub fn submit_deferred_as<T, F>(
        &self,
        kind: TaskKind,
        work: F,
    ) -> Result<Completion<T>, QueueOverflow>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let completion = self.queue(kind, work)?;
        if !DEFERS_WAKES.with(Cell::get) {
            self.shared.available.notify_one();
            return Ok(completion);
        }
        let wake_now = DEFERRED.with(|deferred| {
            let mut deferred = deferred.borrow_mut();
            let position = deferred
                .iter()
                .position(|(shared, _)| Arc::ptr_eq(shared, &self.shared));
            let position = position.unwrap_or_else(|| {
                deferred.push((Arc::clone(&self.shared), 0));
                deferred.len() - 1
            });
            deferred[position].1 += 1;
            let full = deferred[position].1 >= DEFERRED_MAX;
            if full {
                deferred.swap_remove(position);
            }
            full
        });
        if wake_now {
            self.shared.available.notify_one();
        }
        Ok(completion)
    }

    /// [`ThreadPool::submit_as`] for a short task that must not wait behind the queue: the
    /// `sendfile` of data already in page cache, while other tasks wait for the disk. It
    /// is taken before every ordinary task, and a quarter of the pool's threads (at most
    /// 4) take only such tasks, so it starts at once unless those are busy too
    /// ([`ThreadPool::starts_urgent_within`]). It counts against `max_queue` like any
    /// other task.
    pub fn submit_urgent_as<T, F>(
        &self,
        kind: TaskKind,
        work: F,
    ) -> Result<Completion<T>, QueueOverflow>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let completion = self.queue_in(kind, Lane::Urgent, work)?;
        self.shared.available.notify_one();
        Ok(completion)
    }

    /// Queues a task without waking a thread.
    fn queue<T, F>(&self, kind: TaskKind, work: F) -> Result<Completion<T>, QueueOverflow>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.queue_in(kind, Lane::Ordinary, work)
    }

    /// Queues a task in `lane` without waking a thread.
    fn queue_in<T, F>(
        &self,
        kind: TaskKind,
        lane: Lane,
        work: F,
    ) -> Result<Completion<T>, QueueOverflow>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        if !self.is_started() && self.start_threads().is_err() {
            // No thread could start: the pool is closed and refuses the task below.
            debug_assert!(self.shared.lock().closed, "a failed start closes the pool");
        }
        let (sender, receiver) = oneshot::channel();
        let job: Job = Box::new(move |shared: &Shared| {
            let result = work();
            shared.returning.fetch_add(1, Ordering::Relaxed);
            // The receiver is gone when the client went away; the result is then dropped.
            let _ = sender.send(result);
        });
        {
            let mut state = self.shared.lock();
            if state.closed || state.queued() >= self.shared.max_queue {
                self.shared.counters.task_overflowed();
                return Err(QueueOverflow {
                    waiting: state.queued(),
                });
            }
            let queued = Queued {
                job,
                since: Instant::now(),
                kind,
            };
            match lane {
                Lane::Ordinary => state.jobs.push_back(queued),
                Lane::Urgent => state.urgent.push_back(queued),
            }
            self.shared.counters.task_queued();
        }
        Ok(Completion { receiver })
    }

    /// `threads=`: the pool's size (its threads run once it is started).
    pub fn threads(&self) -> usize {
        self.threads.count
    }

    /// Whether a task submitted now would start within `max_delay`: a thread for ordinary
    /// tasks is free and nothing waits, or tasks wait but the oldest has waited less than `max_delay` (the
    /// threads are taking them). A pool whose threads wait for the disk shows it at once,
    /// before any of them has finished: every thread busy, or a queue that does not move.
    /// Read from the pool's state and its relaxed counters, so a moment late either way;
    /// good for choosing where work goes, not for anything that must hold.
    pub fn keeps_up(&self, max_delay: Duration) -> bool {
        let state = self.shared.lock();
        match state.jobs.front() {
            Some(oldest) => oldest.since.elapsed() < max_delay,
            None => state.running_jobs < self.shared.jobs_running_max,
        }
    }

    /// Whether an urgent task submitted now ([`ThreadPool::submit_urgent_as`]) would
    /// start within `max_delay`: a thread waits for work and no urgent task is queued, or
    /// the oldest urgent task has waited less than `max_delay`. Ordinary tasks, however
    /// many wait, do not count: urgent ones go first; but a full queue (`max_queue`)
    /// would refuse it. A pool not started yet has its threads start with the task. A
    /// hint, like [`ThreadPool::keeps_up`].
    pub fn starts_urgent_within(&self, max_delay: Duration) -> bool {
        let state = self.shared.lock();
        self.starts_urgent_in(&state, max_delay)
    }

    /// [`ThreadPool::starts_urgent_within`] with the pool's state locked.
    fn starts_urgent_in(&self, state: &State, max_delay: Duration) -> bool {
        if state.queued() >= self.shared.max_queue {
            return false;
        }
        if !self.is_started() {
            return true;
        }
        match state.urgent.front() {
            Some(oldest) => oldest.since.elapsed() < max_delay,
            // A thread between its task's result and its next wait is as good as idle.
            None => state.idle > 0 || self.shared.returning.load(Ordering::Relaxed) > 0,
        }
    }

    /// `max_queue=`.
    pub fn max_queue(&self) -> usize {
        self.shared.max_queue
    }

    pub fn counters(&self) -> CountersSnapshot {
        self.shared.counters.snapshot()
    }

    /// Stops taking tasks, lets the threads finish every queued and running task, and waits
    /// for them to exit. Idempotent.
    pub fn shutdown(&self) {
        self.shared.lock().closed = true;
        self.shared.available.notify_all();
        let handles = std::mem::take(&mut *self.lock_threads());
        for handle in handles {
            let _ = handle.join();
        }
    }

    fn lock_threads(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.threads
            .handles
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The two queues of a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Ordinary,
    Urgent,
}

fn run_thread(shared: &Shared) {
    // Whether this thread counts in `returning`: from its task's result until it holds
    // the lock again, where it becomes idle or takes the next task.
    let mut returning = false;
    loop {
        let (queued, lane) = {
            let mut state = shared.lock();
            if returning {
                shared.returning.fetch_sub(1, Ordering::Relaxed);
            }
            loop {
                if let Some(queued) = state.urgent.pop_front() {
                    break (queued, Lane::Urgent);
                }
                if state.running_jobs < shared.jobs_running_max
                    && let Some(queued) = state.jobs.pop_front()
                {
                    state.running_jobs += 1;
                    break (queued, Lane::Ordinary);
                }
                if state.closed && state.jobs.is_empty() {
                    return;
                }
                state.idle += 1;
                state = shared
                    .available
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                state.idle -= 1;
            }
        };
        let started = Instant::now();
        shared
            .counters
            .task_started(started.duration_since(queued.since));
        // A panicking task loses only its own result (the submitter sees TaskLost); the
        // thread lives on to serve the queue.
        let job = queued.job;
        // A task that panicked never got to count itself.
        returning = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(shared))).is_ok();
        shared
            .counters
            .task_finished(queued.kind, started.elapsed());
        if lane == Lane::Ordinary {
            let mut state = shared.lock();
            debug_assert!(state.running_jobs > 0, "this thread ran an ordinary task");
            state.running_jobs -= 1;
            if state.closed {
                // Threads that waited for a thread slot may have nothing left but to exit.
                shared.available.notify_all();
            } else if !state.urgent.is_empty() && !state.jobs.is_empty() {
                // This thread takes the urgent task next; a waiting thread can take the
                // ordinary one that its slot frees.
                shared.available.notify_one();
            }
        }
    }
}

/// The result of a submitted task, delivered to the task that awaits it.
#[derive(Debug)]
pub struct Completion<T> {
    receiver: oneshot::Receiver<T>,
}

impl<T> Future for Completion<T> {
    type Output = Result<T, TaskLost>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.receiver)
            .poll(cx)
            .map(|result| result.map_err(|_| TaskLost))
    }
}

#[cfg(test)]
mod tests;
