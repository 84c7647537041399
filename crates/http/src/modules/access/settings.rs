//! What `allow` and `deny` set: each level's rules, and the data other modules may read
//! (the address and network syntax `set_real_ip_from` shares).

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

/// Parses the argument of `allow`/`deny`: `all`, `unix:`, an address or `address/bits`.
/// Addresses are read as nginx reads them, quirks included (see `parse_inet`).
pub fn parse_target(text: &str) -> Option<ParsedTarget> {
    let exact = |target| ParsedTarget {
        target,
        host_bits_cleared: false,
    };
    match text {
        "all" => return Some(exact(Target::All)),
        "unix:" => return Some(exact(Target::Unix)),
        _ => {}
    }
    let (address, bits) = match text.split_once('/') {
        Some((address, bits)) => (address, Some(parse_prefix_length(bits)?)),
        None => (text, None),
    };
    if let Some(address) = parse_inet(address.as_bytes()) {
        let mask = match bits {
            None => u32::MAX,
            Some(bits @ 0..=32) => u32::MAX.checked_shl(32 - bits).unwrap_or(0),
            Some(_) => return None,
        };
        return Some(ParsedTarget {
            target: Target::Inet {
                address: address & mask,
                mask,
            },
            host_bits_cleared: address & !mask != 0,
        });
    }
    let address = parse_inet6(address.as_bytes())?;
    let mask = match bits {
        None => u128::MAX,
        Some(bits @ 0..=128) => u128::MAX.checked_shl(128 - bits).unwrap_or(0),
        Some(_) => return None,
    };
    Some(ParsedTarget {
        target: Target::Inet6 {
            address: address & mask,
            mask,
        },
        host_bits_cleared: address & !mask != 0,
    })
}

/// The prefix length after `/`: decimal digits only, at least one.
fn parse_prefix_length(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse::<u32>().ok()
}

/// A dotted-quad IPv4 address as nginx reads one: exactly four decimal parts separated by
/// dots, each at most 255. Leading zeros are decimal (`010` is 10) and an empty part
/// counts as 0 (`10..1.2` is 10.0.1.2). `255.255.255.255` is rejected, because nginx uses
/// that value to mean "not an address".
fn parse_inet(text: &[u8]) -> Option<u32> {
    let mut address = 0u32;
    let mut part = 0u32;
    let mut dots = 0;
    for &byte in text {
        match byte {
            b'0'..=b'9' => {
                part = part * 10 + u32::from(byte - b'0');
                if part > 255 {
                    return None;
                }
            }
            b'.' if dots < 3 => {
                dots += 1;
                address = address << 8 | part;
                part = 0;
            }
            _ => return None,
        }
    }
    let address = address << 8 | part;
    (dots == 3 && address != u32::MAX).then_some(address)
}

/// An IPv6 address as nginx reads one: up to eight groups of one to four hex digits, one
/// `::` standing for one or more zero groups, and an optional dotted quad as the last two
/// groups. As in nginx, one leading `:` is skipped (`:1::` is read as `1::`), a trailing
/// `:` after `::` adds a zero group (`1::2:` is `1::2:0`), and a `::` at the very end
/// counts as a group of its own, so `1:2:3:4:5:6:7::` is rejected.
pub(crate) fn parse_inet6(text: &[u8]) -> Option<u128> {
    const GROUPS: usize = 8;
    let text = text.strip_prefix(b":").unwrap_or(text);
    if text.is_empty() {
        return None;
    }
    let mut groups: Vec<u16> = Vec::with_capacity(GROUPS);
    // Where `::` stands, as an index into `groups`.
    let mut gap: Option<usize> = None;
    // Where the current group started, once a `:` was seen (a dotted quad starts there).
    let mut group_start: Option<usize> = None;
    let mut digits = 0;
    let mut value: u16 = 0;
    let mut index = 0;
    while index < text.len() {
        let byte = text[index];
        index += 1;
        if byte == b':' {
            if digits > 0 {
                groups.push(value);
                if groups.len() == GROUPS {
                    return None;
                }
                digits = 0;
                value = 0;
            } else if gap.is_none() {
                gap = Some(groups.len());
            } else {
                return None;
            }
            group_start = Some(index);
            continue;
        }
        if byte == b'.' && digits > 0 {
            let start = group_start?;
            if GROUPS - groups.len() < 2 {
                return None;
            }
            let quad = parse_inet(&text[start..])?;
            groups.push((quad >> 16) as u16);
            value = quad as u16;
            break;
        }
        digits += 1;
        if digits > 4 {
            return None;
        }
        let nibble = char::from(byte).to_digit(16)?;
        value = value << 4 | nibble as u16;
    }
    if digits == 0 && gap.is_none() {
        return None;
    }
    groups.push(value);
    match gap {
        None if groups.len() == GROUPS => {}
        Some(at) if groups.len() < GROUPS => {
            let zeros = GROUPS - groups.len();
            groups.splice(at..at, std::iter::repeat_n(0, zeros));
        }
        _ => return None,
    }
    Some(
        groups
            .iter()
            .fold(0u128, |address, &group| address << 16 | u128::from(group)),
    )
}

settings! {
    /// A level with any `allow` or `deny` uses only its own rules; a level with none
    /// inherits the enclosing level's whole list, as in nginx.
    pub struct AccessConf => Access (env) {
        /// `allow` and `deny`, in order.
        rules: Rules = Rules::default(),
    }
}
