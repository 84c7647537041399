//! What Portico counts about itself, and how the counts are written out.
//!
//! Every worker owns one [`WorkerStats`] slot and is its only writer: an update is a
//! relaxed load and store of the worker's own cache line, never a locked read-modify-write
//! on a line other threads write. Readers (`stub_status`, the metrics endpoint, the
//! `$connections_*` variables) sum the slots of the [`Registry`]. A worker that exits folds
//! its totals into the registry's retired sums, so counters never go back, across reloads.
//!
//! The registry is process-wide ([`GLOBAL`]), as nginx keeps these counters in shared
//! memory that outlives a reload. [`exposition`] writes the Prometheus text formats.

pub mod exposition;
mod workers;
pub mod zones;

pub use workers::{
    Counter, GLOBAL, Gauge, LAG_BUCKETS_MICROSECONDS, Registry, WorkerSnapshot, WorkerStats,
};
