//! `server_name` and the choice of a virtual server by the request's host.

use std::collections::HashMap;

use conf::{ConfError, Span};

use crate::kernel::conf::{NamedCaptures, ServerId};
use crate::kernel::variables::VariableRegistry;
use shared::lookup_hash::LookupHash;
use shared::regex::{Captures, Regex};

/// One name of `server_name`.
#[derive(Clone, Debug)]
pub enum ServerName {
    /// `example.com`, or `""` for requests without a host.
    Exact(Box<[u8]>),
    /// `*.example.com` (stored as `.example.com`) and `.example.com` (which also matches
    /// `example.com` itself).
    Head { suffix: Box<[u8]>, also_bare: bool },
    /// `www.example.*` (stored as `www.example.`).
    Tail(Box<[u8]>),
    /// `~regex`, matched case-insensitively as nginx does.
    Regex(NamedCaptures),
}

impl ServerName {
    /// Whether `host` (lowercased, port stripped) is this name, by the rules of
    /// [`ServerNames::find`] for one name.
    pub fn matches(&self, host: &[u8]) -> bool {
        match self {
            ServerName::Exact(name) => **name == *host,
            ServerName::Head { suffix, also_bare } => {
                (host.len() > suffix.len() && host.ends_with(suffix))
                    || (*also_bare && host == &suffix[1..])
            }
            ServerName::Tail(prefix) => host.len() > prefix.len() && host.starts_with(prefix),
            ServerName::Regex(regex) => regex.regex.is_match(host),
        }
    }
}

/// Parses one `server_name` argument; `hostname` is the machine's name for `$hostname`.
pub fn parse(
    text: &str,
    hostname: &str,
    registry: &mut VariableRegistry,
    span: &Span,
) -> Result<ServerName, ConfError> {
    if let Some(pattern) = text.strip_prefix('~') {
        let regex =
            Regex::compile(pattern, true).map_err(|error| ConfError::message(error.0, span))?;
        return Ok(ServerName::Regex(NamedCaptures::new(regex, |name| {
            registry.define(name)
        })));
    }
    let lower = if text == "$hostname" {
        hostname.to_ascii_lowercase()
    } else {
        text.to_ascii_lowercase()
    };
    let invalid =
        || ConfError::message(format!("invalid server name or wildcard \"{text}\""), span);
    if let Some(rest) = lower.strip_prefix("*.") {
        if rest.is_empty() || rest.contains('*') {
            return Err(invalid());
        }
        return Ok(ServerName::Head {
            suffix: lower.as_bytes()[1..].into(),
            also_bare: false,
        });
    }
    if let Some(rest) = lower.strip_suffix(".*") {
        if rest.is_empty() || rest.contains('*') {
            return Err(invalid());
        }
        return Ok(ServerName::Tail(lower.as_bytes()[..lower.len() - 1].into()));
    }
    if lower.contains('*') {
        return Err(invalid());
    }
    if lower.len() > 1 && lower.starts_with('.') {
        return Ok(ServerName::Head {
            suffix: lower.as_bytes().into(),
            also_bare: true,
        });
    }
    Ok(ServerName::Exact(lower.as_bytes().into()))
}

/// Up to this many exact names, a lookup compares them in turn instead of hashing.
const FEW_NAMES: usize = 4;

/// The names of every server on one listen address, ready for lookup.
#[derive(Debug, Default)]
pub struct ServerNames {
    exact: HashMap<Box<[u8]>, ServerId, LookupHash>,
    /// The exact names again, in a list, while there are at most [`FEW_NAMES`].
    few: Vec<(Box<[u8]>, ServerId)>,
    /// Longest suffix first.
    head: Vec<(Box<[u8]>, bool, ServerId)>,
    /// Longest prefix first.
    tail: Vec<(Box<[u8]>, ServerId)>,
    regex: Vec<(usize, ServerId)>,
}

/// A conflict nginx warns about: `conflicting server name "x" on ADDR, ignored`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub name: String,
}

impl ServerNames {
    /// Adds `name` of `server`; the first server to claim a name keeps it.
    /// `regex_index` identifies the server's regex for [`ServerNames::find`].
    pub fn add(
        &mut self,
        name: &ServerName,
        server: ServerId,
        regex_index: usize,
    ) -> Result<(), Conflict> {
        let conflict = |bytes: &[u8]| Conflict {
            name: String::from_utf8_lossy(bytes).into_owned(),
        };
        match name {
            ServerName::Exact(bytes) => {
                if self.exact.contains_key(bytes) {
                    return Err(conflict(bytes));
                }
                self.exact.insert(bytes.clone(), server);
                if self.exact.len() <= FEW_NAMES {
                    self.few.push((bytes.clone(), server));
                } else {
                    self.few = Vec::new();
                }
            }
            ServerName::Head { suffix, also_bare } => {
                if self.head.iter().any(|(existing, _, _)| existing == suffix) {
                    return Err(conflict(suffix));
                }
                self.head.push((suffix.clone(), *also_bare, server));
                self.head
                    .sort_by_key(|(suffix, _, _)| std::cmp::Reverse(suffix.len()));
            }
            ServerName::Tail(prefix) => {
                if self.tail.iter().any(|(existing, _)| existing == prefix) {
                    return Err(conflict(prefix));
                }
                self.tail.push((prefix.clone(), server));
                self.tail
                    .sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
            }
            ServerName::Regex(_) => self.regex.push((regex_index, server)),
        }
        Ok(())
    }

