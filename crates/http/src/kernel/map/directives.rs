//! The directive tables of the map and split_clients modules, and the readers of their
//! blocks. Error texts are nginx's (`ngx_http_map_module.c`, `ngx_http_split_clients_module.c`).

use conf::{Arity, BlockKind as Shape, ConfError, ConfErrorKind, Contexts, Directive, Span};

use crate::kernel::conf::{HttpDirective, LoadContext, MainScope, NamedCaptures, Setter};
use crate::kernel::map::{ComputedVariable, Kind, Map};
use crate::kernel::variables::{NamedSlot, VariableRegistry};
use shared::map::split_clients::{Part, Parts};
use shared::regex::Regex;

const fn entry(
    name: &'static str,
    shape: Shape,
    arity: Arity,
    set: fn(&mut MainScope, &Directive, &mut LoadContext<'_>) -> Result<(), ConfError>,
) -> HttpDirective {
    HttpDirective {
        name,
        contexts: Contexts::HTTP,
        arity,
        block: shape,
        set: Setter::Main(set),
    }
}

/// The map module's directives.
pub const DIRECTIVES: &[HttpDirective] = &[
    entry("map", Shape::Block, Arity::TAKE2, set_map),
    entry(
        "map_hash_max_size",
        Shape::Simple,
        Arity::TAKE1,
        set_map_hash_max_size,
    ),
    entry(
        "map_hash_bucket_size",
        Shape::Simple,
        Arity::TAKE1,
        set_map_hash_bucket_size,
    ),
];

/// The split_clients module's directive.
pub(crate) const SPLIT_CLIENTS_DIRECTIVES: &[HttpDirective] = &[entry(
    "split_clients",
    Shape::Block,
    Arity::TAKE2,
    set_split_clients,
)];

/// `map SOURCE $variable { ... }`.
fn set_map(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let source = context.template(directive.arg(0), &directive.span)?;
    let (slot, name) = define_target(directive.arg(1), &directive.span, &mut context.variables)?;
    let mut map = Map::default();
    let mut volatile = false;
    for line in directive.block.as_deref().unwrap_or_default() {
        read_map_line(line, &mut map, &mut volatile, context)?;
    }
    main.map.variables.insert(
        slot,
        ComputedVariable {
            name,
            source,
            volatile,
            kind: Kind::Map(map),
        },
    );
    Ok(())
}

/// One line of a `map` block: a parameter (`hostnames`, `volatile`), `default VALUE`,
/// or `KEY VALUE`. `include` was already expanded by the parser.
fn read_map_line(
    line: &Directive,
    map: &mut Map,
    volatile: &mut bool,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    refuse_block(line)?;
    let key = line.name.as_str();
    match (key, line.args.len()) {
        ("hostnames", 0) => {
            map.keys.hostnames = true;
            return Ok(());
        }
        ("volatile", 0) => {
            *volatile = true;
            return Ok(());
        }
        (_, 1) => {}
        _ => {
            return Err(ConfError::message(
                "invalid number of the map parameters",
                &line.span,
            ));
        }
    }
    let value = map.values.len();
    map.values.push(context.template(line.arg(0), &line.span)?);
    if key == "default" {
        if map.default.is_some() {
            return Err(ConfError::message(
                "duplicate default map parameter",
                &line.span,
            ));
        }
        map.default = Some(value);
        return Ok(());
    }
    if let Some(pattern) = key.strip_prefix('~') {
        let (pattern, caseless) = match pattern.strip_prefix('*') {
            Some(pattern) => (pattern, true),
            None => (pattern, false),
        };
        let regex = Regex::compile(pattern, caseless)
            .map_err(|error| ConfError::message(error.0, &line.span))?;
        let regex = NamedCaptures::new(regex, |name| context.variables.define(name));
        map.keys.add_regex(regex, value);
        return Ok(());
    }
    let key = key.strip_prefix('\\').unwrap_or(key);
    map.keys.add(key, value).map_err(|error| {
        let message = match error {
            shared::map::keys::KeyError::InvalidWildcard => {
                format!("invalid hostname or wildcard \"{key}\"")
            }
            // nginx lowercases the key in place before it finds the conflict.
            shared::map::keys::KeyError::Conflicting => {
                format!("conflicting parameter \"{}\"", key.to_ascii_lowercase())
            }
        };
        ConfError::message(message, &line.span)
    })
}

/// `split_clients SOURCE $variable { PERCENT% VALUE; ... * VALUE; }`.
fn set_split_clients(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let source = context.template(directive.arg(0), &directive.span)?;
    let (slot, name) = define_target(directive.arg(1), &directive.span, &mut context.variables)?;
    let mut lines = Vec::new();
    for line in directive.block.as_deref().unwrap_or_default() {
        refuse_block(line)?;
        // nginx reads no more than the first two words of a line; a value left out is
        // empty here.
        let part = Part::parse(&line.name, line.arg(0).as_bytes())
            .map_err(|error| ConfError::message(error.to_string(), &line.span))?;
        lines.push(part);
    }
    let parts = Parts::build(lines)
        .map_err(|error| ConfError::message(error.to_string(), &directive.span))?;
    main.map.variables.insert(
        slot,
        ComputedVariable {
            name,
            source,
            volatile: false,
            kind: Kind::SplitClients(parts),
        },
    );
    Ok(())
}

fn set_map_hash_max_size(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_number(&mut main.map.hash_max_size, directive, context)
}

fn set_map_hash_bucket_size(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_number(&mut main.map.hash_bucket_size, directive, context)
}

fn set_number(
    field: &mut Option<u64>,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if field.is_some() {
        return Err(context.duplicate(directive));
    }
    let number = conf::value::parse_number(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))?;
    *field = Some(number);
    Ok(())
}

/// The variable a block defines: `$name`, not a built-in variable (nginx's built-ins
/// cannot be redefined: `the duplicate "uri" variable`).
pub(crate) fn define_target(
    text: &str,
    span: &Span,
    registry: &mut VariableRegistry,
) -> Result<(NamedSlot, Box<str>), ConfError> {
    let invalid = || ConfError::message(format!("invalid variable name \"{text}\""), span);
    let name = text.strip_prefix('$').ok_or_else(invalid)?;
    if name.is_empty() {
        return Err(invalid());
    }
    if VariableRegistry::is_builtin(name) {
        return Err(ConfError::message(
            format!("the duplicate \"{name}\" variable"),
            span,
        ));
    }
    Ok((registry.define(name), name.to_ascii_lowercase().into()))
}

/// A line of these blocks cannot open a block of its own: nginx stops at its `{`.
pub(crate) fn refuse_block(line: &Directive) -> Result<(), ConfError> {
    if line.block.is_some() {
        return Err(ConfError::at(
            ConfErrorKind::UnexpectedCharacter { found: '{' },
            &line.span,
        ));
    }
    Ok(())
}
