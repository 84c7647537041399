//! The proxy cache's core, with no HTTP in it. The `http` crate's cache module decides
//! what is cached and serves it; this crate knows where entries live, how their files
//! look, what the index holds and who may write what.
//!
//! - [`key`]: the MD5 name and CRC-32 of a key, `levels` paths, temp names.
//! - [`format`](mod@format): nginx's version-5 entry header, its read checks and the Vary
//!   variant hash.
//! - [`index`]: a zone's in-memory index ([`Zone`]): lookups, LRU, capacity, tombstones and
//!   the unlink queue, size accounting.
//! - [`fill`]: one fill per key ([`FillGuard`], waiters on a `watch` channel), update
//!   marks, size reservations.
//! - [`store`]: the blocking file operations a pool thread runs (temp files, commit by
//!   rename, header rewrite after a 304).
//! - [`manager`] and [`loader`]: the two housekeeping threads of a cache path; [`persist`]:
//!   the index snapshot a clean stop writes and the next loader uses, and the checkpoints
//!   the manager writes; [`journal`]: the changes between two checkpoints.
//!
//! A miss, in order: [`Zone::touch`] (a [`ZoneFull`] means serve uncached);
//! [`Zone::start_fill`] gives a [`FillGuard`] or a [`Fill`] to wait on; the filler reserves
//! bytes ([`FillGuard::reserve`]), writes a temp file ([`store::create_temp`], the header
//! from [`format::encode`]), publishes progress, then [`FillGuard::begin_rename`],
//! [`store::commit`] on a pool thread and [`FillGuard::commit`]. Any other end of the
//! guard fails the fill for its waiters.

pub mod fill;
pub mod format;
pub mod index;
pub mod journal;
pub mod loader;
pub mod manager;
pub mod persist;
pub mod purge;
pub mod purger;
pub mod stats;
pub mod store;

pub mod key;
#[cfg(test)]
mod test_dir;

pub use fill::{Fill, FillGuard, FillState, Reservation, UpdateGuard};
pub use format::{EntryHeader, FormatError, ReadError};
pub use index::{
    CommitInfo, Expired, FileInfo, FillStart, NoRoom, SavedEntry, Snapshot, Unlink, Zone, ZoneFull,
    ZoneParams,
};
pub use key::{Key, Layout, Levels};
pub use loader::{Loader, LoaderHandle};
pub use manager::{Manager, ManagerHandle};
