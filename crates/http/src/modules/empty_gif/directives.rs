//! The empty GIF module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "empty_gif",
    contexts: Contexts::LOCATION,
    arity: Arity::NONE,
    block: BlockKind::Simple,
    set: Setter::Location(set_empty_gif),
}];

fn set_empty_gif(
    scope: &mut LocationScope,
    _directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope.content = Some(Content::EmptyGif);
    Ok(())
}
