//! The `stream` block: TCP (and UDP) sessions proxied to upstreams, as nginx's stream
//! modules serve them.
//!
//! A session goes through nginx's stream phases in order (`session.rs`): the PROXY
//! protocol header and realip, `set` and `limit_conn`, `allow`/`deny`, `ssl_preread`,
//! then the content (`proxy_pass`, `return`, `pass`) and the access log. The proxy
//! (`proxy.rs`) chooses peers with the `upstream` crate's balancers, the same ones the
//! http block uses, and relays bytes both ways.
//!
//! The configuration (`conf/`) is read from the `stream` block's directives with the
//! `conf` crate's checks and nginx's error texts, and shares what the http block already
//! has: `listen` parameters, `allow`/`deny` addresses, PROXY protocol parsing, `map`
//! keys and `split_clients` percentages, templates. Log lines go through the log writer
//! thread (`logging`), so a worker never waits on a disk.

pub mod conf;
pub mod geo;
pub mod log;
pub mod map;
pub mod preread;
pub mod proxy;
pub mod server_name;
pub mod session;
pub mod ssl;
pub mod udp;
pub mod variables;
pub mod worker;

pub use conf::{LoadEnv, StreamConf, load_stream};
pub use session::serve;
pub use worker::StreamWorker;

/// Gives a reloaded stream block's upstream groups what the running one's `resolve`
/// servers last found (groups matched by name).
pub fn carry_over(new: &StreamConf, old: &StreamConf) {
    upstream::discovery::carry_over(&new.groups, &old.groups);
}

/// The stream modules Portico has built in, by nginx's module names without `ngx_` and
/// `_module` (`load_module modules/ngx_stream_module.so;` names `stream`, the one file of
/// Debian's `libnginx-mod-stream`).
pub const FAMILIES: &[&str] = &[
    "stream",
    "stream_core",
    "stream_log",
    "stream_proxy",
    "stream_upstream",
    "stream_upstream_hash",
    "stream_upstream_least_conn",
    "stream_upstream_random",
    "stream_upstream_least_time",
    "stream_upstream_zone",
    "stream_access",
    "stream_geo",
    "stream_map",
    "stream_split_clients",
    "stream_set",
    "stream_return",
    "stream_pass",
    "stream_limit_conn",
    "stream_realip",
    "stream_ssl",
    "stream_ssl_preread",
];
