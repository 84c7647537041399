//! The `stream` block: its directives read into per-level settings, merged into each
//! server, and the lookups a session needs (sockets, servers, upstream groups, variables)
//! built once. The result, [`StreamConf`], is shared read-only by a generation's workers.

pub mod directives;
pub mod listen;
pub mod log_directives;
pub mod settings;
pub mod ssl_directives;
pub mod upstream_directives;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conf::{ConfError, ConfErrorKind, Context, Directive, Span};
use logging::{ErrorLog, LogFile, LogFiles};
use runtime::{ListenAddress, ListenOptions};
use upstream::{Group, UpstreamId, UpstreamRegistry};

use crate::map::{Split, StreamMap};
use crate::variables::{Registry, SlotKind, StreamTemplate};
use directives::Setter;
use listen::StreamListen;
pub use settings::{Resolved, Settings};

/// What a server does with a session.
#[derive(Debug)]
pub enum Content {
    /// `proxy_pass NAME|ADDRESS`.
    Proxy(UpstreamId),
    /// `proxy_pass` with variables: a group by name or an address, found per session.
    ProxyVariable(StreamTemplate),
    /// `return VALUE`.
    Return(StreamTemplate),
    /// `pass ADDRESS`: the connection goes to the server listening there.
    Pass(StreamTemplate),
    /// None of them (allowed since nginx 1.25.5, for a server that only terminates TLS or
    /// rejects handshakes): a session that gets past its handshake and preread ends with
    /// status 500.
    None,
}

pub use logging::escape::Escape;

/// One `log_format NAME [escape=...] STRING...`.
#[derive(Debug)]
pub struct LogFormat {
    pub name: String,
    pub escape: Escape,
    pub template: StreamTemplate,
}

/// Where an access log goes.
#[derive(Debug)]
pub enum LogPath {
    File(Arc<LogFile>),
    /// A path with variables: opened, written and closed on the worker's pool per line.
    Template(StreamTemplate),
}

/// One access log file as a set of `access_log` directives with the same buffering uses it;
/// each worker keeps its own buffer for it.
#[derive(Debug)]
pub struct AccessLogTarget {
    pub path: LogPath,
    pub buffer: usize,
    pub flush: Option<Duration>,
    pub gzip: Option<u32>,
}

/// `limit_conn_zone KEY zone=NAME:SIZE`: counts shared by every worker.
#[derive(Debug)]
pub struct LimitZone {
    pub name: String,
    pub key: StreamTemplate,
    pub counts: Mutex<HashMap<Vec<u8>, u32>>,
    pub span: Span,
}

/// One server, resolved.
#[derive(Debug)]
pub struct ServerConf {
    pub settings: Resolved,
    /// `server_name`, lower-case, as written (a regex keeps its `~` and its case).
    pub names: Vec<String>,
    /// The `server_name` regexes, compiled, in order.
    pub regexes: Vec<shared::captures::NamedCaptures>,
    pub content: Content,
    /// `set $name VALUE`, in order.
    pub sets: Vec<(usize, StreamTemplate)>,
    /// The server's TLS configuration (`ssl_certificate`), for `listen ... ssl`.
    pub tls: Option<Arc<tls::ServerTls>>,
    /// `proxy_ssl on`: the configuration of TLS to its upstreams.
    pub upstream_tls: Option<Arc<tls::ClientTls>>,
    /// `ssl_certificate` and `_key` with variables: the pairs are loaded per handshake.
    pub certificates: Option<crate::ssl::VariableCertificates>,
    /// `proxy_ssl_certificate` and `_key` with variables: the pair is loaded per session.
    pub upstream_pair: Option<crate::ssl::VariablePair>,
}

/// The servers of one listen address.
#[derive(Debug)]
pub struct AddressConf {
    pub address: ListenAddress,
    /// Indexes into `StreamConf::servers`; the first is the default server.
    pub servers: Vec<usize>,
    pub proxy_protocol: bool,
    pub ssl: bool,
    /// As `server:` in error-log lines shows it (`127.0.0.1:8080`).
    pub text: String,
}

/// One listening socket and the addresses it serves (a wildcard socket serves the
/// specific addresses of its port that have no socket of their own).
#[derive(Debug)]
pub struct SocketConf {
    pub address: ListenAddress,
    pub options: ListenOptions,
    pub addresses: Vec<AddressConf>,
}

