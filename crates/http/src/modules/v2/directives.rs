//! The HTTP/2 module's directive table, with nginx's contexts, defaults and errors.
//!
//! Since nginx 1.19.7 `http2_idle_timeout`, `http2_max_requests`, `http2_max_field_size`,
//! `http2_max_header_size` and `http2_recv_timeout` are obsolete (HTTP/1's directives
//! apply); since 1.25.1 so are the server push directives. nginx accepts each with a
//! warning and ignores its value; so does Portico.

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{
    HttpDirective, LoadContext, LocationScope, MainScope, ServerScope, Setter, directive,
};
use crate::kernel::core::directives::{flag, number, size};
use crate::set_once;

const HTTP_SERVER: Contexts = Contexts::HTTP.with(Contexts::SERVER);

/// nginx's largest frame payload, to which a larger `http2_chunk_size` is lowered.
const MAX_FRAME_SIZE: u64 = (1 << 24) - 1;
/// The largest flow-control window (RFC 9113, 6.9.1).
const MAX_WINDOW: u64 = (1 << 31) - 1;
/// nginx refuses a receive buffer no larger than twice its 16-byte state buffer.
const RECV_BUFFER_MIN: u64 = 2 * 16;

pub const DIRECTIVES: &[HttpDirective] = &[
    directive("http2", HTTP_SERVER, Arity::FLAG, Setter::Server(set_http2)),
    directive(
        "http2_max_concurrent_streams",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_max_concurrent_streams),
    ),
    directive(
        "http2_body_preread_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_body_preread_size),
    ),
    directive(
        "http2_chunk_size",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::TAKE1,
        Setter::Location(set_chunk_size),
    ),
    directive(
        "http2_recv_buffer_size",
        Contexts::HTTP,
        Arity::TAKE1,
        Setter::Main(set_recv_buffer_size),
    ),
    directive(
        "http2_idle_timeout",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(obsolete),
    ),
    directive(
        "http2_max_requests",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(obsolete),
    ),
    directive(
        "http2_max_field_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(obsolete),
    ),
    directive(
        "http2_max_header_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(obsolete),
    ),
    directive(
        "http2_recv_timeout",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(obsolete),
    ),
    directive(
        "http2_push",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::TAKE1,
        Setter::Location(obsolete_location),
    ),
    directive(
        "http2_push_preload",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::FLAG,
        Setter::Location(obsolete_location),
    ),
    directive(
        "http2_max_concurrent_pushes",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(obsolete),
    ),
];

set_once!(set_http2, ServerScope, v2.enable, flag);
set_once!(
    set_max_concurrent_streams,
    ServerScope,
    v2.max_concurrent_streams,
    streams
);
set_once!(
    set_body_preread_size,
    ServerScope,
    v2.body_preread_size,
    preread_size
);
set_once!(set_chunk_size, LocationScope, v2.chunk_size, chunk_size);
set_once!(
    set_recv_buffer_size,
    MainScope,
    v2.recv_buffer_size,
    recv_buffer_size
);

fn streams(directive: &Directive, context: &mut LoadContext<'_>) -> Result<u32, ConfError> {
    let value = number(directive, context)?;
    Ok(u32::try_from(value).unwrap_or(u32::MAX))
}

fn preread_size(directive: &Directive, context: &mut LoadContext<'_>) -> Result<u32, ConfError> {
    let value = size(directive, context)?;
    if value > MAX_WINDOW {
        return Err(ConfError::directive(
            &directive.name,
            "value is too large",
            &directive.span,
        ));
    }
    Ok(value as u32)
}

fn chunk_size(directive: &Directive, context: &mut LoadContext<'_>) -> Result<u32, ConfError> {
    let value = size(directive, context)?;
    if value == 0 {
        return Err(ConfError::message(
            "the http2 chunk size cannot be zero",
            &directive.span,
        ));
    }
    Ok(value.min(MAX_FRAME_SIZE) as u32)
}

fn recv_buffer_size(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<u64, ConfError> {
    let value = size(directive, context)?;
    if value <= RECV_BUFFER_MIN {
        return Err(ConfError::directive(
            &directive.name,
            "value is too small",
            &directive.span,
        ));
    }
    Ok(value)
}

/// The directive that replaces an obsolete one, or `None` when nothing does (push).
fn replacement(name: &str) -> Option<&'static str> {
    match name {
        "http2_idle_timeout" => Some("keepalive_timeout"),
        "http2_max_requests" => Some("keepalive_requests"),
        "http2_max_field_size" | "http2_max_header_size" => Some("large_client_header_buffers"),
        "http2_recv_timeout" => Some("client_header_timeout"),
        _ => None,
    }
}

/// Accepts an obsolete directive with nginx's warning; its value is not looked at.
fn warn_obsolete(directive: &Directive, context: &mut LoadContext<'_>) {
    let name = &directive.name;
    let message = match replacement(name) {
        Some(new) => {
            format!("the \"{name}\" directive is obsolete, use the \"{new}\" directive instead")
        }
        None => format!("the \"{name}\" directive is obsolete, ignored"),
    };
    context.warn(message, &directive.span);
}

fn obsolete(
    _scope: &mut ServerScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    warn_obsolete(directive, context);
    Ok(())
}

fn obsolete_location(
    _scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    warn_obsolete(directive, context);
    Ok(())
}
