//! `map` and `split_clients` in the `stream` block. The blocks are read and looked up by
//! the same code as the http block's (`shared::map`), so a key or a client lands on the
//! same value in both blocks.

use conf::{ConfError, Directive, Span};
use shared::captures::NamedSlot;
use shared::map::split_clients::Parts;
use shared::map::{BlockLoader, MapBlock, read_split_clients};
use shared::regex::Regex;

use crate::conf::Loader;
use crate::variables::{Eval, SlotKind, StreamTemplate};

/// One `map SOURCE $name { ... }`.
#[derive(Debug)]
pub struct StreamMap {
    pub source: StreamTemplate,
    /// Its keys and values; `volatile` is accepted and changes nothing, since a stream
    /// variable is computed each time it is read.
    pub block: MapBlock<StreamTemplate>,
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
    let found = map.block.keys.find(&key, &mut captures);
    let value = match found {
        Some(found) => {
            if let Some(regex) = found.regex {
                regex.store(&captures, &mut eval.vars.slots);
                eval.vars.captures = captures;
            }
            Some(found.value)
        }
        None => map.block.default,
    };
    if let Some(template) = value.and_then(|index| map.block.values.get(index)) {
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
    let block = MapBlock::read(directive, loader)?;
    Ok(StreamMap { source, block })
}

impl BlockLoader for Loader<'_> {
    type Template = StreamTemplate;

    fn template(&mut self, text: &str, span: &Span) -> Result<StreamTemplate, ConfError> {
        Loader::template(self, text, span)
    }

    fn define(&mut self, name: &str) -> NamedSlot {
        NamedSlot(self.registry.slot(name) as u32)
    }
}

/// Reads a `split_clients` block.
pub fn load_split(loader: &mut Loader, directive: &Directive) -> Result<Split, ConfError> {
    let source = loader.template(directive.arg(0), &directive.span)?;
    let parts = read_split_clients(directive)?;
    Ok(Split { source, parts })
}
