//! The random index module's directive table.

use conf::{Arity, BlockKind, Contexts};

use crate::kernel::conf::{HttpDirective, LocationScope, Setter};
use crate::kernel::core::directives::flag;
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "random_index",
    contexts: Contexts::LOCATION,
    arity: Arity::FLAG,
    block: BlockKind::Simple,
    set: Setter::Location(set_random_index),
}];

set_once!(
    set_random_index,
    LocationScope,
    random_index.random_index,
    flag
);
