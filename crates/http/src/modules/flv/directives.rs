//! The FLV module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "flv",
    contexts: Contexts::LOCATION,
    arity: Arity::NONE,
    block: BlockKind::Simple,
    set: Setter::Location(set_flv),
}];

fn set_flv(
    scope: &mut LocationScope,
    _directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope.content = Some(Content::Flv);
    Ok(())
}
