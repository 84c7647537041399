//! The gunzip module's directives, with nginx's errors.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::kernel::core::directives::flag;
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "gunzip",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::FLAG,
        block: BlockKind::Simple,
        set: Setter::Location(set_gunzip),
    },
    HttpDirective {
        name: "gunzip_buffers",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE2,
        block: BlockKind::Simple,
        set: Setter::Location(set_buffers),
    },
];

set_once!(set_gunzip, LocationScope, gunzip.gunzip, flag);

/// `gunzip_buffers NUMBER SIZE`: checked; Portico inflates in steps of at most
/// `send::coding::STEP_BYTES` whatever the buffers.
fn set_buffers(
    _scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    crate::kernel::core::directives::number(directive, context)?;
    conf::value::parse_size(directive.arg(1))
        .map(|_| ())
        .ok_or_else(|| crate::kernel::core::directives::invalid_value(directive))
}
