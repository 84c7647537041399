//! The sub filter's directives, with nginx's errors.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::core::directives::flag;
use crate::kernel::core::settings::MimeTypeList;
use crate::modules::sub_filter::settings::Substitution;
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive(
        "sub_filter",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::TAKE2,
        set_sub_filter,
    ),
    location_directive(
        "sub_filter_once",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::FLAG,
        set_once_flag,
    ),
    location_directive(
        "sub_filter_types",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::ONE_OR_MORE,
        set_types,
    ),
    location_directive(
        "sub_filter_last_modified",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::FLAG,
        set_last_modified,
    ),
];

set_once!(set_once_flag, LocationScope, sub_filter.once, flag);
set_once!(
    set_last_modified,
    LocationScope,
    sub_filter.last_modified,
    flag
);

/// `sub_filter string replacement`: both may have variables; the string is matched
/// without regard to case.
fn set_sub_filter(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    if directive.arg(0).is_empty() {
        return Err(ConfError::message("empty search pattern", span));
    }
    let string = context.template(directive.arg(0), span)?;
    let replacement = context.template(directive.arg(1), span)?;
    let list = scope
        .sub_filter
        .substitutions
        .get_or_insert_with(|| Arc::new(Vec::new()));
    Arc::make_mut(list).push(Substitution {
        string,
        replacement,
    });
    Ok(())
}

fn set_types(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.sub_filter.types.is_some() {
        return Err(context.duplicate(directive));
    }
    let mut types = MimeTypeList::default();
    types.add(&directive.args);
    scope.sub_filter.types = Some(Arc::new(types));
    Ok(())
}
