//! What the referer directives set.

use std::sync::Arc;

use crate::kernel::conf::server_names::ServerName;
use crate::settings;
use shared::regex::Regex;

settings! {
    /// `valid_referers` per location (the hash sizes are checked and kept only).
    pub struct RefererConf => Referer (env) {
        /// `valid_referers`: `None` when no level set it (every request is then valid).
        valid_referers: Option<Arc<ValidReferers>> = None,
        /// `referer_hash_bucket_size`
        hash_bucket_size: u64 = 64,
        /// `referer_hash_max_size`
        hash_max_size: u64 = 2048,
    }
}

/// One level's `valid_referers` lines, added up.
#[derive(Clone, Debug, Default)]
pub struct ValidReferers {
    /// `none`: a request without `Referer` is valid.
    pub none: bool,
    /// `blocked`: a `Referer` without `http://` or `https://` is valid.
    pub blocked: bool,
    /// `server_names`: the server's own names are valid hosts.
    pub server_names: bool,
    /// Host names and wildcards, each with the URI prefix written after it, if any.
    pub hosts: Vec<(ServerName, Option<Box<[u8]>>)>,
    /// `~regex`: matched, without regard to case, against the referer after its scheme.
    pub regexes: Vec<Regex>,
}
