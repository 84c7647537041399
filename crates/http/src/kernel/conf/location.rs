//! Locations and how a URI finds its location, exactly in nginx's order: an exact match
//! wins at once; otherwise the longest prefix is remembered, its nested locations are
//! searched, and then the regex locations of the level are tried in order (unless the
//! prefix was `^~`); the first regex that matches wins.

use crate::kernel::conf::scope::LocationSettings;
use crate::kernel::conf::{NamedCaptures, ServerId};
use shared::regex::Captures;

/// A location's index in [`crate::kernel::conf::HttpConf::locations`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocationId(pub u32);

/// How a location matches.
#[derive(Debug)]
pub enum LocationKind {
    /// The server level itself: used when no location matches.
    Server,
    /// `location = /uri`
    Exact(Box<[u8]>),
    /// `location /uri` or `location ^~ /uri` (`noregex`).
    Prefix { path: Box<[u8]>, noregex: bool },
    /// `location ~ re` or `location ~* re`.
    Regex(NamedCaptures),
    /// `location @name`: only reachable by internal redirects.
    Named(Box<str>),
    /// An `if` or `limit_except` block of a location: never found by a search, the request
    /// switches to it. It keeps its location's prefix for `alias`.
    Block { prefix: Box<[u8]>, regex: bool },
}

/// A resolved location.
#[derive(Debug)]
pub struct Location {
    pub id: LocationId,
    pub server: ServerId,
    pub kind: LocationKind,
    /// The location as written (`= /foo`, `~* \.gif$`), for logs and `-T`.
    pub name: String,
    pub settings: LocationSettings,
    pub children: LocationTree,
    /// The pseudo-locations of the `if` blocks of this location's script, by block index.
    pub if_blocks: Vec<LocationId>,
    /// An `if` block that sets a content handler itself (`proxy_pass` in the block) rather
    /// than inheriting its location's.
    pub own_content: bool,
    /// `limit_except`: the methods allowed, and the block other methods are served by.
    pub limit_except: Option<(crate::kernel::core::limit_except::Methods, LocationId)>,
}

impl Location {
    /// The prefix an `alias` replaces: the location's path for prefix and exact locations.
    pub fn prefix(&self) -> &[u8] {
        match &self.kind {
            LocationKind::Exact(path)
            | LocationKind::Prefix { path, .. }
            | LocationKind::Block { prefix: path, .. } => path,
            _ => b"",
        }
    }

    pub fn is_regex(&self) -> bool {
        matches!(
            self.kind,
            LocationKind::Regex(_) | LocationKind::Block { regex: true, .. }
        )
    }
}

/// The locations directly inside one level (server or location).
#[derive(Debug, Default)]
pub struct LocationTree {
    exact: Vec<(Box<[u8]>, LocationId)>,
    /// Longest path first, so the first hit is the longest match.
    prefix: Vec<(Box<[u8]>, LocationId)>,
    /// In configuration order.
    regex: Vec<LocationId>,
}

/// The result of a search at one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// An exact or regex location matched: the search is over.
    Done,
    /// A prefix location matched; outer levels may still try their regexes.
    Prefix,
    /// Nothing matched at this level.
    Declined,
}

impl LocationTree {
    pub(crate) fn add_exact(&mut self, path: Box<[u8]>, id: LocationId) {
        self.exact.push((path, id));
    }

    pub(crate) fn add_prefix(&mut self, path: Box<[u8]>, id: LocationId) {
        self.prefix.push((path, id));
        self.prefix
            .sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    }

    pub fn add_regex(&mut self, id: LocationId) {
        self.regex.push(id);
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.prefix.is_empty() && self.regex.is_empty()
    }

    /// Whether the level already has a location of this kind and path.
    pub fn contains_static(&self, path: &[u8], exact: bool) -> bool {
        let list = if exact { &self.exact } else { &self.prefix };
        list.iter().any(|(existing, _)| &existing[..] == path)
    }
}

