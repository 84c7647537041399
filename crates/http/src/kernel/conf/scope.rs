//! The scope structs directives fill: one per `http`, `server` and `location` level.

use conf::Span;

use crate::kernel::conf::MergeEnv;
use crate::kernel::conf::server_names::ServerName;
use crate::kernel::core::{CoreLocation, CoreLocationConf, CoreMainConf, CoreServerConf};
use crate::modules::access::settings::{Access, AccessConf};
use crate::modules::addition::settings::{Addition, AdditionConf};
use crate::modules::auth_basic::settings::{AuthBasic, AuthBasicConf};
use crate::modules::auth_request::settings::{AuthRequest, AuthRequestConf};
use crate::modules::browser::settings::{Browser, BrowserConf};
use crate::modules::charset::settings::{Charset, CharsetConf, CharsetMaps};
use crate::modules::dav::settings::{Dav, DavConf};
use crate::modules::gunzip::settings::{Gunzip, GunzipConf};
use crate::modules::gzip::settings::{Gzip, GzipConf};
use crate::modules::headers::settings::{Headers, HeadersConf};
use crate::modules::limit::settings::{Limit, LimitConf, LimitZones};
use crate::modules::log::settings::{AccessLog, AccessLogConf};
use crate::modules::mirror::settings::{Mirror, MirrorConf};
use crate::modules::observe::settings::{StatusZone, StatusZoneConf};
use crate::modules::proxy::cache::settings::{CachePath, ProxyCache, ProxyCacheConf};
use crate::modules::proxy::gateway::settings::{Gateway, GatewayScope, Protocol};
use crate::modules::proxy::settings::{Proxy, ProxyConf};
use crate::modules::random_index::settings::{RandomIndex, RandomIndexConf};
use crate::modules::realip::settings::{RealIp, RealIpConf};
use crate::modules::referer::settings::{Referer, RefererConf};
use crate::modules::rewrite::settings::{RewriteConf, RewriteSettings, Script};
use crate::modules::secure_link::settings::{SecureLink, SecureLinkConf};
use crate::modules::ssi::settings::{Ssi, SsiConf};
use crate::modules::static_files::settings::{Static, StaticConf, TryFilesSetting};
use crate::modules::sub_filter::settings::{SubFilter, SubFilterConf};
use crate::modules::userid::settings::{UserId, UserIdConf};
use crate::modules::v2::settings::{
    Http2Location, Http2LocationConf, Http2MainConf, Http2ServerConf,
};
use shared::listen::ListenSpec;

/// What the `http` block sets for itself.
#[derive(Debug, Default)]
pub struct MainScope {
    pub core: CoreMainConf,
    pub map: crate::kernel::map::MapConf,
    /// `charset_map` tables.
    pub charset: CharsetMaps,
    /// `proxy_cache_path`, in order.
    pub cache_paths: Vec<CachePath>,
    /// `limit_req_zone` and `limit_conn_zone`.
    pub limit: LimitZones,
    pub v2: Http2MainConf,
}

/// What one level sets of the per-server settings (the `http` level has one too).
#[derive(Debug, Default)]
pub struct ServerScope {
    pub core: CoreServerConf,
    pub ssl: crate::kernel::ssl::settings::SslServerConf,
    pub v2: Http2ServerConf,
    pub v3: crate::modules::v3::settings::Http3ServerConf,
    pub listens: Vec<ListenSpec>,
    /// Each name with the text it was written as (`$server_name` is the first one).
    pub names: Vec<(ServerName, String)>,
    /// Whether `server_name` appeared (a server without it answers to `""`).
    pub has_server_name: bool,
    pub span: Option<Span>,
}

