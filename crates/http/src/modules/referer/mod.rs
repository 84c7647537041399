//! `valid_referers` and `$invalid_referer` (nginx's ngx_http_referer_module): whether the
//! request's `Referer` names a site the location accepts.
//!
//! The order of the checks is nginx's: without any host or regex configured every
//! request is valid; a missing `Referer` is valid only with `none`; one shorter than
//! `http://i.ru` or without `http://`/`https://` only with `blocked`; then the host (up
//! to `/` or `:`, lowercased, at most 256 bytes) is looked up among the hosts (exact, then
//! `*.` wildcards, then `.*` wildcards, then the server's names), whose URI prefix, if
//! any, must start the path; then the server's regex names against the host; then the
//! regexes against everything after the scheme.

pub mod directives;
pub mod settings;
pub mod variables;

use crate::kernel::conf::server_names::ServerName;
use settings::ValidReferers;

/// nginx's shortest referer that is checked at all; shorter ones count as blocked.
const SHORTEST_CHECKED: usize = "http://i.ru".len();

/// The longest host nginx looks up.
const HOST_BYTES_MAX: usize = 256;

/// Whether `referer` (the header's value, `None` without one) is valid for `referers`;
/// `server_names` are the names of the request's server.
pub fn is_valid(
    referers: &ValidReferers,
    referer: Option<&[u8]>,
    server_names: &[ServerName],
) -> bool {
    let has_names = referers.server_names && !server_names.is_empty();
    if referers.hosts.is_empty() && referers.regexes.is_empty() && !has_names {
        return true;
    }
    let Some(referer) = referer else {
        return referers.none;
    };
    let Some(rest) = strip_scheme(referer) else {
        return referers.blocked;
    };
    let host_len = rest
        .iter()
        .position(|&byte| byte == b'/' || byte == b':')
        .unwrap_or(rest.len());
    if host_len > HOST_BYTES_MAX {
        return false;
    }
    let host = rest[..host_len].to_ascii_lowercase();
    let path_start = rest[host_len..]
        .iter()
        .position(|&byte| byte == b'/')
        .map_or(rest.len(), |at| host_len + at);
    let path = &rest[path_start..];
    if let Some(uri) = find_host(referers, &host) {
        return match uri {
            Some(prefix) => path.starts_with(prefix),
            None => true,
        };
    }
    if referers.server_names {
        let plain = server_names
            .iter()
            .filter(|name| !matches!(name, ServerName::Regex(_)));
        let regex = server_names
            .iter()
            .filter(|name| matches!(name, ServerName::Regex(_)));
        if plain.chain(regex).any(|name| name.matches(&host)) {
            return true;
        }
    }
    referers.regexes.iter().any(|regex| regex.is_match(rest))
}

/// The referer after `http://` or `https://` (either case), or `None` when it is too
/// short or has neither: what nginx calls blocked.
fn strip_scheme(referer: &[u8]) -> Option<&[u8]> {
    if referer.len() < SHORTEST_CHECKED {
        return None;
    }
    for scheme in [&b"http://"[..], b"https://"] {
        if referer[..scheme.len()].eq_ignore_ascii_case(scheme) {
            return Some(&referer[scheme.len()..]);
        }
    }
    None
}

/// The URI prefix of the configured host that `host` is (`Some(None)`: any path), looked
/// up as nginx's combined hash does: exact names, then the longest `*.` wildcard, then the
/// longest `.*` wildcard.
fn find_host<'a>(referers: &'a ValidReferers, host: &[u8]) -> Option<Option<&'a [u8]>> {
    let exact = referers
        .hosts
        .iter()
        .find(|(name, _)| matches!(name, ServerName::Exact(_)) && name.matches(host));
    let head = || {
        referers
            .hosts
            .iter()
            .filter(|(name, _)| matches!(name, ServerName::Head { .. }) && name.matches(host))
            .max_by_key(|(name, _)| wildcard_len(name))
    };
    let tail = || {
        referers
            .hosts
            .iter()
            .filter(|(name, _)| matches!(name, ServerName::Tail(_)) && name.matches(host))
            .max_by_key(|(name, _)| wildcard_len(name))
    };
    exact
        .or_else(head)
        .or_else(tail)
        .map(|(_, uri)| uri.as_deref())
}

fn wildcard_len(name: &ServerName) -> usize {
    match name {
        ServerName::Head { suffix, .. } => suffix.len(),
        ServerName::Tail(prefix) => prefix.len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
