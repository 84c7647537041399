//! The auth_basic module's directives.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::set_once;

const CONTEXTS: Contexts = Contexts::HTTP_SERVER_LOCATION.with(Contexts::LIMIT_EXCEPT);

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "auth_basic",
        contexts: CONTEXTS,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_realm),
    },
    HttpDirective {
        name: "auth_basic_user_file",
        contexts: CONTEXTS,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_user_file),
    },
];

set_once!(
    set_realm,
    LocationScope,
    auth_basic.realm,
    |d: &Directive, c: &mut LoadContext<'_>| -> Result<_, ConfError> {
        if d.arg(0) == "off" {
            return Ok(None);
        }
        c.template(d.arg(0), &d.span).map(Some)
    }
);
set_once!(
    set_user_file,
    LocationScope,
    auth_basic.user_file,
    |d: &Directive, c: &mut LoadContext<'_>| -> Result<_, ConfError> {
        let path = c.path(d.arg(0));
        c.template(&path.to_string_lossy(), &d.span).map(Some)
    }
);
