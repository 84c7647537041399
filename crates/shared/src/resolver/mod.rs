//! `resolver`: names looked up over DNS without blocking the worker: for a `proxy_pass`
//! with variables when a request needs them (cached by the `resolver` for the answer's
//! TTL or `valid=`, for every worker), and for `server ... resolve` in `upstream` blocks, uncached, each time the
//! last answer expires. The wire format is [`wire`]'s, the sockets `transport`'s.

mod transport;
pub mod wire;
pub mod zone;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conf::{ConfError, Directive};

/// `resolver address ... [valid=time] [ipv4=on|off] [ipv6=on|off]`.
#[derive(Clone, Debug)]
pub struct ResolverConf {
    pub servers: Vec<SocketAddr>,
    pub valid: Option<Duration>,
    pub ipv4: bool,
    pub ipv6: bool,
    /// The answers and the turn of the servers, shared by every worker and every scope
    /// that inherits this `resolver` (nginx keeps one cache per `resolver` directive).
    pub state: Arc<ResolverState>,
}

/// What a `resolver` remembers while the server runs.
#[derive(Debug, Default)]
pub struct ResolverState {
    /// Answers by name, with when they expire.
    cache: Mutex<HashMap<String, (Vec<IpAddr>, Instant)>>,
    /// The server the next question goes to first: questions take the servers in turn.
    next_server: AtomicUsize,
    /// `status_zone=`: where its questions and answers are counted.
    pub zone: Option<Arc<zone::ZoneCounters>>,
}

impl ResolverConf {
    /// Where the next question starts.
    fn next_server_index(&self) -> usize {
        self.state.next_server.fetch_add(1, Ordering::Relaxed)
    }
}

/// Parses the directive's arguments.
pub fn parse(directive: &Directive) -> Result<ResolverConf, ConfError> {
    let mut conf = ResolverConf {
        servers: Vec::new(),
        valid: None,
        ipv4: true,
        ipv6: true,
        state: Arc::default(),
    };
    let mut status_zone = None;
    for argument in &directive.args {
        let text = argument.as_str();
        let invalid =
            || ConfError::message(format!("invalid parameter \"{text}\""), &directive.span);
        if let Some(value) = text.strip_prefix("valid=") {
            conf.valid = Some(conf::value::parse_time(value).ok_or_else(invalid)?);
        } else if let Some(value) = text.strip_prefix("ipv4=") {
            conf.ipv4 = flag(value).ok_or_else(invalid)?;
        } else if let Some(value) = text.strip_prefix("ipv6=") {
            conf.ipv6 = flag(value).ok_or_else(invalid)?;
        } else if let Some(name) = text.strip_prefix("status_zone=") {
            if name.is_empty() {
                return Err(invalid());
            }
            status_zone = Some(zone::named(name));
        } else {
            let addresses = server_addresses(text);
            if addresses.is_empty() {
                return Err(ConfError::message(
                    format!("host not found in resolver \"{text}\""),
                    &directive.span,
                ));
            }
            conf.servers.extend(addresses);
        }
    }
    if !conf.ipv4 && !conf.ipv6 {
        return Err(ConfError::message(
            "\"ipv4\" and \"ipv6\" cannot both be \"off\"",
            &directive.span,
        ));
    }
    if conf.servers.is_empty() {
        return Err(ConfError::message(
            "no name servers defined",
            &directive.span,
        ));
    }
    conf.state = Arc::new(ResolverState {
        zone: status_zone,
        ..ResolverState::default()
    });
    Ok(conf)
}

fn flag(value: &str) -> Option<bool> {
    match value {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// `ADDRESS[:PORT]` (port 53 by default); a name is resolved now, at load, as nginx
/// resolves it.
fn server_addresses(text: &str) -> Vec<SocketAddr> {
    use std::net::ToSocketAddrs;
    if let Ok(address) = text.parse::<SocketAddr>() {
        return vec![address];
    }
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return vec![SocketAddr::new(ip, 53)];
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => match port.parse::<u16>() {
            Ok(port) => (host, port),
            Err(_) => return Vec::new(),
        },
        None => (text, 53),
    };
    (host, port)
        .to_socket_addrs()
        .map(|addresses| addresses.collect())
        .unwrap_or_default()
}

/// Why a name could not be resolved, as nginx words it: `(3: Host not found)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveError {
    pub code: u16,
    pub text: &'static str,
}

