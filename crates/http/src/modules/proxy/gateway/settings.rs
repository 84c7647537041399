//! What the gateway modules' own directives set; the settings they share with the proxy
//! are [`crate::modules::proxy::ProxyConf`] and
//! [`crate::modules::proxy::cache::settings::ProxyCacheConf`].

use std::sync::Arc;

use crate::kernel::conf::MergeEnv;
use crate::kernel::variables::HttpTemplate;
use crate::modules::proxy::cache::settings::ProxyCacheConf;
use crate::modules::proxy::settings::{Proxy, ProxyConf};
use crate::modules::proxy::ssl::settings::ProxySslConf;
use crate::settings;
use shared::regex::Regex;

/// The protocol an upstream speaks: HTTP (`proxy_pass`) or one of the gateways'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Http,
    Fastcgi,
    Uwsgi,
    Scgi,
    /// `memcached_pass`: a `get` per request, the value as the body.
    Memcached,
    /// `grpc_pass`: one HTTP/2 stream per request (`http2::client`).
    Grpc,
    /// `tunnel_pass`: a CONNECT request's TCP connection, nothing sent before the relay.
    Tunnel,
}

impl Protocol {
    /// The name nginx's messages and `upstream: "..."` use (`fastcgi://127.0.0.1:9000`).
    pub fn scheme(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Fastcgi => "fastcgi",
            Protocol::Uwsgi => "uwsgi",
            Protocol::Scgi => "scgi",
            Protocol::Memcached => "memcached",
            Protocol::Grpc => "grpc",
            Protocol::Tunnel => "tunnel",
        }
    }

    /// The directive name prefix (`fastcgi_`), and the default temp directory's name.
    pub fn prefix(self) -> &'static str {
        match self {
            Protocol::Http => "proxy",
            other => other.scheme(),
        }
    }
}

/// `fastcgi_param NAME VALUE [if_not_empty]`.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: Box<[u8]>,
    pub value: HttpTemplate,
    /// `if_not_empty`: an empty value is not sent.
    pub if_not_empty: bool,
}

settings! {
    /// A gateway module's own settings per location.
    pub struct GatewayConf => Gateway (env) {
        /// `fastcgi_param`, as written at the nearest level that has any.
        params: Arc<[Param]> = Arc::from(Vec::new()),
        /// `fastcgi_split_path_info`: a regex with two captures, the script and the path
        /// info.
        split_path_info: Option<Arc<Regex>> = None,
        /// `fastcgi_index`: appended to a URI that ends with `/` in `$fastcgi_script_name`.
        index: Option<Box<[u8]>> = None,
        /// `fastcgi_keep_conn`: the application keeps the connection for the next request.
        keep_conn: bool = false,
        /// `fastcgi_catch_stderr`: stderr holding one of these strings before the head
        /// makes the try fail as an invalid head.
        catch_stderr: Vec<Box<[u8]>> = Vec::new(),
        /// `uwsgi_modifier1`, `uwsgi_modifier2`.
        modifier1: u8 = 0,
        modifier2: u8 = 0,
        /// `memcached_gzip_flag`: a value whose flags have one of these bits set is
        /// answered with `Content-Encoding: gzip`; 0 is off.
        gzip_flag: u32 = 0,
        /// `$memcached_key`, as `memcached_pass` compiled it.
        key: Option<HttpTemplate> = None,
    }
}

/// What one level sets for one gateway module: its own settings, and its copies of the
/// proxy's and the cache's.
#[derive(Clone, Debug, Default)]
pub struct GatewayScope {
    pub own: GatewayConf,
    pub upstream: ProxyConf,
    pub cache: ProxyCacheConf,
    /// `uwsgi_ssl_*`, `grpc_ssl_*` (the others have no TLS).
    pub ssl: ProxySslConf,
}

impl GatewayScope {
    pub(crate) fn merge_from(&mut self, parent: &GatewayScope) {
        self.own.merge_from(&parent.own);
        self.upstream.merge_from(&parent.upstream);
        self.cache.merge_from(&parent.cache);
        self.ssl.merge_from(&parent.ssl);
    }

    /// The proxy settings a location of this module runs with: its `*_temp_path` defaults
    /// to `PREFIX/fastcgi_temp` (and its siblings).
    pub(crate) fn resolve_upstream(&self, protocol: Protocol, env: &MergeEnv) -> Proxy {
        let mut proxy = self.upstream.resolve(env);
        // memcached, gRPC and the tunnel write no temporary file: they keep the proxy's
        // default path.
        if self.upstream.proxy_temp_path.is_none()
            && !matches!(
                protocol,
                Protocol::Memcached | Protocol::Grpc | Protocol::Tunnel
            )
        {
            proxy.proxy_temp_path.path = env.prefix.join(format!("{}_temp", protocol.prefix()));
        }
        proxy.protocol = protocol;
        if protocol == Protocol::Memcached {
            // nginx's memcached module sends no body, and passes the value on as it
            // arrives, through its one buffer (no temp files).
            proxy.pass_request_body = false;
            proxy.buffering = false;
        }
        if protocol == Protocol::Grpc {
            // nginx's grpc module passes the request body as it arrives and the response
            // as it comes (streams both ways), and speaks HTTP/2 whatever the version.
            proxy.request_buffering = false;
            proxy.buffering = false;
            proxy.http_11 = true;
            proxy.pass_trailers = true;
        }
        if protocol == Protocol::Tunnel {
            // A tunnel has no body of its own to buffer: bytes go both ways as they come.
            proxy.request_buffering = false;
            proxy.buffering = false;
        }
        // No `*_redirect` for gateways: `Location` is passed as it came.
        proxy.redirect = crate::modules::proxy::Redirect::Off;
        proxy
    }
}
