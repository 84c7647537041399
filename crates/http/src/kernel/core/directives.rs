//! The core module's directive table.

use std::sync::Arc;
use std::time::Duration;

use conf::{Arity, BlockKind as Shape, ConfError, Contexts, Directive};

use crate::kernel::conf::{
    BlockKind, HttpDirective, LoadContext, LocationScope, MainScope, ServerScope, Setter,
    directive, server_names,
};
use crate::kernel::core::settings::{
    AliasPart, BodyInFileOnly, DocumentRoot, IfModifiedSince, KeepaliveDisable, KeepaliveTimeout,
    LingeringClose, Satisfy, ServerTokens, SizeValue,
};
use crate::set_once;

const HTTP_SERVER: Contexts = Contexts::HTTP.with(Contexts::SERVER);
const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION;

const fn block(
    name: &'static str,
    contexts: Contexts,
    arity: Arity,
    kind: BlockKind,
) -> HttpDirective {
    HttpDirective {
        name,
        contexts,
        arity,
        block: Shape::Block,
        set: Setter::Block(kind),
    }
}

pub const DIRECTIVES: &[HttpDirective] = &[
    block("server", Contexts::HTTP, Arity::NONE, BlockKind::Server),
    block(
        "location",
        Contexts::SERVER.with(Contexts::LOCATION),
        Arity::TAKE12,
        BlockKind::Location,
    ),
    block("types", ANY_LEVEL, Arity::NONE, BlockKind::Types),
    directive(
        "listen",
        Contexts::SERVER,
        Arity::ONE_OR_MORE,
        Setter::Server(set_listen),
    ),
    directive(
        "server_name",
        Contexts::SERVER,
        Arity::ONE_OR_MORE,
        Setter::Server(set_server_name),
    ),
    directive(
        "root",
        ANY_LEVEL.with(Contexts::LOCATION_IF),
        Arity::TAKE1,
        Setter::Location(set_root),
    ),
    directive(
        "alias",
        Contexts::LOCATION,
        Arity::TAKE1,
        Setter::Location(set_alias),
    ),
    directive(
        "server_names_hash_bucket_size",
        Contexts::HTTP,
        Arity::TAKE1,
        Setter::Main(set_server_names_hash_bucket_size),
    ),
    directive(
        "server_names_hash_max_size",
        Contexts::HTTP,
        Arity::TAKE1,
        Setter::Main(set_server_names_hash_max_size),
    ),
    directive(
        "variables_hash_bucket_size",
        Contexts::HTTP,
        Arity::TAKE1,
        Setter::Main(set_variables_hash_bucket_size),
    ),
    directive(
        "variables_hash_max_size",
        Contexts::HTTP,
        Arity::TAKE1,
        Setter::Main(set_variables_hash_max_size),
    ),
    directive(
        "client_header_buffer_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_client_header_buffer_size),
    ),
    directive(
        "large_client_header_buffers",
        HTTP_SERVER,
        Arity::TAKE2,
        Setter::Server(set_large_client_header_buffers),
    ),
    directive(
        "client_header_timeout",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_client_header_timeout),
    ),
    directive(
        "ignore_invalid_headers",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_ignore_invalid_headers),
    ),
    directive(
        "underscores_in_headers",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_underscores_in_headers),
    ),
    directive(
        "merge_slashes",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_merge_slashes),
    ),
    directive(
        "max_headers",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_max_headers),
    ),
    directive(
        "connection_pool_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_connection_pool_size),
    ),
    directive(
        "request_pool_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_request_pool_size),
    ),
    directive(
        "types_hash_bucket_size",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_types_hash_bucket_size),
    ),
    directive(
        "types_hash_max_size",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_types_hash_max_size),
    ),
    directive(
        "client_max_body_size",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_client_max_body_size),
    ),
    directive(
        "client_body_buffer_size",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_client_body_buffer_size),
    ),
    directive(
        "client_body_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_client_body_timeout),
    ),
    directive(
        "client_body_temp_path",
        ANY_LEVEL,
        Arity::TAKE1234,
        Setter::Location(set_client_body_temp_path),
    ),
    directive(
        "client_body_in_file_only",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_client_body_in_file_only),
    ),
    directive(
        "client_body_in_single_buffer",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_client_body_in_single_buffer),
    ),
    directive(
        "send_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_send_timeout),
    ),
    directive(
        "auth_delay",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_auth_delay),
    ),
    directive(
        "keepalive_timeout",
        ANY_LEVEL,
        Arity::TAKE12,
        Setter::Location(set_keepalive_timeout),
    ),
    directive(
        "keepalive_requests",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_keepalive_requests),
    ),
    directive(
        "max_ranges",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_max_ranges),
    ),
    directive(
        "keepalive_time",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_keepalive_time),
    ),
    directive(
        "keepalive_disable",
        ANY_LEVEL,
        Arity::TAKE12,
        Setter::Location(set_keepalive_disable),
    ),
    directive(
        "lingering_close",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_lingering_close),
    ),
    directive(
        "lingering_time",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_lingering_time),
    ),
    directive(
        "lingering_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_lingering_timeout),
    ),
    directive(
        "reset_timedout_connection",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_reset_timedout_connection),
    ),
    directive(
        "default_type",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_default_type),
    ),
    directive(
        "server_tokens",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_server_tokens),
    ),
    directive(
        "early_hints",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        Setter::Location(set_early_hints),
    ),
    directive(
        "chunked_transfer_encoding",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_chunked_transfer_encoding),
    ),
    directive("etag", ANY_LEVEL, Arity::FLAG, Setter::Location(set_etag)),
    directive(
        "if_modified_since",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_if_modified_since),
    ),
    directive(
        "limit_rate",
        ANY_LEVEL.with(Contexts::LOCATION_IF),
        Arity::TAKE1,
        Setter::Location(set_limit_rate),
    ),
    directive(
        "limit_rate_after",
        ANY_LEVEL.with(Contexts::LOCATION_IF),
        Arity::TAKE1,
        Setter::Location(set_limit_rate_after),
    ),
    directive(
        "log_not_found",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_log_not_found),
    ),
    directive(
        "absolute_redirect",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_absolute_redirect),
    ),
    directive(
        "port_in_redirect",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_port_in_redirect),
    ),
    directive(
        "server_name_in_redirect",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_server_name_in_redirect),
    ),
    directive(
        "msie_padding",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_msie_padding),
    ),
    directive(
        "msie_refresh",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_msie_refresh),
    ),
    directive(
        "tcp_nodelay",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_tcp_nodelay),
    ),
    directive(
        "error_page",
        ANY_LEVEL.with(Contexts::LOCATION_IF),
        Arity::TWO_OR_MORE,
        Setter::Location(crate::kernel::core::error_page::set_error_page),
    ),
    directive(
        "recursive_error_pages",
        ANY_LEVEL,
        Arity::FLAG,
        Setter::Location(set_recursive_error_pages),
    ),
    directive(
        "internal",
        Contexts::LOCATION,
        Arity::NONE,
        Setter::Location(set_internal),
    ),
    block(
        "limit_except",
        Contexts::LOCATION,
        Arity::ONE_OR_MORE,
        BlockKind::LimitExcept,
    ),
    directive(
        "satisfy",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_satisfy),
    ),
    directive(
        "post_action",
        ANY_LEVEL,
        Arity::TAKE1,
        Setter::Location(set_post_action),
    ),
];