impl SocketConf {
    /// The address entry for a connection that arrived at `local`.
    pub fn address_for(&self, local: Option<std::net::SocketAddr>) -> &AddressConf {
        if let Some(local) = local
            && self.addresses.len() > 1
        {
            let specific = self.addresses.iter().find(|entry| match &entry.address {
                ListenAddress::Inet(address) => {
                    address.ip() == local.ip() && address.port() == local.port()
                }
                ListenAddress::Unix(_) => false,
            });
            if let Some(entry) = specific {
                return entry;
            }
        }
        &self.addresses[0]
    }
}

/// A loaded `stream` block.
#[derive(Debug)]
pub struct StreamConf {
    pub sockets: Vec<SocketConf>,
    pub servers: Vec<ServerConf>,
    pub groups: Vec<Group<StreamTemplate>>,
    /// The kind of every named variable, by slot.
    pub slots: Vec<SlotKind>,
    pub maps: Vec<StreamMap>,
    pub splits: Vec<Split>,
    pub geos: Vec<crate::geo::Geo>,
    pub log_formats: Vec<LogFormat>,
    pub access_logs: Vec<AccessLogTarget>,
    pub limit_zones: Vec<LimitZone>,
    pub warnings: Vec<ConfError>,
    /// The main error log: where what `resolve` servers' lookups find is logged.
    pub error_log: Arc<ErrorLog>,
    /// The certificates whose OCSP responses the workers fetch (`ssl_stapling on`).
    pub staplings: Vec<Arc<shared::stapling::Stapling>>,
}

impl StreamConf {
    /// The group an upstream name names (for `proxy_pass` with variables).
    pub fn group_named(&self, name: &[u8]) -> Option<&Group<StreamTemplate>> {
        self.groups
            .iter()
            .find(|group| !group.implicit && group.name.as_bytes().eq_ignore_ascii_case(name))
    }

    /// Every socket, as the master opens them.
    pub fn socket_list(&self) -> Vec<(ListenAddress, ListenOptions)> {
        self.sockets
            .iter()
            .map(|socket| (socket.address.clone(), socket.options.clone()))
            .collect()
    }
}

/// What the server crate hands to the loader.
pub struct LoadEnv<'a> {
    pub prefix: &'a Path,
    pub main_error_log: Arc<ErrorLog>,
    pub log_files: &'a mut LogFiles,
}

/// A server while it loads.
#[derive(Debug, Default)]
pub struct ServerLoad {
    pub settings: Settings,
    pub listens: Vec<StreamListen>,
    pub names: Vec<String>,
    /// `server_name ~REGEX`, in order.
    pub regexes: Vec<shared::captures::NamedCaptures>,
    pub content: Option<Content>,
    pub sets: Vec<(usize, StreamTemplate)>,
}

/// The state of one load.
pub struct Loader<'a> {
    pub registry: Registry,
    pub prefix: &'a Path,
    pub log_files: &'a mut LogFiles,
    pub main_error_log: Arc<ErrorLog>,
    pub maps_declared: usize,
    pub splits_declared: usize,
    pub maps: Vec<StreamMap>,
    pub splits: Vec<Split>,
    pub geos_declared: usize,
    pub geos: Vec<crate::geo::Geo>,
    pub log_formats: Vec<LogFormat>,
    pub access_logs: Vec<AccessLogTarget>,
    /// `limit_conn_zone` zones; `limit_conn` may name one defined later.
    pub limit_zones: Vec<LimitZone>,
    pub limit_zone_uses: Vec<(String, Span)>,
    pub upstreams: UpstreamRegistry<StreamTemplate>,
    /// `proxy_pass NAME` without a port: must name an `upstream` block.
    pub upstream_names: Vec<(String, Span)>,
    pub defined_upstreams: Vec<String>,
    pub warnings: Vec<ConfError>,
}

