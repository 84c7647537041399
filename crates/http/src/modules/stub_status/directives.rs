//! The stub status module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "stub_status",
    contexts: Contexts::SERVER.with(Contexts::LOCATION),
    // nginx still accepts the argument older versions required, and ignores it.
    arity: Arity::counts(&[0, 1]),
    block: BlockKind::Simple,
    set: Setter::Location(set_stub_status),
}];

fn set_stub_status(
    scope: &mut LocationScope,
    _directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope.content = Some(Content::StubStatus);
    Ok(())
}
