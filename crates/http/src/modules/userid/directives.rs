//! The userid module's directives, with nginx's errors.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::modules::userid::settings::{Expires, Flags, Mode, SameSite};
use crate::set_once;

const fn entry(
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

pub const DIRECTIVES: &[HttpDirective] = &[
    entry("userid", Arity::TAKE1, set_userid),
    entry("userid_service", Arity::TAKE1, set_service),
    entry("userid_name", Arity::TAKE1, set_name),
    entry("userid_domain", Arity::TAKE1, set_domain),
    entry("userid_path", Arity::TAKE1, set_path),
    entry("userid_expires", Arity::TAKE1, set_expires),
    entry("userid_flags", Arity::ONE_OR_MORE, set_flags),
    entry("userid_p3p", Arity::TAKE1, set_p3p),
    entry("userid_mark", Arity::TAKE1, set_mark),
];

fn invalid_value(directive: &Directive, value: &str) -> ConfError {
    ConfError::message(format!("invalid value \"{value}\""), &directive.span)
}

/// `userid on | v1 | log | off` (an enum slot in nginx: case is ignored). Any use makes
/// `$uid_reset` a known variable, empty unless a `map` or `set` gives it a value.
fn mode(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Mode, ConfError> {
    let mode = match directive.arg(0).to_ascii_lowercase().as_str() {
        "on" => Mode::On,
        "v1" => Mode::V1,
        "log" => Mode::Log,
        "off" => Mode::Off,
        _ => return Err(invalid_value(directive, directive.arg(0))),
    };
    Ok(mode)
}

fn set_userid(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.userid.mode.is_some() {
        return Err(context.duplicate(directive));
    }
    scope.userid.mode = Some(mode(directive, context)?);
    context.variables.define("uid_reset");
    let reset = context.template("$uid_reset", &directive.span)?;
    scope.userid.reset = Some(Some(reset));
    Ok(())
}

fn text(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Box<str>, ConfError> {
    Ok(directive.arg(0).into())
}

fn unless_none(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<Box<str>>, ConfError> {
    Ok(match directive.arg(0) {
        "none" => None,
        other => Some(other.into()),
    })
}

set_once!(set_name, LocationScope, userid.name, text);
set_once!(set_path, LocationScope, userid.path, text);
set_once!(set_domain, LocationScope, userid.domain, unless_none);
set_once!(set_p3p, LocationScope, userid.p3p, unless_none);

fn service(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<u32>, ConfError> {
    conf::value::parse_number(directive.arg(0))
        .and_then(|number| u32::try_from(number).ok())
        .map(Some)
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))
}

set_once!(set_service, LocationScope, userid.service, service);

/// `userid_expires TIME | max | off`.
fn expires(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Expires, ConfError> {
    match directive.arg(0) {
        "max" => Ok(Expires::Max),
        "off" => Ok(Expires::Off),
        text => conf::value::parse_time_seconds(text)
            .map(Expires::After)
            .ok_or_else(|| ConfError::message("invalid value", &directive.span)),
    }
}

set_once!(set_expires, LocationScope, userid.expires, expires);

/// `userid_mark LETTER | DIGIT | = | off`.
fn mark(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Option<u8>, ConfError> {
    let text = directive.arg(0);
    if text == "off" {
        return Ok(None);
    }
    match text.as_bytes() {
        [byte] if byte.is_ascii_alphanumeric() || *byte == b'=' => Ok(Some(*byte)),
        _ => Err(ConfError::message(
            format!("incorrect marker \"{text}\""),
            &directive.span,
        )),
    }
}

set_once!(set_mark, LocationScope, userid.mark, mark);

/// `userid_flags off | secure | httponly | samesite=strict|lax|none ...` (a bitmask slot
/// in nginx: case is ignored).
fn flags(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Flags, ConfError> {
    let mut flags = Flags::default();
    for argument in &directive.args {
        let argument = argument.as_str();
        match argument.to_ascii_lowercase().as_str() {
            "off" => flags = Flags::default(),
            "secure" => flags.secure = true,
            "httponly" => flags.httponly = true,
            "samesite=strict" => flags.samesite = Some(SameSite::Strict),
            "samesite=lax" => flags.samesite = Some(SameSite::Lax),
            "samesite=none" => flags.samesite = Some(SameSite::None),
            _ => return Err(invalid_value(directive, argument)),
        }
    }
    Ok(flags)
}

set_once!(set_flags, LocationScope, userid.flags, flags);