impl Loader<'_> {
    /// Compiles a template against the stream variables.
    pub fn template(&mut self, text: &str, span: &Span) -> Result<StreamTemplate, ConfError> {
        let registry = &self.registry;
        StreamTemplate::compile(text, |name| registry.resolve(name))
            .map_err(|error| ConfError::message(error.to_string(), span))
    }

    pub fn path(&self, text: &str) -> PathBuf {
        let path = Path::new(text);
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.prefix.join(path)
        }
    }

    /// The log file at `text`, opened once per path.
    pub fn open_log(&mut self, text: &str, span: &Span) -> Result<Arc<LogFile>, ConfError> {
        let path = self.path(text);
        let opened = if text == "stderr" {
            self.log_files.stderr()
        } else {
            self.log_files.open(&path)
        };
        opened.map_err(|error| {
            let errno = error.raw_os_error().unwrap_or(0);
            ConfError::new(
                ConfErrorKind::Io {
                    call: "open",
                    path,
                    errno,
                    text: runtime::sys::linux::strerror(errno),
                },
                Some(span.clone()),
            )
        })
    }
}

/// Reads the `stream` block.
pub fn load_stream(block: &[Directive], env: LoadEnv<'_>) -> Result<StreamConf, ConfError> {
    let mut loader = Loader {
        registry: Registry::default(),
        prefix: env.prefix,
        log_files: env.log_files,
        main_error_log: env.main_error_log,
        maps_declared: 0,
        splits_declared: 0,
        maps: Vec::new(),
        splits: Vec::new(),
        geos_declared: 0,
        geos: Vec::new(),
        log_formats: Vec::new(),
        access_logs: Vec::new(),
        limit_zones: Vec::new(),
        limit_zone_uses: Vec::new(),
        upstreams: UpstreamRegistry::default(),
        upstream_names: Vec::new(),
        defined_upstreams: Vec::new(),
        warnings: Vec::new(),
    };
    declare_variables(&mut loader, block)?;
    let mut main = Settings::default();
    let mut servers: Vec<(ServerLoad, Span)> = Vec::new();
    for directive in block {
        let spec = conf::spec::check(directives::DIRECTIVES, directive, Context::Stream)?;
        match spec.set {
            Setter::Server => {
                let server = read_server(&mut loader, directive)?;
                servers.push((server, directive.span.clone()));
            }
            Setter::Upstream => directives::read_upstream(&mut loader, directive)?,
            Setter::Map => {
                let map = crate::map::load_map(&mut loader, directive)?;
                loader.maps.push(map);
            }
            Setter::SplitClients => {
                let split = crate::map::load_split(&mut loader, directive)?;
                loader.splits.push(split);
            }
            Setter::Geo => {
                let geo = crate::geo::load(&mut loader, directive)?;
                loader.geos.push(geo);
            }
            Setter::Main(set) => set(&mut loader, directive)?,
            Setter::Settings(set) => set(&mut main, directive, &mut loader)?,
            Setter::Ignored => {}
            Setter::ServerOnly(_) | Setter::UpstreamLine(_) => {
                unreachable!("not allowed in the stream context by the table")
            }
        }
    }
    finish(loader, main, servers)
}

