//! The proxy module's directive table.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{
    HttpDirective, LoadContext, LocationScope, gateway_directive, location_directive,
};
use crate::kernel::core::directives::{flag, invalid_value, size, size_value, time};
use crate::modules::proxy::gateway::settings::Protocol;
use crate::modules::proxy::pass::load_target;
use crate::modules::proxy::settings::ProxyPass;
use crate::modules::proxy::{
    Buffers, CookieRewrite, IgnoreHeaders, NextUpstream, Redirect, RedirectRule, SetHeader,
};
use crate::set_once;
use shared::regex::Regex;

const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION;

mod grpc;
pub use grpc::GRPC_DIRECTIVES;

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive(
        "proxy_pass",
        Contexts::LOCATION
            .with(Contexts::LOCATION_IF)
            .with(Contexts::LIMIT_EXCEPT),
        Arity::TAKE1,
        set_proxy_pass,
    ),
    location_directive(
        "proxy_http_version",
        ANY_LEVEL,
        Arity::TAKE1,
        set_http_version,
    ),
    location_directive("proxy_set_header", ANY_LEVEL, Arity::TAKE2, set_set_header),
    location_directive(
        "proxy_pass_request_headers",
        ANY_LEVEL,
        Arity::FLAG,
        set_pass_request_headers,
    ),
    location_directive(
        "proxy_pass_request_body",
        ANY_LEVEL,
        Arity::FLAG,
        set_pass_request_body,
    ),
    location_directive("proxy_set_body", ANY_LEVEL, Arity::TAKE1, set_set_body),
    location_directive("proxy_method", ANY_LEVEL, Arity::TAKE1, set_method),
    location_directive(
        "proxy_request_buffering",
        ANY_LEVEL,
        Arity::FLAG,
        set_request_buffering,
    ),
    location_directive(
        "proxy_connect_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        set_connect_timeout,
    ),
    location_directive(
        "proxy_send_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        set_send_timeout,
    ),
    location_directive(
        "proxy_read_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        set_read_timeout,
    ),
    location_directive("proxy_bind", ANY_LEVEL, Arity::TAKE12, set_bind),
    location_directive("proxy_buffering", ANY_LEVEL, Arity::FLAG, set_buffering),
    location_directive("proxy_buffers", ANY_LEVEL, Arity::TAKE2, set_buffers),
    location_directive(
        "proxy_buffer_size",
        ANY_LEVEL,
        Arity::TAKE1,
        set_buffer_size,
    ),
    location_directive(
        "proxy_busy_buffers_size",
        ANY_LEVEL,
        Arity::TAKE1,
        set_busy_buffers_size,
    ),
    location_directive(
        "proxy_max_temp_file_size",
        ANY_LEVEL,
        Arity::TAKE1,
        set_max_temp_file_size,
    ),
    location_directive(
        "proxy_temp_file_write_size",
        ANY_LEVEL,
        Arity::TAKE1,
        set_temp_file_write_size,
    ),
    location_directive(
        "proxy_temp_path",
        ANY_LEVEL,
        Arity::TAKE1234,
        set_proxy_temp_path,
    ),
    location_directive(
        "proxy_hide_header",
        ANY_LEVEL,
        Arity::TAKE1,
        set_hide_header,
    ),
    location_directive(
        "proxy_pass_header",
        ANY_LEVEL,
        Arity::TAKE1,
        set_pass_header,
    ),
    location_directive(
        "proxy_ignore_headers",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_ignore_headers,
    ),
    location_directive("proxy_redirect", ANY_LEVEL, Arity::TAKE12, set_redirect),
    location_directive(
        "proxy_intercept_errors",
        ANY_LEVEL,
        Arity::FLAG,
        set_intercept_errors,
    ),
    location_directive(
        "proxy_cookie_domain",
        ANY_LEVEL,
        Arity::TAKE12,
        set_cookie_domain,
    ),
    location_directive(
        "proxy_cookie_path",
        ANY_LEVEL,
        Arity::TAKE12,
        set_cookie_path,
    ),
    location_directive(
        "proxy_cookie_flags",
        ANY_LEVEL,
        Arity::TAKE1234,
        set_cookie_flags,
    ),
    location_directive("proxy_limit_rate", ANY_LEVEL, Arity::TAKE1, set_limit_rate),
    location_directive(
        "proxy_next_upstream",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_next_upstream,
    ),
    location_directive(
        "proxy_next_upstream_tries",
        ANY_LEVEL,
        Arity::TAKE1,
        set_next_upstream_tries,
    ),
    location_directive(
        "proxy_next_upstream_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        set_next_upstream_timeout,
    ),
    location_directive("resolver", ANY_LEVEL, Arity::ONE_OR_MORE, set_resolver),
    location_directive(
        "resolver_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        set_resolver_timeout,
    ),
    location_directive(
        "proxy_headers_hash_max_size",
        ANY_LEVEL,
        Arity::TAKE1,
        accept_number,
    ),
    location_directive(
        "proxy_headers_hash_bucket_size",
        ANY_LEVEL,
        Arity::TAKE1,
        accept_size,
    ),
    location_directive(
        "proxy_ignore_client_abort",
        ANY_LEVEL,
        Arity::FLAG,
        set_ignore_client_abort,
    ),
    location_directive(
        "proxy_pass_trailers",
        ANY_LEVEL,
        Arity::FLAG,
        set_pass_trailers,
    ),
    location_directive(
        "proxy_socket_keepalive",
        ANY_LEVEL,
        Arity::FLAG,
        set_socket_keepalive,
    ),
];