impl ResolveError {
    pub const NOT_FOUND: ResolveError = ResolveError {
        code: 3,
        text: "Host not found",
    };
    pub const TIMED_OUT: ResolveError = ResolveError {
        code: 110,
        text: "Operation timed out",
    };

    /// A response code other than NOERROR (RFC 1035 §4.1.1), in nginx's words.
    pub fn from_rcode(rcode: u8) -> ResolveError {
        let text = match rcode {
            1 => "Format error",
            3 => return ResolveError::NOT_FOUND,
            4 => "Unimplemented",
            5 => "Operation refused",
            _ => "Server failure",
        };
        ResolveError {
            code: if rcode <= 5 { u16::from(rcode) } else { 2 },
            text,
        }
    }
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.text)
    }
}

/// Something seen on the way to an answer, for the error log: the answer itself may still
/// come from another server.
#[derive(Debug)]
pub enum Note {
    /// An answer with another query's id: late, or forged.
    WrongId {
        server: SocketAddr,
        got: u16,
        expected: u16,
    },
    /// Our id, but not an answer to our question.
    WrongQuestion {
        server: SocketAddr,
    },
    Malformed {
        server: SocketAddr,
    },
    Truncated {
        server: SocketAddr,
    },
    TimedOut {
        server: SocketAddr,
    },
    Unreachable {
        server: SocketAddr,
        error: std::io::Error,
    },
}

impl Note {
    /// nginx logs forged or broken answers and dead servers at `error`; a truncated answer
    /// (asked again over TCP) or a slow server (asked again elsewhere) is routine.
    pub fn is_error(&self) -> bool {
        !matches!(self, Note::Truncated { .. } | Note::TimedOut { .. })
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::WrongId {
                server,
                got,
                expected,
            } => write!(
                f,
                "wrong ident {got} in DNS response from {server}, expect {expected}"
            ),
            Note::WrongQuestion { server } => {
                write!(f, "unexpected question in DNS response from {server}")
            }
            Note::Malformed { server } => write!(f, "invalid DNS response from {server}"),
            Note::Truncated { server } => {
                write!(
                    f,
                    "DNS response from {server} is truncated, asking over TCP"
                )
            }
            Note::TimedOut { server } => write!(f, "resolver {server} timed out"),
            Note::Unreachable { server, error } => {
                write!(f, "resolver {server} failed ({error})")
            }
        }
    }
}

/// The addresses of a name, and how long they may be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Addresses {
    pub addresses: Vec<IpAddr>,
    pub valid: Duration,
}

/// One SRV record and the addresses of its target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub priority: u16,
    pub weight: u16,
    pub port: u16,
    pub target: String,
    pub addresses: Vec<IpAddr>,
}

/// The records of a service name, and how long they may be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Services {
    pub services: Vec<Service>,
    pub valid: Duration,
}

/// Names a resolver's cache holds at most; past it the expired ones go, then any.
const CACHE_ENTRIES_MAX: usize = 4096;

/// The addresses of `name`, from the resolver's cache or the name servers (a `proxy_pass`
/// with variables). What went wrong on the way is told to `notes`.
pub async fn resolve(
    conf: &ResolverConf,
    timeout: Duration,
    name: &str,
    notes: &mut Vec<Note>,
) -> Result<Vec<IpAddr>, ResolveError> {
    let key = name.trim_end_matches('.').to_ascii_lowercase();
    let now = Instant::now();
    let cached = conf
        .state
        .cache
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .get(&key)
        .filter(|(_, expires)| *expires > now)
        .map(|(addresses, _)| addresses.clone());
    if let Some(addresses) = cached {
        return Ok(addresses);
    }
    let found = lookup(conf, timeout, &key, notes).await?;
    let expires = Instant::now() + found.valid;
    let mut cache = conf
        .state
        .cache
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    if cache.len() >= CACHE_ENTRIES_MAX {
        let now = Instant::now();
        cache.retain(|_, (_, expires)| *expires > now);
        if cache.len() >= CACHE_ENTRIES_MAX
            && let Some(any) = cache.keys().next().cloned()
        {
            cache.remove(&any);
        }
    }
    if !found.valid.is_zero() {
        cache.insert(key, (found.addresses.clone(), expires));
    }
    drop(cache);
    Ok(found.addresses)
}

