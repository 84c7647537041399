//! What the proxy's directives set: the data other modules may read.

use std::sync::Arc;
use std::time::Duration;

use conf::Span;
use shared::resolver::ResolverConf;

use crate::kernel::core::TempPath;
use crate::kernel::upstream::UpstreamId;
use crate::kernel::variables::HttpTemplate;
use crate::modules::proxy::gateway::settings::Protocol;
use crate::settings;

/// `proxy_set_header NAME VALUE`; an empty value removes the field.
#[derive(Clone, Debug)]
pub struct SetHeader {
    pub name: Box<[u8]>,
    pub value: HttpTemplate,
}

/// `proxy_redirect`.
#[derive(Clone, Debug)]
pub enum Redirect {
    Off,
    /// Rules in order; `default` is expanded when the request is proxied (it depends on
    /// the location and the `proxy_pass` URL).
    Rules(Vec<RedirectRule>),
}

#[derive(Clone, Debug)]
pub enum RedirectRule {
    Default,
    /// A literal or templated prefix to replace.
    Prefix {
        from: HttpTemplate,
        to: HttpTemplate,
    },
    /// `~` / `~*` regex, the replacement may use its captures.
    Regex {
        regex: Arc<shared::regex::Regex>,
        to: HttpTemplate,
    },
}

/// `proxy_cookie_domain` / `proxy_cookie_path`.
#[derive(Clone, Debug)]
pub enum CookieRewrite {
    Off,
    Rules(Vec<RedirectRule>),
}

/// `proxy_cookie_flags`: rules in order, the first whose name matches applies.
#[derive(Clone, Debug)]
pub enum CookieFlags {
    Off,
    Rules(Vec<CookieFlagRule>),
}

#[derive(Clone, Debug)]
pub struct CookieFlagRule {
    pub name: CookieName,
    /// `secure`, `httponly`, `samesite[=...]` and their `no` forms, possibly variables.
    pub flags: Vec<HttpTemplate>,
}

#[derive(Clone, Debug)]
pub enum CookieName {
    /// A name, possibly with variables (an empty value matches nothing).
    Name(HttpTemplate),
    /// `~regex`, matched without regard to case.
    Regex(Arc<shared::regex::Regex>),
}

/// Conditions under which the next upstream server is tried (`proxy_next_upstream`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NextUpstream(pub u16);

impl NextUpstream {
    pub(crate) const ERROR: u16 = 1 << 0;
    pub(crate) const TIMEOUT: u16 = 1 << 1;
    pub(crate) const INVALID_HEADER: u16 = 1 << 2;
    pub(crate) const HTTP_500: u16 = 1 << 3;
    pub(crate) const HTTP_502: u16 = 1 << 4;
    pub(crate) const HTTP_503: u16 = 1 << 5;
    pub(crate) const HTTP_504: u16 = 1 << 6;
    pub(crate) const HTTP_403: u16 = 1 << 7;
    pub(crate) const HTTP_404: u16 = 1 << 8;
    pub(crate) const HTTP_429: u16 = 1 << 9;
    pub(crate) const NON_IDEMPOTENT: u16 = 1 << 10;
    pub const OFF: u16 = 1 << 11;

    pub fn has(self, flag: u16) -> bool {
        self.0 & flag != 0
    }

    /// The flag a response status selects, if any.
    pub(crate) fn for_status(status: u16) -> Option<u16> {
        Some(match status {
            500 => Self::HTTP_500,
            502 => Self::HTTP_502,
            503 => Self::HTTP_503,
            504 => Self::HTTP_504,
            403 => Self::HTTP_403,
            404 => Self::HTTP_404,
            429 => Self::HTTP_429,
            _ => return None,
        })
    }
}

/// `proxy_ignore_headers`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IgnoreHeaders(pub u16);

impl IgnoreHeaders {
    pub(crate) const X_ACCEL_REDIRECT: u16 = 1 << 0;
    pub(crate) const X_ACCEL_EXPIRES: u16 = 1 << 1;
    pub(crate) const X_ACCEL_LIMIT_RATE: u16 = 1 << 2;
    pub(crate) const X_ACCEL_BUFFERING: u16 = 1 << 3;
    pub(crate) const X_ACCEL_CHARSET: u16 = 1 << 4;
    pub const EXPIRES: u16 = 1 << 5;
    pub(crate) const CACHE_CONTROL: u16 = 1 << 6;
    pub(crate) const SET_COOKIE: u16 = 1 << 7;
    pub(crate) const VARY: u16 = 1 << 8;
    /// Portico's: `CDN-Cache-Control` (RFC 9213), which the cache honours by default.
    pub(crate) const CDN_CACHE_CONTROL: u16 = 1 << 9;

    pub fn has(self, flag: u16) -> bool {
        self.0 & flag != 0
    }
}

/// `proxy_buffers NUMBER SIZE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffers {
    pub count: u64,
    pub size: u64,
}

