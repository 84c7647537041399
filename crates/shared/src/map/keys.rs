//! The keys of one `map` block and how a value is looked up among them.

use std::collections::HashMap;

use crate::captures::NamedCaptures;
use crate::lookup_hash::LookupHash;
use crate::regex::Captures;

/// A map's keys, each naming a value by its index in the map's value list.
#[derive(Debug, Default)]
pub struct MapKeys {
    /// Whether the `hostnames` parameter was given: later keys may be wildcards, and a
    /// trailing dot of the looked-up value is ignored.
    pub hostnames: bool,
    /// Lowercased exact keys.
    exact: HashMap<Box<[u8]>, usize, LookupHash>,
    /// `*.example.com` (stored as `.example.com`) and `.example.com`, which also matches
    /// `example.com` (`also_bare`). A lookup tries the name's suffixes from the longest,
    /// one per dot, so the most specific wildcard wins as in nginx, in as many hash
    /// lookups as the name has labels.
    head: HashMap<Box<[u8]>, HeadWildcard, LookupHash>,
    /// `www.example.*` (stored as `www.example.`), tried from the longest prefix.
    tail: HashMap<Box<[u8]>, usize, LookupHash>,
    /// `~` and `~*` keys, in the order written.
    regexes: Vec<(NamedCaptures, usize)>,
}

#[derive(Debug)]
struct HeadWildcard {
    also_bare: bool,
    value: usize,
}

/// Why a key was refused; the loader words it as nginx does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// `invalid hostname or wildcard "KEY"`
    InvalidWildcard,
    /// `conflicting parameter "KEY"`
    Conflicting,
}

/// Where a key was found.
#[derive(Debug)]
pub struct Found<'a> {
    pub value: usize,
    /// The regex that matched, whose named groups become variables.
    pub regex: Option<&'a NamedCaptures>,
}

impl MapKeys {
    /// Adds a key that is not a regex (its leading `\`, if any, already removed). With
    /// `hostnames`, `*.example.com`, `.example.com` and `www.example.*` are wildcards, as
    /// nginx's `ngx_hash_add_key` reads them.
    pub fn add(&mut self, key: &str, value: usize) -> Result<(), KeyError> {
        let key = key.to_ascii_lowercase().into_bytes();
        if !self.hostnames {
            return self.add_exact(key, value);
        }
        let stars = key.iter().filter(|byte| **byte == b'*').count();
        if stars > 1 || key.windows(2).any(|pair| pair == b"..") || key.contains(&0) {
            return Err(KeyError::InvalidWildcard);
        }
        if key.len() > 1 && key[0] == b'.' {
            return self.add_head(key.into(), true, value);
        }
        if key.len() > 2 && key.starts_with(b"*.") {
            return self.add_head(key[1..].into(), false, value);
        }
        if key.len() > 2 && key.ends_with(b".*") {
            return self.add_tail(key[..key.len() - 1].into(), value);
        }
        if stars > 0 {
            return Err(KeyError::InvalidWildcard);
        }
        self.add_exact(key, value)
    }

    pub fn add_regex(&mut self, regex: NamedCaptures, value: usize) {
        self.regexes.push((regex, value));
    }

    fn add_exact(&mut self, key: Vec<u8>, value: usize) -> Result<(), KeyError> {
        // `.example.com` claims `example.com` too.
        let mut dotted = Vec::with_capacity(key.len() + 1);
        dotted.push(b'.');
        dotted.extend_from_slice(&key);
        let bare_taken = self
            .head
            .get(&dotted[..])
            .is_some_and(|head| head.also_bare);
        if bare_taken || self.exact.contains_key(&key[..]) {
            return Err(KeyError::Conflicting);
        }
        self.exact.insert(key.into(), value);
        Ok(())
    }