/// What one level sets of the per-location settings.
#[derive(Debug, Default)]
pub struct LocationScope {
    pub core: CoreLocationConf,
    pub access: AccessConf,
    pub auth_basic: AuthBasicConf,
    pub realip: RealIpConf,
    pub auth_request: AuthRequestConf,
    pub headers: HeadersConf,
    pub access_log: AccessLogConf,
    pub static_files: StaticConf,
    pub proxy: ProxyConf,
    pub proxy_cache: ProxyCacheConf,
    pub proxy_ssl: crate::modules::proxy::ssl::settings::ProxySslConf,
    /// `fastcgi_*`, `uwsgi_*`, `scgi_*`: each module's own settings and its copies of the
    /// proxy's.
    pub fastcgi: GatewayScope,
    pub uwsgi: GatewayScope,
    pub scgi: GatewayScope,
    /// `memcached_*`: the same parts; its cache and TLS settings stay unset.
    pub memcached: GatewayScope,
    /// `grpc_*`: the same parts, with `grpc_ssl_*`; its cache settings stay unset.
    pub grpc: GatewayScope,
    /// `tunnel_*`: the same parts; only its copy of the proxy's settings is set.
    pub tunnel: GatewayScope,
    pub rewrite: RewriteConf,
    pub charset: CharsetConf,
    pub gzip: GzipConf,
    pub gunzip: GunzipConf,
    pub ssi: SsiConf,
    pub addition: AdditionConf,
    pub mirror: MirrorConf,
    pub sub_filter: SubFilterConf,
    pub referer: RefererConf,
    pub userid: UserIdConf,
    pub browser: BrowserConf,
    pub random_index: RandomIndexConf,
    pub dav: DavConf,
    pub secure_link: SecureLinkConf,
    pub status_zone: StatusZoneConf,
    pub limit: LimitConf,
    pub v2: Http2LocationConf,
    /// Not inherited: each level runs its own script.
    pub script: Script,
    /// `try_files`: not inherited, as in nginx.
    pub try_files: TryFilesSetting,
    /// Set by the directive that makes the location a module's own; inherited only by the
    /// location's `if` and `limit_except` blocks.
    pub content: Option<Content>,
}

/// The handler of a location's content phase: data set at load by the directive that makes
/// the location a module's own (`proxy_pass`), as nginx's setters set a location's handler;
/// the static handler otherwise. A new content module adds a variant here and its arm in
/// the phase runner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Content {
    /// `root`/`alias`, `index`, `autoindex`, `try_files`.
    #[default]
    Static,
    /// `proxy_pass`.
    Proxy,
    /// `fastcgi_pass`, `uwsgi_pass`, `scgi_pass`, `memcached_pass`, `grpc_pass`.
    Gateway(Protocol),
    /// `stub_status`.
    StubStatus,
    /// `empty_gif`.
    EmptyGif,
    /// `flv`.
    Flv,
    /// `portico_metrics`.
    Metrics,
    /// `api`.
    Api,
    /// `portico_status_page`.
    StatusPage,
}

impl Content {
    /// `proxy_pass` or a gateway's `*_pass`: the handler goes to an upstream.
    pub fn is_upstream(self) -> bool {
        matches!(self, Content::Proxy | Content::Gateway(_))
    }
}

/// A location's settings after merge and defaults.
#[derive(Debug)]
pub struct LocationSettings {
    pub core: CoreLocation,
    pub access: Access,
    pub auth_basic: AuthBasic,
    pub realip: RealIp,
    pub auth_request: AuthRequest,
    pub headers: Headers,
    pub access_log: AccessLog,
    pub static_files: Static,
    pub proxy: Proxy,
    pub proxy_cache: ProxyCache,
    pub proxy_ssl: crate::modules::proxy::ssl::settings::ProxySsl,
    /// The gateway module's own settings: the content handler's, else FastCGI's (for
    /// `$fastcgi_script_name`).
    pub gateway: Gateway,
    pub rewrite: RewriteSettings,
    pub charset: Charset,
    pub gzip: Gzip,
    pub gunzip: Gunzip,
    pub ssi: Ssi,
    pub addition: Addition,
    pub mirror: Mirror,
    pub sub_filter: SubFilter,
    pub referer: Referer,
    pub userid: UserId,
    pub browser: Browser,
    pub random_index: RandomIndex,
    pub dav: Dav,
    pub secure_link: SecureLink,
    pub status_zone: StatusZone,
    pub limit: Limit,
    pub v2: Http2Location,
    pub script: Script,
    pub try_files: TryFilesSetting,
    pub content: Content,
}