/// The proxy directives the gateway modules have too, under their own prefix
/// (`fastcgi_buffers`), each filling that module's copy of the proxy's settings.
macro_rules! gateway_directives {
    ($prefix:literal, $protocol:expr) => {
        &[
            gateway_directive(
                concat!($prefix, "_bind"),
                $protocol,
                Arity::TAKE12,
                set_bind,
            ),
            gateway_directive(
                concat!($prefix, "_buffer_size"),
                $protocol,
                Arity::TAKE1,
                set_buffer_size,
            ),
            gateway_directive(
                concat!($prefix, "_buffering"),
                $protocol,
                Arity::FLAG,
                set_buffering,
            ),
            gateway_directive(
                concat!($prefix, "_buffers"),
                $protocol,
                Arity::TAKE2,
                set_buffers,
            ),
            gateway_directive(
                concat!($prefix, "_busy_buffers_size"),
                $protocol,
                Arity::TAKE1,
                set_busy_buffers_size,
            ),
            gateway_directive(
                concat!($prefix, "_connect_timeout"),
                $protocol,
                Arity::TAKE1,
                set_connect_timeout,
            ),
            gateway_directive(
                concat!($prefix, "_hide_header"),
                $protocol,
                Arity::TAKE1,
                set_hide_header,
            ),
            gateway_directive(
                concat!($prefix, "_ignore_client_abort"),
                $protocol,
                Arity::FLAG,
                set_ignore_client_abort,
            ),
            gateway_directive(
                concat!($prefix, "_ignore_headers"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_ignore_headers,
            ),
            gateway_directive(
                concat!($prefix, "_intercept_errors"),
                $protocol,
                Arity::FLAG,
                set_intercept_errors,
            ),
            gateway_directive(
                concat!($prefix, "_limit_rate"),
                $protocol,
                Arity::TAKE1,
                set_limit_rate,
            ),
            gateway_directive(
                concat!($prefix, "_max_temp_file_size"),
                $protocol,
                Arity::TAKE1,
                set_max_temp_file_size,
            ),
            gateway_directive(
                concat!($prefix, "_next_upstream"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_next_upstream,
            ),
            gateway_directive(
                concat!($prefix, "_next_upstream_timeout"),
                $protocol,
                Arity::TAKE1,
                set_next_upstream_timeout,
            ),
            gateway_directive(
                concat!($prefix, "_next_upstream_tries"),
                $protocol,
                Arity::TAKE1,
                set_next_upstream_tries,
            ),
            gateway_directive(
                concat!($prefix, "_pass_header"),
                $protocol,
                Arity::TAKE1,
                set_pass_header,
            ),
            gateway_directive(
                concat!($prefix, "_pass_request_body"),
                $protocol,
                Arity::FLAG,
                set_pass_request_body,
            ),
            gateway_directive(
                concat!($prefix, "_pass_request_headers"),
                $protocol,
                Arity::FLAG,
                set_pass_request_headers,
            ),
            gateway_directive(
                concat!($prefix, "_read_timeout"),
                $protocol,
                Arity::TAKE1,
                set_read_timeout,
            ),
            gateway_directive(
                concat!($prefix, "_request_buffering"),
                $protocol,
                Arity::FLAG,
                set_request_buffering,
            ),
            gateway_directive(
                concat!($prefix, "_send_timeout"),
                $protocol,
                Arity::TAKE1,
                set_send_timeout,
            ),
            gateway_directive(
                concat!($prefix, "_socket_keepalive"),
                $protocol,
                Arity::FLAG,
                set_socket_keepalive,
            ),
            gateway_directive(
                concat!($prefix, "_temp_file_write_size"),
                $protocol,
                Arity::TAKE1,
                set_temp_file_write_size,
            ),
            gateway_directive(
                concat!($prefix, "_temp_path"),
                $protocol,
                Arity::TAKE1234,
                set_proxy_temp_path,
            ),
        ]
    };
}

pub const FASTCGI_DIRECTIVES: &[HttpDirective] = gateway_directives!("fastcgi", Protocol::Fastcgi);
pub const UWSGI_DIRECTIVES: &[HttpDirective] = gateway_directives!("uwsgi", Protocol::Uwsgi);
pub const SCGI_DIRECTIVES: &[HttpDirective] = gateway_directives!("scgi", Protocol::Scgi);

/// The proxy directives the memcached module has too: it has no body to send, no head
/// to rewrite and no cache, so only the connection's and the tries' settings.
pub const MEMCACHED_DIRECTIVES: &[HttpDirective] = &[
    gateway_directive(
        "memcached_bind",
        Protocol::Memcached,
        Arity::TAKE12,
        set_bind,
    ),
    gateway_directive(
        "memcached_buffer_size",
        Protocol::Memcached,
        Arity::TAKE1,
        set_buffer_size,
    ),
    gateway_directive(
        "memcached_connect_timeout",
        Protocol::Memcached,
        Arity::TAKE1,
        set_connect_timeout,
    ),
    gateway_directive(
        "memcached_next_upstream_timeout",
        Protocol::Memcached,
        Arity::TAKE1,
        set_next_upstream_timeout,
    ),
    gateway_directive(
        "memcached_next_upstream_tries",
        Protocol::Memcached,
        Arity::TAKE1,
        set_next_upstream_tries,
    ),
    gateway_directive(
        "memcached_read_timeout",
        Protocol::Memcached,
        Arity::TAKE1,
        set_read_timeout,
    ),
    gateway_directive(
        "memcached_send_timeout",
        Protocol::Memcached,
        Arity::TAKE1,
        set_send_timeout,
    ),
    gateway_directive(
        "memcached_socket_keepalive",
        Protocol::Memcached,
        Arity::FLAG,
        set_socket_keepalive,
    ),
];

/// The proxy directives the tunnel module has too: the connection's, the relay's buffer
/// and timeouts, and the tries' limits (its `tunnel_next_upstream` is its own).
pub const TUNNEL_DIRECTIVES: &[HttpDirective] = &[
    gateway_directive("tunnel_bind", Protocol::Tunnel, Arity::TAKE12, set_bind),
    gateway_directive(
        "tunnel_buffer_size",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_buffer_size,
    ),
    gateway_directive(
        "tunnel_connect_timeout",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_connect_timeout,
    ),
    gateway_directive(
        "tunnel_next_upstream_timeout",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_next_upstream_timeout,
    ),
    gateway_directive(
        "tunnel_next_upstream_tries",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_next_upstream_tries,
    ),
    gateway_directive(
        "tunnel_read_timeout",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_read_timeout,
    ),
    gateway_directive(
        "tunnel_send_timeout",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_send_timeout,
    ),
    gateway_directive(
        "tunnel_socket_keepalive",
        Protocol::Tunnel,
        Arity::FLAG,
        set_socket_keepalive,
    ),
    gateway_directive(
        "tunnel_socket_rcvbuf",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_socket_rcvbuf,
    ),
    gateway_directive(
        "tunnel_socket_sndbuf",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_socket_sndbuf,
    ),
];

set_once!(
    set_socket_keepalive,
    LocationScope,
    proxy.socket_keepalive,
    flag
);
set_once!(set_socket_rcvbuf, LocationScope, proxy.socket_rcvbuf, size);
set_once!(set_socket_sndbuf, LocationScope, proxy.socket_sndbuf, size);
set_once!(
    set_pass_request_headers,
    LocationScope,
    proxy.pass_request_headers,
    flag
);
set_once!(
    set_pass_request_body,
    LocationScope,
    proxy.pass_request_body,
    flag
);
set_once!(
    set_request_buffering,
    LocationScope,
    proxy.request_buffering,
    flag
);
set_once!(set_buffering, LocationScope, proxy.buffering, flag);
set_once!(set_limit_rate, LocationScope, proxy.limit_rate, size_value);

/// `proxy_cookie_flags off | COOKIE [FLAG ...]`: rules accumulate at one level.
fn set_cookie_flags(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    use crate::modules::proxy::settings::{CookieFlagRule, CookieFlags, CookieName};
    let first = directive.arg(0);
    if first == "off" && directive.args.len() == 1 {
        if scope.proxy.cookie_flags.is_some() {
            return Err(context.duplicate(directive));
        }
        scope.proxy.cookie_flags = Some(CookieFlags::Off);
        return Ok(());
    }
    let name = match first.strip_prefix('~') {
        Some(pattern) => {
            let pattern = pattern.strip_prefix('*').unwrap_or(pattern);
            let regex = Regex::compile(pattern, true)
                .map_err(|error| ConfError::message(error.0, &directive.span))?;
            CookieName::Regex(Arc::new(regex))
        }
        None => CookieName::Name(context.template(first, &directive.span)?),
    };
    let mut flags = Vec::new();
    for argument in &directive.args[1..] {
        let text = argument.as_str();
        let template = context.template(text, &directive.span)?;
        if template.as_literal().is_some() && !crate::modules::proxy::cookie_flags::is_flag(text) {
            return Err(ConfError::message(
                format!("invalid parameter \"{text}\""),
                &directive.span,
            ));
        }
        flags.push(template);
    }
    let rule = CookieFlagRule { name, flags };
    match &mut scope.proxy.cookie_flags {
        Some(CookieFlags::Rules(rules)) => rules.push(rule),
        Some(CookieFlags::Off) => return Err(context.duplicate(directive)),
        slot => *slot = Some(CookieFlags::Rules(vec![rule])),
    }
    Ok(())
}
set_once!(
    set_ignore_client_abort,
    LocationScope,
    proxy.ignore_client_abort,
    flag
);
set_once!(set_pass_trailers, LocationScope, proxy.pass_trailers, flag);
set_once!(
    set_intercept_errors,
    LocationScope,
    proxy.intercept_errors,
    flag
);
set_once!(
    set_connect_timeout,
    LocationScope,
    proxy.connect_timeout,
    time
);
set_once!(set_send_timeout, LocationScope, proxy.send_timeout, time);
set_once!(set_read_timeout, LocationScope, proxy.read_timeout, time);
set_once!(
    set_next_upstream_timeout,
    LocationScope,
    proxy.next_upstream_timeout,
    time
);
set_once!(
    set_resolver_timeout,
    LocationScope,
    proxy.resolver_timeout,
    time
);
set_once!(
    set_resolver,
    LocationScope,
    proxy.resolver,
    |d: &Directive, _c: &mut LoadContext<'_>| {
        shared::resolver::parse(d).map(|conf| Some(Arc::new(conf)))
    }
);
set_once!(set_buffer_size, LocationScope, proxy.buffer_size, size);
set_once!(
    set_max_temp_file_size,
    LocationScope,
    proxy.max_temp_file_size,
    size
);
set_once!(
    set_next_upstream_tries,
    LocationScope,
    proxy.next_upstream_tries,
    crate::kernel::core::directives::number
);
set_once!(
    set_busy_buffers_size,
    LocationScope,
    proxy.busy_buffers_size,
    |d, c| size(d, c).map(Some)
);
set_once!(
    set_temp_file_write_size,
    LocationScope,
    proxy.temp_file_write_size,
    |d, c| size(d, c).map(Some)
);
set_once!(
    set_set_body,
    LocationScope,
    proxy.set_body,
    |d: &Directive, c: &mut LoadContext<'_>| c.template(d.arg(0), &d.span).map(Some)
);
set_once!(
    set_method,
    LocationScope,
    proxy.method,
    |d: &Directive, c: &mut LoadContext<'_>| c.template(d.arg(0), &d.span).map(Some)
);

fn accept_number(
    _scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    crate::kernel::core::directives::number(directive, context).map(|_| ())
}

fn accept_size(
    _scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    size(directive, context).map(|_| ())
}

fn set_proxy_pass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy.pass.is_some() {
        return Err(context.duplicate(directive));
    }
    let url = directive.arg(0);
    let template = context.template(url, &directive.span)?;
    let pass = if template.as_literal().is_some() {
        ProxyPass::Static(load_target(url, &directive.span, &mut context.upstreams)?)
    } else {
        ProxyPass::Variables(template)
    };
    scope.proxy.pass = Some(Some(Arc::new(pass)));
    scope.content = Some(Content::Proxy);
    Ok(())
}

