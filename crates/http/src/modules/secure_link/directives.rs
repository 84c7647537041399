//! The secure link module's directives, with nginx's errors.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "secure_link",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_secure_link),
    },
    HttpDirective {
        name: "secure_link_md5",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_md5),
    },
    HttpDirective {
        name: "secure_link_secret",
        contexts: Contexts::LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_secret),
    },
];

fn mixed(directive: &Directive) -> ConfError {
    ConfError::message(
        "\"secure_link_secret\" cannot be mixed with \"secure_link\" and \"secure_link_md5\"",
        &directive.span,
    )
}

fn set_secure_link(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let settings = &mut scope.secure_link;
    if settings.variable.is_some() {
        return Err(context.duplicate(directive));
    }
    if matches!(settings.secret, Some(Some(_))) {
        return Err(mixed(directive));
    }
    let template = context.template(directive.arg(0), &directive.span)?;
    let settings = &mut scope.secure_link;
    settings.variable = Some(Some(template));
    settings.secret = Some(None);
    Ok(())
}

fn set_md5(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let settings = &mut scope.secure_link;
    if settings.md5.is_some() {
        return Err(context.duplicate(directive));
    }
    if matches!(settings.secret, Some(Some(_))) {
        return Err(mixed(directive));
    }
    let template = context.template(directive.arg(0), &directive.span)?;
    let settings = &mut scope.secure_link;
    settings.md5 = Some(Some(template));
    settings.secret = Some(None);
    Ok(())
}

fn set_secret(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let settings = &mut scope.secure_link;
    if matches!(settings.secret, Some(Some(_))) {
        return Err(context.duplicate(directive));
    }
    if matches!(settings.variable, Some(Some(_))) || matches!(settings.md5, Some(Some(_))) {
        return Err(mixed(directive));
    }
    settings.secret = Some(Some(directive.arg(0).as_bytes().into()));
    settings.variable = Some(None);
    settings.md5 = Some(None);
    Ok(())
}