    /// Finds the server for `host` (already lowercased, port stripped): exact name, then
    /// the longest `*.` wildcard, then the longest `.*` wildcard, then the regexes in
    /// order. `regex_of` gives the regex by index; on a regex match `captures` holds it.
    pub fn find<'a>(
        &self,
        host: &[u8],
        regex_of: impl Fn(usize) -> &'a NamedCaptures,
        captures: &mut Captures,
    ) -> Option<(ServerId, Option<&'a NamedCaptures>)> {
        // A few names are compared one by one: cheaper than hashing the host.
        let exact = if self.exact.len() <= FEW_NAMES {
            self.few
                .iter()
                .find(|(name, _)| **name == *host)
                .map(|(_, server)| server)
        } else {
            self.exact.get(host)
        };
        if let Some(server) = exact {
            return Some((*server, None));
        }
        if !host.is_empty() {
            for (suffix, also_bare, server) in &self.head {
                let longer = host.len() > suffix.len() && host.ends_with(suffix);
                let bare = *also_bare && host == &suffix[1..];
                if longer || bare {
                    return Some((*server, None));
                }
            }
            for (prefix, server) in &self.tail {
                if host.len() > prefix.len() && host.starts_with(prefix) {
                    return Some((*server, None));
                }
            }
        }
        for (index, server) in &self.regex {
            let regex = regex_of(*index);
            if regex.regex.captures(host, captures) {
                return Some((*server, Some(regex)));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[(&str, u32)]) -> (ServerNames, Vec<NamedCaptures>) {
        let mut registry = VariableRegistry::default();
        let mut lookup = ServerNames::default();
        let mut regexes = Vec::new();
        for (text, server) in list {
            let name = parse(text, "box", &mut registry, &Span::CommandLine).unwrap();
            lookup.add(&name, ServerId(*server), regexes.len()).unwrap();
            if let ServerName::Regex(regex) = name {
                regexes.push(regex);
            }
        }
        (lookup, regexes)
    }

    fn find(lookup: &ServerNames, regexes: &[NamedCaptures], host: &str) -> Option<u32> {
        let mut captures = Captures::default();
        lookup
            .find(host.as_bytes(), |index| &regexes[index], &mut captures)
            .map(|(server, _)| server.0)
    }

    #[test]
    fn nginx_precedence() {
        let (lookup, regexes) = names(&[
            ("localhost", 0),
            ("", 1),
            ("www.example.com", 2),
            ("~^EXAMPLE\\.COM$", 3),
            ("*.wc.example.com", 4),
            ("*.pref.wc.example.com", 5),
            ("wc2.example.*", 6),
            ("wc2.example.com.*", 7),
            (".dot.example.com", 8),
            ("$hostname", 9),
        ]);
        let find = |host| find(&lookup, &regexes, host);
        assert_eq!(find("localhost"), Some(0));
        assert_eq!(find(""), Some(1));
        assert_eq!(find("www.example.com"), Some(2));
        assert_eq!(find("example.com"), Some(3));
        assert_eq!(find("www.wc.example.com"), Some(4));
        assert_eq!(find("www.pref.wc.example.com"), Some(5));
        assert_eq!(find("wc2.example.net"), Some(6));
        assert_eq!(find("wc2.example.com.pref"), Some(7));
        assert_eq!(find("www.dot.example.com"), Some(8));
        assert_eq!(find("dot.example.com"), Some(8));
        assert_eq!(find("wc.example.com"), None);
        assert_eq!(find("box"), Some(9));
        assert_eq!(find("xxx"), None);
    }

    #[test]
    fn first_claim_wins() {
        let mut registry = VariableRegistry::default();
        let mut lookup = ServerNames::default();
        let name = parse("a.com", "h", &mut registry, &Span::CommandLine).unwrap();
        lookup.add(&name, ServerId(0), 0).unwrap();
        assert_eq!(
            lookup.add(&name, ServerId(1), 0),
            Err(Conflict {
                name: "a.com".to_owned()
            })
        );
    }

    #[test]
    fn invalid_wildcards() {
        let mut registry = VariableRegistry::default();
        for bad in ["w*.example.com", "*.", "*.a.*", "a.*.com"] {
            let error = parse(bad, "h", &mut registry, &Span::CommandLine).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("invalid server name or wildcard \"{bad}\" in command line")
            );
        }
    }
}
