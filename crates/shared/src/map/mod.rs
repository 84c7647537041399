//! The keys of `map` blocks and the buckets of `split_clients`.

pub mod keys;
pub mod murmur;
pub mod split_clients;