impl LocationScope {
    /// Fills what this level left unset from the enclosing level, module by module.
    pub(crate) fn merge_from(&mut self, parent: &LocationScope) {
        self.core.merge_from(&parent.core);
        self.access.merge_from(&parent.access);
        self.auth_basic.merge_from(&parent.auth_basic);
        self.realip.merge_from(&parent.realip);
        self.auth_request.merge_from(&parent.auth_request);
        self.headers.merge_from(&parent.headers);
        self.access_log.merge_from(&parent.access_log);
        self.static_files.merge_from(&parent.static_files);
        self.proxy.merge_from(&parent.proxy);
        self.proxy_cache.merge_from(&parent.proxy_cache);
        self.proxy_ssl.merge_from(&parent.proxy_ssl);
        self.fastcgi.merge_from(&parent.fastcgi);
        self.uwsgi.merge_from(&parent.uwsgi);
        self.scgi.merge_from(&parent.scgi);
        self.memcached.merge_from(&parent.memcached);
        self.grpc.merge_from(&parent.grpc);
        self.tunnel.merge_from(&parent.tunnel);
        self.rewrite.merge_from(&parent.rewrite);
        self.charset.merge_from(&parent.charset);
        self.gzip.merge_from(&parent.gzip);
        self.gunzip.merge_from(&parent.gunzip);
        self.ssi.merge_from(&parent.ssi);
        self.addition.merge_from(&parent.addition);
        self.mirror.merge_from(&parent.mirror);
        self.sub_filter.merge_from(&parent.sub_filter);
        self.referer.merge_from(&parent.referer);
        self.userid.merge_from(&parent.userid);
        self.browser.merge_from(&parent.browser);
        self.random_index.merge_from(&parent.random_index);
        self.dav.merge_from(&parent.dav);
        self.secure_link.merge_from(&parent.secure_link);
        self.status_zone.merge_from(&parent.status_zone);
        self.limit.merge_from(&parent.limit);
        self.v2.merge_from(&parent.v2);
        if self.content.is_none() {
            self.content = parent.content;
        }
    }

    /// A copy of the inheritable settings, for a nested level to merge from. The script is
    /// not inherited.
    pub(crate) fn inheritable(&self) -> LocationScope {
        LocationScope {
            core: self.core.clone(),
            access: self.access.clone(),
            auth_basic: self.auth_basic.clone(),
            realip: self.realip.clone(),
            auth_request: self.auth_request.clone(),
            headers: self.headers.clone(),
            access_log: self.access_log.clone(),
            static_files: self.static_files.clone(),
            proxy: self.proxy.clone(),
            proxy_cache: self.proxy_cache.clone(),
            proxy_ssl: self.proxy_ssl.clone(),
            fastcgi: self.fastcgi.clone(),
            uwsgi: self.uwsgi.clone(),
            scgi: self.scgi.clone(),
            memcached: self.memcached.clone(),
            grpc: self.grpc.clone(),
            tunnel: self.tunnel.clone(),
            rewrite: self.rewrite.clone(),
            charset: self.charset.clone(),
            gzip: self.gzip.clone(),
            gunzip: self.gunzip.clone(),
            ssi: self.ssi.clone(),
            addition: self.addition.clone(),
            mirror: self.mirror.clone(),
            sub_filter: self.sub_filter.clone(),
            referer: self.referer.clone(),
            userid: self.userid.clone(),
            browser: self.browser.clone(),
            random_index: self.random_index.clone(),
            dav: self.dav.clone(),
            secure_link: self.secure_link.clone(),
            status_zone: self.status_zone.clone(),
            limit: self.limit.clone(),
            v2: self.v2.clone(),
            script: Script::default(),
            try_files: None,
            content: self.content,
        }
    }

    /// The gateway module whose handler the location has, if one has.
    fn gateway_content(&self) -> Option<(Protocol, &GatewayScope)> {
        match self.content {
            Some(Content::Gateway(protocol)) => Some((protocol, self.gateway(protocol))),
            _ => None,
        }
    }

    /// A gateway module's settings at this level.
    pub(crate) fn gateway(&self, protocol: Protocol) -> &GatewayScope {
        match protocol {
            Protocol::Fastcgi | Protocol::Http => &self.fastcgi,
            Protocol::Uwsgi => &self.uwsgi,
            Protocol::Scgi => &self.scgi,
            Protocol::Memcached => &self.memcached,
            Protocol::Grpc => &self.grpc,
            Protocol::Tunnel => &self.tunnel,
        }
    }

