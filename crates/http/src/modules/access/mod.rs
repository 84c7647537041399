//! `allow` and `deny`: access by client address (nginx's ngx_http_access_module).
//!
//! A level's rules are kept in three lists, one per kind of client address, each in the
//! order the directives were written: IPv4 rules, IPv6 rules and `unix:` rules; `all` is
//! put in all three. A client is checked against the list of its own kind only, and the
//! first rule that matches decides. A client whose list is empty is not restricted, so
//! `deny 192.168.1.1;` alone denies nothing to IPv6 or unix-socket clients.
//!
//! An IPv6 client with an IPv4-mapped address (`::ffff:a.b.c.d`, from a dual-stack
//! listener) is checked against the IPv4 list as `a.b.c.d` when that list has any rule, and
//! against the IPv6 list otherwise.

pub mod directives;
pub mod settings;

pub use settings::{Access, AccessConf, Action, ParsedTarget, Rules, Target, parse_target};

use runtime::PeerAddress;

/// The access phase's question for one request: the action of the first matching rule,
/// if any. Only [`Action::Deny`] stops the request (with 403).
pub fn check(access: &Access, peer: &PeerAddress) -> Option<Action> {
    access.rules.check(peer)
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

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
                    settings::parse_inet6(text.as_bytes()),
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

    #[test]
    fn check_reads_the_resolved_settings() {
        let mut conf = AccessConf::default();
        let env = crate::kernel::conf::MergeEnv {
            prefix: std::path::PathBuf::from("/prefix"),
            main_error_log: std::sync::Arc::new(logging::ErrorLog::new(Vec::new())),
        };
        assert_eq!(check(&conf.resolve(&env), &peer("127.0.0.1")), None);
        conf.rules = Some(rules(&[(Deny, "127.0.0.0/8")]));
        assert_eq!(check(&conf.resolve(&env), &peer("127.0.0.1")), Some(Deny));
        assert_eq!(
            check(
                &conf.resolve(&env),
                &PeerAddress::Inet(SocketAddr::from((Ipv4Addr::new(10, 0, 0, 1), 80)))
            ),
            None
        );
    }

    #[test]
    fn a_level_with_rules_replaces_the_enclosing_list() {
        let outer = AccessConf {
            rules: Some(rules(&[(Deny, "10.0.0.1")])),
        };
        let mut silent = AccessConf::default();
        silent.merge_from(&outer);
        assert_eq!(silent.rules, outer.rules);
        let mut own = AccessConf {
            rules: Some(rules(&[(Allow, "::1")])),
        };
        own.merge_from(&outer);
        let own = own.rules.expect("set above");
        // The IPv4 list is not taken from the enclosing level even though this level has
        // no IPv4 rule of its own.
        assert_eq!(own.check(&peer("10.0.0.1")), None);
        assert_eq!(own.check(&peer("::1")), Some(Allow));
    }
}
