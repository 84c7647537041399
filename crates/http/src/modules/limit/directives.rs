//! The directive tables of the limit_req and limit_conn modules, with nginx's error texts.

use std::sync::Arc;

use conf::{Arity, BlockKind, ConfError, Contexts, Directive, Span};
use logging::Level;

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, MainScope, Setter};
use crate::modules::limit::settings::zone::{ConnZone, MIN_ZONE_SIZE, ReqZone};
use crate::modules::limit::settings::{ConnLimit, ConnZoneUse, LimitZones, ReqLimit, ReqZoneUse};
use crate::set_once;

const fn location(
    name: &'static str,
    arity: Arity,
    set: fn(&mut LocationScope, &Directive, &mut LoadContext<'_>) -> Result<(), ConfError>,
) -> HttpDirective {
    HttpDirective {
        name,
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity,
        block: BlockKind::Simple,
        set: Setter::Location(set),
    }
}

/// The limit_req module's directives.
pub const REQ_DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "limit_req_zone",
        contexts: Contexts::HTTP,
        arity: Arity::counts(&[3, 4]),
        block: BlockKind::Simple,
        set: Setter::Main(set_limit_req_zone),
    },
    location("limit_req", Arity::TAKE123, set_limit_req),
    location("limit_req_log_level", Arity::TAKE1, set_limit_req_log_level),
    location("limit_req_status", Arity::TAKE1, set_limit_req_status),
    location("limit_req_dry_run", Arity::TAKE1, set_limit_req_dry_run),
];

/// The limit_conn module's directives.
pub const CONN_DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "limit_conn_zone",
        contexts: Contexts::HTTP,
        arity: Arity::TAKE2,
        block: BlockKind::Simple,
        set: Setter::Main(set_limit_conn_zone),
    },
    location("limit_conn", Arity::TAKE2, set_limit_conn),
    location(
        "limit_conn_log_level",
        Arity::TAKE1,
        set_limit_conn_log_level,
    ),
    location("limit_conn_status", Arity::TAKE1, set_limit_conn_status),
    location("limit_conn_dry_run", Arity::TAKE1, set_limit_conn_dry_run),
];

/// `zone=NAME:SIZE`: the name and size, with nginx's errors.
fn zone_parameter(text: &str, span: &Span) -> Result<(String, u64), ConfError> {
    let value = &text["zone=".len()..];
    let Some((name, size)) = value.split_once(':') else {
        return Err(ConfError::message(
            format!("invalid zone size \"{text}\""),
            span,
        ));
    };
    let Some(size) = conf::value::parse_size(size) else {
        return Err(ConfError::message(
            format!("invalid zone size \"{text}\""),
            span,
        ));
    };
    if size < MIN_ZONE_SIZE {
        return Err(ConfError::message(
            format!("zone \"{text}\" is too small"),
            span,
        ));
    }
    Ok((name.to_owned(), size))
}

/// The checks nginx's shared-memory registry makes when a zone is declared: one name, one
/// use, one size.
fn check_zone_name(
    zones: &LimitZones,
    directive: &Directive,
    name: &str,
    size: u64,
    is_req: bool,
) -> Result<(), ConfError> {
    let req = zones.req.iter().find(|used| used.zone.name == name);
    let conn = zones.conn.iter().find(|used| used.zone.name == name);
    let (old_size, old_key, same_use) = match (req, conn) {
        (Some(used), _) => (used.zone.size, &used.zone.key_text, is_req),
        (None, Some(used)) => (used.zone.size, &used.zone.key_text, !is_req),
        (None, None) => return Ok(()),
    };
    let span = &directive.span;
    if !same_use {
        return Err(ConfError::message(
            format!("the shared memory zone \"{name}\" is already declared for a different use"),
            span,
        ));
    }
    if old_size != size {
        return Err(ConfError::message(
            format!(
                "the size {size} of shared memory zone \"{name}\" conflicts with already declared size {old_size}"
            ),
            span,
        ));
    }
    Err(ConfError::message(
        format!(
            "{} \"{name}\" is already bound to key \"{old_key}\"",
            directive.name
        ),
        span,
    ))
}

/// `limit_req_zone KEY zone=NAME:SIZE rate=RATE [sync]`.
fn set_limit_req_zone(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let key_text = directive.arg(0);
    let key = context.template(key_text, span)?;
    let mut zone: Option<(String, u64)> = None;
    // Requests per `scale` seconds.
    let (mut rate, mut scale) = (1u64, 1u64);
    for text in directive.args[1..].iter().map(conf::Argument::as_str) {
        if text.starts_with("zone=") {
            zone = Some(zone_parameter(text, span)?);
        } else if let Some(value) = text.strip_prefix("rate=") {
            let (number, per) = if let Some(number) = value.strip_suffix("r/s") {
                (number, 1)
            } else if let Some(number) = value.strip_suffix("r/m") {
                (number, 60)
            } else {
                (value, 1)
            };
            match positive(number) {
                Some(number) => (rate, scale) = (number, per),
                None => {
                    return Err(ConfError::message(format!("invalid rate \"{text}\""), span));
                }
            }
        } else if text == "sync" {
            // nginx's commercial zone synchronisation: accepted, the zone stays local.
        } else {
            return Err(ConfError::message(
                format!("invalid parameter \"{text}\""),
                span,
            ));
        }
    }
    let Some((name, size)) = zone.filter(|(name, _)| !name.is_empty()) else {
        return Err(ConfError::message(
            "\"limit_req_zone\" must have \"zone\" parameter",
            span,
        ));
    };
    check_zone_name(&main.limit, directive, &name, size, true)?;
    main.limit.req.push(ReqZoneUse {
        zone: Arc::new(ReqZone::new(&name, size, key_text)),
        key,
        rate: rate * 1000 / scale,
        span: span.clone(),
    });
    Ok(())
}

