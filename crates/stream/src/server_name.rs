//! `server_name` in the stream block: the server of an address chosen by the name a
//! ClientHello gives, in nginx's order (exact, then the longest leading wildcard, then
//! the longest trailing wildcard, then the regexes in order; a regex's named captures
//! become variables).

use crate::conf::StreamConf;
use crate::variables::SessionVars;

/// The server among `candidates` whose names match `name` (lower-case), if any.
pub fn find(
    conf: &StreamConf,
    candidates: &[usize],
    name: &[u8],
    vars: &mut SessionVars,
) -> Option<usize> {
    if let Some(index) = find_plain(conf, candidates, name) {
        return Some(index);
    }
    for &index in candidates {
        for regex in &conf.servers[index].regexes {
            let mut captures = shared::regex::Captures::default();
            if regex.regex.captures(name, &mut captures) {
                regex.store(&captures, &mut vars.slots);
                vars.captures = captures;
                return Some(index);
            }
        }
    }
    None
}

fn find_plain(conf: &StreamConf, candidates: &[usize], name: &[u8]) -> Option<usize> {
    let names = |index: usize| conf.servers[index].names.iter();
    if let Some(index) = candidates
        .iter()
        .copied()
        .find(|index| names(*index).any(|known| known.as_bytes() == name))
    {
        return Some(index);
    }
    let mut best: Option<(usize, usize)> = None;
    for &index in candidates {
        for known in names(index) {
            let known = known.as_bytes();
            if known.starts_with(b"~") {
                continue;
            }
            let suffix = if let Some(suffix) = known.strip_prefix(b"*") {
                suffix
            } else if known.starts_with(b".") {
                if &known[1..] == name {
                    return Some(index);
                }
                known
            } else {
                continue;
            };
            if name.ends_with(suffix) && best.is_none_or(|(_, len)| suffix.len() > len) {
                best = Some((index, suffix.len()));
            }
        }
    }
    if let Some((index, _)) = best {
        return Some(index);
    }
    for &index in candidates {
        for known in names(index) {
            if let Some(prefix) = known.as_bytes().strip_suffix(b"*")
                && name.starts_with(prefix)
                && best.is_none_or(|(_, len)| prefix.len() > len)
            {
                best = Some((index, prefix.len()));
            }
        }
    }
    best.map(|(index, _)| index)
}
