//! The proxy cache's core, with no HTTP in it: cache keys and file paths ([`key`]), nginx's
//! version-5 entry format ([`format`]).
//!
//! The `http` crate's cache module decides what is cached and serves it; this crate knows
//! where entries live and how their files look.

pub mod format;
pub mod key;

pub use format::{EntryHeader, FormatError, ReadError};
pub use key::{Key, Layout, Levels};
