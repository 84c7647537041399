//! The gateway modules' own directives: `*_pass`, `*_param`, and FastCGI's and uwsgi's
//! extras. The proxy directives they share (`fastcgi_buffers`, `uwsgi_cache_valid`) are
//! in the proxy's tables ([`crate::modules::proxy::directives::FASTCGI_DIRECTIVES`] and its
//! siblings), which fill each module's copy of the proxy's settings.

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::core::directives::{flag, invalid_value};
use crate::modules::proxy::gateway::{Param, Protocol};
use crate::modules::proxy::pass::load_target;
use crate::modules::proxy::settings::ProxyPass;
use shared::regex::Regex;

const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION;
const PASS_LEVEL: Contexts = Contexts::LOCATION.with(Contexts::LOCATION_IF);

pub const FASTCGI_DIRECTIVES: &[HttpDirective] = &[
    location_directive("fastcgi_pass", PASS_LEVEL, Arity::TAKE1, set_fastcgi_pass),
    location_directive("fastcgi_param", ANY_LEVEL, Arity::TAKE23, set_fastcgi_param),
    location_directive("fastcgi_index", ANY_LEVEL, Arity::TAKE1, set_index),
    location_directive(
        "fastcgi_split_path_info",
        ANY_LEVEL,
        Arity::TAKE1,
        set_split_path_info,
    ),
    location_directive("fastcgi_keep_conn", ANY_LEVEL, Arity::FLAG, set_keep_conn),
    location_directive(
        "fastcgi_catch_stderr",
        ANY_LEVEL,
        Arity::TAKE1,
        set_catch_stderr,
    ),
];

pub const UWSGI_DIRECTIVES: &[HttpDirective] = &[
    location_directive("uwsgi_pass", PASS_LEVEL, Arity::TAKE1, set_uwsgi_pass),
    location_directive("uwsgi_param", ANY_LEVEL, Arity::TAKE23, set_uwsgi_param),
    location_directive("uwsgi_modifier1", ANY_LEVEL, Arity::TAKE1, set_modifier1),
    location_directive("uwsgi_modifier2", ANY_LEVEL, Arity::TAKE1, set_modifier2),
];

pub const SCGI_DIRECTIVES: &[HttpDirective] = &[
    location_directive("scgi_pass", PASS_LEVEL, Arity::TAKE1, set_scgi_pass),
    location_directive("scgi_param", ANY_LEVEL, Arity::TAKE23, set_scgi_param),
];

fn set_fastcgi_pass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_pass(Protocol::Fastcgi, scope, directive, context)
}

fn set_uwsgi_pass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_pass(Protocol::Uwsgi, scope, directive, context)
}

fn set_scgi_pass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_pass(Protocol::Scgi, scope, directive, context)
}

/// `fastcgi_pass ADDRESS`: `host:port`, `unix:/path`, an `upstream` name, or any of them
/// made by variables. The address is kept as the proxy keeps a `proxy_pass` URL (with
/// `http://` before it), so that peers are chosen the same way.
fn set_pass(
    protocol: Protocol,
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let gateway = scope.gateway_mut(protocol);
    if gateway.upstream.pass.is_some() {
        return Err(context.duplicate(directive));
    }
    let mut address = directive.arg(0);
    // uwsgi may name its scheme: `uwsgi://`, or `suwsgi://` for TLS (`uwsgi_ssl_*`).
    let mut scheme = "http";
    if protocol == Protocol::Uwsgi {
        if let Some(rest) = address.strip_prefix("suwsgi://") {
            (address, scheme) = (rest, "https");
        } else {
            address = address.strip_prefix("uwsgi://").unwrap_or(address);
        }
    }
    let url = format!("{scheme}://{address}");
    let template = context.template(&url, &directive.span)?;
    let pass = if template.as_literal().is_some() {
        let target = load_target(&url, &directive.span, &mut context.upstreams)?;
        if target.uri.is_some() {
            return Err(ConfError::message(
                format!("invalid host in upstream \"{address}\""),
                &directive.span,
            ));
        }
        ProxyPass::Static(target)
    } else {
        ProxyPass::Variables(template)
    };
    let gateway = scope.gateway_mut(protocol);
    gateway.upstream.pass = Some(Some(Arc::new(pass)));
    scope.content = Some(Content::Gateway(protocol));
    Ok(())
}

fn set_fastcgi_param(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_param(Protocol::Fastcgi, scope, directive, context)
}

fn set_uwsgi_param(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_param(Protocol::Uwsgi, scope, directive, context)
}

fn set_scgi_param(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    set_param(Protocol::Scgi, scope, directive, context)
}

/// `fastcgi_param NAME VALUE [if_not_empty]`: the params of one level accumulate; a level
/// with any replaces its parent's.
fn set_param(
    protocol: Protocol,
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let if_not_empty = match directive.args.get(2).map(|arg| arg.as_str()) {
        None => false,
        Some("if_not_empty") => true,
        Some(other) => {
            return Err(ConfError::message(
                format!("invalid parameter \"{other}\""),
                &directive.span,
            ));
        }
    };
    let param = Param {
        name: directive.arg(0).as_bytes().into(),
        value: context.template(directive.arg(1), &directive.span)?,
        if_not_empty,
    };
    let own = &mut scope.gateway_mut(protocol).own;
    let mut params = own
        .params
        .as_deref()
        .map(<[Param]>::to_vec)
        .unwrap_or_default();
    params.push(param);
    own.params = Some(Arc::from(params));
    Ok(())
}

fn set_index(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let own = &mut scope.fastcgi.own;
    if own.index.is_some() {
        return Err(context.duplicate(directive));
    }
    own.index = Some(Some(directive.arg(0).as_bytes().into()));
    Ok(())
}

/// `fastcgi_split_path_info REGEX`: its two captures are the script name and the path
/// info.
fn set_split_path_info(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let own = &mut scope.fastcgi.own;
    if own.split_path_info.is_some() {
        return Err(context.duplicate(directive));
    }
    let regex = Regex::compile(directive.arg(0), false)
        .map_err(|error| ConfError::message(error.0, &directive.span))?;
    if regex.groups_len() != 3 {
        return Err(ConfError::message(
            format!("pattern \"{}\" must have 2 captures", directive.arg(0)),
            &directive.span,
        ));
    }
    own.split_path_info = Some(Some(Arc::new(regex)));
    Ok(())
}

fn set_keep_conn(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.fastcgi.own.keep_conn.is_some() {
        return Err(context.duplicate(directive));
    }
    scope.fastcgi.own.keep_conn = Some(flag(directive, context)?);
    Ok(())
}

fn set_catch_stderr(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope
        .fastcgi
        .own
        .catch_stderr
        .get_or_insert_with(Vec::new)
        .push(directive.arg(0).as_bytes().into());
    Ok(())
}

fn set_modifier1(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let own = &mut scope.uwsgi.own;
    if own.modifier1.is_some() {
        return Err(context.duplicate(directive));
    }
    own.modifier1 = Some(modifier(directive)?);
    Ok(())
}

fn set_modifier2(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let own = &mut scope.uwsgi.own;
    if own.modifier2.is_some() {
        return Err(context.duplicate(directive));
    }
    own.modifier2 = Some(modifier(directive)?);
    Ok(())
}

/// A modifier: a number from 0 to 255.
fn modifier(directive: &Directive) -> Result<u8, ConfError> {
    let number =
        conf::value::parse_number(directive.arg(0)).ok_or_else(|| invalid_value(directive))?;
    u8::try_from(number)
        .map_err(|_| ConfError::message("value must be between 0 and 255", &directive.span))
}
