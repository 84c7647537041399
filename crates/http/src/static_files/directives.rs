//! The static-files module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::conf::{HttpDirective, LoadContext, LocationScope, Setter};

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "index",
    contexts: Contexts::HTTP_SERVER_LOCATION,
    arity: Arity::ONE_OR_MORE,
    block: BlockKind::Simple,
    set: Setter::Location(set_index),
}];

/// Several `index` directives at one level accumulate, as nginx's do.
fn set_index(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    for argument in &directive.args {
        if argument.as_str().is_empty() {
            return Err(ConfError::message(
                format!(
                    "index \"{}\" in \"index\" directive is invalid",
                    argument.as_str()
                ),
                &directive.span,
            ));
        }
        let template = context.template(argument.as_str(), &directive.span)?;
        scope
            .static_files
            .index
            .get_or_insert_with(Vec::new)
            .push(template);
    }
    Ok(())
}
