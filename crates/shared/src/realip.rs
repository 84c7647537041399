//! `set_real_ip_from`'s list of trusted addresses, shared by the http and stream blocks.

use std::net::IpAddr;

use runtime::PeerAddress;

use crate::access::Target;

/// `set_real_ip_from`: the addresses whose word about the client is trusted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trusted {
    targets: Vec<Target>,
}

impl Trusted {
    pub fn push(&mut self, target: Target) {
        self.targets.push(target);
    }

    /// Whether `peer` is one of the trusted addresses. An IPv4-mapped IPv6 address is
    /// checked as the IPv4 address it carries too, as nginx does.
    pub fn contains(&self, peer: &PeerAddress) -> bool {
        let ip = match peer {
            PeerAddress::Unix => {
                return self
                    .targets
                    .iter()
                    .any(|target| matches!(target, Target::Unix | Target::All));
            }
            PeerAddress::Inet(address) => address.ip(),
        };
        let mapped = match ip {
            IpAddr::V6(ip) => ip.to_ipv4_mapped(),
            IpAddr::V4(_) => None,
        };
        self.targets.iter().any(|target| match (*target, ip) {
            (Target::All, _) => true,
            (Target::Unix, _) => false,
            (Target::Inet { address, mask }, IpAddr::V4(ip)) => u32::from(ip) & mask == address,
            (Target::Inet { address, mask }, IpAddr::V6(_)) => {
                mapped.is_some_and(|ip| u32::from(ip) & mask == address)
            }
            (Target::Inet6 { address, mask }, IpAddr::V6(ip)) => u128::from(ip) & mask == address,
            (Target::Inet6 { .. }, IpAddr::V4(_)) => false,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}
