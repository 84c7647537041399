//! The setters of the `upstream` block's lines in the stream block (their table entries
//! are in `directives.rs`). The groups are the `upstream` crate's, as the http block's are.

use std::time::Duration;

use conf::{ConfError, ConfErrorKind, Context, Directive};
use upstream::Balancer;
use upstream::registry::{ServerEntry, UpstreamScope, split_host_port};

use super::Loader;
use super::directives::{DIRECTIVES, Setter};
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
/// [down]`; a stream upstream server always names a port.
pub fn set_upstream_server(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    let address = directive.arg(0).to_owned();
    let span = &directive.span;
    let (host, port) = split_host_port(&address, span, "upstream")?;
    if port.is_none() && !host.starts_with("unix:") {
        return Err(ConfError::message(
            format!("no port in upstream \"{address}\""),
            span,
        ));
    }
    let mut entry = ServerEntry {
        address,
        weight: 1,
        max_fails: 1,
        fail_timeout: Duration::from_secs(10),
        max_conns: 0,
        backup: false,
        down: false,
        resolve: false,
        service: None,
        route: None,
        drain: false,
        span: span.clone(),
    };
    for argument in &directive.args[1..] {
        let text = argument.as_str();
        let invalid = || ConfError::message(format!("invalid parameter \"{text}\""), span);
        let number =
            |value: &str| conf::value::parse_number(value).and_then(|n| u32::try_from(n).ok());
        match text.split_once('=') {
            Some(("weight", value)) => {
                entry.weight = number(value)
                    .filter(|weight| *weight > 0)
                    .ok_or_else(invalid)?;
            }
            Some(("max_fails", value)) => entry.max_fails = number(value).ok_or_else(invalid)?,
            Some(("max_conns", value)) => entry.max_conns = number(value).ok_or_else(invalid)?,
            Some(("fail_timeout", value)) => {
                entry.fail_timeout = conf::value::parse_time(value).ok_or_else(invalid)?;
            }
            None if text == "backup" => {
                if !scope.allows_backup() {
                    return Err(ConfError::message(
                        "balancing method does not support parameter \"backup\"",
                        span,
                    ));
                }
                entry.backup = true;
            }
            None if text == "down" => entry.down = true,
            None if text == "resolve" => {}
            _ => return Err(invalid()),
        }
    }
    scope.servers.push(entry);
    Ok(())
}

pub fn set_upstream_zone(
    _: &mut UpstreamScope<StreamTemplate>,
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
    Ok(())
}

fn balancer_once(scope: &UpstreamScope<StreamTemplate>, directive: &Directive) -> Result {
    if scope.balancer.is_some() {
        return Err(ConfError::message(
            "load balancing method redefined",
            &directive.span,
        ));
    }
    Ok(())
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
    balancer_once(scope, directive)?;
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
    _: &mut Loader<'_>,
) -> Result {
    balancer_once(scope, directive)?;
    scope.balancer = Some(Balancer::LeastConn);
    Ok(())
}

pub fn set_upstream_random(
    scope: &mut UpstreamScope<StreamTemplate>,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    balancer_once(scope, directive)?;
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
