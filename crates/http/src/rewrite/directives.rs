//! The rewrite module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::rewrite::RewriteStep;

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "return",
    contexts: Contexts::SERVER
        .with(Contexts::LOCATION)
        .with(Contexts::SERVER_IF)
        .with(Contexts::LOCATION_IF),
    arity: Arity::TAKE12,
    block: BlockKind::Simple,
    set: Setter::Location(set_return),
}];

/// `return CODE [TEXT]` | `return URL`: a single URL argument means 302 when it starts
/// with `http://`, `https://` or `$scheme`, as nginx decides.
fn set_return(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let first = directive.arg(0);
    let invalid =
        || ConfError::message(format!("invalid return code \"{first}\""), &directive.span);
    let step = match first.parse::<u16>() {
        Ok(status) if status <= 999 && first.bytes().all(|b| b.is_ascii_digit()) => {
            let text = match directive.args.get(1) {
                Some(text) => Some(context.template(text.as_str(), &directive.span)?),
                None => None,
            };
            RewriteStep::Return { status, text }
        }
        _ if directive.args.len() == 1
            && (first.starts_with("http://")
                || first.starts_with("https://")
                || first.starts_with("$scheme")) =>
        {
            RewriteStep::Return {
                status: 302,
                text: Some(context.template(first, &directive.span)?),
            }
        }
        _ => return Err(invalid()),
    };
    scope.rewrite.steps.push(step);
    Ok(())
}
