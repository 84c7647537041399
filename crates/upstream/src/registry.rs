//! Upstream groups while the configuration loads: `upstream` blocks and the addresses
//! `proxy_pass` names, matched by name as nginx matches them, then resolved once the whole
//! `http` block is read (an `upstream` block may come after the `proxy_pass` naming it).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shared::resolver::ResolverConf;

use conf::{ConfError, Span};

use super::{Balancer, Group, KeepaliveConf, Peer, PeerAddr, Resolvable, Source, UpstreamId};

/// One `server` line of an `upstream` block.
#[derive(Clone, Debug)]
pub struct ServerEntry {
    pub address: String,
    pub weight: u32,
    pub max_fails: u32,
    pub fail_timeout: Duration,
    pub max_conns: u32,
    pub backup: bool,
    pub down: bool,
    /// `resolve`: the name is looked up again while the server runs.
    pub resolve: bool,
    /// `service=NAME`: SRV records give the addresses, ports and weights.
    pub service: Option<String>,
    /// `route=`, and `drain` (for `sticky`).
    pub route: Option<String>,
    pub drain: bool,
    pub span: Span,
}

/// What an `upstream` block sets.
#[derive(Debug)]
pub struct UpstreamScope<K> {
    pub servers: Vec<ServerEntry>,
    pub balancer: Option<Balancer<K>>,
    pub keepalive: Option<usize>,
    pub keepalive_requests: Option<u64>,
    pub keepalive_time: Option<Duration>,
    pub keepalive_timeout: Option<Duration>,
    pub zone: Option<String>,
    /// `resolver` and `resolver_timeout` in the block (else the `http` block's).
    pub resolver: Option<Arc<ResolverConf>>,
    pub resolver_timeout: Option<Duration>,
    pub sticky: Option<crate::sticky::Sticky<K>>,
}

impl<K> Default for UpstreamScope<K> {
    fn default() -> UpstreamScope<K> {
        UpstreamScope {
            servers: Vec::new(),
            balancer: None,
            keepalive: None,
            keepalive_requests: None,
            keepalive_time: None,
            keepalive_timeout: None,
            zone: None,
            resolver: None,
            resolver_timeout: None,
            sticky: None,
        }
    }
}

impl<K> UpstreamScope<K> {
    /// Whether the balancer declared so far lets servers say `backup`.
    pub fn allows_backup(&self) -> bool {
        matches!(
            self.balancer,
            None | Some(Balancer::RoundRobin)
                | Some(Balancer::LeastConn)
                | Some(Balancer::LeastTime { .. })
        )
    }
}

/// The default port of a reference whose address must name an `upstream` block
/// (`tunnel_pass`): such an address left without a block fails with `no port in upstream`.
pub const NO_PORT: u16 = 0;

#[derive(Debug)]
enum Entry<K> {
    Block {
        name: String,
        scope: Option<UpstreamScope<K>>,
        span: Span,
    },
    /// An address a `proxy_pass` names (host and port).
    Address {
        host: String,
        port: u16,
        /// The `proxy_pass` gave no port (80 is used).
        no_port: bool,
        span: Span,
    },
}

/// The groups of one configuration as they are declared and referenced.
#[derive(Debug)]
pub struct UpstreamRegistry<K> {
    entries: Vec<Entry<K>>,
}

impl<K> Default for UpstreamRegistry<K> {
    fn default() -> UpstreamRegistry<K> {
        UpstreamRegistry {
            entries: Vec::new(),
        }
    }
}

impl<K> UpstreamRegistry<K> {
    /// An `upstream NAME { ... }` block.
    pub fn define(
        &mut self,
        name: &str,
        scope: UpstreamScope<K>,
        span: &Span,
    ) -> Result<(), ConfError> {
        for entry in &mut self.entries {
            match entry {
                Entry::Block {
                    name: existing,
                    scope: defined,
                    ..
                } if existing.eq_ignore_ascii_case(name) => {
                    if defined.is_some() {
                        return Err(ConfError::message(
                            format!("duplicate upstream \"{name}\""),
                            span,
                        ));
                    }
                    *defined = Some(scope);
                    return Ok(());
                }
                Entry::Address {
                    host,
                    port,
                    no_port: false,
                    span: used,
                } if host.eq_ignore_ascii_case(name) => {
                    return Err(ConfError::message(
                        format!("upstream \"{name}\" may not have port {port} in {used}"),
                        span,
                    ));
                }
                _ => {}
            }
        }
        // An earlier `proxy_pass http://NAME` without a port meant this block.
        let mut scope = Some(scope);
        for entry in &mut self.entries {
            if let Entry::Address {
                host,
                no_port: true,
                span: used,
                ..
            } = entry
                && host.eq_ignore_ascii_case(name)
            {
                *entry = Entry::Block {
                    name: name.to_owned(),
                    scope: scope.take(),
                    span: used.clone(),
                };
                break;
            }
        }
        if let Some(scope) = scope {
            self.entries.push(Entry::Block {
                name: name.to_owned(),
                scope: Some(scope),
                span: span.clone(),
            });
        }
        Ok(())
    }