/// `limit_conn_zone KEY zone=NAME:SIZE`.
fn set_limit_conn_zone(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let key_text = directive.arg(0);
    let key = context.template(key_text, span)?;
    let text = directive.arg(1);
    if !text.starts_with("zone=") {
        return Err(ConfError::message(
            format!("invalid parameter \"{text}\""),
            span,
        ));
    }
    let (name, size) = zone_parameter(text, span)?;
    if name.is_empty() {
        return Err(ConfError::message(
            "\"limit_conn_zone\" must have \"zone\" parameter",
            span,
        ));
    }
    check_zone_name(&main.limit, directive, &name, size, false)?;
    main.limit.conn.push(ConnZoneUse {
        zone: Arc::new(ConnZone::new(&name, size, key_text)),
        key,
        span: span.clone(),
    });
    Ok(())
}

/// A number above zero, as nginx's `ngx_atoi` reads one.
fn positive(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>().ok().filter(|number| *number > 0)
}

/// `limit_req zone=NAME [burst=N] [nodelay | delay=N]`.
fn set_limit_req(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let mut zone_name: Option<&str> = None;
    let (mut burst, mut delay) = (0u64, 0u64);
    let mut nodelay = false;
    for text in directive.args.iter().map(conf::Argument::as_str) {
        if let Some(name) = text.strip_prefix("zone=") {
            zone_name = Some(name);
        } else if let Some(value) = text.strip_prefix("burst=") {
            burst = positive(value).ok_or_else(|| {
                ConfError::message(format!("invalid burst value \"{text}\""), span)
            })?;
        } else if let Some(value) = text.strip_prefix("delay=") {
            delay = positive(value).ok_or_else(|| {
                ConfError::message(format!("invalid delay value \"{text}\""), span)
            })?;
        } else if text == "nodelay" {
            nodelay = true;
        } else {
            return Err(ConfError::message(
                format!("invalid parameter \"{text}\""),
                span,
            ));
        }
    }
    let Some(zone_name) = zone_name.filter(|name| !name.is_empty()) else {
        return Err(ConfError::message(
            "\"limit_req\" must have \"zone\" parameter",
            span,
        ));
    };
    let limits = scope.limit.limit_req.get_or_insert_with(Vec::new);
    if limits.iter().any(|limit| limit.zone_name == zone_name) {
        return Err(ConfError::message(
            "\"limit_req\" directive is duplicate",
            span,
        ));
    }
    let delay = if nodelay { u64::MAX / 1000 } else { delay };
    limits.push(ReqLimit {
        zone_name: zone_name.to_owned(),
        zone: 0,
        burst: burst.saturating_mul(1000),
        delay: delay.saturating_mul(1000),
        span: span.clone(),
    });
    Ok(())
}

/// `limit_conn ZONE NUMBER`.
fn set_limit_conn(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let zone_name = directive.arg(0);
    let text = directive.arg(1);
    let Some(connections) = positive(text) else {
        return Err(ConfError::message(
            format!("invalid number of connections \"{text}\""),
            span,
        ));
    };
    if connections > 65535 {
        return Err(ConfError::message(
            "connection limit must be less 65536",
            span,
        ));
    }
    let limits = scope.limit.limit_conn.get_or_insert_with(Vec::new);
    if limits.iter().any(|limit| limit.zone_name == zone_name) {
        return Err(ConfError::message(
            "\"limit_conn\" directive is duplicate",
            span,
        ));
    }
    limits.push(ConnLimit {
        zone_name: zone_name.to_owned(),
        zone: 0,
        connections: connections as u32,
        span: span.clone(),
    });
    Ok(())
}

/// `info | notice | warn | error`.
fn log_level(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Level, ConfError> {
    let text = directive.arg(0);
    match text {
        "info" => Ok(Level::Info),
        "notice" => Ok(Level::Notice),
        "warn" => Ok(Level::Warn),
        "error" => Ok(Level::Error),
        _ => Err(ConfError::message(
            format!("invalid value \"{text}\""),
            &directive.span,
        )),
    }
}

/// A status between 400 and 599.
fn status(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u16, ConfError> {
    let text = directive.arg(0);
    let Some(number) = positive(text).or((text == "0").then_some(0)) else {
        return Err(ConfError::directive(
            &directive.name,
            "invalid number",
            &directive.span,
        ));
    };
    if !(400..=599).contains(&number) {
        return Err(ConfError::message(
            "value must be between 400 and 599",
            &directive.span,
        ));
    }
    Ok(number as u16)
}

fn flag(directive: &Directive, context: &mut LoadContext<'_>) -> Result<bool, ConfError> {
    context.flag(directive)
}

set_once!(
    set_limit_req_log_level,
    LocationScope,
    limit.limit_req_log_level,
    log_level
);
set_once!(
    set_limit_req_status,
    LocationScope,
    limit.limit_req_status,
    status
);
set_once!(
    set_limit_req_dry_run,
    LocationScope,
    limit.limit_req_dry_run,
    flag
);
set_once!(
    set_limit_conn_log_level,
    LocationScope,
    limit.limit_conn_log_level,
    log_level
);
set_once!(
    set_limit_conn_status,
    LocationScope,
    limit.limit_conn_status,
    status
);
set_once!(
    set_limit_conn_dry_run,
    LocationScope,
    limit.limit_conn_dry_run,
    flag
);
