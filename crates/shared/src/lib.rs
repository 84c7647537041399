//! What the http and stream blocks share, below both: the `listen` parameters, regexes
//! and their named captures, `allow`/`deny` rules and the address syntax, the
//! `set_real_ip_from` list, the PROXY protocol header, `map` keys and `split_clients`
//! buckets, the `resolver`, OCSP stapling from responders, and the `$ssl_*` values. Each is
//! pure (configuration values and lookups on them) or, for the resolver and the stapling,
//! work on the worker's own loop; none knows about requests or sessions.

pub mod access;
pub mod captures;
pub mod certificate_cache;
pub mod listen;
pub mod lookup_hash;
pub mod map;
pub mod proxy_protocol;
pub mod realip;
pub mod regex;
pub mod resolver;
pub mod ssl;
pub mod ssl_variables;
pub mod stapling;

/// The nginx version Portico answers as (`$nginx_version`, the `Server` header's
/// version, the status pages).
pub const NGINX_COMPATIBLE_VERSION: &str = "1.31.5";
