//! The auth_request module's directives, with nginx's errors.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::kernel::variables::Settable;
use crate::modules::auth_request::settings::AuthRequestSet;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "auth_request",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_auth_request),
    },
    HttpDirective {
        name: "auth_request_set",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE2,
        block: BlockKind::Simple,
        set: Setter::Location(set_auth_request_set),
    },
];

fn set_auth_request(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.auth_request.uri.is_some() {
        return Err(context.duplicate(directive));
    }
    let uri = directive.arg(0);
    scope.auth_request.uri = Some((uri != "off").then(|| uri.as_bytes().into()));
    Ok(())
}

/// `auth_request_set $name value`: a variable `set` could write.
fn set_auth_request_set(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let written = directive.arg(0);
    let name = written
        .strip_prefix('$')
        .filter(|name| !name.is_empty())
        .ok_or_else(|| ConfError::message(format!("invalid variable name \"{written}\""), span))?;
    let variable = context.variables.resolve_settable(name);
    if variable == Settable::Fixed {
        return Err(ConfError::message(
            format!("the duplicate \"{name}\" variable"),
            span,
        ));
    }
    let value = context.template(directive.arg(1), span)?;
    scope
        .auth_request
        .set
        .get_or_insert_with(Vec::new)
        .push(AuthRequestSet { variable, value });
    Ok(())
}
