//! The charset module's directive table.

use std::sync::Arc;

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};
use vars::Segment;

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, MainScope, Setter};
use crate::kernel::core::directives::flag;
use crate::modules::charset::recode::{MapBuilder, MapLineError};
use crate::modules::charset::{CharsetName, CharsetTypes, same_name};
use crate::set_once;

const ANY_LEVEL_AND_IF: Contexts = Contexts::HTTP_SERVER_LOCATION.with(Contexts::LOCATION_IF);

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "charset",
        contexts: ANY_LEVEL_AND_IF,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_charset),
    },
    HttpDirective {
        name: "source_charset",
        contexts: ANY_LEVEL_AND_IF,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_source_charset),
    },
    HttpDirective {
        name: "override_charset",
        contexts: ANY_LEVEL_AND_IF,
        arity: Arity::FLAG,
        block: BlockKind::Simple,
        set: Setter::Location(set_override_charset),
    },
    HttpDirective {
        name: "charset_types",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::ONE_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Location(set_charset_types),
    },
    HttpDirective {
        name: "charset_map",
        contexts: Contexts::HTTP,
        arity: Arity::TAKE2,
        block: BlockKind::Block,
        set: Setter::Main(set_charset_map),
    },
];

/// A charset name, or `$name` for a variable's value.
fn charset_name(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<CharsetName, ConfError> {
    let name = directive.arg(0);
    if !name.starts_with('$') {
        return Ok(CharsetName::Named(name.into()));
    }
    let template = context.template(name, &directive.span)?;
    match template.segments() {
        [Segment::Variable(variable)] => Ok(CharsetName::Variable(variable.clone())),
        _ => Err(ConfError::message(
            format!("unknown \"{}\" variable", &name[1..]),
            &directive.span,
        )),
    }
}

fn set_charset(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.charset.charset.is_some() {
        return Err(context.duplicate(directive));
    }
    // Only `charset` knows `off`; `source_charset off` names a charset called "off".
    let value = match directive.arg(0) {
        "off" => CharsetName::Off,
        _ => charset_name(directive, context)?,
    };
    scope.charset.charset = Some(value);
    Ok(())
}

set_once!(
    set_source_charset,
    LocationScope,
    charset.source_charset,
    charset_name
);

set_once!(
    set_override_charset,
    LocationScope,
    charset.override_charset,
    flag
);

/// `charset_types MIME ...`: lower-cased, always with `text/html`; `*` means any type.
/// Repeated directives add up, as nginx's types slot does.
fn set_charset_types(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let current = scope.charset.charset_types.take();
    let mut types = match current {
        Some(types) if types.any => {
            scope.charset.charset_types = Some(types);
            return Ok(());
        }
        Some(types) => Arc::unwrap_or_clone(types),
        None => CharsetTypes {
            any: false,
            types: vec![Box::from(&b"text/html"[..])],
        },
    };
    for argument in &directive.args {
        let value = argument.as_str();
        if value == "*" {
            types = CharsetTypes {
                any: true,
                types: Vec::new(),
            };
            break;
        }
        let lower: Box<[u8]> = value.to_ascii_lowercase().into_bytes().into();
        if types.types.contains(&lower) {
            let shown = value.to_ascii_lowercase();
            context.warn(format!("duplicate MIME type \"{shown}\""), &directive.span);
            continue;
        }
        types.types.push(lower);
    }
    scope.charset.charset_types = Some(Arc::new(types));
    Ok(())
}

/// `charset_map FROM TO { XX YY; ... }`, with nginx's checks and wording.
fn set_charset_map(
    scope: &mut MainScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let (from, to) = (directive.arg(0), directive.arg(1));
    let error = |message: String| ConfError::message(message, &directive.span);
    if same_name(from, to) {
        return Err(error(format!(
            "\"charset_map\" between the same charsets \"{from}\" and \"{to}\""
        )));
    }
    if same_name(from, "utf-8") {
        return Err(error(
            "\"charset_map\" with \"utf-8\" charset should be given in the second column"
                .to_owned(),
        ));
    }
    let maps = &mut scope.charset.maps;
    let duplicate = maps.iter().any(|map| {
        (same_name(&map.from, from) && same_name(&map.to, to))
            || (same_name(&map.from, to) && same_name(&map.to, from))
    });
    if duplicate {
        return Err(error(format!(
            "duplicate \"charset_map\" between \"{from}\" and \"{to}\""
        )));
    }
    let mut builder = MapBuilder::new(same_name(to, "utf-8"));
    for line in directive.block.as_deref().unwrap_or_default() {
        let result = match (&line.block, line.args.as_slice()) {
            (None, [destination]) => builder.line(&line.name, destination.as_str()),
            _ => Err(MapLineError::ParameterCount),
        };
        match result {
            Ok(()) => {}
            Err(MapLineError::ParameterCount) => {
                return Err(ConfError::message("invalid parameters number", &line.span));
            }
            Err(MapLineError::InvalidValue(value)) => {
                return Err(ConfError::message(
                    format!("invalid value \"{value}\""),
                    &line.span,
                ));
            }
        }
    }
    maps.push(builder.finish(from, to));
    scope.charset.register(from);
    scope.charset.register(to);
    Ok(())
}
