//! Named thread pools for the work a worker's loop must never wait on: opening and stat-ing
//! files, reading file data that is not in page cache, writing temp and cache files.
//!
//! A [`ThreadPool`] is nginx's `thread_pool NAME threads=N max_queue=M`: a fixed set of
//! threads and a bounded queue. A worker submits a closure and awaits its [`Completion`];
//! the result is delivered to the submitting worker's task (a oneshot channel wakes it), so
//! the worker's loop goes on serving other connections meanwhile. If the worker stops
//! waiting (its client went away), the task still runs to its end and its result is dropped.
//! [`ThreadPool::shutdown`] stops taking tasks and waits for the queued and running ones.
//!
//! The pool knows nothing of HTTP or files: `http::static_files` decides what to offload.

mod counters;
mod pool;
mod set;

pub use counters::{Counters, CountersSnapshot, TASK_BUCKETS_MICROSECONDS, TaskBuckets, TaskKind};
pub use pool::{
    Completion, PoolSettings, QueueOverflow, TaskLost, ThreadPool, ThreadStart,
    defer_wakes_on_this_thread, wake_deferred,
};
pub use set::ThreadPools;