settings! {
    /// Proxy settings per location.
    pub struct ProxyConf => Proxy (env) {
        /// `proxy_pass`: inherited only by the `if` and `limit_except` blocks of its
        /// location, as nginx makes it the location's handler.
        pass: Option<Arc<ProxyPass>> = None,
        /// `proxy_http_version 1.1` (or `2`).
        http_11: bool = false,
        /// `proxy_http_version 2`: requests go as HTTP/2 streams (set with `http_11`, by
        /// the one directive, so that both come from the same level).
        http_2: bool = false,
        /// `proxy_set_header`, as written at the nearest level that has any.
        set_header: Vec<SetHeader> = Vec::new(),
        pass_request_headers: bool = true,
        pass_request_body: bool = true,
        set_body: Option<HttpTemplate> = None,
        method: Option<HttpTemplate> = None,
        request_buffering: bool = true,
        connect_timeout: Duration = Duration::from_secs(60),
        send_timeout: Duration = Duration::from_secs(60),
        read_timeout: Duration = Duration::from_secs(60),
        /// `proxy_socket_keepalive`: `SO_KEEPALIVE` on upstream connections.
        socket_keepalive: bool = false,
        /// `tunnel_socket_rcvbuf`, `tunnel_socket_sndbuf`: the upstream socket's
        /// `SO_RCVBUF` and `SO_SNDBUF`; 0 leaves the system's.
        socket_rcvbuf: u64 = 0,
        socket_sndbuf: u64 = 0,
        /// `proxy_bind ADDRESS`; `None` is `off`.
        bind: Option<HttpTemplate> = None,
        buffering: bool = true,
        buffers: Buffers = Buffers { count: 8, size: 4096 },
        buffer_size: u64 = 4096,
        busy_buffers_size: Option<u64> = None,
        max_temp_file_size: u64 = 1024 * 1024 * 1024,
        temp_file_write_size: Option<u64> = None,
        /// Lowercased names.
        hide_header: Vec<Box<[u8]>> = Vec::new(),
        pass_header: Vec<Box<[u8]>> = Vec::new(),
        ignore_headers: IgnoreHeaders = IgnoreHeaders::default(),
        redirect: Redirect = Redirect::Rules(vec![RedirectRule::Default]),
        intercept_errors: bool = false,
        cookie_domain: CookieRewrite = CookieRewrite::Off,
        cookie_path: CookieRewrite = CookieRewrite::Off,
        cookie_flags: CookieFlags = CookieFlags::Off,
        /// `proxy_limit_rate`: bytes per second read from the upstream; 0 is no limit.
        /// Variables are evaluated once the upstream's response head is in
        /// (`$upstream_http_*`).
        limit_rate: crate::kernel::core::SizeValue = crate::kernel::core::SizeValue::Fixed(0),
        /// `proxy_ignore_client_abort`: a client that closes does not end the try.
        ignore_client_abort: bool = false,
        /// `proxy_pass_trailers`: an HTTP/2 upstream's trailers go on to the client
        /// (gRPC's always do).
        pass_trailers: bool = false,
        next_upstream: NextUpstream = NextUpstream(NextUpstream::ERROR | NextUpstream::TIMEOUT),
        next_upstream_tries: u64 = 0,
        next_upstream_timeout: Duration = Duration::ZERO,
        /// `resolver`: name servers for `proxy_pass` with variables.
        resolver: Option<Arc<ResolverConf>> = None,
        resolver_timeout: Duration = Duration::from_secs(30),
        /// `proxy_temp_path`: where buffered upstream responses spill to disk.
        proxy_temp_path: TempPath = TempPath { path: env.prefix.join("proxy_temp"), levels: Vec::new() },
        /// What the upstream speaks: set by the content handler's module, no directive.
        protocol: Protocol = Protocol::Http,
    }
}

impl Proxy {
    /// Whether requests go upstream as HTTP/2 streams: gRPC's, and `proxy_http_version 2`.
    pub(crate) fn over_h2(&self) -> bool {
        self.protocol == Protocol::Grpc || self.http_2
    }
}

/// Where a location proxies to.
#[derive(Debug)]
pub enum ProxyPass {
    Static(Target),
    /// A URL with variables, parsed per request.
    Variables(HttpTemplate),
}

/// A parsed `proxy_pass` URL whose group is known at load.
#[derive(Debug)]
pub struct Target {
    /// The URL as written (`proxy_redirect default` replaces it).
    pub url: Box<str>,
    pub upstream: UpstreamId,
    /// `$proxy_host`: the host, with the port when one other than 80 was given.
    pub host: Box<[u8]>,
    /// `$proxy_port`.
    pub port: Box<[u8]>,
    /// The URI part (from the `/` on), if any: it replaces the location's prefix.
    pub uri: Option<Box<[u8]>>,
    /// `https://`: the upstream speaks TLS.
    pub tls: bool,
    pub span: Span,
}
