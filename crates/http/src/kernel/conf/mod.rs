//! The typed configuration of the `http` block and how it is built from the directive tree.
//!
//! Config path: the `conf` crate gives a tree of directives; the assembly's `load` walks
//! the `http` block, checks each directive against the modules' tables (the assembly's
//! directive tables) and lets the owning module's setter fill a scope struct whose fields
//! are all `Option`; scopes are merged from `http` to `server` to `location` and resolved
//! with defaults; then the lookup structures (location trees, server names per address,
//! templates) are built. The result, [`HttpConf`], is immutable and shared by every worker
//! of one generation.

pub mod context;
pub mod location;
pub mod scope;
pub mod server_names;
pub mod settings;

use std::path::PathBuf;
use std::sync::Arc;

use conf::{ConfError, Directive, DirectiveSpec};
use logging::ErrorLog;

pub use context::{LoadContext, LoadEnv};
pub use location::{Location, LocationId, LocationKind, LocationTree};
pub use scope::{LocationScope, LocationSettings, MainScope, ServerScope};
pub use shared::captures::NamedCaptures;

/// What a merge needs besides the two scopes: where relative defaults point.
#[derive(Clone, Debug)]
pub struct MergeEnv {
    /// The `-p` prefix; relative default paths (`html`, `client_body_temp`) hang off it.
    pub prefix: PathBuf,
    /// The main context's `error_log`, inherited where `http` sets none.
    pub main_error_log: Arc<ErrorLog>,
}

/// A virtual server's index in [`HttpConf::servers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ServerId(pub u32);

/// A directive setter, typed by the scope struct it fills.
pub enum Setter {
    /// Settings of the `http` block only.
    Main(fn(&mut MainScope, &Directive, &mut LoadContext<'_>) -> Result<(), ConfError>),
    /// Settings nginx keeps per server (also allowed in `http`, inherited by servers).
    Server(fn(&mut ServerScope, &Directive, &mut LoadContext<'_>) -> Result<(), ConfError>),
    /// Settings nginx keeps per location (also in `http` and `server`, inherited down).
    Location(LocationSetter),
    /// A proxy directive under a gateway module's name (`fastcgi_buffers`): the setter
    /// fills that module's copy of the proxy's settings.
    Gateway(
        crate::modules::proxy::gateway::settings::Protocol,
        LocationSetter,
    ),
    /// Directives of an `upstream` block.
    Upstream(
        fn(
            &mut crate::kernel::upstream::UpstreamScope,
            &Directive,
            &mut LoadContext<'_>,
        ) -> Result<(), ConfError>,
    ),
    /// A block the loader opens itself.
    Block(BlockKind),
}

impl std::fmt::Debug for Setter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Setter::Main(_) => "Setter::Main",
            Setter::Server(_) => "Setter::Server",
            Setter::Location(_) => "Setter::Location",
            Setter::Gateway(..) => "Setter::Gateway",
            Setter::Upstream(_) => "Setter::Upstream",
            Setter::Block(_) => "Setter::Block",
        })
    }
}

/// The blocks of the `http` context that contain directives of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Server,
    Location,
    Types,
    /// `if (...) { ... }` in a server or location.
    If,
    /// `limit_except METHOD ... { ... }` in a location.
    LimitExcept,
    /// `upstream NAME { ... }` in `http`.
    Upstream,
}

/// One entry of an HTTP module's directive table.
pub type HttpDirective = DirectiveSpec<Setter>;