/// What regex matches and `set` left behind.
#[derive(Debug, Default)]
pub struct MatchState {
    /// `$1`..`$9` of the last regex that matched.
    pub captures: Captures,
    /// The values of named variables (named captures and `set`), by slot.
    pub named: Vec<Option<Vec<u8>>>,
}

impl MatchState {
    pub(crate) fn set_named(
        &mut self,
        slot: crate::kernel::variables::NamedSlot,
        value: Option<Vec<u8>>,
    ) {
        let index = slot.0 as usize;
        if self.named.len() <= index {
            self.named.resize(index + 1, None);
        }
        self.named[index] = value;
    }
}

/// Finds the location for `uri`, starting at the server level `server_location` whose
/// tree is `tree`.
pub fn find(
    locations: &[Location],
    tree: &LocationTree,
    server_location: LocationId,
    uri: &[u8],
    state: &mut MatchState,
) -> LocationId {
    let mut selected = server_location;
    find_in(locations, tree, uri, &mut selected, state, 0);
    selected
}

/// nginx's auto redirect: a URI that is a location's name without its final `/`, where that
/// location passes requests on (`proxy_pass`), is answered with a redirect to the name,
/// unless another location is named exactly like the URI. Regex locations are not looked
/// at then, as in nginx.
pub(crate) fn auto_redirect(
    locations: &[Location],
    tree: &LocationTree,
    uri: &[u8],
) -> Option<LocationId> {
    auto_redirect_in(locations, tree, uri, 0)
}

fn auto_redirect_in(
    locations: &[Location],
    tree: &LocationTree,
    uri: &[u8],
    depth: usize,
) -> Option<LocationId> {
    if depth > NESTING_MAX
        || tree.exact.iter().any(|(path, _)| &path[..] == uri)
        || tree.prefix.iter().any(|(path, _)| &path[..] == uri)
    {
        return None;
    }
    let redirecting = |path: &[u8], id: &LocationId| {
        path.len() == uri.len() + 1
            && path.starts_with(uri)
            && path.ends_with(b"/")
            && locations[id.0 as usize].settings.content.is_upstream()
    };
    if let Some((_, id)) = tree
        .exact
        .iter()
        .chain(tree.prefix.iter())
        .find(|(path, id)| redirecting(path, id))
    {
        return Some(*id);
    }
    let (_, id) = tree.prefix.iter().find(|(path, _)| uri.starts_with(path))?;
    auto_redirect_in(
        locations,
        &locations[id.0 as usize].children,
        uri,
        depth + 1,
    )
}

/// nginx's nesting is bounded by the configuration; this guards against a cycle bug.
const NESTING_MAX: usize = 64;

fn find_in(
    locations: &[Location],
    tree: &LocationTree,
    uri: &[u8],
    selected: &mut LocationId,
    state: &mut MatchState,
    depth: usize,
) -> Outcome {
    if depth > NESTING_MAX {
        return Outcome::Declined;
    }
    if let Some((_, id)) = tree.exact.iter().find(|(path, _)| &path[..] == uri) {
        *selected = *id;
        return Outcome::Done;
    }
    let mut outcome = Outcome::Declined;
    let mut noregex = false;
    if let Some((_, id)) = tree.prefix.iter().find(|(path, _)| uri.starts_with(path)) {
        *selected = *id;
        let location = &locations[id.0 as usize];
        noregex = matches!(location.kind, LocationKind::Prefix { noregex: true, .. });
        if find_in(
            locations,
            &location.children,
            uri,
            selected,
            state,
            depth + 1,
        ) == Outcome::Done
        {
            return Outcome::Done;
        }
        outcome = Outcome::Prefix;
    }
    if noregex {
        return outcome;
    }
    for id in &tree.regex {
        let location = &locations[id.0 as usize];
        let LocationKind::Regex(regex) = &location.kind else {
            continue;
        };
        if regex.regex.captures(uri, &mut state.captures) {
            regex.store(&state.captures, &mut state.named);
            *selected = *id;
            find_in(
                locations,
                &location.children,
                uri,
                selected,
                state,
                depth + 1,
            );
            return Outcome::Done;
        }
    }
    outcome
}