/// Finds the targets of `map`, `split_clients` and `set` first: nginx resolves variable
/// names once the whole block is read, so a server may use one declared below it.
fn declare_variables(loader: &mut Loader<'_>, block: &[Directive]) -> Result<(), ConfError> {
    for directive in block {
        match directive.name.as_str() {
            "map" | "split_clients" if directive.args.len() == 2 => {
                crate::map::declare(loader, directive)?;
                if directive.name == "map" {
                    crate::map::declare_captures(loader, directive);
                }
            }
            "geo" if matches!(directive.args.len(), 1 | 2) => {
                crate::geo::declare(loader, directive)?
            }
            "server" if directive.block.is_some() => {
                for inner in directive.block.as_deref().unwrap_or_default() {
                    if inner.name == "set"
                        && let Some(name) = inner.arg(0).strip_prefix('$')
                    {
                        loader.registry.slot(name);
                    }
                    if inner.name == "server_name" {
                        for argument in &inner.args {
                            let Some(pattern) = argument.value.strip_prefix('~') else {
                                continue;
                            };
                            if let Ok(regex) = shared::regex::Regex::compile(pattern, true) {
                                for (name, _) in regex.names() {
                                    loader.registry.slot(name);
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn read_server(loader: &mut Loader<'_>, block: &Directive) -> Result<ServerLoad, ConfError> {
    let mut server = ServerLoad::default();
    for directive in block.block.as_deref().unwrap_or_default() {
        let spec = conf::spec::check(directives::DIRECTIVES, directive, Context::StreamServer)?;
        match spec.set {
            Setter::Settings(set) => set(&mut server.settings, directive, loader)?,
            Setter::ServerOnly(set) => set(&mut server, directive, loader)?,
            Setter::Ignored => {}
            _ => unreachable!("only settings are allowed in a stream server by the table"),
        }
    }
    if server.listens.is_empty() {
        return Err(ConfError::new(
            ConfErrorKind::Message(format!(
                "no \"listen\" is defined for server in {}",
                block.span
            )),
            None,
        ));
    }
    Ok(server)
}

fn finish(
    mut loader: Loader<'_>,
    main: Settings,
    servers: Vec<(ServerLoad, Span)>,
) -> Result<StreamConf, ConfError> {
    for (name, span) in &loader.upstream_names {
        if !loader
            .defined_upstreams
            .iter()
            .any(|defined| defined.eq_ignore_ascii_case(name))
        {
            return Err(ConfError::message(
                format!("no port in upstream \"{name}\""),
                span,
            ));
        }
    }
    for (name, span) in &loader.limit_zone_uses {
        if !loader.limit_zones.iter().any(|zone| zone.name == *name) {
            return Err(ConfError::message(
                format!("zero size shared memory zone \"{name}\""),
                span,
            ));
        }
    }
    let mut listens = Vec::new();
    let mut resolved = Vec::new();
    let mut tls_build = crate::ssl::TlsBuild::default();
    for (index, (mut server, _span)) in servers.into_iter().enumerate() {
        server.settings.merge_from(&main);
        for listen in server.listens.drain(..) {
            listens.push((listen, index));
        }
        let content = server.content.unwrap_or(Content::None);
        let mut settings = server.settings.resolve(&loader.main_error_log);
        for limit in &mut settings.limit_conn {
            limit.zone = loader
                .limit_zones
                .iter()
                .position(|zone| *zone.name == *limit.name)
                .unwrap_or(usize::MAX);
        }
        let tls = crate::ssl::server_tls(&settings, &mut tls_build, loader.prefix)?;
        let upstream_pair = crate::ssl::variable_pair(&settings, &mut loader)?;
        let certificates = crate::ssl::variable_certificates(&settings, &mut loader)?;
        let upstream_tls = crate::ssl::upstream_tls(&settings, loader.prefix)?;
        resolved.push(ServerConf {
            settings,
            names: server.names,
            regexes: server.regexes,
            content,
            sets: server.sets,
            tls,
            upstream_tls,
            upstream_pair,
            certificates,
        });
    }
    let ssl_listens: Vec<(usize, Span)> = listens
        .iter()
        .filter(|(listen, _)| listen.spec.ssl)
        .map(|(listen, server)| (*server, listen.spec.span.clone()))
        .collect();
    let sockets = listen::group_sockets(listens)?;
    // The default server of every `ssl` address needs a certificate, unless it rejects
    // handshakes.
    for entry in sockets.iter().flat_map(|socket| &socket.addresses) {
        let server = &resolved[entry.servers[0]];
        if !entry.ssl || server.tls.is_some() || server.settings.ssl_reject_handshake {
            continue;
        }
        if let Some((_, span)) = ssl_listens
            .iter()
            .find(|(index, _)| *index == entry.servers[0])
        {
            return Err(ConfError::message(
                "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive",
                span,
            ));
        }
    }
    // `resolve` servers of blocks without a `resolver` of their own use the stream
    // level's, wherever it is written in the block.
    let stream_level = main.clone().resolve(&loader.main_error_log);
    let resolver = stream_level
        .resolver
        .map(|resolver| (Arc::new(resolver), stream_level.resolver_timeout));
    let groups = loader.upstreams.finish(resolver)?;
    Ok(StreamConf {
        sockets,
        servers: resolved,
        groups,
        slots: loader
            .registry
            .slots
            .iter()
            .map(|(_, kind)| *kind)
            .collect(),
        maps: loader.maps,
        splits: loader.splits,
        geos: loader.geos,
        log_formats: loader.log_formats,
        access_logs: loader.access_logs,
        limit_zones: loader.limit_zones,
        warnings: {
            let mut warnings = loader.warnings;
            warnings.append(&mut tls_build.warnings);
            warnings
        },
        error_log: loader.main_error_log,
        staplings: tls_build.staplings,
    })
}

#[cfg(test)]
mod tests;
