//! The `upstream` block and the directives inside it.

use conf::{Arity, BlockKind as Shape, ConfError, Contexts, Directive};

use crate::kernel::conf::{BlockKind, HttpDirective, LoadContext, Setter};
use crate::kernel::core::directives::{number, time};
use crate::kernel::upstream::Balancer;
use crate::kernel::upstream::UpstreamScope;
use crate::kernel::upstream::server_line::{Block, read_least_time, read_server};
use crate::set_once;

const fn entry(name: &'static str, arity: Arity, set: UpstreamSetter) -> HttpDirective {
    HttpDirective {
        name,
        contexts: Contexts::UPSTREAM,
        arity,
        block: Shape::Simple,
        set: Setter::Upstream(set),
    }
}

type UpstreamSetter =
    fn(&mut UpstreamScope, &Directive, &mut LoadContext<'_>) -> Result<(), ConfError>;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "upstream",
        contexts: Contexts::HTTP,
        arity: Arity::TAKE1,
        block: Shape::Block,
        set: Setter::Block(BlockKind::Upstream),
    },
    entry("server", Arity::ONE_OR_MORE, set_server),
    entry("keepalive", Arity::TAKE1, set_keepalive),
    entry("keepalive_requests", Arity::TAKE1, set_keepalive_requests),
    entry("keepalive_time", Arity::TAKE1, set_keepalive_time),
    entry("keepalive_timeout", Arity::TAKE1, set_keepalive_timeout),
    entry("least_conn", Arity::NONE, set_least_conn),
    entry("least_time", Arity::TAKE12, set_least_time),
    entry("ip_hash", Arity::NONE, set_ip_hash),
    entry("hash", Arity::TAKE12, set_hash),
    entry("random", Arity::counts(&[0, 1, 2]), set_random),
    entry("zone", Arity::TAKE12, set_zone),
    entry("resolver", Arity::ONE_OR_MORE, set_resolver),
    entry("resolver_timeout", Arity::TAKE1, set_resolver_timeout),
    entry("sticky", Arity::ONE_OR_MORE, super::sticky::set_sticky),
];

/// Reads an `upstream NAME { ... }` block into the registry.
pub(crate) fn read_upstream(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let name = directive.arg(0).to_owned();
    let mut scope = UpstreamScope::default();
    for inner in directive.block.as_deref().unwrap_or_default() {
        let spec = context.check_directive(inner, conf::Context::Upstream)?;
        match &spec.set {
            Setter::Upstream(set) => set(&mut scope, inner, context)?,
            _ => {
                return Err(ConfError::at(
                    conf::ConfErrorKind::NotAllowedHere {
                        name: inner.name.clone(),
                    },
                    &inner.span,
                ));
            }
        }
    }
    context.upstreams.define(&name, scope, &directive.span)
}

fn set_server(
    scope: &mut UpstreamScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let args: Vec<&str> = directive.args.iter().map(|arg| arg.as_str()).collect();
    let server = read_server(&args, &directive.span, scope.allows_backup(), Block::Http)?;
    scope.servers.push(server);
    Ok(())
}

fn set_keepalive(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.keepalive.is_some() {
        return Err(context.duplicate(directive));
    }
    let count = conf::value::parse_number(directive.arg(0))
        .filter(|count| *count > 0)
        .ok_or_else(|| {
            ConfError::message(
                format!(
                    "invalid value \"{}\" in \"keepalive\" directive",
                    directive.arg(0)
                ),
                &directive.span,
            )
        })?;
    scope.keepalive = Some(count as usize);
    Ok(())
}

set_once!(
    set_keepalive_requests,
    UpstreamScope,
    keepalive_requests,
    number
);

set_once!(set_keepalive_time, UpstreamScope, keepalive_time, time);

set_once!(
    set_keepalive_timeout,
    UpstreamScope,
    keepalive_timeout,
    time
);

/// A second balancing method replaces the first, with nginx's warning.
fn set_balancer(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
    balancer: Balancer,
) -> Result<(), ConfError> {
    if scope.balancer.is_some() {
        context.warn(
            "load balancing method redefined".to_owned(),
            &directive.span,
        );
    }
    if !matches!(
        balancer,
        Balancer::RoundRobin | Balancer::LeastConn | Balancer::LeastTime { .. }
    ) && scope.servers.iter().any(|server| server.backup)
    {
        // nginx accepts this and then never uses the backup servers; say so.
        context.warn(
            format!("\"{}\" ignores \"backup\" servers", directive.name),
            &directive.span,
        );
    }
    scope.balancer = Some(balancer);
    Ok(())
}

fn set_least_conn(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_balancer(scope, directive, context, Balancer::LeastConn)
}

/// `least_time header|last_byte [inflight]`.
fn set_least_time(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let args: Vec<&str> = directive.args.iter().map(|arg| arg.as_str()).collect();
    let balancer = read_least_time(&args, &directive.span, Block::Http)?;
    set_balancer(scope, directive, context, balancer)
}

fn set_ip_hash(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_balancer(scope, directive, context, Balancer::IpHash)
}

fn set_hash(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let key = context.template(directive.arg(0), &directive.span)?;
    let consistent = match directive.args.get(1).map(|arg| arg.as_str()) {
        None => false,
        Some("consistent") => true,
        Some(other) => {
            return Err(ConfError::message(
                format!("invalid parameter \"{other}\""),
                &directive.span,
            ));
        }
    };
    set_balancer(
        scope,
        directive,
        context,
        Balancer::Hash { key, consistent },
    )
}

fn set_random(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let args: Vec<&str> = directive.args.iter().map(|arg| arg.as_str()).collect();
    let two = match args.as_slice() {
        [] => false,
        ["two"] | ["two", "least_conn"] => true,
        [.., other] => {
            return Err(ConfError::message(
                format!("invalid parameter \"{other}\""),
                &directive.span,
            ));
        }
    };
    set_balancer(scope, directive, context, Balancer::Random { two })
}

/// `zone NAME [SIZE]`: accepted; a group's state is always shared by every worker.
fn set_zone(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.zone.is_some() {
        return Err(context.duplicate(directive));
    }
    if let Some(size) = directive.args.get(1)
        && conf::value::parse_size(size.as_str()).is_none()
    {
        return Err(ConfError::message(
            format!("invalid zone size \"{}\"", size.as_str()),
            &directive.span,
        ));
    }
    scope.zone = Some(directive.arg(0).to_owned());
    Ok(())
}

/// `resolver` inside an `upstream` block: the name servers its `resolve` servers use.
fn set_resolver(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.resolver.is_some() {
        return Err(context.duplicate(directive));
    }
    scope.resolver = Some(std::sync::Arc::new(shared::resolver::parse(directive)?));
    Ok(())
}

set_once!(set_resolver_timeout, UpstreamScope, resolver_timeout, time);
