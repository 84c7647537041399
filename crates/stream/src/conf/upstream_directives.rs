//! The setters of the `upstream` block's lines in the stream block (their table entries
//! are in `directives.rs`). The groups are the `upstream` crate's, as the http block's are.

use conf::{ConfError, ConfErrorKind, Context, Directive};
use upstream::Balancer;
use upstream::registry::UpstreamScope;
use upstream::server_line::{Block, read_least_time, read_server};

use super::Loader;
use super::directives::{DIRECTIVES, Setter, duplicate, time};
use crate::variables::StreamTemplate;

type Result = std::result::Result<(), ConfError>;

/// `upstream NAME { ... }`.
pub fn read_upstream(loader: &mut Loader<'_>, directive: &Directive) -> Result {
    let name = directive.arg(0).to_owned();
    let mut scope = UpstreamScope::default();
    for line in directive.block.as_deref().unwrap_or_default() {
        let spec = conf::spec::check(DIRECTIVES, line, Context::StreamUpstream)?;
        match spec.set {
            Setter::UpstreamLine(set) => set(&mut scope, line, loader)?,
            Setter::Ignored => {}
            _ => unreachable!("only upstream lines are allowed in an upstream block by the table"),
        }
    }
    if scope.servers.is_empty() {
        return Err(ConfError::new(
            ConfErrorKind::Message(format!(
                "no servers are inside upstream in {}",
                directive.span
            )),
            None,
        ));
    }
    loader.upstreams.define(&name, scope, &directive.span)?;
    loader.defined_upstreams.push(name);
    Ok(())
}

/// `server ADDRESS [weight=N] [max_fails=N] [fail_timeout=TIME] [max_conns=N] [backup]
/// [down] [resolve] [service=NAME]`; a stream upstream server names its port, unless it
/// is a `service=`.
pub fn set_upstream_server(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    let args: Vec<&str> = directive.args.iter().map(|arg| arg.as_str()).collect();
    let server = read_server(&args, &directive.span, scope.allows_backup(), Block::Stream)?;
    scope.servers.push(server);
    Ok(())
}

/// `zone NAME [SIZE]`: the group's state is always shared by every worker; the name is
/// what `server ... resolve` asks for.
pub fn set_upstream_zone(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    if let Some(size) = directive.args.get(1)
        && conf::value::parse_size(size.as_str()).is_none_or(|size| size < 8192)
    {
        return Err(ConfError::message(
            format!("invalid zone size \"{}\"", size.as_str()),
            &directive.span,
        ));
    }
    duplicate(&scope.zone, directive)?;
    scope.zone = Some(directive.arg(0).to_owned());
    Ok(())
}

/// `resolver ADDRESS ... [valid=TIME] [ipv4=on|off] [ipv6=on|off]` in an `upstream`
/// block: the name servers its `resolve` servers are looked up with.
pub fn set_upstream_resolver(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&scope.resolver, directive)?;
    scope.resolver = Some(std::sync::Arc::new(shared::resolver::parse(directive)?));
    Ok(())
}

/// `resolver_timeout TIME` in an `upstream` block.
pub fn set_upstream_resolver_timeout(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&scope.resolver_timeout, directive)?;
    scope.resolver_timeout = Some(time(directive)?);
    Ok(())
}

/// `least_time connect|first_byte|last_byte [inflight]`.
pub fn set_upstream_least_time(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    let args: Vec<&str> = directive.args.iter().map(|arg| arg.as_str()).collect();
    let balancer = read_least_time(&args, &directive.span, Block::Stream)?;
    warn_redefined(scope, loader, directive);
    scope.balancer = Some(balancer);
    Ok(())
}

/// A second balancing method replaces the first, with nginx's warning.
fn warn_redefined(
    scope: &UpstreamScope<StreamTemplate>,
    loader: &mut Loader<'_>,
    directive: &Directive,
) {
    if scope.balancer.is_some() {
        loader.warnings.push(ConfError::message(
            "load balancing method redefined",
            &directive.span,
        ));
    }
}

fn warn_backup_ignored(
    scope: &UpstreamScope<StreamTemplate>,
    loader: &mut Loader<'_>,
    directive: &Directive,
) {
    if scope.servers.iter().any(|server| server.backup) {
        loader.warnings.push(ConfError::message(
            "load balancing method redefined",
            &directive.span,
        ));
    }
}

pub fn set_upstream_hash(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    warn_redefined(scope, loader, directive);
    let consistent = match directive.args.get(1).map(|argument| argument.as_str()) {
        None => false,
        Some("consistent") => true,
        Some(other) => {
            return Err(ConfError::message(
                format!("invalid parameter \"{other}\""),
                &directive.span,
            ));
        }
    };
    warn_backup_ignored(scope, loader, directive);
    let key = loader.template(directive.arg(0), &directive.span)?;
    scope.balancer = Some(Balancer::Hash { key, consistent });
    Ok(())
}

pub fn set_upstream_least_conn(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    warn_redefined(scope, loader, directive);
    scope.balancer = Some(Balancer::LeastConn);
    Ok(())
}

pub fn set_upstream_random(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    warn_redefined(scope, loader, directive);
    let two = match directive.args.first().map(|argument| argument.as_str()) {
        None => false,
        Some("two") => true,
        Some(other) => {
            return Err(ConfError::message(
                format!("invalid parameter \"{other}\""),
                &directive.span,
            ));
        }
    };
    if let Some(method) = directive.args.get(1)
        && method.as_str() != "least_conn"
    {
        return Err(ConfError::message(
            format!("invalid parameter \"{}\"", method.as_str()),
            &directive.span,
        ));
    }
    warn_backup_ignored(scope, loader, directive);
    scope.balancer = Some(Balancer::Random { two });
    Ok(())
}