    /// The group a `proxy_pass` to `host[:port]` uses: an `upstream` block of that name
    /// (then no port may be given), else a group of the address's own.
    pub fn reference(
        &mut self,
        host: &str,
        port: Option<u16>,
        default_port: u16,
        span: &Span,
    ) -> Result<UpstreamId, ConfError> {
        for (index, entry) in self.entries.iter().enumerate() {
            match entry {
                Entry::Block { name, .. } if name.eq_ignore_ascii_case(host) => {
                    if let Some(port) = port {
                        return Err(ConfError::message(
                            format!("upstream \"{host}\" may not have port {port}"),
                            span,
                        ));
                    }
                    return Ok(UpstreamId(index as u32));
                }
                Entry::Address {
                    host: existing,
                    port: existing_port,
                    no_port,
                    ..
                } if existing.eq_ignore_ascii_case(host)
                    && *existing_port == port.unwrap_or(default_port)
                    && *no_port == port.is_none() =>
                {
                    return Ok(UpstreamId(index as u32));
                }
                _ => {}
            }
        }
        self.entries.push(Entry::Address {
            host: host.to_owned(),
            port: port.unwrap_or(default_port),
            no_port: port.is_none(),
            span: span.clone(),
        });
        Ok(UpstreamId(self.entries.len() as u32 - 1))
    }

    /// Resolves every group: addresses of `server` lines and of `proxy_pass` hosts.
    /// `resolver` is the `http` block's, for `resolve` servers of blocks without their own.
    pub fn finish(
        self,
        resolver: Option<(Arc<ResolverConf>, Duration)>,
    ) -> Result<Vec<Group<K>>, ConfError> {
        let mut groups = Vec::with_capacity(self.entries.len());
        for entry in self.entries {
            groups.push(match entry {
                Entry::Block {
                    name,
                    scope: None,
                    span,
                } => {
                    // Named by a `proxy_pass` without a port, and never defined: an address.
                    let peers = resolve(&name, 80, &span, &name)?;
                    Group::new(
                        name.into(),
                        peers,
                        Vec::new(),
                        Balancer::RoundRobin,
                        None,
                        true,
                        None,
                    )
                }
                Entry::Block {
                    name,
                    scope: Some(scope),
                    span,
                } => block_group(name, scope, &span, resolver.as_ref())?,
                Entry::Address {
                    host,
                    port: NO_PORT,
                    no_port: true,
                    span,
                } if !host.starts_with("unix:") => {
                    return Err(ConfError::message(
                        format!("no port in upstream \"{host}\""),
                        &span,
                    ));
                }
                Entry::Address {
                    host,
                    port,
                    no_port,
                    span,
                } => {
                    let shown = if no_port {
                        host.clone()
                    } else {
                        format!("{host}:{port}")
                    };
                    let peers = match host.strip_prefix("unix:") {
                        Some(path) => vec![peer_at(PeerAddr::Unix(path.into()), host.clone())],
                        None => resolve(&host, port, &span, &shown)?,
                    };
                    Group::new(
                        host.into(),
                        peers,
                        Vec::new(),
                        Balancer::RoundRobin,
                        None,
                        true,
                        Some(port),
                    )
                }
            });
        }
        Ok(groups)
    }
}

