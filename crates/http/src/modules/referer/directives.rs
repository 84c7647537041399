//! The referer module's directives, with nginx's errors.

use std::sync::Arc;

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::server_names::{self, ServerName};
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::kernel::core::directives::number;
use crate::modules::referer::settings::ValidReferers;
use crate::set_once;
use shared::regex::Regex;

const SERVER_LOCATION: Contexts = Contexts::SERVER.with(Contexts::LOCATION);

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "valid_referers",
        contexts: SERVER_LOCATION,
        arity: Arity::ONE_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Location(set_valid_referers),
    },
    HttpDirective {
        name: "referer_hash_max_size",
        contexts: SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_hash_max_size),
    },
    HttpDirective {
        name: "referer_hash_bucket_size",
        contexts: SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_hash_bucket_size),
    },
];

set_once!(
    set_hash_max_size,
    LocationScope,
    referer.hash_max_size,
    number
);
set_once!(
    set_hash_bucket_size,
    LocationScope,
    referer.hash_bucket_size,
    number
);

/// `valid_referers none | blocked | server_names | HOST[/URI] | ~REGEX ...`: lines at one
/// level add up, as in nginx.
fn set_valid_referers(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let mut referers = scope
        .referer
        .valid_referers
        .take()
        .flatten()
        .map(Arc::unwrap_or_clone)
        .unwrap_or_default();
    for argument in &directive.args {
        add_referer(&mut referers, argument.as_str(), directive, context)?;
    }
    scope.referer.valid_referers = Some(Some(Arc::new(referers)));
    Ok(())
}

fn add_referer(
    referers: &mut ValidReferers,
    text: &str,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    match text {
        "none" => referers.none = true,
        "blocked" => referers.blocked = true,
        "server_names" => referers.server_names = true,
        "" => {
            return Err(ConfError::message(
                format!("invalid referer \"{text}\""),
                &directive.span,
            ));
        }
        _ => {
            if let Some(pattern) = text.strip_prefix('~') {
                let regex = Regex::compile(pattern, true)
                    .map_err(|error| ConfError::message(error.0, &directive.span))?;
                referers.regexes.push(regex);
                return Ok(());
            }
            let (host, uri) = match text.find('/') {
                Some(at) => (&text[..at], Some(text.as_bytes()[at..].into())),
                None => (text, None),
            };
            let invalid = || {
                ConfError::message(
                    format!("invalid hostname or wildcard \"{text}\""),
                    &directive.span,
                )
            };
            if host.is_empty() || host.starts_with('~') {
                return Err(invalid());
            }
            let name = server_names::parse(host, "", &mut context.variables, &directive.span)
                .map_err(|_| invalid())?;
            if matches!(name, ServerName::Regex(_)) {
                return Err(invalid());
            }
            if referers
                .hosts
                .iter()
                .any(|(known, _)| same_host(known, &name))
            {
                return Err(ConfError::message(
                    format!("conflicting parameter \"{host}\""),
                    &directive.span,
                ));
            }
            referers.hosts.push((name, uri));
        }
    }
    Ok(())
}

/// Whether two host names are the same key (nginx refuses a host written twice).
fn same_host(left: &ServerName, right: &ServerName) -> bool {
    match (left, right) {
        (ServerName::Exact(a), ServerName::Exact(b))
        | (ServerName::Tail(a), ServerName::Tail(b)) => a == b,
        (
            ServerName::Head {
                suffix: a,
                also_bare: bare_a,
            },
            ServerName::Head {
                suffix: b,
                also_bare: bare_b,
            },
        ) => a == b && bare_a == bare_b,
        _ => false,
    }
}
