//! What the realip directives set: the trusted addresses, the header and recursion.

use shared::realip::Trusted;

use crate::settings;

/// Where the client's address is taken from (`real_ip_header`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RealIpHeader {
    /// `X-Real-IP`, the default.
    XRealIp,
    /// `X-Forwarded-For`: every such header, in order, as one list.
    XForwardedFor,
    /// `proxy_protocol`: the source address and port of the PROXY protocol header.
    ProxyProtocol,
    /// Any other header, by its lower-case name.
    Other(Box<[u8]>),
}

settings! {
    /// A level with any `set_real_ip_from` uses only its own list; a level with none
    /// inherits the enclosing level's, as in nginx.
    pub struct RealIpConf => RealIp (env) {
        /// `set_real_ip_from`, in order.
        from: Trusted = Trusted::default(),
        /// `real_ip_header`.
        header: RealIpHeader = RealIpHeader::XRealIp,
        /// `real_ip_recursive`.
        recursive: bool = false,
    }
}
