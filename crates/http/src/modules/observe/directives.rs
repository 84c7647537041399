//! The observability endpoints' directive table. `portico_metrics` is Portico's own (the
//! prefix keeps it clear of any nginx directive); `api` is NGINX Plus's name.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "portico_metrics",
        contexts: Contexts::LOCATION,
        arity: Arity::NONE,
        block: BlockKind::Simple,
        set: Setter::Location(set_metrics),
    },
    HttpDirective {
        name: "portico_status_page",
        contexts: Contexts::LOCATION,
        arity: Arity::NONE,
        block: BlockKind::Simple,
        set: Setter::Location(set_status_page),
    },
    HttpDirective {
        name: "status_zone",
        contexts: Contexts::SERVER
            .with(Contexts::LOCATION)
            .with(Contexts::LOCATION_IF),
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_status_zone),
    },
    HttpDirective {
        name: "api",
        contexts: Contexts::LOCATION,
        // `write=on|off` is accepted; Portico's API is read-only either way (writes
        // answer 405), so an NGINX Plus configuration loads unchanged.
        arity: Arity::counts(&[0, 1]),
        block: BlockKind::Simple,
        set: Setter::Location(set_api),
    },
];

fn set_metrics(
    scope: &mut LocationScope,
    _directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope.content = Some(Content::Metrics);
    Ok(())
}

fn set_status_zone(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.status_zone.zone.is_some() {
        return Err(context.duplicate(directive));
    }
    let Some(zone) = metrics::GLOBAL.zone(directive.arg(0)) else {
        return Err(ConfError::message(
            format!(
                "too many status zones: at most {} names",
                metrics::zones::MAX_STATUS_ZONES
            ),
            &directive.span,
        ));
    };
    scope.status_zone.zone = Some(Some(zone));
    Ok(())
}

fn set_status_page(
    scope: &mut LocationScope,
    _directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope.content = Some(Content::StatusPage);
    Ok(())
}

fn set_api(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if directive.args.len() == 1 && !matches!(directive.arg(0), "write=on" | "write=off") {
        return Err(ConfError::message(
            format!("invalid parameter \"{}\"", directive.arg(0)),
            &directive.span,
        ));
    }
    scope.content = Some(Content::Api);
    Ok(())
}