/// A setter of location-level settings.
pub type LocationSetter =
    fn(&mut LocationScope, &Directive, &mut LoadContext<'_>) -> Result<(), ConfError>;

/// A directive without a block, in `contexts`, taking `arity` arguments.
pub const fn directive(
    name: &'static str,
    contexts: conf::Contexts,
    arity: conf::Arity,
    set: Setter,
) -> HttpDirective {
    HttpDirective {
        name,
        contexts,
        arity,
        block: conf::BlockKind::Simple,
        set,
    }
}

/// A directive without a block that fills location-level settings (also allowed in
/// `http` and `server` where `contexts` says, inherited by the locations below).
pub const fn location_directive(
    name: &'static str,
    contexts: conf::Contexts,
    arity: conf::Arity,
    set: LocationSetter,
) -> HttpDirective {
    directive(name, contexts, arity, Setter::Location(set))
}

/// A proxy directive under a gateway module's name, allowed where the proxy's is (`http`,
/// `server`, `location`).
pub const fn gateway_directive(
    name: &'static str,
    protocol: crate::modules::proxy::gateway::settings::Protocol,
    arity: conf::Arity,
    set: LocationSetter,
) -> HttpDirective {
    directive(
        name,
        conf::Contexts::HTTP_SERVER_LOCATION,
        arity,
        Setter::Gateway(protocol, set),
    )
}

/// A virtual server, resolved.
#[derive(Debug)]
pub struct Server {
    pub id: ServerId,
    /// The first name of `server_name` (`$server_name`), or empty.
    pub name: Box<[u8]>,
    /// Every name of `server_name` (`valid_referers server_names` reads them).
    pub names: Vec<server_names::ServerName>,
    pub core: crate::kernel::core::CoreServer,
    pub ssl: crate::kernel::ssl::settings::SslServer,
    pub v2: crate::modules::v2::settings::Http2Server,
    pub v3: crate::modules::v3::settings::Http3Server,
    /// The TLS configuration, when the server has a certificate.
    pub tls: Option<Arc<tls::ServerTls>>,
    /// When a certificate name has variables: what loads the pairs per handshake (`tls`
    /// is then the configuration without certificates).
    pub variable_certificates: Option<Arc<crate::kernel::ssl::pairs::VariableCertificates>>,
    /// The settings of the server level itself, used when no location matches and for
    /// the server rewrite phase.
    pub location: LocationId,
    pub locations: LocationTree,
    pub named_locations: Vec<(Box<str>, LocationId)>,
    /// A location of this server tunnels (`tunnel_pass`): CONNECT requests may reach it,
    /// as nginx's `allow_connect`.
    pub allow_connect: bool,
}

/// The listen addresses of one socket and the servers behind each.
#[derive(Debug)]
pub struct SocketConf {
    pub address: runtime::ListenAddress,
    pub options: runtime::ListenOptions,
    /// For a wildcard socket, the specific addresses on the same port served through it
    /// (chosen by the connection's local address), then the wildcard itself last.
    pub addresses: Vec<AddressConf>,
}

/// The servers that listen on one address.
#[derive(Debug)]
pub struct AddressConf {
    /// `None` for the wildcard (or the only) address of the socket.
    pub ip: Option<std::net::IpAddr>,
    pub default_server: ServerId,
    /// `listen ... ssl`: connections start with a TLS handshake.
    pub ssl: bool,
    /// `listen ... proxy_protocol`: connections start with a PROXY protocol header.
    pub proxy_protocol: bool,
    /// `listen ... http2` (deprecated in nginx 1.25.1 for `http2 on`): HTTP/2 here even
    /// when the default server has `http2 off`.
    pub http2: bool,
    /// `listen ... quic`: a UDP socket serving HTTP/3.
    pub quic: bool,
    /// Regex names refer to [`HttpConf::server_regexes`] by index.
    pub names: server_names::ServerNames,
}

/// Everything the `http` block configures; one per generation, shared read-only.
#[derive(Debug)]
pub struct HttpConf {
    pub main: crate::kernel::core::CoreMain,
    /// `http2_recv_buffer_size`.
    pub v2: crate::modules::v2::settings::Http2Main,
    /// The `charset_map` tables.
    pub charset_maps: crate::modules::charset::settings::CharsetMaps,
    pub servers: Vec<Server>,
    pub locations: Vec<Location>,
    pub sockets: Vec<SocketConf>,
    /// Regex server names, by index (see [`AddressConf::names`]).
    pub server_regexes: Vec<NamedCaptures>,
    /// How many named variable slots a request may need.
    pub named_len: usize,
    /// Each named variable's name, and whether `set` declares it, by slot.
    pub named_variables: Vec<(Box<str>, bool)>,
    /// Some template uses `$realpath_root`.
    pub uses_realpath_root: bool,
    /// The `map` and `split_clients` variables, by named slot.
    pub maps: crate::kernel::map::Maps,
    /// How many buffered access logs a worker keeps.
    pub access_log_buffers: usize,
    /// Warnings to log once the configuration is in use.
    pub warnings: Vec<conf::ConfError>,
    /// Upstream groups, by [`crate::kernel::upstream::UpstreamId`].
    pub upstreams: Vec<crate::kernel::upstream::Group>,
    /// Each pool `aio threads=NAME` names without variables, where it was named: the
    /// server checks them against the `thread_pool` directives.
    pub thread_pools_used: Vec<(String, conf::Span)>,
    /// `proxy_cache_path` caches, by [`crate::modules::proxy::cache::settings::CacheZoneId`].
    pub cache_paths: Vec<crate::modules::proxy::cache::settings::CachePath>,
    /// The `limit_req_zone` and `limit_conn_zone` zones, by index.
    pub limit_zones: crate::modules::limit::settings::LimitZones,
    /// The certificates whose OCSP responses the workers fetch (`ssl_stapling on`).
    pub staplings: Vec<std::sync::Arc<shared::stapling::Stapling>>,
}

impl HttpConf {
    /// The HTTP side of a configuration without an `http` block: nothing to listen on.
    pub fn empty(env: &MergeEnv) -> HttpConf {
        HttpConf {
            main: crate::kernel::core::CoreMainConf::default().resolve(env),
            v2: crate::modules::v2::settings::Http2MainConf::default().resolve(env),
            charset_maps: crate::modules::charset::settings::CharsetMaps::default(),
            servers: Vec::new(),
            locations: Vec::new(),
            sockets: Vec::new(),
            server_regexes: Vec::new(),
            named_len: 0,
            named_variables: Vec::new(),
            uses_realpath_root: false,
            maps: crate::kernel::map::Maps::default(),
            access_log_buffers: 0,
            warnings: Vec::new(),
            upstreams: Vec::new(),
            thread_pools_used: Vec::new(),
            cache_paths: Vec::new(),
            limit_zones: crate::modules::limit::settings::LimitZones::default(),
            staplings: Vec::new(),
        }
    }

    /// The group a `proxy_pass` with variables names: an `upstream` block by name (no
    /// port given), or the group another `proxy_pass` made for the same host and port.
    pub(crate) fn find_upstream(
        &self,
        host: &str,
        port: Option<u16>,
        default_port: u16,
    ) -> Option<(
        crate::kernel::upstream::UpstreamId,
        &crate::kernel::upstream::Group,
    )> {
        self.upstreams
            .iter()
            .enumerate()
            .find(|(_, group)| {
                group.name.eq_ignore_ascii_case(host)
                    && if group.implicit {
                        group.port.unwrap_or(80) == port.unwrap_or(default_port)
                    } else {
                        port.is_none()
                    }
            })
            .map(|(index, group)| (crate::kernel::upstream::UpstreamId(index as u32), group))
    }

    pub fn location(&self, id: LocationId) -> &Location {
        &self.locations[id.0 as usize]
    }

    pub fn server(&self, id: ServerId) -> &Server {
        &self.servers[id.0 as usize]
    }
}
