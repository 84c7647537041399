//! The directive tables of the map and split_clients modules, and the readers of their
//! blocks. Error texts are nginx's (`ngx_http_map_module.c`, `ngx_http_split_clients_module.c`).

use conf::{Arity, BlockKind as Shape, ConfError, Contexts, Directive, Span};
use shared::map::{BlockLoader, MapBlock, read_split_clients};

use crate::kernel::conf::{HttpDirective, LoadContext, MainScope, Setter};
use crate::kernel::map::{ComputedVariable, Kind};
use crate::kernel::variables::{HttpTemplate, NamedSlot, VariableRegistry};

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
    let map = MapBlock::read(directive, context)?;
    main.map.variables.insert(
        slot,
        ComputedVariable {
            name,
            source,
            volatile: map.volatile,
            kind: Kind::Map(map),
        },
    );
    Ok(())
}

impl BlockLoader for LoadContext<'_> {
    type Template = HttpTemplate;

    fn template(&mut self, text: &str, span: &Span) -> Result<HttpTemplate, ConfError> {
        LoadContext::template(self, text, span)
    }

    fn define(&mut self, name: &str) -> NamedSlot {
        self.variables.define(name)
    }
}

/// `split_clients SOURCE $variable { PERCENT% VALUE; ... * VALUE; }`.
fn set_split_clients(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let source = context.template(directive.arg(0), &directive.span)?;
    let (slot, name) = define_target(directive.arg(1), &directive.span, &mut context.variables)?;
    let parts = read_split_clients(directive)?;
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
