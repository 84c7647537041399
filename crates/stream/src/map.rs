//! `map` and `split_clients` in the `stream` block. The keys and the percentages are the
//! http modules' own types (`http::kernel::map`), so a key or a client lands on the same value in
//! both blocks.

use conf::{ConfError, Directive};
use shared::captures::NamedCaptures;
use shared::captures::NamedSlot;
use shared::map::keys::{KeyError, MapKeys};
use shared::map::split_clients::{Part, Parts};
use shared::regex::Regex;

use crate::conf::Loader;
use crate::variables::{Eval, SlotKind, StreamTemplate};

/// One `map SOURCE $name { ... }`.
#[derive(Debug)]
pub struct StreamMap {
    pub source: StreamTemplate,
    pub keys: MapKeys,
    pub values: Vec<StreamTemplate>,
    pub default: Option<usize>,
}

/// One `split_clients SOURCE $name { ... }`.
#[derive(Debug)]
pub struct Split {
    pub source: StreamTemplate,
    pub parts: Parts,
}

/// The value of `map` for the session `eval` reads.
pub fn evaluate(map: &StreamMap, eval: &mut Eval<'_>, out: &mut Vec<u8>) {
    let key = eval.render(&map.source);
    let mut captures = shared::regex::Captures::default();
    let found = map.keys.find(&key, &mut captures);
    let value = match found {
        Some(found) => {
            if let Some(regex) = found.regex {
                regex.store(&captures, &mut eval.vars.slots);
                eval.vars.captures = captures;
            }
            Some(found.value)
        }
        None => map.default,
    };
    if let Some(template) = value.and_then(|index| map.values.get(index)) {
        template.evaluate(eval, out);
    }
}

fn define_target(
    loader: &mut Loader,
    text: &str,
    kind: SlotKind,
    directive: &Directive,
) -> Result<(), ConfError> {
    let Some(name) = text.strip_prefix('$') else {
        return Err(ConfError::message(
            format!("invalid variable name \"{text}\""),
            &directive.span,
        ));
    };
    loader
        .registry
        .define(name, kind)
        .map(|_| ())
        .map_err(|message| ConfError::message(message, &directive.span))
}

/// Declares the variable a `map` or `split_clients` block fills, before any template is
/// compiled (a server may name it before the block appears).
pub fn declare(loader: &mut Loader, directive: &Directive) -> Result<(), ConfError> {
    let kind = if directive.name == "map" {
        SlotKind::Map(loader.maps_declared)
    } else {
        SlotKind::Split(loader.splits_declared)
    };
    if directive.name == "map" {
        loader.maps_declared += 1;
    } else {
        loader.splits_declared += 1;
    }
    define_target(loader, directive.arg(1), kind, directive)
}

/// Declares the named captures of a map's regex keys (`~(?<name>...)` sets `$name`), so
/// that templates anywhere may use them.
pub fn declare_captures(loader: &mut Loader, directive: &Directive) {
    for line in directive.block.as_deref().unwrap_or_default() {
        let Some(pattern) = line.name.strip_prefix('~') else {
            continue;
        };
        let (pattern, caseless) = match pattern.strip_prefix('*') {
            Some(pattern) => (pattern, true),
            None => (pattern, false),
        };
        if let Ok(regex) = Regex::compile(pattern, caseless) {
            for (name, _) in regex.names() {
                loader.registry.slot(name);
            }
        }
    }
}

/// Reads a `map` block.
pub fn load_map(loader: &mut Loader, directive: &Directive) -> Result<StreamMap, ConfError> {
    let source = loader.template(directive.arg(0), &directive.span)?;
    let mut map = StreamMap {
        source,
        keys: MapKeys::default(),
        values: Vec::new(),
        default: None,
    };
    for line in directive.block.as_deref().unwrap_or_default() {
        read_map_line(loader, line, &mut map)?;
    }
    Ok(map)
}

fn read_map_line(
    loader: &mut Loader,
    line: &Directive,
    map: &mut StreamMap,
) -> Result<(), ConfError> {
    if line.block.is_some() {
        return Err(ConfError::message("unexpected \"{\"", &line.span));
    }
    let key = line.name.as_str();
    match (key, line.args.len()) {
        ("hostnames", 0) => {
            map.keys.hostnames = true;
            return Ok(());
        }
        // Every value is computed when read: there is nothing to make volatile.
        ("volatile", 0) => return Ok(()),
        (_, 1) => {}
        _ => {
            return Err(ConfError::message(
                "invalid number of the map parameters",
                &line.span,
            ));
        }
    }
    let value = map.values.len();
    map.values.push(loader.template(line.arg(0), &line.span)?);
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
        let slots = regex
            .names()
            .iter()
            .map(|(name, group)| (*group, NamedSlot(loader.registry.slot(name) as u32)))
            .collect();
        map.keys.add_regex(NamedCaptures { regex, slots }, value);
        return Ok(());
    }
    let key = key.strip_prefix('\\').unwrap_or(key);
    map.keys.add(key, value).map_err(|error| {
        let message = match error {
            KeyError::InvalidWildcard => format!("invalid hostname or wildcard \"{key}\""),
            KeyError::Conflicting => {
                format!("conflicting parameter \"{}\"", key.to_ascii_lowercase())
            }
        };
        ConfError::message(message, &line.span)
    })
}

/// Reads a `split_clients` block.
pub fn load_split(loader: &mut Loader, directive: &Directive) -> Result<Split, ConfError> {
    let source = loader.template(directive.arg(0), &directive.span)?;
    let mut lines = Vec::new();
    for line in directive.block.as_deref().unwrap_or_default() {
        if line.block.is_some() {
            return Err(ConfError::message("unexpected \"{\"", &line.span));
        }
        let part = Part::parse(&line.name, line.arg(0).as_bytes())
            .map_err(|error| ConfError::message(error.to_string(), &line.span))?;
        lines.push(part);
    }
    let parts = Parts::build(lines)
        .map_err(|error| ConfError::message(error.to_string(), &directive.span))?;
    Ok(Split { source, parts })
}
