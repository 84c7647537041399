//! The access module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::modules::access::{Action, Rules, parse_target};

const CONTEXTS: Contexts = Contexts::HTTP_SERVER_LOCATION.with(Contexts::LIMIT_EXCEPT);

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "allow",
        contexts: CONTEXTS,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_allow),
    },
    HttpDirective {
        name: "deny",
        contexts: CONTEXTS,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_deny),
    },
];

fn set_allow(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    add_rule(scope, directive, context, Action::Allow)
}

fn set_deny(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    add_rule(scope, directive, context, Action::Deny)
}

/// Appends one rule to this level's list; an address with bits set beyond its prefix
/// length is accepted with nginx's warning.
fn add_rule(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
    action: Action,
) -> Result<(), ConfError> {
    let text = directive.arg(0);
    let Some(parsed) = parse_target(text) else {
        return Err(ConfError::message(
            format!("invalid parameter \"{text}\""),
            &directive.span,
        ));
    };
    if parsed.host_bits_cleared {
        context.warn(
            format!("low address bits of {text} are meaningless"),
            &directive.span,
        );
    }
    scope
        .access
        .rules
        .get_or_insert_with(Rules::default)
        .push(action, parsed.target);
    Ok(())
}
