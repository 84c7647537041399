//! The headers module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::headers::AddHeader;

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "add_header",
    contexts: Contexts::HTTP_SERVER_LOCATION.with(Contexts::LOCATION_IF),
    arity: Arity::TAKE23,
    block: BlockKind::Simple,
    set: Setter::Location(set_add_header),
}];

fn set_add_header(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let always = match directive.args.get(2) {
        None => false,
        Some(argument) if argument.as_str() == "always" => true,
        Some(argument) => {
            return Err(ConfError::message(
                format!("invalid parameter \"{}\"", argument.as_str()),
                &directive.span,
            ));
        }
    };
    let value = context.template(directive.arg(1), &directive.span)?;
    scope
        .headers
        .add_header
        .get_or_insert_with(Vec::new)
        .push(AddHeader {
            name: directive.arg(0).as_bytes().into(),
            value,
            always,
        });
    Ok(())
}
