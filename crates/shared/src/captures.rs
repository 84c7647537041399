//! Regexes whose named groups set variables (`(?<name>...)` sets `$name`), in the http and
//! stream blocks alike.

use crate::regex::{Captures, Regex};

/// A variable that is not built in: a named regex capture, a `set` or `map` target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NamedSlot(pub u32);

/// A regex whose named groups are variables.
#[derive(Clone, Debug)]
pub struct NamedCaptures {
    pub regex: Regex,
    /// Group index and the variable slot it fills.
    pub slots: Vec<(usize, NamedSlot)>,
}

impl NamedCaptures {
    /// The regex with a slot for each named group, from `define` (the block's variable
    /// registry).
    pub fn new(regex: Regex, mut define: impl FnMut(&str) -> NamedSlot) -> NamedCaptures {
        let slots = regex
            .names()
            .iter()
            .map(|(name, index)| (*index, define(name)))
            .collect();
        NamedCaptures { regex, slots }
    }

    /// Copies the named groups of a successful match into the named values.
    pub fn store(&self, captures: &Captures, named: &mut Vec<Option<Vec<u8>>>) {
        for (group, slot) in &self.slots {
            let index = slot.0 as usize;
            if named.len() <= index {
                named.resize(index + 1, None);
            }
            named[index] = captures.group(*group).map(<[u8]>::to_vec);
        }
    }
}
