//! The directive table of the `stream` block, its servers and its upstreams, with each
//! directive's setter. Names, contexts and arities are nginx's; error texts too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use conf::{Arity, BlockKind, ConfError, ConfErrorKind, Contexts, Directive, DirectiveSpec};
use logging::{ErrorLog, ErrorSink, Level};
use shared::access::{Action, parse_target};
use upstream::registry::UpstreamScope;
use upstream::registry::split_host_port;

use super::log_directives as log_lines;
use super::settings::{Bind, LimitConn, Settings};
use super::ssl_directives as ssl;
use super::upstream_directives as upstream_lines;
use super::{Content, LimitZone, Loader, ServerLoad};
use crate::variables::StreamTemplate;
pub use upstream_lines::read_upstream;

type Result = std::result::Result<(), ConfError>;

/// What a directive does.
pub enum Setter {
    /// `server { }` in the `stream` block.
    Server,
    /// `upstream NAME { }`.
    Upstream,
    Map,
    SplitClients,
    Geo,
    /// A directive of the `stream` level only.
    Main(fn(&mut Loader<'_>, &Directive) -> Result),
    /// A setting of the `stream` level or of a server.
    Settings(fn(&mut Settings, &Directive, &mut Loader<'_>) -> Result),
    /// A directive of a server only.
    ServerOnly(fn(&mut ServerLoad, &Directive, &mut Loader<'_>) -> Result),
    /// A line of an `upstream` block.
    UpstreamLine(fn(&mut UpstreamScope<StreamTemplate>, &Directive, &mut Loader<'_>) -> Result),
    /// Accepted and without effect (hash sizes, which Portico's lookups do not need).
    Ignored,
}

impl std::fmt::Debug for Setter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Setter")
    }
}

pub type StreamDirective = DirectiveSpec<Setter>;

const fn block(name: &'static str, arity: Arity, set: Setter) -> StreamDirective {
    StreamDirective {
        name,
        contexts: Contexts::STREAM,
        arity,
        block: BlockKind::Block,
        set,
    }
}

const fn main(
    name: &'static str,
    arity: Arity,
    set: fn(&mut Loader<'_>, &Directive) -> Result,
) -> StreamDirective {
    StreamDirective {
        name,
        contexts: Contexts::STREAM,
        arity,
        block: BlockKind::Simple,
        set: Setter::Main(set),
    }
}

const fn setting(
    name: &'static str,
    arity: Arity,
    set: fn(&mut Settings, &Directive, &mut Loader<'_>) -> Result,
) -> StreamDirective {
    StreamDirective {
        name,
        contexts: Contexts::STREAM_AND_SERVER,
        arity,
        block: BlockKind::Simple,
        set: Setter::Settings(set),
    }
}

const fn server(
    name: &'static str,
    arity: Arity,
    set: fn(&mut ServerLoad, &Directive, &mut Loader<'_>) -> Result,
) -> StreamDirective {
    StreamDirective {
        name,
        contexts: Contexts::STREAM_SERVER,
        arity,
        block: BlockKind::Simple,
        set: Setter::ServerOnly(set),
    }
}

const fn upstream_line(
    name: &'static str,
    arity: Arity,
    set: fn(&mut UpstreamScope<StreamTemplate>, &Directive, &mut Loader<'_>) -> Result,
) -> StreamDirective {
    StreamDirective {
        name,
        contexts: Contexts::STREAM_UPSTREAM,
        arity,
        block: BlockKind::Simple,
        set: Setter::UpstreamLine(set),
    }
}

const fn ignored(name: &'static str, contexts: Contexts, arity: Arity) -> StreamDirective {
    StreamDirective {
        name,
        contexts,
        arity,
        block: BlockKind::Simple,
        set: Setter::Ignored,
    }
}

/// Every stream directive Portico knows, in nginx's module order.
pub const DIRECTIVES: &[StreamDirective] = &[
    // core
    block("server", Arity::NONE, Setter::Server),
    server("listen", Arity::ONE_OR_MORE, set_listen),
    server("server_name", Arity::ONE_OR_MORE, set_server_name),
    setting("error_log", Arity::ONE_OR_MORE, set_error_log),
    setting("tcp_nodelay", Arity::FLAG, set_tcp_nodelay),
    setting("preread_buffer_size", Arity::TAKE1, set_preread_buffer_size),
    setting("preread_timeout", Arity::TAKE1, set_preread_timeout),
    setting(
        "proxy_protocol_timeout",
        Arity::TAKE1,
        set_proxy_protocol_timeout,
    ),
    setting("resolver", Arity::ONE_OR_MORE, set_resolver),
    setting("resolver_timeout", Arity::TAKE1, set_resolver_timeout),
    ignored("variables_hash_max_size", Contexts::STREAM, Arity::TAKE1),
    ignored("variables_hash_bucket_size", Contexts::STREAM, Arity::TAKE1),
    ignored("server_names_hash_max_size", Contexts::STREAM, Arity::TAKE1),
    ignored(
        "server_names_hash_bucket_size",
        Contexts::STREAM,
        Arity::TAKE1,
    ),
    // log
    main("log_format", Arity::TWO_OR_MORE, log_lines::set_log_format),
    setting("access_log", Arity::ONE_OR_MORE, log_lines::set_access_log),
    ignored(
        "open_log_file_cache",
        Contexts::STREAM_AND_SERVER,
        Arity::TAKE1234,
    ),
    // proxy
    server("proxy_pass", Arity::TAKE1, set_proxy_pass),
    setting("proxy_bind", Arity::TAKE12, set_proxy_bind),
    setting(
        "proxy_socket_keepalive",
        Arity::FLAG,
        set_proxy_socket_keepalive,
    ),
    setting(
        "proxy_connect_timeout",
        Arity::TAKE1,
        set_proxy_connect_timeout,
    ),
    setting("proxy_timeout", Arity::TAKE1, set_proxy_timeout),
    setting("proxy_buffer_size", Arity::TAKE1, set_proxy_buffer_size),
    setting(
        "proxy_downstream_buffer",
        Arity::TAKE1,
        set_proxy_buffer_size,
    ),
    setting("proxy_upstream_buffer", Arity::TAKE1, set_proxy_buffer_size),
    setting("proxy_upload_rate", Arity::TAKE1, set_proxy_upload_rate),
    setting("proxy_download_rate", Arity::TAKE1, set_proxy_download_rate),
    setting("proxy_requests", Arity::TAKE1, set_proxy_requests),
    setting("proxy_responses", Arity::TAKE1, set_proxy_responses),
    setting("proxy_next_upstream", Arity::FLAG, set_proxy_next_upstream),
    setting(
        "proxy_next_upstream_tries",
        Arity::TAKE1,
        set_proxy_next_upstream_tries,
    ),
    setting(
        "proxy_next_upstream_timeout",
        Arity::TAKE1,
        set_proxy_next_upstream_timeout,
    ),
    setting("proxy_protocol", Arity::FLAG, set_proxy_protocol),
    setting("proxy_half_close", Arity::FLAG, set_proxy_half_close),
    // upstream
    block("upstream", Arity::TAKE1, Setter::Upstream),
    upstream_line(
        "server",
        Arity::ONE_OR_MORE,
        upstream_lines::set_upstream_server,
    ),
    upstream_line("zone", Arity::TAKE12, upstream_lines::set_upstream_zone),
    upstream_line("hash", Arity::TAKE12, upstream_lines::set_upstream_hash),
    upstream_line(
        "least_conn",
        Arity::NONE,
        upstream_lines::set_upstream_least_conn,
    ),
    upstream_line(
        "least_time",
        Arity::TAKE12,
        upstream_lines::set_upstream_least_time,
    ),
    upstream_line(
        "resolver",
        Arity::ONE_OR_MORE,
        upstream_lines::set_upstream_resolver,
    ),
    upstream_line(
        "resolver_timeout",
        Arity::TAKE1,
        upstream_lines::set_upstream_resolver_timeout,
    ),
    upstream_line(
        "random",
        Arity::counts(&[0, 1, 2]),
        upstream_lines::set_upstream_random,
    ),
    // limit_conn
    main("limit_conn_zone", Arity::TAKE2, set_limit_conn_zone),
    setting("limit_conn", Arity::TAKE2, set_limit_conn),
    setting(
        "limit_conn_log_level",
        Arity::TAKE1,
        set_limit_conn_log_level,
    ),
    setting("limit_conn_dry_run", Arity::FLAG, set_limit_conn_dry_run),
    // access
    setting("allow", Arity::TAKE1, set_allow),
    setting("deny", Arity::TAKE1, set_deny),
    // map, split_clients, set, return, pass
    block("map", Arity::TAKE2, Setter::Map),
    block("split_clients", Arity::TAKE2, Setter::SplitClients),
    block("geo", Arity::TAKE12, Setter::Geo),
    ignored("map_hash_max_size", Contexts::STREAM, Arity::TAKE1),
    ignored("map_hash_bucket_size", Contexts::STREAM, Arity::TAKE1),
    server("set", Arity::TAKE2, set_set),
    server("return", Arity::TAKE1, set_return),
    server("pass", Arity::TAKE1, set_pass),
    // realip
    setting("set_real_ip_from", Arity::TAKE1, set_real_ip_from),
    // ssl_preread
    setting("ssl_preread", Arity::FLAG, set_ssl_preread),
    // ssl
    setting("ssl_certificate", Arity::TAKE1, ssl::set_ssl_certificate),
    setting(
        "ssl_certificate_key",
        Arity::TAKE1,
        ssl::set_ssl_certificate_key,
    ),
    setting(
        "ssl_password_file",
        Arity::TAKE1,
        ssl::set_ssl_password_file,
    ),
    setting("ssl_protocols", Arity::ONE_OR_MORE, ssl::set_ssl_protocols),
    setting("ssl_ciphers", Arity::TAKE1, ssl::set_ssl_ciphers),
    setting(
        "ssl_prefer_server_ciphers",
        Arity::FLAG,
        ssl::set_ssl_prefer_server_ciphers,
    ),
    setting("ssl_ecdh_curve", Arity::TAKE1, ssl::set_ssl_ecdh_curve),
    setting("ssl_conf_command", Arity::TAKE2, ssl::set_ssl_conf_command),
    setting(
        "ssl_session_cache",
        Arity::TAKE12,
        ssl::set_ssl_session_cache,
    ),
    setting(
        "ssl_session_timeout",
        Arity::TAKE1,
        ssl::set_ssl_session_timeout,
    ),
    setting(
        "ssl_session_tickets",
        Arity::FLAG,
        ssl::set_ssl_session_tickets,
    ),
    setting(
        "ssl_session_ticket_key",
        Arity::TAKE1,
        ssl::set_ssl_session_ticket_key,
    ),
    setting(
        "ssl_handshake_timeout",
        Arity::TAKE1,
        ssl::set_ssl_handshake_timeout,
    ),
    setting("ssl_alpn", Arity::ONE_OR_MORE, ssl::set_ssl_alpn),
    setting(
        "ssl_verify_client",
        Arity::TAKE1,
        ssl::set_ssl_verify_client,
    ),
    setting("ssl_verify_depth", Arity::TAKE1, ssl::set_ssl_verify_depth),
    setting(
        "ssl_client_certificate",
        Arity::TAKE1,
        ssl::set_ssl_client_certificate,
    ),
    setting(
        "ssl_trusted_certificate",
        Arity::TAKE1,
        ssl::set_ssl_trusted_certificate,
    ),
    setting("ssl_crl", Arity::TAKE1, ssl::set_ssl_crl),
    setting("ssl_stapling", Arity::FLAG, ssl::set_ssl_stapling),
    setting(
        "ssl_stapling_file",
        Arity::TAKE1,
        ssl::set_ssl_stapling_file,
    ),
    setting(
        "ssl_stapling_responder",
        Arity::TAKE1,
        ssl::set_ssl_stapling_responder,
    ),
    setting(
        "ssl_stapling_verify",
        Arity::FLAG,
        ssl::set_ssl_stapling_verify,
    ),
    setting(
        "ssl_reject_handshake",
        Arity::FLAG,
        ssl::set_ssl_reject_handshake,
    ),
    ignored("ssl_dhparam", Contexts::STREAM_AND_SERVER, Arity::TAKE1),
    setting(
        "ssl_certificate_cache",
        Arity::TAKE123,
        ssl::set_ssl_certificate_cache,
    ),
    // proxy_ssl
    setting("proxy_ssl", Arity::FLAG, ssl::set_proxy_ssl),
    setting("proxy_ssl_name", Arity::TAKE1, ssl::set_proxy_ssl_name),
    setting(
        "proxy_ssl_server_name",
        Arity::FLAG,
        ssl::set_proxy_ssl_server_name,
    ),
    setting("proxy_ssl_verify", Arity::FLAG, ssl::set_proxy_ssl_verify),
    setting(
        "proxy_ssl_verify_depth",
        Arity::TAKE1,
        ssl::set_proxy_ssl_verify_depth,
    ),
    setting(
        "proxy_ssl_trusted_certificate",
        Arity::TAKE1,
        ssl::set_proxy_ssl_trusted_certificate,
    ),
    setting("proxy_ssl_crl", Arity::TAKE1, ssl::set_proxy_ssl_crl),
    setting(
        "proxy_ssl_certificate",
        Arity::TAKE1,
        ssl::set_proxy_ssl_certificate,
    ),
    setting(
        "proxy_ssl_certificate_key",
        Arity::TAKE1,
        ssl::set_proxy_ssl_certificate_key,
    ),
    setting(
        "proxy_ssl_conf_command",
        Arity::TAKE2,
        ssl::set_proxy_ssl_conf_command,
    ),
    setting(
        "proxy_ssl_certificate_cache",
        Arity::TAKE123,
        ssl::set_proxy_ssl_certificate_cache,
    ),
    setting(
        "proxy_ssl_password_file",
        Arity::TAKE1,
        ssl::set_proxy_ssl_password_file,
    ),
    setting(
        "proxy_ssl_protocols",
        Arity::ONE_OR_MORE,
        ssl::set_proxy_ssl_protocols,
    ),
    setting(
        "proxy_ssl_ciphers",
        Arity::TAKE1,
        ssl::set_proxy_ssl_ciphers,
    ),
    setting(
        "proxy_ssl_session_reuse",
        Arity::FLAG,
        ssl::set_proxy_ssl_session_reuse,
    ),
    setting(
        "proxy_ssl_alpn",
        Arity::ONE_OR_MORE,
        ssl::set_proxy_ssl_alpn,
    ),
];

pub(super) fn duplicate<T>(slot: &Option<T>, directive: &Directive) -> Result {
    if slot.is_some() {
        return Err(ConfError::at(
            ConfErrorKind::Duplicate {
                name: directive.name.clone(),
            },
            &directive.span,
        ));
    }
    Ok(())
}

fn invalid_value(directive: &Directive) -> ConfError {
    ConfError::directive(
        &directive.name,
        format!("invalid value \"{}\"", directive.arg(0)),
        &directive.span,
    )
}

pub(super) fn time(directive: &Directive) -> std::result::Result<Duration, ConfError> {
    conf::value::parse_time(directive.arg(0)).ok_or_else(|| invalid_value(directive))
}

fn size(directive: &Directive) -> std::result::Result<usize, ConfError> {
    conf::value::parse_size(directive.arg(0))
        .and_then(|size| usize::try_from(size).ok())
        .ok_or_else(|| invalid_value(directive))
}

macro_rules! set_time {
    ($fn_name:ident, $field:ident) => {
        fn $fn_name(settings: &mut Settings, directive: &Directive, _: &mut Loader<'_>) -> Result {
            duplicate(&settings.$field, directive)?;
            settings.$field = Some(time(directive)?);
            Ok(())
        }
    };
}

macro_rules! set_size {
    ($fn_name:ident, $field:ident) => {
        fn $fn_name(settings: &mut Settings, directive: &Directive, _: &mut Loader<'_>) -> Result {
            duplicate(&settings.$field, directive)?;
            settings.$field = Some(size(directive)?);
            Ok(())
        }
    };
}

macro_rules! set_flag {
    ($fn_name:ident, $field:ident) => {
        fn $fn_name(settings: &mut Settings, directive: &Directive, _: &mut Loader<'_>) -> Result {
            duplicate(&settings.$field, directive)?;
            settings.$field = Some(conf::value::parse_flag(directive)?);
            Ok(())
        }
    };
}

set_time!(set_preread_timeout, preread_timeout);
set_time!(set_resolver_timeout, resolver_timeout);

fn set_resolver(settings: &mut Settings, directive: &Directive, _: &mut Loader<'_>) -> Result {
    duplicate(&settings.resolver, directive)?;
    settings.resolver = Some(Some(shared::resolver::parse(directive)?));
    Ok(())
}
set_time!(set_proxy_protocol_timeout, proxy_protocol_timeout);
set_time!(set_proxy_connect_timeout, proxy_connect_timeout);
set_time!(set_proxy_timeout, proxy_timeout);
set_time!(set_proxy_next_upstream_timeout, proxy_next_upstream_timeout);
set_size!(set_preread_buffer_size, preread_buffer_size);
set_size!(set_proxy_buffer_size, proxy_buffer_size);
set_flag!(set_tcp_nodelay, tcp_nodelay);
set_flag!(set_proxy_socket_keepalive, proxy_socket_keepalive);
set_flag!(set_proxy_next_upstream, proxy_next_upstream);
set_flag!(set_proxy_protocol, proxy_protocol);
set_flag!(set_proxy_half_close, proxy_half_close);
set_flag!(set_limit_conn_dry_run, limit_conn_dry_run);
set_flag!(set_ssl_preread, ssl_preread);

fn set_listen(server: &mut ServerLoad, directive: &Directive, _: &mut Loader<'_>) -> Result {
    server.listens.extend(super::listen::parse(directive)?);
    Ok(())
}

fn set_server_name(
    server: &mut ServerLoad,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    for argument in &directive.args {
        let Some(pattern) = argument.value.strip_prefix('~') else {
            server.names.push(argument.value.to_ascii_lowercase());
            continue;
        };
        let regex = shared::regex::Regex::compile(pattern, true)
            .map_err(|error| ConfError::message(error.0, &directive.span))?;
        let slots = regex
            .names()
            .iter()
            .map(|(name, group)| {
                (
                    *group,
                    shared::captures::NamedSlot(loader.registry.slot(name) as u32),
                )
            })
            .collect();
        server.names.push(argument.value.clone());
        server
            .regexes
            .push(shared::captures::NamedCaptures { regex, slots });
    }
    Ok(())
}

/// `error_log FILE [LEVEL]`, several per level.
fn set_error_log(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    if directive.args.len() > 2 {
        return Err(ConfError::at(
            ConfErrorKind::InvalidArgumentCount {
                name: directive.name.clone(),
            },
            &directive.span,
        ));
    }
    let level = match directive.args.get(1) {
        Some(argument) => Level::parse(argument.as_str()).ok_or_else(|| {
            ConfError::message(
                format!("invalid log level \"{}\"", argument.as_str()),
                &directive.span,
            )
        })?,
        None => Level::Error,
    };
    let target = directive.arg(0);
    if target.starts_with("memory:") {
        return Err(ConfError::message(
            format!("error_log target \"{target}\" is not supported"),
            &directive.span,
        ));
    }
    let file = match logging::syslog_target(target) {
        Some(syslog) => Arc::new(
            syslog.map_err(|error| ConfError::message(error.to_string(), &directive.span))?,
        ),
        None => loader.open_log(target, &directive.span)?,
    };
    let mut sinks: Vec<ErrorSink> = settings
        .error_log
        .as_ref()
        .map(|log| log.sinks().to_vec())
        .unwrap_or_default();
    sinks.push(ErrorSink { file, level });
    settings.error_log = Some(Arc::new(ErrorLog::new(sinks)));
    Ok(())
}

fn set_proxy_pass(
    server: &mut ServerLoad,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&server.content, directive)?;
    let text = directive.arg(0);
    if text.contains('$') {
        let template = loader.template(text, &directive.span)?;
        server.content = Some(Content::ProxyVariable(template));
        return Ok(());
    }
    let (host, port) = split_host_port(text, &directive.span, "upstream")?;
    if port.is_none() && !host.starts_with("unix:") {
        loader
            .upstream_names
            .push((host.clone(), directive.span.clone()));
    }
    let id = loader
        .upstreams
        .reference(&host, port, 0, &directive.span)?;
    server.content = Some(Content::Proxy(id));
    Ok(())
}

fn set_return(server: &mut ServerLoad, directive: &Directive, loader: &mut Loader<'_>) -> Result {
    duplicate(&server.content, directive)?;
    let template = loader.template(directive.arg(0), &directive.span)?;
    server.content = Some(Content::Return(template));
    Ok(())
}

fn set_pass(server: &mut ServerLoad, directive: &Directive, loader: &mut Loader<'_>) -> Result {
    duplicate(&server.content, directive)?;
    let text = directive.arg(0);
    if !text.contains('$') {
        crate::session::pass_address(text.as_bytes()).ok_or_else(|| {
            ConfError::message(format!("invalid address \"{text}\""), &directive.span)
        })?;
    }
    let template = loader.template(text, &directive.span)?;
    server.content = Some(Content::Pass(template));
    Ok(())
}

fn set_set(server: &mut ServerLoad, directive: &Directive, loader: &mut Loader<'_>) -> Result {
    let Some(name) = directive.arg(0).strip_prefix('$') else {
        return Err(ConfError::message(
            format!("invalid variable name \"{}\"", directive.arg(0)),
            &directive.span,
        ));
    };
    let slot = loader.registry.slot(name);
    let template = loader.template(directive.arg(1), &directive.span)?;
    server.sets.push((slot, template));
    Ok(())
}

/// `proxy_bind ADDRESS [transparent] | off`.
fn set_proxy_bind(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_bind, directive)?;
    if directive.arg(0) == "off" {
        settings.proxy_bind = Some(None);
        return Ok(());
    }
    let transparent = match directive.args.get(1).map(|argument| argument.as_str()) {
        None => false,
        Some("transparent") => true,
        Some(other) => {
            return Err(ConfError::message(
                format!("invalid parameter \"{other}\""),
                &directive.span,
            ));
        }
    };
    let address = loader.template(directive.arg(0), &directive.span)?;
    if let Some(literal) = address.as_literal()
        && crate::proxy::bind_address(literal).is_none()
    {
        return Err(ConfError::message(
            format!("invalid address \"{}\"", directive.arg(0)),
            &directive.span,
        ));
    }
    settings.proxy_bind = Some(Some(Bind {
        address,
        transparent,
    }));
    Ok(())
}

fn rate(
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> std::result::Result<StreamTemplate, ConfError> {
    let template = loader.template(directive.arg(0), &directive.span)?;
    if let Some(literal) = template.as_literal()
        && std::str::from_utf8(literal)
            .ok()
            .and_then(conf::value::parse_size)
            .is_none()
    {
        return Err(invalid_value(directive));
    }
    Ok(template)
}

fn set_proxy_upload_rate(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_upload_rate, directive)?;
    settings.proxy_upload_rate = Some(rate(directive, loader)?);
    Ok(())
}

fn set_proxy_download_rate(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_download_rate, directive)?;
    settings.proxy_download_rate = Some(rate(directive, loader)?);
    Ok(())
}

fn number(directive: &Directive) -> std::result::Result<u64, ConfError> {
    conf::value::parse_number(directive.arg(0)).ok_or_else(|| invalid_value(directive))
}

fn set_proxy_requests(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_requests, directive)?;
    settings.proxy_requests = Some(number(directive)?);
    Ok(())
}

fn set_proxy_responses(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_responses, directive)?;
    settings.proxy_responses = Some(Some(number(directive)?));
    Ok(())
}

fn set_proxy_next_upstream_tries(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_next_upstream_tries, directive)?;
    let tries = u32::try_from(number(directive)?).map_err(|_| invalid_value(directive))?;
    settings.proxy_next_upstream_tries = Some(tries);
    Ok(())
}

/// `limit_conn_zone KEY zone=NAME:SIZE`.
fn set_limit_conn_zone(loader: &mut Loader<'_>, directive: &Directive) -> Result {
    let key = loader.template(directive.arg(0), &directive.span)?;
    let Some(zone) = directive.arg(1).strip_prefix("zone=") else {
        return Err(ConfError::message(
            format!("invalid parameter \"{}\"", directive.arg(1)),
            &directive.span,
        ));
    };
    let Some((name, size)) = zone.split_once(':') else {
        return Err(ConfError::message(
            format!("invalid zone size \"{zone}\""),
            &directive.span,
        ));
    };
    if name.is_empty() || conf::value::parse_size(size).is_none_or(|size| size < 8192) {
        return Err(ConfError::message(
            format!("invalid zone size \"{size}\""),
            &directive.span,
        ));
    }
    if loader
        .limit_zones
        .iter()
        .any(|existing| existing.name == name)
    {
        return Err(ConfError::message(
            format!("duplicate zone \"{name}\""),
            &directive.span,
        ));
    }
    loader.limit_zones.push(LimitZone {
        name: name.to_owned(),
        key,
        counts: Mutex::default(),
        span: directive.span.clone(),
    });
    Ok(())
}

fn set_limit_conn(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    let name = directive.arg(0);
    let number = conf::value::parse_number(directive.arg(1))
        .and_then(|number| u32::try_from(number).ok())
        .filter(|number| *number > 0)
        .ok_or_else(|| {
            ConfError::message(
                format!("invalid number of connections \"{}\"", directive.arg(1)),
                &directive.span,
            )
        })?;
    let limits = settings.limit_conn.get_or_insert_with(Vec::new);
    if limits.iter().any(|limit| &*limit.name == name) {
        return Err(ConfError::message("duplicate limit_conn", &directive.span));
    }
    // The zone may be declared below; its index is found once the block is read.
    loader
        .limit_zone_uses
        .push((name.to_owned(), directive.span.clone()));
    limits.push(LimitConn {
        name: name.into(),
        zone: usize::MAX,
        number,
    });
    Ok(())
}

fn set_limit_conn_log_level(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.limit_conn_log_level, directive)?;
    let level = match directive.arg(0) {
        "info" => Level::Info,
        "notice" => Level::Notice,
        "warn" => Level::Warn,
        "error" => Level::Error,
        other => {
            return Err(ConfError::message(
                format!("invalid value \"{other}\""),
                &directive.span,
            ));
        }
    };
    settings.limit_conn_log_level = Some(level);
    Ok(())
}

fn access_rule(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
    action: Action,
) -> Result {
    let text = directive.arg(0);
    let parsed = parse_target(text).ok_or_else(|| {
        ConfError::message(format!("invalid parameter \"{text}\""), &directive.span)
    })?;
    if parsed.host_bits_cleared {
        loader.warnings.push(ConfError::message(
            format!("low address bits of {text} are meaningless"),
            &directive.span,
        ));
    }
    settings
        .access
        .get_or_insert_with(Default::default)
        .push(action, parsed.target);
    Ok(())
}

fn set_allow(settings: &mut Settings, directive: &Directive, loader: &mut Loader<'_>) -> Result {
    access_rule(settings, directive, loader, Action::Allow)
}

fn set_deny(settings: &mut Settings, directive: &Directive, loader: &mut Loader<'_>) -> Result {
    access_rule(settings, directive, loader, Action::Deny)
}

fn set_real_ip_from(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    let text = directive.arg(0);
    let trusted = settings
        .set_real_ip_from
        .get_or_insert_with(Default::default);
    if let Some(parsed) = parse_target(text) {
        if parsed.host_bits_cleared {
            loader.warnings.push(ConfError::message(
                format!("low address bits of {text} are meaningless"),
                &directive.span,
            ));
        }
        trusted.push(parsed.target);
        return Ok(());
    }
    // A host name stands for every address it has when the configuration loads.
    use std::net::ToSocketAddrs as _;
    let addresses = (text, 0).to_socket_addrs().map_err(|_| {
        ConfError::message(
            format!("host not found in set_real_ip_from \"{text}\""),
            &directive.span,
        )
    })?;
    for address in addresses {
        let exact = match address.ip() {
            std::net::IpAddr::V4(ip) => shared::access::Target::Inet {
                address: u32::from(ip),
                mask: u32::MAX,
            },
            std::net::IpAddr::V6(ip) => shared::access::Target::Inet6 {
                address: u128::from(ip),
                mask: u128::MAX,
            },
        };
        trusted.push(exact);
    }
    Ok(())
}
