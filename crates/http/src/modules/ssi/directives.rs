//! The SSI module's directives, with nginx's errors.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::core::directives::{flag, size};
use crate::kernel::core::settings::MimeTypeList;
use crate::set_once;

const WITH_IF: Contexts = Contexts::HTTP_SERVER_LOCATION.with(Contexts::LOCATION_IF);
const LEVELS: Contexts = Contexts::HTTP_SERVER_LOCATION;

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive("ssi", WITH_IF, Arity::FLAG, set_ssi),
    location_directive("ssi_silent_errors", LEVELS, Arity::FLAG, set_silent_errors),
    location_directive("ssi_types", LEVELS, Arity::ONE_OR_MORE, set_types),
    location_directive("ssi_value_length", LEVELS, Arity::TAKE1, set_value_length),
    location_directive(
        "ssi_min_file_chunk",
        LEVELS,
        Arity::TAKE1,
        set_min_file_chunk,
    ),
    location_directive("ssi_last_modified", LEVELS, Arity::FLAG, set_last_modified),
    // nginx's core directive; only SSI's `include set=` captures a subrequest here.
    location_directive(
        "subrequest_output_buffer_size",
        LEVELS,
        Arity::TAKE1,
        set_subrequest_output_buffer_size,
    ),
];

set_once!(set_ssi, LocationScope, ssi.ssi, flag);
set_once!(set_silent_errors, LocationScope, ssi.silent_errors, flag);
set_once!(set_value_length, LocationScope, ssi.value_length, size);
set_once!(set_min_file_chunk, LocationScope, ssi.min_file_chunk, size);
set_once!(set_last_modified, LocationScope, ssi.last_modified, flag);
set_once!(
    set_subrequest_output_buffer_size,
    LocationScope,
    ssi.subrequest_output_buffer_size,
    size
);

fn set_types(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.ssi.types.is_some() {
        return Err(context.duplicate(directive));
    }
    let mut types = MimeTypeList::default();
    types.add(&directive.args);
    scope.ssi.types = Some(Arc::new(types));
    Ok(())
}