fn set_http_version(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy.http_11.is_some() {
        return Err(context.duplicate(directive));
    }
    let (http_11, http_2) = match directive.arg(0) {
        "1.0" => (false, false),
        "1.1" => (true, false),
        "2" => (true, true),
        other => {
            return Err(ConfError::message(
                format!(
                    "invalid value \"{other}\" in \"proxy_http_version\" directive, \
                     it must be \"1.0\", \"1.1\" or \"2\""
                ),
                &directive.span,
            ));
        }
    };
    scope.proxy.http_11 = Some(http_11);
    scope.proxy.http_2 = Some(http_2);
    Ok(())
}

fn set_set_header(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let value = context.template(directive.arg(1), &directive.span)?;
    scope
        .proxy
        .set_header
        .get_or_insert_with(Vec::new)
        .push(SetHeader {
            name: directive.arg(0).as_bytes().into(),
            value,
        });
    Ok(())
}

fn set_bind(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy.bind.is_some() {
        return Err(context.duplicate(directive));
    }
    if let Some(extra) = directive.args.get(1) {
        return Err(ConfError::message(
            if extra.as_str() == "transparent" {
                "transparent proxying is not supported on this platform, ignored".to_owned()
            } else {
                format!("invalid parameter \"{}\"", extra.as_str())
            },
            &directive.span,
        ));
    }
    if directive.arg(0) == "off" {
        scope.proxy.bind = Some(None);
        return Ok(());
    }
    let template = context.template(directive.arg(0), &directive.span)?;
    if let Some(literal) = template.as_literal()
        && parse_bind(literal).is_none()
    {
        return Err(ConfError::message(
            format!("invalid address \"{}\"", directive.arg(0)),
            &directive.span,
        ));
    }
    scope.proxy.bind = Some(Some(template));
    Ok(())
}