fn block_group<K>(
    name: String,
    scope: UpstreamScope<K>,
    span: &Span,
    http_resolver: Option<&(Arc<ResolverConf>, Duration)>,
) -> Result<Group<K>, ConfError> {
    if scope.servers.is_empty() {
        return Err(ConfError::message("no servers are inside upstream", span));
    }
    let mut sources = Vec::new();
    for server in &scope.servers {
        let (host, port) = split_host_port(&server.address, &server.span, "upstream")?;
        let template = Peer {
            server: server.address.as_str().into(),
            weight: server.weight,
            max_fails: server.max_fails,
            fail_timeout: server.fail_timeout,
            max_conns: server.max_conns,
            down: server.down,
            route: server.route.as_deref().map(Arc::from),
            drain: server.drain,
            ..peer_at(PeerAddr::Unix(PathBuf::new()), server.address.clone())
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if server.resolve && !host.starts_with("unix:") && bare.parse::<IpAddr>().is_err() {
            if scope.zone.is_none() {
                return Err(ConfError::message(
                    format!(
                        "resolving names at run time requires upstream \"{name}\" in {span} \
                         to be in shared memory"
                    ),
                    &server.span,
                ));
            }
            sources.push(Source::Resolve(Resolvable {
                service: server.service.as_ref().map(|service| {
                    if service.contains('.') {
                        format!("{service}.{host}")
                    } else {
                        format!("_{service}._tcp.{host}")
                    }
                }),
                host,
                port: port.unwrap_or(80),
                template,
                backup: server.backup,
            }));
            continue;
        }
        let mut peers = match host.strip_prefix("unix:") {
            Some(path) => vec![peer_at(PeerAddr::Unix(path.into()), server.address.clone())],
            None => resolve(&host, port.unwrap_or(80), &server.span, &server.address)?,
        };
        for peer in &mut peers {
            *peer = Peer {
                address: peer.address.clone(),
                name: Arc::clone(&peer.name),
                ..template.clone()
            };
        }
        sources.push(Source::Fixed {
            peers,
            backup: server.backup,
        });
    }
    let keepalive = scope.keepalive.map(|connections| KeepaliveConf {
        connections,
        requests: scope.keepalive_requests.unwrap_or(1000),
        time: scope.keepalive_time.unwrap_or(Duration::from_secs(3600)),
        timeout: scope.keepalive_timeout.unwrap_or(Duration::from_secs(60)),
    });
    let balancer = scope.balancer.unwrap_or_default();
    if sources
        .iter()
        .any(|source| matches!(source, Source::Resolve(_)))
    {
        let resolver = match (scope.resolver, http_resolver) {
            (Some(own), _) => (
                own,
                scope.resolver_timeout.unwrap_or(Duration::from_secs(30)),
            ),
            (None, Some((http, timeout))) => {
                (Arc::clone(http), scope.resolver_timeout.unwrap_or(*timeout))
            }
            (None, None) => {
                return Err(ConfError::message(
                    format!(
                        "no resolver defined to resolve names at run time in upstream \"{name}\""
                    ),
                    span,
                ));
            }
        };
        let group = Group::with_sources(
            name.into(),
            sources,
            balancer,
            keepalive,
            resolver,
            Instant::now(),
        );
        return Ok(match scope.sticky {
            Some(sticky) => group.with_sticky(sticky),
            None => group,
        });
    }
    let (mut primary, mut backup) = (Vec::new(), Vec::new());
    for source in sources {
        if let Source::Fixed {
            peers,
            backup: true,
        } = source
        {
            backup.extend(peers);
        } else if let Source::Fixed { peers, .. } = source {
            primary.extend(peers);
        }
    }
    let group = Group::new(
        name.into(),
        primary,
        backup,
        balancer,
        keepalive,
        false,
        None,
    );
    Ok(match scope.sticky {
        Some(sticky) => group.with_sticky(sticky),
        None => group,
    })
}

fn peer_at(address: PeerAddr, server: String) -> Peer {
    Peer {
        name: address.to_string().into(),
        address,
        server: server.into(),
        weight: 1,
        max_fails: 1,
        fail_timeout: Duration::from_secs(10),
        max_conns: 0,
        down: false,
        route: None,
        drain: false,
    }
}

/// The addresses of `host` (an IP literal, or a name resolved now, as nginx resolves names
/// at load): one peer each.
fn resolve(host: &str, port: u16, span: &Span, shown: &str) -> Result<Vec<Peer>, ConfError> {
    let trimmed = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = trimmed.parse::<IpAddr>() {
        return Ok(vec![peer_at(
            PeerAddr::Inet(SocketAddr::new(ip, port)),
            shown.to_owned(),
        )]);
    }
    let not_found = || ConfError::message(format!("host not found in upstream \"{shown}\""), span);
    let addresses: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|_| not_found())?
        .collect();
    if addresses.is_empty() {
        return Err(not_found());
    }
    let mut peers: Vec<Peer> = Vec::new();
    for address in addresses {
        if peers
            .iter()
            .any(|peer| peer.address == PeerAddr::Inet(address))
        {
            continue;
        }
        peers.push(peer_at(PeerAddr::Inet(address), shown.to_owned()));
    }
    Ok(peers)
}

/// Splits `host:port` (`[v6]:port`, `unix:/path`); `None` when no port is given.
pub fn split_host_port(
    text: &str,
    span: &Span,
    what: &str,
) -> Result<(String, Option<u16>), ConfError> {
    if text.starts_with("unix:") {
        return Ok((text.to_owned(), None));
    }
    let invalid_port = || ConfError::message(format!("invalid port in {what} \"{text}\""), span);
    if let Some(rest) = text.strip_prefix('[') {
        let Some(close) = rest.find(']') else {
            return Err(ConfError::message(
                format!("invalid host in {what} \"{text}\""),
                span,
            ));
        };
        let host = format!("[{}]", &rest[..close]);
        let after = &rest[close + 1..];
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, Some(parse_port(port).ok_or_else(invalid_port)?))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(invalid_port()),
        };
    }
    match text.rsplit_once(':') {
        Some((host, port)) => {
            if host.is_empty() {
                return Err(ConfError::message(
                    format!("no host in {what} \"{text}\""),
                    span,
                ));
            }
            Ok((
                host.to_owned(),
                Some(parse_port(port).ok_or_else(invalid_port)?),
            ))
        }
        None => Ok((text.to_owned(), None)),
    }
}

fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|port| *port != 0)
}
