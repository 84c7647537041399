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

pub use settings::{Access, AccessConf};
pub use shared::access::{Action, ParsedTarget, Rules, Target, parse_target};

use runtime::PeerAddress;

/// The access phase's question for one request: the action of the first matching rule,
/// if any. Only [`Action::Deny`] stops the request (with 403).
pub fn check(access: &Access, peer: &PeerAddress) -> Option<Action> {
    access.rules.check(peer)
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    use super::*;
    use Action::{Allow, Deny};

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
