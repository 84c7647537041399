//! The mirror module's directives, and `log_subrequest`, which its subrequests obey.

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::core::directives::flag;
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive(
        "mirror",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::TAKE1,
        set_mirror,
    ),
    location_directive(
        "mirror_request_body",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::FLAG,
        set_request_body,
    ),
    location_directive(
        "log_subrequest",
        Contexts::HTTP_SERVER_LOCATION,
        Arity::FLAG,
        set_log_subrequest,
    ),
];

set_once!(set_request_body, LocationScope, mirror.request_body, flag);
set_once!(
    set_log_subrequest,
    LocationScope,
    mirror.log_subrequest,
    flag
);

/// `mirror URI` adds a mirror; `mirror off` is alone at its level, as in nginx.
fn set_mirror(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let value = directive.arg(0);
    match (&mut scope.mirror.uris, value) {
        (Some(uris), "off") if uris.is_empty() => Err(context.duplicate(directive)),
        (Some(_), "off") => Err(ConfError::message(
            "\"off\" cannot be used with other mirrors",
            &directive.span,
        )),
        (Some(uris), _) if uris.is_empty() => Err(ConfError::message(
            "\"off\" cannot be used with other mirrors",
            &directive.span,
        )),
        (Some(uris), uri) => {
            uris.push(uri.as_bytes().into());
            Ok(())
        }
        (None, "off") => {
            scope.mirror.uris = Some(Vec::new());
            Ok(())
        }
        (None, uri) => {
            scope.mirror.uris = Some(vec![uri.as_bytes().into()]);
            Ok(())
        }
    }
}