/// The A and AAAA records of `name` (as `ipv4=`/`ipv6=` allow) asked of the servers now,
/// CNAME chains followed, within `timeout`.
///
/// As in nginx, a CNAME sends the whole lookup (both types) on to its target, unless the
/// other type's question gave addresses, which then stand alone. When both types are
/// asked, the AAAA answer decides where a lookup without addresses goes: its CNAME is
/// followed, and an empty AAAA answer ends the lookup even if the A answer was a CNAME.
pub async fn lookup(
    conf: &ResolverConf,
    timeout: Duration,
    name: &str,
    notes: &mut Vec<Note>,
) -> Result<Addresses, ResolveError> {
    if let Some(zone) = &conf.state.zone {
        zone.asked(zone::Asked::Name);
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let mut current = name.trim_end_matches('.').to_ascii_lowercase();
    let mut ttl = u32::MAX;
    let kinds = [(conf.ipv4, wire::TYPE_A), (conf.ipv6, wire::TYPE_AAAA)];
    for _ in 0..=wire::CNAME_CHAIN_MAX {
        // The A and AAAA questions of one name go to the same server first, as nginx's do.
        let first = conf.next_server_index();
        let mut addresses = Vec::new();
        let mut alias = None;
        for (_, kind) in kinds.iter().filter(|(wanted, _)| *wanted) {
            match lookup_kind(conf, deadline, &current, *kind, first, notes).await? {
                KindAnswer::Addresses(found, found_ttl) => {
                    ttl = ttl.min(found_ttl);
                    addresses.extend(found);
                }
                // Only the last question's CNAME leads on (AAAA's when both are
                // asked): an A answer that is a bare CNAME next to an empty AAAA
                // answer finds nothing, as in nginx.
                KindAnswer::Alias(target, alias_ttl) => alias = Some((target, alias_ttl)),
                KindAnswer::Nothing => alias = None,
            }
        }
        if !addresses.is_empty() {
            return Ok(Addresses {
                addresses,
                valid: valid_for(conf, ttl),
            });
        }
        let Some((target, alias_ttl)) = alias else {
            return Err(ResolveError::NOT_FOUND);
        };
        ttl = ttl.min(alias_ttl);
        current = target;
    }
    Err(ResolveError::NOT_FOUND)
}

/// What one question about a name's addresses found.
enum KindAnswer {
    Addresses(Vec<IpAddr>, u32),
    /// Only a CNAME (chain) whose target's records the answer did not carry.
    Alias(String, u32),
    /// No such name, or no records of the type.
    Nothing,
}

/// `valid=` when set, else the answer's TTL.
fn valid_for(conf: &ResolverConf, ttl: u32) -> Duration {
    conf.valid
        .unwrap_or(Duration::from_secs(u64::from(if ttl == u32::MAX {
            0
        } else {
            ttl
        })))
}

/// One record type of `name`, asked once: its addresses (after a CNAME chain in the same
/// answer), or where a CNAME leads. A failed question (any error but NXDOMAIN) fails the
/// lookup, as in nginx: half an answer is no answer.
async fn lookup_kind(
    conf: &ResolverConf,
    deadline: tokio::time::Instant,
    name: &str,
    kind: u16,
    first: usize,
    notes: &mut Vec<Note>,
) -> Result<KindAnswer, ResolveError> {
    let question = wire::Question {
        name: name.to_owned(),
        kind,
    };
    let answers = match transport::exchange(conf, &question, deadline, first, notes).await? {
        wire::Reply::Records { answers, .. } => answers,
        wire::Reply::Failed(error) if error == ResolveError::NOT_FOUND => {
            return Ok(KindAnswer::Nothing);
        }
        wire::Reply::Failed(error) => return Err(error),
        _ => return Err(ResolveError::from_rcode(2)),
    };
    let Some((target, alias_ttl)) = wire::chase_alias(&answers, name) else {
        // A loop of aliases.
        return Ok(KindAnswer::Nothing);
    };
    let (addresses, address_ttl) = wire::addresses_of(&answers, &target, kind);
    Ok(if !addresses.is_empty() {
        KindAnswer::Addresses(addresses, alias_ttl.min(address_ttl))
    } else if target != name {
        KindAnswer::Alias(target, alias_ttl)
    } else {
        KindAnswer::Nothing
    })
}

/// An answer with records of the asked type, after the CNAME chain that led to it.
struct Chased {
    answers: Vec<wire::Record>,
    additional: Vec<wire::Record>,
    /// The name the chain ended at: the owner of the records wanted.
    owner: String,
    /// The chain's smallest TTL.
    ttl: u32,
}

/// Asks for `kind` records of `name`, following a CNAME into a new question when the
/// answer does not carry the target's records itself.
async fn ask_chasing(
    conf: &ResolverConf,
    deadline: tokio::time::Instant,
    name: &str,
    kind: u16,
    first: usize,
    notes: &mut Vec<Note>,
) -> Result<Chased, ResolveError> {
    let mut current = name.to_owned();
    let mut ttl = u32::MAX;
    for _ in 0..=wire::CNAME_CHAIN_MAX {
        let question = wire::Question {
            name: current.clone(),
            kind,
        };
        let (answers, additional) =
            match transport::exchange(conf, &question, deadline, first, notes).await? {
                wire::Reply::Records {
                    answers,
                    additional,
                } => (answers, additional),
                wire::Reply::Failed(error) => return Err(error),
                _ => return Err(ResolveError::from_rcode(2)),
            };
        let (target, alias_ttl) =
            wire::chase_alias(&answers, &current).ok_or(ResolveError::NOT_FOUND)?;
        ttl = ttl.min(alias_ttl);
        let has_records = answers.iter().any(|record| {
            record.name == target && !matches!(record.data, wire::RecordData::Alias(_))
        });
        if has_records || target == current {
            return Ok(Chased {
                answers,
                additional,
                owner: target,
                ttl,
            });
        }
        current = target;
    }
    Err(ResolveError::NOT_FOUND)
}

/// The SRV records of `name`, each with its target's addresses (from the answer's
/// additional section, else asked for). A target that does not exist is left out and
/// told through `failed`; any other failure of a target fails the whole lookup, so that
/// a server error never takes members away.
pub async fn lookup_services(
    conf: &ResolverConf,
    timeout: Duration,
    name: &str,
    notes: &mut Vec<Note>,
    failed: &mut Vec<(String, ResolveError)>,
) -> Result<Services, ResolveError> {
    if let Some(zone) = &conf.state.zone {
        zone.asked(zone::Asked::Srv);
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let first = conf.next_server_index();
    let chased = ask_chasing(conf, deadline, &name, wire::TYPE_SRV, first, notes).await?;
    let mut ttl = chased.ttl;
    let mut services = Vec::new();
    for record in chased
        .answers
        .iter()
        .filter(|record| record.name == chased.owner)
    {
        let wire::RecordData::Service {
            priority,
            weight,
            port,
            target,
        } = &record.data
        else {
            continue;
        };
        ttl = ttl.min(record.ttl);
        let mut addresses = Vec::new();
        for (wanted, kind) in [(conf.ipv4, wire::TYPE_A), (conf.ipv6, wire::TYPE_AAAA)] {
            if wanted {
                let (found, found_ttl) = wire::addresses_of(&chased.additional, target, kind);
                if !found.is_empty() {
                    ttl = ttl.min(found_ttl);
                }
                addresses.extend(found);
            }
        }
        if addresses.is_empty() {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            match lookup(conf, remaining, target, notes).await {
                Ok(found) => {
                    addresses = found.addresses;
                    if conf.valid.is_none() {
                        ttl = ttl.min(u32::try_from(found.valid.as_secs()).unwrap_or(u32::MAX));
                    }
                }
                Err(error) if error == ResolveError::NOT_FOUND => {
                    failed.push((target.clone(), error));
                    continue;
                }
                Err(error) => return Err(error),
            }
        }
        services.push(Service {
            priority: *priority,
            weight: *weight,
            port: *port,
            target: target.clone(),
            addresses,
        });
    }
    if services.is_empty() {
        return Err(ResolveError::NOT_FOUND);
    }
    Ok(Services {
        services,
        valid: valid_for(conf, ttl),
    })
}

/// An unpredictable query id (answers with another id are ignored).
fn query_id() -> u16 {
    use std::hash::BuildHasher;
    thread_local! {
        static IDS: (std::collections::hash_map::RandomState, std::cell::Cell<u64>) =
            (std::collections::hash_map::RandomState::new(), std::cell::Cell::new(0));
    }
    IDS.with(|(key, counter)| {
        counter.set(counter.get().wrapping_add(1));
        key.hash_one(counter.get()) as u16
    })
}

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod tests;