/// `"NAME" directive invalid value`
pub(crate) fn invalid_value(directive: &Directive) -> ConfError {
    ConfError::directive(&directive.name, "invalid value", &directive.span)
}

/// nginx's enum and bitmask slots: `invalid value "X"`.
fn invalid_choice(directive: &Directive, value: &str) -> ConfError {
    ConfError::message(format!("invalid value \"{value}\""), &directive.span)
}

pub(crate) fn size(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<u64, ConfError> {
    conf::value::parse_size(directive.arg(0)).ok_or_else(|| invalid_value(directive))
}

pub(crate) fn time(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Duration, ConfError> {
    conf::value::parse_time(directive.arg(0)).ok_or_else(|| invalid_value(directive))
}

pub(crate) fn number(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<u64, ConfError> {
    conf::value::parse_number(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))
}

pub(crate) fn flag(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<bool, ConfError> {
    context.flag(directive)
}

/// The file mode of `user:rw group:r all:r` (`proxy_store_access`, `dav_access`): the user
/// part is `rw` unless given, as nginx's access slot makes it.
pub(crate) fn access(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<u32, ConfError> {
    let mut mode = 0;
    let mut user = 0o600;
    for argument in &directive.args {
        let argument = argument.as_str();
        let invalid =
            || ConfError::message(format!("invalid value \"{argument}\""), &directive.span);
        let (shift, permissions) = if let Some(rest) = argument.strip_prefix("user:") {
            (6, rest)
        } else if let Some(rest) = argument.strip_prefix("group:") {
            (3, rest)
        } else if let Some(rest) = argument.strip_prefix("all:") {
            (0, rest)
        } else {
            return Err(invalid());
        };
        let bits = match permissions {
            "rw" => 6,
            "r" => 4,
            _ => return Err(invalid()),
        };
        if shift == 6 {
            user = bits << 6;
        } else {
            mode |= bits << shift;
        }
    }
    Ok(user | mode)
}

set_once!(
    set_server_names_hash_bucket_size,
    MainScope,
    core.server_names_hash_bucket_size,
    size
);
set_once!(
    set_server_names_hash_max_size,
    MainScope,
    core.server_names_hash_max_size,
    number
);
set_once!(
    set_variables_hash_bucket_size,
    MainScope,
    core.variables_hash_bucket_size,
    size
);
set_once!(
    set_variables_hash_max_size,
    MainScope,
    core.variables_hash_max_size,
    number
);
set_once!(
    set_client_header_buffer_size,
    ServerScope,
    core.client_header_buffer_size,
    nonzero_size
);
set_once!(
    set_large_client_header_buffers,
    ServerScope,
    core.large_client_header_buffers,
    buffers
);
set_once!(
    set_client_header_timeout,
    ServerScope,
    core.client_header_timeout,
    time
);
set_once!(
    set_ignore_invalid_headers,
    ServerScope,
    core.ignore_invalid_headers,
    flag
);
set_once!(
    set_underscores_in_headers,
    ServerScope,
    core.underscores_in_headers,
    flag
);
set_once!(set_merge_slashes, ServerScope, core.merge_slashes, flag);
set_once!(set_max_headers, ServerScope, core.max_headers, number);
set_once!(
    set_connection_pool_size,
    ServerScope,
    core.connection_pool_size,
    size
);
set_once!(
    set_request_pool_size,
    ServerScope,
    core.request_pool_size,
    size
);
set_once!(
    set_types_hash_bucket_size,
    LocationScope,
    core.types_hash_bucket_size,
    size
);
set_once!(
    set_types_hash_max_size,
    LocationScope,
    core.types_hash_max_size,
    number
);
set_once!(
    set_client_max_body_size,
    LocationScope,
    core.client_max_body_size,
    offset
);
set_once!(
    set_client_body_buffer_size,
    LocationScope,
    core.client_body_buffer_size,
    size
);
set_once!(
    set_client_body_timeout,
    LocationScope,
    core.client_body_timeout,
    time
);
set_once!(
    set_client_body_temp_path,
    LocationScope,
    core.client_body_temp_path,
    temp_path
);
set_once!(
    set_client_body_in_file_only,
    LocationScope,
    core.client_body_in_file_only,
    body_in_file_only
);
set_once!(
    set_client_body_in_single_buffer,
    LocationScope,
    core.client_body_in_single_buffer,
    flag
);
set_once!(set_send_timeout, LocationScope, core.send_timeout, time);
set_once!(set_auth_delay, LocationScope, core.auth_delay, time);
set_once!(
    set_keepalive_timeout,
    LocationScope,
    core.keepalive_timeout,
    keepalive_timeout
);
set_once!(
    set_keepalive_requests,
    LocationScope,
    core.keepalive_requests,
    number
);
set_once!(set_keepalive_time, LocationScope, core.keepalive_time, time);
set_once!(set_max_ranges, LocationScope, core.max_ranges, number);
set_once!(
    set_keepalive_disable,
    LocationScope,
    core.keepalive_disable,
    keepalive_disable
);
set_once!(
    set_lingering_close,
    LocationScope,
    core.lingering_close,
    lingering_close
);
set_once!(set_lingering_time, LocationScope, core.lingering_time, time);
set_once!(
    set_lingering_timeout,
    LocationScope,
    core.lingering_timeout,
    time
);
set_once!(
    set_reset_timedout_connection,
    LocationScope,
    core.reset_timedout_connection,
    flag
);
set_once!(
    set_default_type,
    LocationScope,
    core.default_type,
    default_type
);
set_once!(
    set_server_tokens,
    LocationScope,
    core.server_tokens,
    server_tokens
);
set_once!(
    set_chunked_transfer_encoding,
    LocationScope,
    core.chunked_transfer_encoding,
    flag
);
set_once!(set_etag, LocationScope, core.etag, flag);
set_once!(
    set_if_modified_since,
    LocationScope,
    core.if_modified_since,
    if_modified_since
);
set_once!(set_limit_rate, LocationScope, core.limit_rate, size_value);
set_once!(
    set_limit_rate_after,
    LocationScope,
    core.limit_rate_after,
    size_value
);
set_once!(set_log_not_found, LocationScope, core.log_not_found, flag);
set_once!(
    set_absolute_redirect,
    LocationScope,
    core.absolute_redirect,
    flag
);
set_once!(
    set_port_in_redirect,
    LocationScope,
    core.port_in_redirect,
    flag
);
set_once!(
    set_server_name_in_redirect,
    LocationScope,
    core.server_name_in_redirect,
    flag
);
set_once!(set_msie_padding, LocationScope, core.msie_padding, flag);
set_once!(set_msie_refresh, LocationScope, core.msie_refresh, flag);
set_once!(set_tcp_nodelay, LocationScope, core.tcp_nodelay, flag);
set_once!(
    set_recursive_error_pages,
    LocationScope,
    core.recursive_error_pages,
    flag
);
set_once!(set_internal, LocationScope, core.internal, |_, _| Ok::<
    _,
    ConfError,
>(true));
set_once!(set_satisfy, LocationScope, core.satisfy, satisfy);
set_once!(
    set_post_action,
    LocationScope,
    core.post_action,
    |d: &Directive, _c: &mut LoadContext<'_>| -> Result<_, ConfError> {
        Ok(match d.arg(0) {
            "off" => None,
            uri => Some(uri.as_bytes().into()),
        })
    }
);

fn nonzero_size(directive: &Directive, context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    size(directive, context).and_then(|value| {
        if value == 0 {
            Err(invalid_value(directive))
        } else {
            Ok(value)
        }
    })
}

fn offset(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    conf::value::parse_offset(directive.arg(0)).ok_or_else(|| invalid_value(directive))
}

/// `large_client_header_buffers NUMBER SIZE`: both must be positive.
fn buffers(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<(u64, u64), ConfError> {
    let count = conf::value::parse_number(directive.arg(0)).filter(|count| *count > 0);
    let size = conf::value::parse_size(directive.arg(1)).filter(|size| *size > 0);
    match (count, size) {
        (Some(count), Some(size)) => Ok((count, size)),
        _ => Err(invalid_value(directive)),
    }
}

fn temp_path(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<crate::kernel::core::TempPath, ConfError> {
    context.temp_path(directive)
}

fn body_in_file_only(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<BodyInFileOnly, ConfError> {
    match directive.arg(0).to_ascii_lowercase().as_str() {
        "off" => Ok(BodyInFileOnly::Off),
        "on" => Ok(BodyInFileOnly::On),
        "clean" => Ok(BodyInFileOnly::Clean),
        _ => Err(invalid_choice(directive, directive.arg(0))),
    }
}

/// `keepalive_timeout TIMEOUT [HEADER_TIMEOUT]`; the header value is whole seconds.
fn keepalive_timeout(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<KeepaliveTimeout, ConfError> {
    let timeout =
        conf::value::parse_time(directive.arg(0)).ok_or_else(|| invalid_value(directive))?;
    let header = match directive.args.get(1) {
        Some(argument) => Some(
            conf::value::parse_time_seconds(argument.as_str())
                .ok_or_else(|| invalid_value(directive))?,
        ),
        None => None,
    };
    Ok(KeepaliveTimeout { timeout, header })
}

fn keepalive_disable(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<KeepaliveDisable, ConfError> {
    let mut disable = KeepaliveDisable::default();
    for argument in &directive.args {
        let argument = argument.as_str();
        match argument.to_ascii_lowercase().as_str() {
            "none" => disable = KeepaliveDisable::default(),
            "msie6" => disable.msie6 = true,
            "safari" => disable.safari = true,
            _ => return Err(invalid_choice(directive, argument)),
        }
    }
    Ok(disable)
}

fn lingering_close(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<LingeringClose, ConfError> {
    match directive.arg(0).to_ascii_lowercase().as_str() {
        "off" => Ok(LingeringClose::Off),
        "on" => Ok(LingeringClose::On),
        "always" => Ok(LingeringClose::Always),
        _ => Err(invalid_choice(directive, directive.arg(0))),
    }
}

fn server_tokens(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<ServerTokens, ConfError> {
    match directive.arg(0).to_ascii_lowercase().as_str() {
        "on" => Ok(ServerTokens::On),
        "off" => Ok(ServerTokens::Off),
        "build" => Ok(ServerTokens::Build),
        _ => Err(invalid_choice(directive, directive.arg(0))),
    }
}

fn satisfy(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Satisfy, ConfError> {
    match directive.arg(0).to_ascii_lowercase().as_str() {
        "all" => Ok(Satisfy::All),
        "any" => Ok(Satisfy::Any),
        _ => Err(invalid_choice(directive, directive.arg(0))),
    }
}

fn if_modified_since(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<IfModifiedSince, ConfError> {
    match directive.arg(0).to_ascii_lowercase().as_str() {
        "off" => Ok(IfModifiedSince::Off),
        "exact" => Ok(IfModifiedSince::Exact),
        "before" => Ok(IfModifiedSince::Before),
        _ => Err(invalid_choice(directive, directive.arg(0))),
    }
}

/// A size that may hold variables: a literal one is checked now, as nginx checks it.
pub(crate) fn size_value(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<SizeValue, ConfError> {
    let template = context.template(directive.arg(0), &directive.span)?;
    match template.as_literal() {
        Some(_) => size(directive, context).map(SizeValue::Fixed),
        None => Ok(SizeValue::Variable(template)),
    }
}

fn default_type(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Arc<[u8]>, ConfError> {
    Ok(Arc::from(directive.arg(0).as_bytes()))
}

fn set_listen(
    scope: &mut ServerScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let specs = shared::listen::parse(directive)?;
    if specs.iter().any(|spec| spec.http2) {
        context.warn(
            "the \"listen ... http2\" directive is deprecated, use the \"http2\" directive instead"
                .to_owned(),
            &directive.span,
        );
    }
    scope.listens.extend(specs);
    Ok(())
}

fn set_server_name(
    scope: &mut ServerScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope.has_server_name = true;
    for argument in &directive.args {
        let text = argument.as_str();
        let hostname = context.hostname.clone();
        let name = server_names::parse(text, &hostname, &mut context.variables, &directive.span)?;
        // `$server_name` shows `.example.com` as `example.com`, as nginx does.
        let shown = match text {
            "$hostname" => hostname,
            _ if text.len() > 1 && text.starts_with('.') => text[1..].to_owned(),
            _ => text.to_owned(),
        };
        if !text.starts_with('~') && shown.bytes().any(|b| b == b'/' || b.is_ascii_control()) {
            context.warn(
                format!("server name \"{shown}\" has suspicious symbols"),
                &directive.span,
            );
        }
        scope.names.push((name, shown));
    }
    Ok(())
}

/// `root PATH`: relative paths hang off the prefix; a trailing `/` is dropped, as nginx does.
fn set_root(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_document_root(scope, directive, context, false)
}

fn set_alias(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_document_root(scope, directive, context, true)
}

fn set_document_root(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
    alias: bool,
) -> Result<(), ConfError> {
    if let Some(existing) = &scope.core.document_root {
        let earlier = match existing {
            DocumentRoot::Root(_) => "root",
            DocumentRoot::Alias(..) => "alias",
        };
        let message = if earlier == directive.name {
            format!("\"{}\" directive is duplicate", directive.name)
        } else {
            format!(
                "\"{}\" directive is duplicate, \"{earlier}\" directive was specified earlier",
                directive.name
            )
        };
        return Err(ConfError::message(message, &directive.span));
    }
    let mut text = directive.arg(0).to_owned();
    if !alias && text.len() > 1 && text.ends_with('/') {
        text.pop();
    }
    if !text.starts_with('/') && !text.starts_with('$') {
        text = context.path(&text).to_string_lossy().into_owned();
    }
    let template = context.template(&text, &directive.span)?;
    scope.core.document_root = Some(if alias {
        // The part it replaces is set once the location is read (`conf::load`).
        DocumentRoot::Alias(template, AliasPart::Prefix(0))
    } else {
        DocumentRoot::Root(template)
    });
    Ok(())
}

/// `early_hints string ...`: the conditions, once per level (nginx refuses a second).
fn set_early_hints(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.core.early_hints.is_some() {
        return Err(context.duplicate(directive));
    }
    let mut conditions = Vec::with_capacity(directive.args.len());
    for argument in &directive.args {
        conditions.push(context.template(argument.as_str(), &directive.span)?);
    }
    scope.core.early_hints = Some(conditions);
    Ok(())
}