/// A `proxy_bind` address: an IP, with an optional port.
pub(crate) fn parse_bind(text: &[u8]) -> Option<std::net::SocketAddr> {
    let text = std::str::from_utf8(text).ok()?;
    if let Ok(ip) = text.trim_start_matches('[').trim_end_matches(']').parse() {
        return Some(std::net::SocketAddr::new(ip, 0));
    }
    text.parse().ok()
}

fn set_buffers(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy.buffers.is_some() {
        return Err(context.duplicate(directive));
    }
    let count = conf::value::parse_number(directive.arg(0))
        .filter(|count| *count > 0)
        .ok_or_else(|| invalid_value(directive))?;
    let size = conf::value::parse_size(directive.arg(1))
        .filter(|size| *size > 0)
        .ok_or_else(|| invalid_value(directive))?;
    if count < 2 {
        return Err(ConfError::message(
            format!("there must be at least 2 \"{}\"", directive.name),
            &directive.span,
        ));
    }
    scope.proxy.buffers = Some(Buffers { count, size });
    Ok(())
}

set_once!(
    set_proxy_temp_path,
    LocationScope,
    proxy.proxy_temp_path,
    |d: &Directive, c: &mut LoadContext<'_>| { c.temp_path(d) }
);

/// `proxy_hide_header` and `proxy_pass_header` accumulate at one level.
fn set_hide_header(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    push_field_name(&mut scope.proxy.hide_header, directive);
    Ok(())
}

