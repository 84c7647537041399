//! The tunnel module's own directives: `tunnel_pass`, `tunnel_next_upstream` (its three
//! conditions), and the socket options nginx has under the module's name. The proxy
//! directives it shares (`tunnel_connect_timeout`, `tunnel_bind`) are in the proxy's table
//! ([`crate::modules::proxy::directives::TUNNEL_DIRECTIVES`]), which fill the tunnel's copy
//! of the proxy's settings.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::location_directive;
use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, gateway_directive};
use crate::kernel::core::directives::size;
use crate::modules::proxy::NextUpstream;
use crate::modules::proxy::directives::next_upstream_flags;
use crate::modules::proxy::gateway::Protocol;
use crate::modules::proxy::pass::{DefaultPort, load_target_with};
use crate::modules::proxy::settings::ProxyPass;

/// What `tunnel_pass` without an address connects to: the CONNECT request's target.
const REQUEST_TARGET: &str = "$host:$request_port";

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive(
        "tunnel_pass",
        Contexts::SERVER
            .with(Contexts::LOCATION)
            .with(Contexts::LOCATION_IF),
        Arity::counts(&[0, 1]),
        set_tunnel_pass,
    ),
    gateway_directive(
        "tunnel_next_upstream",
        Protocol::Tunnel,
        Arity::ONE_OR_MORE,
        set_next_upstream,
    ),
    gateway_directive(
        "tunnel_send_lowat",
        Protocol::Tunnel,
        Arity::TAKE1,
        set_send_lowat,
    ),
];

/// `tunnel_pass [ADDRESS]`: `host:port`, an `upstream` name, or either made by
/// variables (resolved per request, through `resolver` for a name no `upstream` block
/// has). The server then accepts CONNECT requests (nginx's `allow_connect`).
fn set_tunnel_pass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.gateway(Protocol::Tunnel).upstream.pass.is_some() {
        return Err(context.duplicate(directive));
    }
    let address = directive
        .args
        .first()
        .map_or(REQUEST_TARGET, |arg| arg.as_str());
    // Kept as the proxy keeps a `proxy_pass` URL, so that peers are chosen the same way.
    let url = format!("http://{address}");
    let template = context.template(&url, &directive.span)?;
    let pass = if template.as_literal().is_some() {
        let target = load_target_with(
            &url,
            &directive.span,
            &mut context.upstreams,
            DefaultPort::Required,
        )?;
        if target.uri.is_some() {
            return Err(ConfError::message(
                format!("invalid host in upstream \"{address}\""),
                &directive.span,
            ));
        }
        ProxyPass::Static(target)
    } else {
        ProxyPass::Variables(template)
    };
    scope.gateway_mut(Protocol::Tunnel).upstream.pass = Some(Some(Arc::new(pass)));
    scope.content = Some(Content::Gateway(Protocol::Tunnel));
    Ok(())
}

/// `tunnel_next_upstream error | timeout | off ...`: the tunnel sends nothing and reads
/// no head, so only the connection's failures may move it to the next server.
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
            "off" => NextUpstream::OFF,
            _ => return None,
        })
    })?;
    scope.proxy.next_upstream = Some(flags);
    Ok(())
}

/// `tunnel_send_lowat SIZE`: Linux has no settable `SO_SNDLOWAT`, so a size other than 0
/// is warned about and ignored, as nginx does there.
fn set_send_lowat(
    _scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if size(directive, context)? != 0 {
        context.warn(
            format!("\"{}\" is not supported, ignored", directive.name),
            &directive.span,
        );
    }
    Ok(())
}
