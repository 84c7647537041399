//! The memcached module's own directives: `memcached_pass`, `memcached_gzip_flag` and
//! `memcached_next_upstream` (whose conditions are memcached's). The connection's
//! settings it shares with the proxy are [`crate::modules::proxy::directives::MEMCACHED_DIRECTIVES`].

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::core::directives::invalid_value;
use crate::modules::proxy::NextUpstream;
use crate::modules::proxy::directives::next_upstream_flags;
use crate::modules::proxy::gateway::Protocol;
use crate::modules::proxy::pass::load_target;
use crate::modules::proxy::settings::ProxyPass;

const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION;

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive(
        "memcached_pass",
        Contexts::LOCATION.with(Contexts::LOCATION_IF),
        Arity::TAKE1,
        set_pass,
    ),
    location_directive(
        "memcached_gzip_flag",
        ANY_LEVEL,
        Arity::TAKE1,
        set_gzip_flag,
    ),
    location_directive(
        "memcached_next_upstream",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_next_upstream,
    ),
];

/// `memcached_pass ADDRESS`: `host:port`, `unix:/path` or an `upstream` name, without
/// variables, as nginx takes it. The key is `$memcached_key`, which some `set` must
/// define (else the load fails with `unknown "memcached_key" variable`).
fn set_pass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let memcached = &mut scope.memcached;
    if memcached.upstream.pass.is_some() {
        return Err(context.duplicate(directive));
    }
    let address = directive.arg(0);
    let url = format!("http://{address}");
    let target = load_target(&url, &directive.span, &mut context.upstreams)?;
    if target.uri.is_some() {
        return Err(ConfError::message(
            format!("invalid host in upstream \"{address}\""),
            &directive.span,
        ));
    }
    let key = context.template("$memcached_key", &directive.span)?;
    let memcached = &mut scope.memcached;
    memcached.upstream.pass = Some(Some(Arc::new(ProxyPass::Static(target))));
    memcached.own.key = Some(Some(key));
    scope.content = Some(Content::Gateway(Protocol::Memcached));
    Ok(())
}

/// `memcached_gzip_flag FLAG`: a bit mask of the value's flags.
fn set_gzip_flag(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let own = &mut scope.memcached.own;
    if own.gzip_flag.is_some() {
        return Err(context.duplicate(directive));
    }
    let number =
        conf::value::parse_number(directive.arg(0)).ok_or_else(|| invalid_value(directive))?;
    own.gzip_flag = Some(u32::try_from(number).map_err(|_| invalid_value(directive))?);
    Ok(())
}

/// `memcached_next_upstream error | timeout | invalid_response | not_found | off ...`.
fn set_next_upstream(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let upstream = &mut scope.memcached.upstream;
    if upstream.next_upstream.is_some() {
        return Err(context.duplicate(directive));
    }
    let flags = next_upstream_flags(directive, |word| {
        Some(match word.to_ascii_lowercase().as_str() {
            "error" => NextUpstream::ERROR,
            "timeout" => NextUpstream::TIMEOUT,
            "invalid_response" => NextUpstream::INVALID_HEADER,
            "not_found" => NextUpstream::HTTP_404,
            "off" => NextUpstream::OFF,
            _ => return None,
        })
    })?;
    upstream.next_upstream = Some(flags);
    Ok(())
}
