//! The keys of `map` blocks and the buckets of `split_clients`.

pub mod keys;
pub mod murmur;
pub mod split_clients;

use conf::{ConfError, ConfErrorKind, Directive, Span};

use crate::captures::{NamedCaptures, NamedSlot};
use crate::regex::Regex;
use keys::{KeyError, MapKeys};
use split_clients::{Part, Parts};

/// What reading a block needs from the block's configuration loader: values compiled as
/// its templates, and a slot for each named regex group.
pub trait BlockLoader {
    type Template;

    fn template(&mut self, text: &str, span: &Span) -> Result<Self::Template, ConfError>;

    fn define(&mut self, name: &str) -> NamedSlot;
}

/// A `map` block: its keys, its values (compiled by the loader) and the parameters.
#[derive(Debug)]
pub struct MapBlock<T> {
    pub keys: MapKeys,
    /// Each value as written, compiled; keys refer to them by index.
    pub values: Vec<T>,
    /// The `default` value's index; without one the default is empty.
    pub default: Option<usize>,
    /// `volatile`: the value is not kept for the rest of a request.
    pub volatile: bool,
}

impl<T> Default for MapBlock<T> {
    fn default() -> MapBlock<T> {
        MapBlock {
            keys: MapKeys::default(),
            values: Vec::new(),
            default: None,
            volatile: false,
        }
    }
}

impl<T> MapBlock<T> {
    /// Reads a block's lines (`include` already expanded by the parser).
    pub fn read(
        directive: &Directive,
        loader: &mut impl BlockLoader<Template = T>,
    ) -> Result<MapBlock<T>, ConfError> {
        let mut block = MapBlock::default();
        for line in directive.block.as_deref().unwrap_or_default() {
            block.read_line(line, loader)?;
        }
        Ok(block)
    }

    /// One line: a parameter (`hostnames`, `volatile`), `default VALUE`, or `KEY VALUE`,
    /// with nginx's messages for what it refuses.
    fn read_line(
        &mut self,
        line: &Directive,
        loader: &mut impl BlockLoader<Template = T>,
    ) -> Result<(), ConfError> {
        refuse_block(line)?;
        let key = line.name.as_str();
        match (key, line.args.len()) {
            ("hostnames", 0) => {
                self.keys.hostnames = true;
                return Ok(());
            }
            ("volatile", 0) => {
                self.volatile = true;
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
        let value = self.values.len();
        self.values.push(loader.template(line.arg(0), &line.span)?);
        if key == "default" {
            if self.default.is_some() {
                return Err(ConfError::message(
                    "duplicate default map parameter",
                    &line.span,
                ));
            }
            self.default = Some(value);
            return Ok(());
        }
        if let Some(pattern) = key.strip_prefix('~') {
            let (pattern, caseless) = match pattern.strip_prefix('*') {
                Some(pattern) => (pattern, true),
                None => (pattern, false),
            };
            let regex = Regex::compile(pattern, caseless)
                .map_err(|error| ConfError::message(error.0, &line.span))?;
            let regex = NamedCaptures::new(regex, |name| loader.define(name));
            self.keys.add_regex(regex, value);
            return Ok(());
        }
        let key = key.strip_prefix('\\').unwrap_or(key);
        self.keys.add(key, value).map_err(|error| {
            let message = match error {
                KeyError::InvalidWildcard => format!("invalid hostname or wildcard \"{key}\""),
                // nginx lowercases the key in place before it finds the conflict.
                KeyError::Conflicting => {
                    format!("conflicting parameter \"{}\"", key.to_ascii_lowercase())
                }
            };
            ConfError::message(message, &line.span)
        })
    }
}

/// The parts of a `split_clients` block, as nginx reads them: no more than the first two
/// words of a line (a value left out is empty), the percentages checked as a whole.
pub fn read_split_clients(directive: &Directive) -> Result<Parts, ConfError> {
    let mut lines = Vec::new();
    for line in directive.block.as_deref().unwrap_or_default() {
        refuse_block(line)?;
        let part = Part::parse(&line.name, line.arg(0).as_bytes())
            .map_err(|error| ConfError::message(error.to_string(), &line.span))?;
        lines.push(part);
    }
    Parts::build(lines).map_err(|error| ConfError::message(error.to_string(), &directive.span))
}

/// A line of a `map`, `split_clients` or `geo` block is never a block itself.
pub fn refuse_block(line: &Directive) -> Result<(), ConfError> {
    if line.block.is_some() {
        return Err(ConfError::at(
            ConfErrorKind::UnexpectedCharacter { found: '{' },
            &line.span,
        ));
    }
    Ok(())
}
