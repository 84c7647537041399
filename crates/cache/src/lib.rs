//! The proxy cache's core, with no HTTP in it: cache keys and file paths ([`key`]), nginx's
//! version-5 entry format ([`format`]), the in-memory index of a zone ([`index`]) and the
//! coordination of fills, updates and size reservations ([`fill`]), and the blocking file
//! operations a pool thread runs for them ([`store`]), and the housekeeping threads of a
//! cache path: the manager ([`manager`]) and the loader ([`loader`]), which restores the
//! index snapshot a clean stop wrote ([`persist`]).
//!
//! The `http` crate's cache module decides what is cached and serves it; this crate knows
//! where entries live and how their files look.

pub mod fill;
pub mod format;
pub mod index;
pub mod loader;
pub mod manager;
pub mod persist;
pub mod store;

pub mod key;
#[cfg(test)]
mod test_dir;

pub use fill::{Fill, FillGuard, FillState, Reservation, UpdateGuard};
pub use format::{EntryHeader, FormatError, ReadError};
pub use index::{
    CommitInfo, Expired, FileInfo, FillStart, SavedEntry, Snapshot, Unlink, Zone, ZoneFull,
    ZoneParams,
};
pub use key::{Key, Layout, Levels};
pub use loader::{Loader, LoaderHandle};
pub use manager::{Manager, ManagerHandle};
