//! Sending what an upstream answers: a proxied body, a body attached from the cache or
//! a subrequest, slices, and the tunnel an upgraded connection becomes.

pub(crate) mod attach;
pub(crate) mod slice;
pub(crate) mod tunnel;
pub(crate) mod upstream;
