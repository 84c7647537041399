//! `allow` and `deny` rules, shared by the http and stream blocks, and the address and
//! network syntax `set_real_ip_from` and `geo` share.

use std::net::IpAddr;

use runtime::PeerAddress;

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
pub fn parse_inet6(text: &[u8]) -> Option<u128> {
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

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv6Addr, SocketAddr};

    use super::*;

    fn inet(text: &str) -> (u32, u32) {
        match parse_target(text).map(|parsed| parsed.target) {
            Some(Target::Inet { address, mask }) => (address, mask),
            other => panic!("{text}: {other:?}"),
        }
    }

    fn inet6(text: &str) -> (Ipv6Addr, u128) {
        match parse_target(text).map(|parsed| parsed.target) {
            Some(Target::Inet6 { address, mask }) => (Ipv6Addr::from(address), mask),
            other => panic!("{text}: {other:?}"),
        }
    }

    fn v6(text: &str) -> Ipv6Addr {
        text.parse().expect("a valid test address")
    }

    fn cleared(text: &str) -> bool {
        parse_target(text)
            .expect("a valid test argument")
            .host_bits_cleared
    }

    fn peer(text: &str) -> PeerAddress {
        let ip: IpAddr = text.parse().expect("a valid test address");
        PeerAddress::Inet(SocketAddr::new(ip, 40000))
    }

    fn rules(list: &[(Action, &str)]) -> Rules {
        let mut rules = Rules::default();
        for (action, text) in list {
            let parsed = parse_target(text).expect("a valid test argument");
            rules.push(*action, parsed.target);
        }
        rules
    }

    use Action::{Allow, Deny};

    #[test]
    fn keywords() {
        assert_eq!(parse_target("all").map(|p| p.target), Some(Target::All));
        assert_eq!(parse_target("unix:").map(|p| p.target), Some(Target::Unix));
        for text in [
            "ALL",
            "All",
            "unix:/tmp/socket",
            "unix",
            "",
            "localhost",
            "all/8",
        ] {
            assert_eq!(parse_target(text), None, "{text}");
        }
    }

    #[test]
    fn inet_addresses_and_networks() {
        assert_eq!(inet("192.168.1.1"), (0xc0a8_0101, u32::MAX));
        assert_eq!(inet("192.168.1.0/24"), (0xc0a8_0100, 0xffff_ff00));
        assert_eq!(inet("10.0.0.0/8"), (0x0a00_0000, 0xff00_0000));
        assert_eq!(inet("0.0.0.0/0"), (0, 0));
        assert_eq!(inet("1.2.3.4/32"), (0x0102_0304, u32::MAX));
        assert_eq!(inet("1.2.3.4/1"), (0, 0x8000_0000));
        assert_eq!(inet("129.2.3.4/1"), (0x8000_0000, 0x8000_0000));
        assert_eq!(inet("1.2.3.4/032"), (0x0102_0304, u32::MAX));
    }

    #[test]
    fn inet_quirks_nginx_accepts() {
        assert_eq!(inet("010.001.0.1"), (0x0a01_0001, u32::MAX));
        assert_eq!(inet("1..3.4"), (0x0100_0304, u32::MAX));
        assert_eq!(inet("1.2.3."), (0x0102_0300, u32::MAX));
        assert_eq!(inet(".1.2.3"), (0x0001_0203, u32::MAX));
        assert_eq!(inet("255.255.255.254"), (0xffff_fffe, u32::MAX));
    }

    #[test]
    fn invalid_arguments() {
        for text in [
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "1.2.3.4/33",
            "1.2.3.4/",
            "1.2.3.4/+8",
            "1.2.3.4/-1",
            "1.2.3.4/8/8",
            "1.2.3.4/99999999999999999999999",
            "255.255.255.255",
            "255.255.255.255/24",
            " 1.2.3.4",
            "::1/129",
            ":::",
            ":",
            "1::2::3",
            "12345::",
            "g::",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7:8:",
            "1:2:3:4:5:6:7:",
            "1:2:3:4::5:6:7:8",
            "::1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7::",
            "1:2:3:4:5:6:7:1.2.3.4",
            "::1:2:3:4:5:6:1.2.3.4",
            "::ffff:255.255.255.255",
            "::ffff:1.2.3",
            "fe80::1%eth0",
            "[::1]",
        ] {
            assert_eq!(parse_target(text), None, "{text}");
        }
    }

    #[test]
    fn inet6_addresses_and_networks() {
        assert_eq!(inet6("::1"), (Ipv6Addr::LOCALHOST, u128::MAX));
        assert_eq!(inet6("::"), (Ipv6Addr::UNSPECIFIED, u128::MAX));
        assert_eq!(inet6("::/0"), (Ipv6Addr::UNSPECIFIED, 0));
        assert_eq!(inet6("2001:db8::/32"), (v6("2001:db8::"), u128::MAX << 96));
        assert_eq!(inet6("2001:DB8:0:0:0:0:0:1").0, v6("2001:db8::1"));
        assert_eq!(inet6("1:2:3:4:5:6:7:8").0, v6("1:2:3:4:5:6:7:8"));
        assert_eq!(inet6("::2:3:4:5:6:7:8").0, v6("0:2:3:4:5:6:7:8"));
        assert_eq!(inet6("1::8").0, v6("1:0:0:0:0:0:0:8"));
        assert_eq!(inet6("::ffff:1.2.3.4").0, v6("::ffff:1.2.3.4"));
        assert_eq!(inet6("::1.2.3.4").0, v6("::102:304"));
        assert_eq!(inet6("1:2:3:4:5:6:1.2.3.4").0, v6("1:2:3:4:5:6:102:304"));
        assert_eq!(inet6("1:2:3:4:5:6:7:8/128").1, u128::MAX);
        assert_eq!(inet6("fe80::/10"), (v6("fe80::"), u128::MAX << 118));
    }

    #[test]
    fn inet6_reads_the_standard_forms() {
        // A fixed pseudo-random sequence of addresses, half of whose groups are zero so that
        // `::` appears in every position.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..5000 {
            let mut groups = [0u16; 8];
            for group in &mut groups {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                *group = match state >> 61 {
                    0..=3 => 0,
                    4 => 0xffff,
                    _ => (state >> 32) as u16,
                };
            }
            let address = Ipv6Addr::from(groups);
            let full: Vec<String> = groups.iter().map(|group| format!("{group:X}")).collect();
            for text in [address.to_string(), full.join(":")] {
                // nginx rejects this one dotted quad (see `parse_inet`).
                if text.ends_with("255.255.255.255") {
                    continue;
                }
                assert_eq!(
                    parse_inet6(text.as_bytes()),
                    Some(u128::from(address)),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn inet6_quirks_nginx_accepts() {
        assert_eq!(inet6(":1::").0, v6("1::"));
        assert_eq!(inet6(":1:2:3:4:5:6:7:8").0, v6("1:2:3:4:5:6:7:8"));
        assert_eq!(inet6("1::2:").0, v6("1::2:0"));
        assert_eq!(inet6("1::").0, v6("1::"));
    }

    #[test]
    fn host_bits_beyond_the_prefix_are_cleared_and_reported() {
        assert!(cleared("10.0.0.1/8"));
        assert_eq!(inet("10.0.0.1/8"), (0x0a00_0000, 0xff00_0000));
        assert!(cleared("1.2.3.4/0"));
        assert_eq!(inet("1.2.3.4/0"), (0, 0));
        assert!(!cleared("10.0.0.0/8"));
        assert!(!cleared("10.0.0.1"));
        assert!(cleared("fe80::1/64"));
        assert_eq!(inet6("fe80::1/64").0, v6("fe80::"));
        assert!(cleared("::1/0"));
        assert!(!cleared("fe80::/64"));
        assert!(!cleared("all"));
    }

    #[test]
    fn first_matching_rule_wins() {
        let list = rules(&[
            (Deny, "192.168.1.1"),
            (Allow, "192.168.1.0/24"),
            (Allow, "10.1.1.0/16"),
            (Deny, "all"),
        ]);
        assert_eq!(list.check(&peer("192.168.1.1")), Some(Deny));
        assert_eq!(list.check(&peer("192.168.1.2")), Some(Allow));
        assert_eq!(list.check(&peer("10.1.200.7")), Some(Allow));
        assert_eq!(list.check(&peer("10.2.0.1")), Some(Deny));
        assert_eq!(list.check(&peer("::1")), Some(Deny));
        assert_eq!(list.check(&PeerAddress::Unix), Some(Deny));
        let reversed = rules(&[(Allow, "192.168.1.0/24"), (Deny, "192.168.1.1")]);
        assert_eq!(reversed.check(&peer("192.168.1.1")), Some(Allow));
    }

    #[test]
    fn network_edges() {
        let list = rules(&[(Allow, "10.0.0.0/30"), (Deny, "0.0.0.0/0")]);
        assert_eq!(list.check(&peer("9.255.255.255")), Some(Deny));
        assert_eq!(list.check(&peer("10.0.0.0")), Some(Allow));
        assert_eq!(list.check(&peer("10.0.0.3")), Some(Allow));
        assert_eq!(list.check(&peer("10.0.0.4")), Some(Deny));
        let list = rules(&[(Deny, "2001:db8::/127")]);
        assert_eq!(list.check(&peer("2001:db8::")), Some(Deny));
        assert_eq!(list.check(&peer("2001:db8::1")), Some(Deny));
        assert_eq!(list.check(&peer("2001:db8::2")), None);
        assert_eq!(
            list.check(&peer("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff")),
            None
        );
    }

    #[test]
    fn each_kind_of_client_sees_only_its_own_rules() {
        let list = rules(&[(Deny, "127.0.0.1")]);
        assert_eq!(list.check(&peer("127.0.0.1")), Some(Deny));
        assert_eq!(list.check(&peer("127.0.0.2")), None);
        assert_eq!(list.check(&peer("::1")), None);
        assert_eq!(list.check(&PeerAddress::Unix), None);
        let list = rules(&[(Deny, "::1")]);
        assert_eq!(list.check(&peer("::1")), Some(Deny));
        assert_eq!(list.check(&peer("127.0.0.1")), None);
        assert_eq!(list.check(&PeerAddress::Unix), None);
        let list = rules(&[(Deny, "unix:"), (Allow, "all")]);
        assert_eq!(list.check(&PeerAddress::Unix), Some(Deny));
        assert_eq!(list.check(&peer("127.0.0.1")), Some(Allow));
        assert_eq!(list.check(&peer("::1")), Some(Allow));
        assert_eq!(Rules::default().check(&peer("127.0.0.1")), None);
        assert_eq!(Rules::default().check(&PeerAddress::Unix), None);
    }

    #[test]
    fn mapped_ipv4_clients() {
        let mapped = peer("::ffff:127.0.0.1");
        // IPv4 rules exist: the client is checked against them as 127.0.0.1.
        let list = rules(&[(Deny, "127.0.0.1")]);
        assert_eq!(list.check(&mapped), Some(Deny));
        assert_eq!(list.check(&peer("::ffff:127.0.0.2")), None);
        // ... and only against them: an IPv6 rule for the mapped form is not consulted.
        let list = rules(&[(Allow, "::ffff:127.0.0.1"), (Deny, "10.0.0.0/8")]);
        assert_eq!(list.check(&mapped), None);
        let list = rules(&[(Allow, "::ffff:127.0.0.1"), (Deny, "all")]);
        assert_eq!(list.check(&mapped), Some(Deny));
        // No IPv4 rule: the IPv6 rules see the full mapped address.
        let list = rules(&[(Deny, "::ffff:127.0.0.1")]);
        assert_eq!(list.check(&mapped), Some(Deny));
        assert_eq!(list.check(&peer("127.0.0.1")), None);
        let list = rules(&[(Deny, "::ffff:0:0/96")]);
        assert_eq!(list.check(&peer("::ffff:10.1.2.3")), Some(Deny));
        // An IPv4-compatible address (::a.b.c.d) is plain IPv6.
        let list = rules(&[(Deny, "1.2.3.4")]);
        assert_eq!(list.check(&peer("::1.2.3.4")), None);
    }
}
