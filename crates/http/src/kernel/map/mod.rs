//! The `map` and `split_clients` modules: variables whose value is chosen by another value.
//!
//! Config path: [`directives`] reads each block into a [`ComputedVariable`] for the
//! variable's named slot (`crate::kernel::variables::NamedSlot`); the keys are compiled once
//! (`shared::map`, which the stream block's `map` uses too). Request path: a named variable with no value yet is
//! computed on first use, and its value is kept in the request's named
//! values for the rest of the request, unless the map is `volatile`.

pub mod directives;
mod evaluate;

use crate::kernel::variables::{HttpTemplate, NamedSlot};

/// The limits on evaluating computed variables inside one another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ComputedBudget {
    /// How deep one may still nest before `cycle while evaluating variable`.
    pub depth_left: u8,
    /// How many more may be computed in one template evaluation. nginx has no such limit,
    /// but a `volatile` map that names itself twice would take 2^100 steps without it.
    pub evaluations_left: u16,
    /// A cycle was logged already: one line per template evaluation is enough.
    pub cycle_logged: bool,
}

impl ComputedBudget {
    /// nginx's depth of 100; far more evaluations than any configuration needs.
    pub(crate) const FULL: ComputedBudget = ComputedBudget {
        depth_left: 100,
        evaluations_left: 10_000,
        cycle_logged: false,
    };
}

/// A variable defined by `map` or `split_clients`.
#[derive(Debug)]
pub struct ComputedVariable {
    /// The variable's name, for the error log.
    pub name: Box<str>,
    /// The value looked up (nginx's complex value: any text with variables).
    pub source: HttpTemplate,
    /// `volatile`: computed again at every use instead of once per request.
    pub volatile: bool,
    pub kind: Kind,
}

#[derive(Debug)]
pub enum Kind {
    Map(Map),
    SplitClients(shared::map::split_clients::Parts),
    /// A table a module built from its block (`geo`), which finds the value itself.
    Lookup(Box<dyn Lookup>),
}

/// A module's table for a block-defined variable (nginx's `geo`): the kernel computes the
/// source and keeps the value for the request, the module finds it.
pub trait Lookup: std::fmt::Debug + Send + Sync {
    /// The value for the request whose source evaluated to `source`.
    fn value(
        &self,
        variables: &crate::kernel::variables::RequestVariables<'_>,
        source: &[u8],
    ) -> Vec<u8>;
}

/// A `map` block, its values compiled as templates.
pub type Map = shared::map::MapBlock<HttpTemplate>;

/// The computed variables of one configuration, by named slot.
#[derive(Debug, Default)]
pub struct Maps {
    variables: Vec<ComputedVariable>,
    by_slot: Vec<Option<u32>>,
}

impl Maps {
    /// Defines `slot`'s variable; a later block for the same name replaces an earlier
    /// one, as in nginx.
    pub fn insert(&mut self, slot: NamedSlot, variable: ComputedVariable) {
        let index = slot.0 as usize;
        if self.by_slot.len() <= index {
            self.by_slot.resize(index + 1, None);
        }
        self.by_slot[index] = Some(self.variables.len() as u32);
        self.variables.push(variable);
    }

    pub fn get(&self, slot: NamedSlot) -> Option<&ComputedVariable> {
        let index = (*self.by_slot.get(slot.0 as usize)?)?;
        self.variables.get(index as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.variables.is_empty()
    }
}

/// What the `http` block sets for the map module.
#[derive(Debug, Default)]
pub struct MapConf {
    pub variables: Maps,
    /// `map_hash_max_size` and `map_hash_bucket_size`: accepted and checked; Portico's
    /// map lookup needs no sizing.
    pub hash_max_size: Option<u64>,
    pub hash_bucket_size: Option<u64>,
}