    pub(crate) fn gateway_mut(&mut self, protocol: Protocol) -> &mut GatewayScope {
        match protocol {
            Protocol::Fastcgi | Protocol::Http => &mut self.fastcgi,
            Protocol::Uwsgi => &mut self.uwsgi,
            Protocol::Scgi => &mut self.scgi,
            Protocol::Memcached => &mut self.memcached,
            Protocol::Grpc => &mut self.grpc,
            Protocol::Tunnel => &mut self.tunnel,
        }
    }

    /// Runs a proxy directive's setter on a gateway module's copy of the proxy's settings
    /// (`fastcgi_buffers` is `proxy_buffers` for FastCGI): the copies trade places with
    /// the proxy's for the call.
    pub(crate) fn as_gateway<T>(
        &mut self,
        protocol: Protocol,
        set: impl FnOnce(&mut LocationScope) -> T,
    ) -> T {
        self.trade_with_gateway(protocol);
        let result = set(self);
        self.trade_with_gateway(protocol);
        result
    }

    fn trade_with_gateway(&mut self, protocol: Protocol) {
        let gateway = match protocol {
            Protocol::Fastcgi | Protocol::Http => &mut self.fastcgi,
            Protocol::Uwsgi => &mut self.uwsgi,
            Protocol::Scgi => &mut self.scgi,
            Protocol::Memcached => &mut self.memcached,
            Protocol::Grpc => &mut self.grpc,
            Protocol::Tunnel => &mut self.tunnel,
        };
        std::mem::swap(&mut self.proxy, &mut gateway.upstream);
        std::mem::swap(&mut self.proxy_cache, &mut gateway.cache);
        std::mem::swap(&mut self.proxy_ssl, &mut gateway.ssl);
    }

    pub fn resolve(&self, env: &MergeEnv) -> LocationSettings {
        LocationSettings {
            core: self.core.resolve(env),
            access: self.access.resolve(env),
            auth_basic: self.auth_basic.resolve(env),
            realip: self.realip.resolve(env),
            auth_request: self.auth_request.resolve(env),
            headers: self.headers.resolve(env),
            access_log: self.access_log.resolve(env),
            static_files: self.static_files.resolve(env),
            proxy: match self.gateway_content() {
                Some((protocol, gateway)) => {
                    let mut proxy = gateway.resolve_upstream(protocol, env);
                    // `resolver` is the core module's in nginx: a gateway with variables
                    // uses it too.
                    if let Some(resolver) = &self.proxy.resolver {
                        proxy.resolver.clone_from(resolver);
                    }
                    if let Some(timeout) = self.proxy.resolver_timeout {
                        proxy.resolver_timeout = timeout;
                    }
                    proxy
                }
                None => self.proxy.resolve(env),
            },
            proxy_cache: match self.gateway_content() {
                // `slice` is its own module's, whichever protocol the location passes to.
                Some((_, gateway)) => ProxyCache {
                    slice: self.proxy_cache.slice.unwrap_or_default(),
                    ..gateway.cache.resolve(env)
                },
                None => self.proxy_cache.resolve(env),
            },
            proxy_ssl: match self.gateway_content() {
                Some((_, gateway)) => gateway.ssl.resolve(env),
                None => self.proxy_ssl.resolve(env),
            },
            gateway: self
                .gateway_content()
                .map_or(&self.fastcgi, |(_, gateway)| gateway)
                .own
                .resolve(env),
            rewrite: self.rewrite.resolve(env),
            charset: self.charset.resolve(env),
            gzip: self.gzip.resolve(env),
            gunzip: self.gunzip.resolve(env),
            ssi: self.ssi.resolve(env),
            addition: self.addition.resolve(env),
            mirror: self.mirror.resolve(env),
            sub_filter: self.sub_filter.resolve(env),
            referer: self.referer.resolve(env),
            userid: self.userid.resolve(env),
            browser: self.browser.resolve(env),
            random_index: self.random_index.resolve(env),
            dav: self.dav.resolve(env),
            secure_link: self.secure_link.resolve(env),
            status_zone: self.status_zone.resolve(env),
            limit: self.limit.resolve(env),
            v2: self.v2.resolve(env),
            script: self.script.clone(),
            try_files: self.try_files.clone(),
            content: self.content.unwrap_or_default(),
        }
    }
}
