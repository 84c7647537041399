//! The geo module's directive and the reader of its block, with nginx's errors.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, MainScope, Setter};
use shared::map::refuse_block;

use crate::kernel::map::directives::define_target;
use crate::kernel::map::{ComputedVariable, Kind};
use crate::modules::geo::GeoLookup;
use crate::modules::geo::settings::{GeoTable, Lookup};
use crate::modules::geo::table::{parse_network, parse_range};

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "geo",
    contexts: Contexts::HTTP,
    arity: Arity::TAKE12,
    block: BlockKind::Block,
    set: Setter::Main(set_geo),
}];

/// `geo [$address] $variable { ... }`.
fn set_geo(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let (source_text, target) = match directive.args.len() {
        2 => (directive.arg(0), directive.arg(1)),
        _ => ("", directive.arg(0)),
    };
    if !source_text.is_empty() && !source_text.starts_with('$') {
        return Err(ConfError::message(
            format!("invalid variable name \"{source_text}\""),
            &directive.span,
        ));
    }
    let source = context.template(source_text, &directive.span)?;
    let (slot, name) = define_target(target, &directive.span, &mut context.variables)?;
    let mut table = GeoTable {
        from_client: source_text.is_empty(),
        values: vec![Box::from(&b""[..])],
        ..GeoTable::default()
    };
    let mut has_lines = false;
    let mut volatile = false;
    for line in directive.block.as_deref().unwrap_or_default() {
        refuse_block(line)?;
        if line.name == "volatile" && line.args.is_empty() {
            volatile = true;
            continue;
        }
        read_line(line, &mut table, &mut has_lines, context)?;
    }
    main.map.variables.insert(
        slot,
        ComputedVariable {
            name,
            source,
            volatile,
            kind: Kind::Lookup(Box::new(GeoLookup(table))),
        },
    );
    Ok(())
}

/// One line of a `geo` block. `include` was already expanded by the parser.
fn read_line(
    line: &Directive,
    table: &mut GeoTable,
    has_lines: &mut bool,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let word = line.name.as_str();
    match (word, line.args.len()) {
        ("ranges", 0) => {
            if *has_lines {
                return Err(ConfError::message(
                    "the \"ranges\" directive must be the first directive inside \"geo\" block",
                    &line.span,
                ));
            }
            table.lookup = Lookup::Ranges(Vec::new());
            return Ok(());
        }
        ("proxy_recursive", 0) => {
            table.proxy_recursive = true;
            return Ok(());
        }
        (_, 1) => {}
        _ => {
            return Err(ConfError::message(
                "invalid number of the geo parameters",
                &line.span,
            ));
        }
    }
    let argument = line.arg(0);
    match word {
        "default" => {
            table.default = table.intern(argument.as_bytes());
            Ok(())
        }
        "proxy" => {
            let (network, cleared) = parse_network(argument).ok_or_else(|| {
                ConfError::message(format!("invalid parameter \"{argument}\""), &line.span)
            })?;
            warn_cleared(cleared, argument, line, context);
            table.proxies.push(network);
            Ok(())
        }
        "delete" => {
            *has_lines = true;
            delete(table, argument, line, context)
        }
        _ => {
            *has_lines = true;
            add(table, word, argument.as_bytes(), line, context)
        }
    }
}

fn add(
    table: &mut GeoTable,
    key: &str,
    value: &[u8],
    line: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let index = table.intern(value);
    if matches!(table.lookup, Lookup::Ranges(_)) {
        let (start, end) = parse_range(key)
            .ok_or_else(|| ConfError::message(format!("invalid range \"{key}\""), &line.span))?;
        table.insert_range(start, end, index);
        return Ok(());
    }
    let (network, cleared) = parse_network(key)
        .ok_or_else(|| ConfError::message(format!("invalid network \"{key}\""), &line.span))?;
    warn_cleared(cleared, key, line, context);
    if let Some(old) = table.insert_network(network, index) {
        context.warn(
            format!(
                "duplicate network \"{key}\", value: \"{}\", old value: \"{}\"",
                String::from_utf8_lossy(value),
                String::from_utf8_lossy(&table.values[old]),
            ),
            &line.span,
        );
    }
    Ok(())
}

fn delete(
    table: &mut GeoTable,
    key: &str,
    line: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if matches!(table.lookup, Lookup::Ranges(_)) {
        let (start, end) = parse_range(key)
            .ok_or_else(|| ConfError::message(format!("invalid range \"{key}\""), &line.span))?;
        if !table.delete_range(start, end) {
            context.warn(format!("no address range \"{key}\" to delete"), &line.span);
        }
        return Ok(());
    }
    let (network, cleared) = parse_network(key)
        .ok_or_else(|| ConfError::message(format!("invalid network \"{key}\""), &line.span))?;
    warn_cleared(cleared, key, line, context);
    if !table.delete_network(network) {
        context.warn(format!("no network \"{key}\" to delete"), &line.span);
    }
    Ok(())
}

fn warn_cleared(cleared: bool, text: &str, line: &Directive, context: &mut LoadContext<'_>) {
    if cleared {
        context.warn(
            format!("low address bits of {text} are meaningless"),
            &line.span,
        );
    }
}
