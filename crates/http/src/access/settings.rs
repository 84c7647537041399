//! What `allow` and `deny` set: each level's rules, and the data other modules may read.

use std::net::IpAddr;

use runtime::PeerAddress;

use crate::settings;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InetRule {
    address: u32,
    mask: u32,
    action: Action,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Inet6Rule {
    address: u128,
    mask: u128,
    action: Action,
}

/// What a matching rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
}

/// What `allow` or `deny` names, with the host bits of a network already cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `all`
    All,
    /// `unix:`: every client of a unix-domain socket.
    Unix,
    /// An IPv4 address or network: a client matches when `client & mask == address`.
    Inet { address: u32, mask: u32 },
    /// An IPv6 address or network, likewise.
    Inet6 { address: u128, mask: u128 },
}

/// A parsed `allow`/`deny` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedTarget {
    pub target: Target,
    /// The address had bits set beyond its prefix length (`10.0.0.1/8`); they were
    /// cleared, and nginx warns that they are meaningless.
    pub host_bits_cleared: bool,
}

/// One level's `allow` and `deny` rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    inet: Vec<InetRule>,
    inet6: Vec<Inet6Rule>,
    /// nginx does not look at the socket path: any `unix:` rule matches any such client.
    unix: Vec<Action>,
}

impl Rules {
    /// Appends a rule; `all` goes to every list.
    pub fn push(&mut self, action: Action, target: Target) {
        match target {
            Target::All => {
                self.inet.push(InetRule {
                    address: 0,
                    mask: 0,
                    action,
                });
                self.inet6.push(Inet6Rule {
                    address: 0,
                    mask: 0,
                    action,
                });
                self.unix.push(action);
            }
            Target::Unix => self.unix.push(action),
            Target::Inet { address, mask } => self.inet.push(InetRule {
                address,
                mask,
                action,
            }),
            Target::Inet6 { address, mask } => self.inet6.push(Inet6Rule {
                address,
                mask,
                action,
            }),
        }
    }

    /// The action of the first rule that matches `peer`, or `None` when no rule of the
    /// peer's kind matches (the access phase then lets the request through).
    pub fn check(&self, peer: &PeerAddress) -> Option<Action> {
        match peer {
            PeerAddress::Unix => self.unix.first().copied(),
            PeerAddress::Inet(address) => match address.ip() {
                IpAddr::V4(ip) => self.check_inet(u32::from(ip)),
                IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
                    Some(mapped) if !self.inet.is_empty() => self.check_inet(u32::from(mapped)),
                    _ => self.check_inet6(u128::from(ip)),
                },
            },
        }
    }

    fn check_inet(&self, client: u32) -> Option<Action> {
        self.inet
            .iter()
            .find(|rule| client & rule.mask == rule.address)
            .map(|rule| rule.action)
    }

    fn check_inet6(&self, client: u128) -> Option<Action> {
        self.inet6
            .iter()
            .find(|rule| client & rule.mask == rule.address)
            .map(|rule| rule.action)
    }
}

settings! {
    /// A level with any `allow` or `deny` uses only its own rules; a level with none
    /// inherits the enclosing level's whole list, as in nginx.
    pub struct AccessConf => Access (env) {
        /// `allow` and `deny`, in order.
        rules: Rules = Rules::default(),
    }
}
