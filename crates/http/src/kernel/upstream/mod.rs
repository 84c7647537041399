//! Upstream groups as the `http` crate uses them: the groups, balancers and keep-alive
//! cache of the `upstream` crate with `hash` keys that are templates, the `upstream`
//! block's directives, and what the proxy did for a request (`$upstream_*`).

pub mod discovery;
pub mod info;

pub use upstream::{
    GroupState, KeepaliveConf, Peer, PeerAddr, PeerState, Resolvable, Selected, Tried, UpstreamId,
    balancer, keepalive, registry, server_line,
};

use crate::kernel::variables::HttpTemplate;

/// An upstream group whose `hash` key is a template.
pub type Group = upstream::Group<HttpTemplate>;
/// How a group chooses a peer; `hash` takes a template.
pub type Balancer = upstream::Balancer<HttpTemplate>;
/// The groups of one configuration as they are declared and referenced.
pub type UpstreamRegistry = upstream::UpstreamRegistry<HttpTemplate>;
/// What an `upstream` block sets.
pub type UpstreamScope = upstream::registry::UpstreamScope<HttpTemplate>;
