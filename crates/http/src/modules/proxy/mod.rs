//! The reverse proxy: `proxy_pass` and the directives that shape the request to the
//! upstream server and the response from it.
//!
//! The content phase hands a request to [`handler::proxy`], which chooses a peer of the
//! location's upstream group, sends the request, reads and checks the response head and
//! returns the response with a body that streams from the upstream connection as the
//! client takes it ([`body`]). Connections are reused through the worker's keep-alive
//! cache when the group says `keepalive`.

mod accel;
pub mod body;
pub mod cache;
mod cookie_flags;
pub mod directives;
pub(crate) mod exchange;
pub mod failure;
pub mod gateway;
pub mod grpc;
pub mod handler;
pub mod memcached;
mod next_upstream;
pub(crate) mod outgoing;
pub mod pass;
pub mod request;
pub mod response;
pub mod send;
pub mod settings;
pub(crate) mod slice;
pub mod ssl;
pub(crate) mod sticky;
pub mod tunnel;
pub mod variables;

pub use settings::ProxyPass;
pub use settings::{
    Buffers, CookieRewrite, IgnoreHeaders, NextUpstream, Proxy, ProxyConf, Redirect, RedirectRule,
    SetHeader,
};
