//! `grpc_*` directives that are the proxy's under grpc's name, each filling the grpc
//! module's copy of the proxy's settings (a child of the proxy's table, whose setters it
//! shares).

use conf::Arity;

use super::{
    set_bind, set_buffer_size, set_connect_timeout, set_hide_header, set_ignore_headers,
    set_intercept_errors, set_next_upstream, set_next_upstream_timeout, set_next_upstream_tries,
    set_pass_header, set_read_timeout, set_send_timeout, set_set_header, set_socket_keepalive,
};
use crate::kernel::conf::{HttpDirective, gateway_directive};
use crate::modules::proxy::gateway::settings::Protocol;

/// The proxy directives the grpc module has too, under its prefix: the request's
/// fields, the response head's, the connection's and the tries' settings. gRPC streams
/// both ways, so the buffering directives are not among them (nginx has none either).
pub const GRPC_DIRECTIVES: &[HttpDirective] = &[
    gateway_directive("grpc_bind", Protocol::Grpc, Arity::TAKE12, set_bind),
    gateway_directive(
        "grpc_buffer_size",
        Protocol::Grpc,
        Arity::TAKE1,
        set_buffer_size,
    ),
    gateway_directive(
        "grpc_connect_timeout",
        Protocol::Grpc,
        Arity::TAKE1,
        set_connect_timeout,
    ),
    gateway_directive(
        "grpc_hide_header",
        Protocol::Grpc,
        Arity::TAKE1,
        set_hide_header,
    ),
    gateway_directive(
        "grpc_ignore_headers",
        Protocol::Grpc,
        Arity::ONE_OR_MORE,
        set_ignore_headers,
    ),
    gateway_directive(
        "grpc_intercept_errors",
        Protocol::Grpc,
        Arity::FLAG,
        set_intercept_errors,
    ),
    gateway_directive(
        "grpc_next_upstream",
        Protocol::Grpc,
        Arity::ONE_OR_MORE,
        set_next_upstream,
    ),
    gateway_directive(
        "grpc_next_upstream_timeout",
        Protocol::Grpc,
        Arity::TAKE1,
        set_next_upstream_timeout,
    ),
    gateway_directive(
        "grpc_next_upstream_tries",
        Protocol::Grpc,
        Arity::TAKE1,
        set_next_upstream_tries,
    ),
    gateway_directive(
        "grpc_pass_header",
        Protocol::Grpc,
        Arity::TAKE1,
        set_pass_header,
    ),
    gateway_directive(
        "grpc_read_timeout",
        Protocol::Grpc,
        Arity::TAKE1,
        set_read_timeout,
    ),
    gateway_directive(
        "grpc_send_timeout",
        Protocol::Grpc,
        Arity::TAKE1,
        set_send_timeout,
    ),
    gateway_directive(
        "grpc_set_header",
        Protocol::Grpc,
        Arity::TAKE2,
        set_set_header,
    ),
    gateway_directive(
        "grpc_socket_keepalive",
        Protocol::Grpc,
        Arity::FLAG,
        set_socket_keepalive,
    ),
];
