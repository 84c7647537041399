//! The gzip module's directives, with nginx's errors.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::core::directives::{flag, size};
use crate::modules::gzip::settings::{GzipStatic, Proxied};
use crate::set_once;
use shared::regex::Regex;

const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION.with(Contexts::LOCATION_IF);

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive("gzip", ANY_LEVEL, Arity::FLAG, set_gzip),
    location_directive("gzip_buffers", ANY_LEVEL, Arity::TAKE2, set_buffers),
    location_directive("gzip_comp_level", ANY_LEVEL, Arity::TAKE1, set_comp_level),
    location_directive("gzip_min_length", ANY_LEVEL, Arity::TAKE1, set_min_length),
    location_directive("gzip_types", ANY_LEVEL, Arity::ONE_OR_MORE, set_types),
    location_directive(
        "gzip_http_version",
        ANY_LEVEL,
        Arity::TAKE1,
        set_http_version,
    ),
    location_directive("gzip_proxied", ANY_LEVEL, Arity::ONE_OR_MORE, set_proxied),
    location_directive("gzip_disable", ANY_LEVEL, Arity::ONE_OR_MORE, set_disable),
    location_directive("gzip_vary", ANY_LEVEL, Arity::FLAG, set_vary),
    location_directive("gzip_static", ANY_LEVEL, Arity::TAKE1, set_static),
];

set_once!(
    set_static,
    LocationScope,
    gzip.static_files,
    |d: &Directive, _c: &mut LoadContext<'_>| -> Result<GzipStatic, ConfError> {
        match d.arg(0).to_ascii_lowercase().as_str() {
            "on" => Ok(GzipStatic::On),
            "off" => Ok(GzipStatic::Off),
            "always" => Ok(GzipStatic::Always),
            _ => Err(ConfError::message(
                format!("invalid value \"{}\"", d.arg(0)),
                &d.span,
            )),
        }
    }
);

set_once!(set_gzip, LocationScope, gzip.gzip, flag);
set_once!(set_vary, LocationScope, gzip.vary, flag);
set_once!(set_min_length, LocationScope, gzip.min_length, size);
set_once!(
    set_comp_level,
    LocationScope,
    gzip.comp_level,
    |d: &Directive, _c: &mut LoadContext<'_>| -> Result<u32, ConfError> {
        conf::value::parse_number(d.arg(0))
            .filter(|level| (1..=9).contains(level))
            .map(|level| level as u32)
            .ok_or_else(|| {
                ConfError::message("the compression level must be between 1 and 9", &d.span)
            })
    }
);
set_once!(
    set_http_version,
    LocationScope,
    gzip.http_11,
    |d: &Directive, _c: &mut LoadContext<'_>| -> Result<bool, ConfError> {
        match d.arg(0) {
            "1.1" => Ok(true),
            "1.0" => Ok(false),
            other => Err(ConfError::message(
                format!("invalid value \"{other}\""),
                &d.span,
            )),
        }
    }
);

/// `gzip_buffers NUMBER SIZE`: checked; Portico compresses piece by piece.
fn set_buffers(
    _scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    crate::kernel::core::directives::number(directive, context)?;
    conf::value::parse_size(directive.arg(1))
        .map(|_| ())
        .ok_or_else(|| crate::kernel::core::directives::invalid_value(directive))
}

fn set_types(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let mut types = scope
        .gzip
        .types
        .take()
        .map(Arc::unwrap_or_clone)
        .unwrap_or_default();
    types.add(&directive.args);
    scope.gzip.types = Some(Arc::new(types));
    Ok(())
}

fn set_proxied(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.gzip.proxied.is_some() {
        return Err(context.duplicate(directive));
    }
    let mut mask = 0;
    for argument in &directive.args {
        let value = argument.as_str();
        let (_, flag) = Proxied::NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(value))
            .ok_or_else(|| {
                ConfError::message(format!("invalid value \"{value}\""), &directive.span)
            })?;
        mask |= flag;
    }
    scope.gzip.proxied = Some(Proxied(mask));
    Ok(())
}

fn set_disable(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let list = scope.gzip.disable.get_or_insert_with(Vec::new);
    for argument in &directive.args {
        let value = argument.as_str();
        if value == "msie6" {
            scope.gzip.disable_msie6 = Some(true);
            continue;
        }
        let regex = Regex::compile(value, true)
            .map_err(|error| ConfError::message(error.0, &directive.span))?;
        list.push(Arc::new(regex));
    }
    Ok(())
}
