//! The addition module's directives.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::core::settings::MimeTypeList;
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive(
        "add_before_body",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::TAKE1,
        set_before_body,
    ),
    location_directive(
        "add_after_body",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::TAKE1,
        set_after_body,
    ),
    location_directive(
        "addition_types",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::ONE_OR_MORE,
        set_types,
    ),
];

/// A URI; an empty one turns the addition off at this level, as in nginx.
fn uri(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<Box<[u8]>>, ConfError> {
    let value = directive.arg(0);
    Ok((!value.is_empty()).then(|| value.as_bytes().into()))
}

set_once!(set_before_body, LocationScope, addition.before_body, uri);
set_once!(set_after_body, LocationScope, addition.after_body, uri);

fn set_types(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.addition.types.is_some() {
        return Err(context.duplicate(directive));
    }
    let mut types = MimeTypeList::default();
    types.add(&directive.args);
    scope.addition.types = Some(Arc::new(types));
    Ok(())
}
