//! The proxy module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::conf::{HttpDirective, LoadContext, LocationScope, Setter};

pub const DIRECTIVES: &[HttpDirective] = &[HttpDirective {
    name: "proxy_temp_path",
    contexts: Contexts::HTTP_SERVER_LOCATION,
    arity: Arity::TAKE1234,
    block: BlockKind::Simple,
    set: Setter::Location(set_proxy_temp_path),
}];

fn set_proxy_temp_path(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy.proxy_temp_path.is_some() {
        return Err(context.duplicate(directive));
    }
    scope.proxy.proxy_temp_path = Some(context.temp_path(directive)?);
    Ok(())
}
