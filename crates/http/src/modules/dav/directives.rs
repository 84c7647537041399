//! The WebDAV module's directive table.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::kernel::core::directives::{access, flag, number};
use crate::modules::dav::settings::DavMethods;
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "dav_methods",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::ONE_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Location(set_methods),
    },
    HttpDirective {
        name: "dav_access",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE123,
        block: BlockKind::Simple,
        set: Setter::Location(set_access),
    },
    HttpDirective {
        name: "create_full_put_path",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::FLAG,
        block: BlockKind::Simple,
        set: Setter::Location(set_create_full_put_path),
    },
    HttpDirective {
        name: "min_delete_depth",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_min_delete_depth),
    },
];

/// `dav_methods off | METHOD ...`: `off` stands alone; other words are nginx's bitmask
/// values, `invalid value "X"` otherwise.
fn set_methods(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.dav.methods.is_some() {
        return Err(context.duplicate(directive));
    }
    let mut methods = DavMethods::NONE;
    for argument in &directive.args {
        let name = argument.as_str();
        if name == "off" && directive.args.len() == 1 {
            break;
        }
        let method = DavMethods::named(name).ok_or_else(|| {
            ConfError::message(format!("invalid value \"{name}\""), &directive.span)
        })?;
        methods = methods.with(method);
    }
    scope.dav.methods = Some(methods);
    Ok(())
}

set_once!(set_access, LocationScope, dav.access, access);
set_once!(
    set_create_full_put_path,
    LocationScope,
    dav.create_full_put_path,
    flag
);
set_once!(
    set_min_delete_depth,
    LocationScope,
    dav.min_delete_depth,
    number
);