    fn add_head(
        &mut self,
        suffix: Box<[u8]>,
        also_bare: bool,
        value: usize,
    ) -> Result<(), KeyError> {
        let taken =
            self.head.contains_key(&suffix) || also_bare && self.exact.contains_key(&suffix[1..]);
        if taken {
            return Err(KeyError::Conflicting);
        }
        self.head.insert(suffix, HeadWildcard { also_bare, value });
        Ok(())
    }

    fn add_tail(&mut self, prefix: Box<[u8]>, value: usize) -> Result<(), KeyError> {
        if self.tail.contains_key(&prefix) {
            return Err(KeyError::Conflicting);
        }
        self.tail.insert(prefix, value);
        Ok(())
    }

    /// Looks `key` up as nginx does: the exact keys and then the wildcards compare
    /// case-insensitively; then the regexes in order, against the value as it is (an empty
    /// value matches no regex). On a regex match `captures` holds its groups.
    pub fn find(&self, key: &[u8], captures: &mut Captures) -> Option<Found<'_>> {
        let lower = key.to_ascii_lowercase();
        let found = |value: usize| Found { value, regex: None };
        if let Some(value) = self.exact.get(&lower[..]) {
            return Some(found(*value));
        }
        if lower.is_empty() {
            return None;
        }
        if let Some(value) = self.find_head(&lower) {
            return Some(found(value));
        }
        if let Some(value) = self.find_tail(&lower) {
            return Some(found(value));
        }
        for (regex, value) in &self.regexes {
            if regex.regex.captures(key, captures) {
                return Some(Found {
                    value: *value,
                    regex: Some(regex),
                });
            }
        }
        None
    }

    /// The most specific `*.`/`.` wildcard for `name`: the name itself under a `.`
    /// wildcard, then each suffix that starts at a dot, longest first.
    fn find_head(&self, name: &[u8]) -> Option<usize> {
        if self.head.is_empty() {
            return None;
        }
        let mut dotted = Vec::with_capacity(name.len() + 1);
        dotted.push(b'.');
        dotted.extend_from_slice(name);
        if let Some(head) = self.head.get(&dotted[..])
            && head.also_bare
        {
            return Some(head.value);
        }
        // A suffix must leave at least one byte of the name before it.
        (1..name.len())
            .filter(|index| name[*index] == b'.')
            .find_map(|index| self.head.get(&name[index..]).map(|head| head.value))
    }

    /// The most specific `.*` wildcard for `name`: each prefix that ends at a dot, longest
    /// first, with at least one byte of the name after it.
    fn find_tail(&self, name: &[u8]) -> Option<usize> {
        if self.tail.is_empty() {
            return None;
        }
        (0..name.len().saturating_sub(1))
            .rev()
            .filter(|index| name[*index] == b'.')
            .find_map(|index| self.tail.get(&name[..=index]).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captures::NamedSlot;
    use crate::regex::Regex;

    /// The regexes here have no named groups.
    fn no_names(name: &str) -> NamedSlot {
        panic!("unexpected named group {name}")
    }

    fn hostnames(keys: &[(&str, usize)]) -> MapKeys {
        let mut map = MapKeys {
            hostnames: true,
            ..MapKeys::default()
        };
        for (key, value) in keys {
            map.add(key, *value).unwrap();
        }
        map
    }

    fn lookup(map: &MapKeys, key: &str) -> Option<usize> {
        map.find(key.as_bytes(), &mut Captures::default())
            .map(|found| found.value)
    }

    #[test]
    fn exact_keys_are_case_insensitive() {
        let mut map = MapKeys::default();
        map.add("Foo", 1).unwrap();
        map.add("*.example.com", 2).unwrap();
        assert_eq!(lookup(&map, "FOO"), Some(1));
        assert_eq!(lookup(&map, "foo"), Some(1));
        // Without `hostnames` a star is an ordinary byte.
        assert_eq!(lookup(&map, "*.EXAMPLE.com"), Some(2));
        assert_eq!(lookup(&map, "a.example.com"), None);
        assert_eq!(map.add("FOO", 3), Err(KeyError::Conflicting));
    }

    #[test]
    fn precedence_is_exact_then_head_then_tail_then_regex() {
        let mut map = hostnames(&[
            ("www.example.com", 1),
            ("*.example.com", 2),
            ("*.b.example.com", 3),
            ("www.example.*", 4),
            (".dot.example.com", 5),
        ]);
        let regex = Regex::compile("^www", false).unwrap();
        map.add_regex(NamedCaptures::new(regex, no_names), 6);
        assert_eq!(lookup(&map, "www.example.com"), Some(1));
        assert_eq!(lookup(&map, "a.example.com"), Some(2));
        assert_eq!(lookup(&map, "x.y.example.com"), Some(2));
        // The longest wildcard wins, and a `*.` wildcard does not match its bare name.
        assert_eq!(lookup(&map, "a.b.example.com"), Some(3));
        assert_eq!(lookup(&map, "example.com"), None);
        // A head wildcard beats a tail one.
        assert_eq!(lookup(&map, "www.b.example.com"), Some(3));
        assert_eq!(lookup(&map, "www.example.org"), Some(4));
        assert_eq!(lookup(&map, "WWW.EXAMPLE.CO.UK"), Some(4));
        assert_eq!(lookup(&map, "dot.example.com"), Some(5));
        assert_eq!(lookup(&map, "a.dot.example.com"), Some(5));
        assert_eq!(lookup(&map, "www.example"), Some(6));
        assert_eq!(lookup(&map, "other"), None);
    }

    #[test]
    fn regexes_match_in_order_with_captures() {
        let mut map = MapKeys::default();
        for (pattern, caseless, value) in [("^/a/(.*)$", false, 1), ("^/A", true, 2)] {
            let regex = Regex::compile(pattern, caseless).unwrap();
            map.add_regex(NamedCaptures::new(regex, no_names), value);
        }
        let mut captures = Captures::default();
        let found = map.find(b"/a/b", &mut captures).unwrap();
        assert_eq!(found.value, 1);
        assert!(found.regex.is_some());
        assert_eq!(captures.group(1), Some(&b"b"[..]));
        assert_eq!(map.find(b"/a", &mut captures).unwrap().value, 2);
        // A failed match leaves the last captures alone, as in nginx.
        assert!(map.find(b"/b", &mut captures).is_none());
        assert_eq!(captures.group(0), Some(&b"/a"[..]));
        // An empty value tries no regex.
        let mut any = MapKeys::default();
        let regex = Regex::compile("^$", false).unwrap();
        any.add_regex(NamedCaptures::new(regex, no_names), 1);
        assert!(any.find(b"", &mut captures).is_none());
    }

    #[test]
    fn wildcards_are_checked_and_conflicts_found_like_nginx() {
        let mut map = hostnames(&[("a.com", 1)]);
        assert_eq!(map.add(".a.com", 2), Err(KeyError::Conflicting));
        let mut map = hostnames(&[(".a.com", 1)]);
        assert_eq!(map.add("a.com", 2), Err(KeyError::Conflicting));
        assert_eq!(map.add("*.a.com", 2), Err(KeyError::Conflicting));
        let mut map = hostnames(&[("a.*", 1)]);
        assert_eq!(map.add("A.*", 2), Err(KeyError::Conflicting));
        for invalid in ["a.*.com", "a..com", "**.a.com", "*", "*."] {
            assert_eq!(
                map.add(invalid, 3),
                Err(KeyError::InvalidWildcard),
                "{invalid}"
            );
        }
        // A single dot is an ordinary key.
        map.add(".", 4).unwrap();
        assert_eq!(lookup(&map, "."), Some(4));
    }

    #[test]
    fn an_empty_key_matches_an_empty_value() {
        let mut map = MapKeys::default();
        map.add("", 1).unwrap();
        assert_eq!(lookup(&map, ""), Some(1));
    }
}