fn set_pass_header(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    push_field_name(&mut scope.proxy.pass_header, directive);
    Ok(())
}

fn push_field_name(list: &mut Option<Vec<Box<[u8]>>>, directive: &Directive) {
    list.get_or_insert_with(Vec::new)
        .push(directive.arg(0).to_ascii_lowercase().into_bytes().into());
}

fn set_ignore_headers(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    // A bitmask: lines at one level add up, as nginx's bitmask slots do.
    let _ = context;
    let mut flags = scope.proxy.ignore_headers.map_or(0, |flags| flags.0);
    for argument in &directive.args {
        flags |= match argument.as_str().to_ascii_lowercase().as_str() {
            "x-accel-redirect" => IgnoreHeaders::X_ACCEL_REDIRECT,
            "x-accel-expires" => IgnoreHeaders::X_ACCEL_EXPIRES,
            "x-accel-limit-rate" => IgnoreHeaders::X_ACCEL_LIMIT_RATE,
            "x-accel-buffering" => IgnoreHeaders::X_ACCEL_BUFFERING,
            "x-accel-charset" => IgnoreHeaders::X_ACCEL_CHARSET,
            "expires" => IgnoreHeaders::EXPIRES,
            "cache-control" => IgnoreHeaders::CACHE_CONTROL,
            "set-cookie" => IgnoreHeaders::SET_COOKIE,
            "vary" => IgnoreHeaders::VARY,
            "cdn-cache-control" => IgnoreHeaders::CDN_CACHE_CONTROL,
            _ => {
                return Err(ConfError::message(
                    format!("invalid value \"{}\"", argument.as_str()),
                    &directive.span,
                ));
            }
        };
    }
    scope.proxy.ignore_headers = Some(IgnoreHeaders(flags));
    Ok(())
}

