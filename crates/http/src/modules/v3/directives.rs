//! The HTTP/3 module's directive table, with nginx's contexts and defaults. `quic_bpf`
//! is a main-context directive of the server crate.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, ServerScope, Setter, directive};
use crate::kernel::core::directives::{flag, number, size};
use crate::set_once;

const HTTP_SERVER: Contexts = Contexts::HTTP.with(Contexts::SERVER);

pub const DIRECTIVES: &[HttpDirective] = &[
    directive("http3", HTTP_SERVER, Arity::FLAG, Setter::Server(set_http3)),
    directive("http3_hq", HTTP_SERVER, Arity::FLAG, Setter::Server(set_hq)),
    directive(
        "http3_max_concurrent_streams",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_max_concurrent_streams),
    ),
    directive(
        "http3_stream_buffer_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_stream_buffer_size),
    ),
    directive(
        "quic_retry",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_retry),
    ),
    directive(
        "quic_gso",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_gso),
    ),
    directive(
        "quic_host_key",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_host_key),
    ),
    directive(
        "quic_active_connection_id_limit",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_active_connection_id_limit),
    ),
];

set_once!(set_http3, ServerScope, v3.enable, flag);
set_once!(set_hq, ServerScope, v3.hq, flag);
set_once!(
    set_max_concurrent_streams,
    ServerScope,
    v3.max_concurrent_streams,
    count
);
set_once!(
    set_stream_buffer_size,
    ServerScope,
    v3.stream_buffer_size,
    size
);
set_once!(set_retry, ServerScope, v3.retry, flag);
set_once!(set_gso, ServerScope, v3.gso, flag);
set_once!(set_host_key, ServerScope, v3.host_key, host_key);
set_once!(
    set_active_connection_id_limit,
    ServerScope,
    v3.active_connection_id_limit,
    count
);

fn count(directive: &Directive, context: &mut LoadContext<'_>) -> Result<u32, ConfError> {
    let value = number(directive, context)?;
    Ok(u32::try_from(value).unwrap_or(u32::MAX))
}

/// Reads the key file at load (on the master), as nginx does; an empty file is refused.
fn host_key(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<Option<Arc<[u8]>>, ConfError> {
    let path = context.path(directive.arg(0));
    let shown = path.display();
    let bytes = std::fs::read(&path).map_err(|error| {
        let text = runtime::sys::linux::error_text(&error);
        ConfError::message(
            format!("open() \"{shown}\" failed ({text})"),
            &directive.span,
        )
    })?;
    if bytes.is_empty() {
        return Err(ConfError::message(
            format!("\"{shown}\" zero key size"),
            &directive.span,
        ));
    }
    Ok(Some(Arc::from(bytes)))
}
