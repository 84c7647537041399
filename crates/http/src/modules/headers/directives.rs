//! The headers module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::modules::headers::AddHeader;
use crate::modules::headers::expires::parse_expires;
use crate::modules::headers::settings::Expires;

const ANY_LEVEL_AND_IF: Contexts = Contexts::HTTP_SERVER_LOCATION.with(Contexts::LOCATION_IF);

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "expires",
        contexts: ANY_LEVEL_AND_IF,
        arity: Arity::TAKE12,
        block: BlockKind::Simple,
        set: Setter::Location(set_expires),
    },
    HttpDirective {
        name: "add_header",
        contexts: ANY_LEVEL_AND_IF,
        arity: Arity::TAKE23,
        block: BlockKind::Simple,
        set: Setter::Location(set_add_header),
    },
    HttpDirective {
        name: "add_trailer",
        contexts: ANY_LEVEL_AND_IF,
        arity: Arity::TAKE23,
        block: BlockKind::Simple,
        set: Setter::Location(set_add_trailer),
    },
];

fn set_add_header(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let header = added_field(directive, context)?;
    scope
        .headers
        .add_header
        .get_or_insert_with(Vec::new)
        .push(header);
    Ok(())
}

fn set_add_trailer(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let trailer = added_field(directive, context)?;
    scope
        .headers
        .add_trailer
        .get_or_insert_with(Vec::new)
        .push(trailer);
    Ok(())
}

/// `NAME VALUE [always]`, shared by `add_header` and `add_trailer`.
fn added_field(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<AddHeader, ConfError> {
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
    Ok(AddHeader {
        name: directive.arg(0).as_bytes().into(),
        value,
        always,
    })
}

/// `expires [modified] TIME | epoch | max | off | @TIME`; a value with variables is parsed
/// for each response.
fn set_expires(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.headers.expires.is_some() {
        return Err(context.duplicate(directive));
    }
    let invalid = |message: String| ConfError::directive(&directive.name, message, &directive.span);
    let (modified, text) = match directive.args.len() {
        1 => (false, directive.arg(0)),
        _ if directive.arg(0) == "modified" => (true, directive.arg(1)),
        _ => return Err(invalid("invalid value".to_owned())),
    };
    let template = context.template(text, &directive.span)?;
    let expires = match template.as_literal() {
        Some(literal) => {
            let value =
                parse_expires(literal, modified).map_err(|error| invalid(error.to_string()))?;
            Expires::Fixed(value)
        }
        None => Expires::Variable {
            modified,
            value: template,
        },
    };
    scope.headers.expires = Some(expires);
    Ok(())
}