fn set_next_upstream(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy.next_upstream.is_some() {
        return Err(context.duplicate(directive));
    }
    let flags = next_upstream_flags(directive, |word| {
        Some(match word.to_ascii_lowercase().as_str() {
            "error" => NextUpstream::ERROR,
            "timeout" => NextUpstream::TIMEOUT,
            "invalid_header" => NextUpstream::INVALID_HEADER,
            "http_500" => NextUpstream::HTTP_500,
            "http_502" => NextUpstream::HTTP_502,
            "http_503" => NextUpstream::HTTP_503,
            "http_504" => NextUpstream::HTTP_504,
            "http_403" => NextUpstream::HTTP_403,
            "http_404" => NextUpstream::HTTP_404,
            "http_429" => NextUpstream::HTTP_429,
            "non_idempotent" => NextUpstream::NON_IDEMPOTENT,
            "off" => NextUpstream::OFF,
            // Cache-only conditions: accepted, nothing to do without a cache.
            "updating" => 0,
            _ => return None,
        })
    })?;
    scope.proxy.next_upstream = Some(flags);
    Ok(())
}

/// The conditions of a `*_next_upstream` directive, each word's flag given by `flag`
/// (`None` for a word the module does not know: `invalid value "..."`); `off` among
/// them is `off` alone.
pub(crate) fn next_upstream_flags(
    directive: &Directive,
    flag: impl Fn(&str) -> Option<u16>,
) -> Result<NextUpstream, ConfError> {
    let mut flags = 0;
    for argument in &directive.args {
        let argument = argument.as_str();
        flags |= flag(argument).ok_or_else(|| {
            ConfError::message(format!("invalid value \"{argument}\""), &directive.span)
        })?;
    }
    if flags & NextUpstream::OFF != 0 {
        flags = NextUpstream::OFF;
    }
    Ok(NextUpstream(flags))
}

/// `default`, `off`, or `FROM TO` (a `~`/`~*` FROM is a regex).
fn redirect_rules(
    directive: &Directive,
    context: &mut LoadContext<'_>,
    allow_default: bool,
) -> Result<Option<RedirectRule>, ConfError> {
    let first = directive.arg(0);
    if directive.args.len() == 1 {
        return match first {
            "default" if allow_default => Ok(Some(RedirectRule::Default)),
            "off" => Ok(None),
            _ => Err(ConfError::message(
                format!("invalid parameter \"{first}\""),
                &directive.span,
            )),
        };
    }
    let to = context.template(directive.arg(1), &directive.span)?;
    if let Some(pattern) = first.strip_prefix('~') {
        let (pattern, caseless) = match pattern.strip_prefix('*') {
            Some(rest) => (rest, true),
            None => (pattern, false),
        };
        let regex = Regex::compile(pattern, caseless)
            .map_err(|error| ConfError::message(error.0, &directive.span))?;
        return Ok(Some(RedirectRule::Regex {
            regex: Arc::new(regex),
            to,
        }));
    }
    let from = context.template(first, &directive.span)?;
    Ok(Some(RedirectRule::Prefix { from, to }))
}

fn set_redirect(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let rule = redirect_rules(directive, context, true)?;
    match (rule, &mut scope.proxy.redirect) {
        (None, slot) => *slot = Some(Redirect::Off),
        (Some(rule), Some(Redirect::Rules(rules))) => rules.push(rule),
        (Some(rule), slot) => {
            if matches!(rule, RedirectRule::Default)
                && let Some(pass) = scope.proxy.pass.as_ref().and_then(|pass| pass.as_ref())
                && matches!(**pass, ProxyPass::Variables(_))
            {
                return Err(ConfError::message(
                    "\"proxy_redirect default\" cannot be used with \"proxy_pass\" directive with variables",
                    &directive.span,
                ));
            }
            *slot = Some(Redirect::Rules(vec![rule]));
        }
    }
    Ok(())
}

fn set_cookie(
    slot: &mut Option<CookieRewrite>,
    directive: &Directive,
    context: &mut LoadContext<'_>,
    domain: bool,
) -> Result<(), ConfError> {
    let mut rule = redirect_rules(directive, context, false)?;
    // A domain regex is matched without regard to case, as nginx compiles it.
    if domain
        && let Some(RedirectRule::Regex { regex, .. }) = &mut rule
        && let Some(pattern) = directive.arg(0).strip_prefix('~')
    {
        let pattern = pattern.strip_prefix('*').unwrap_or(pattern);
        *regex = Arc::new(
            Regex::compile(pattern, true)
                .map_err(|error| ConfError::message(error.0, &directive.span))?,
        );
    }
    match (rule, slot) {
        (None, slot) => *slot = Some(CookieRewrite::Off),
        (Some(rule), Some(CookieRewrite::Rules(rules))) => rules.push(rule),
        (Some(rule), slot) => *slot = Some(CookieRewrite::Rules(vec![rule])),
    }
    Ok(())
}

fn set_cookie_domain(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_cookie(&mut scope.proxy.cookie_domain, directive, context, true)
}

fn set_cookie_path(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_cookie(&mut scope.proxy.cookie_path, directive, context, false)
}
