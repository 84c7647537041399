//! `sticky cookie|route|learn` in an `upstream` block.

use std::sync::Arc;
use std::time::Duration;

use conf::{ConfError, Directive};
use upstream::sticky::{CookieConf, CookieExpires, LearnConf, SameSite, Sessions, Sticky};

use crate::kernel::conf::LoadContext;
use crate::kernel::upstream::UpstreamScope;
use crate::kernel::variables::HttpTemplate;

/// A session not used for this long is forgotten (`timeout=`).
const LEARN_TIMEOUT: Duration = Duration::from_secs(600);

pub(crate) fn set_sticky(
    scope: &mut UpstreamScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.sticky.is_some() {
        return Err(context.duplicate(directive));
    }
    let args: Vec<&str> = directive.args.iter().map(|arg| arg.as_str()).collect();
    let sticky = match args.as_slice() {
        ["cookie", name, rest @ ..] => Sticky::Cookie(cookie(name, rest, directive, context)?),
        ["route", routes @ ..] if !routes.is_empty() => Sticky::Route(
            routes
                .iter()
                .map(|route| context.template(route, &directive.span))
                .collect::<Result<_, _>>()?,
        ),
        ["learn", rest @ ..] => Sticky::Learn(learn(rest, directive, context)?),
        [mode, ..] if !["cookie", "route", "learn"].contains(mode) => {
            return Err(invalid(mode, directive));
        }
        _ => {
            return Err(ConfError::message(
                "invalid number of arguments in \"sticky\" directive",
                &directive.span,
            ));
        }
    };
    scope.sticky = Some(sticky);
    Ok(())
}

fn invalid(text: &str, directive: &Directive) -> ConfError {
    ConfError::message(format!("invalid parameter \"{text}\""), &directive.span)
}

fn cookie(
    name: &str,
    rest: &[&str],
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<CookieConf<HttpTemplate>, ConfError> {
    if name.is_empty() || name.contains(['=', ';', ' ']) {
        return Err(invalid(name, directive));
    }
    let mut conf = CookieConf {
        name: name.to_owned(),
        expires: CookieExpires::Session,
        domain: None,
        path: None,
        samesite: None,
        secure: false,
        httponly: false,
    };
    for &text in rest {
        if let Some(value) = text.strip_prefix("expires=") {
            conf.expires = match value {
                "max" => CookieExpires::Max,
                _ => CookieExpires::After(
                    conf::value::parse_time_seconds(value)
                        .ok_or_else(|| invalid(text, directive))?,
                ),
            };
        } else if let Some(value) = text.strip_prefix("domain=") {
            conf.domain = Some(context.template(value, &directive.span)?);
        } else if let Some(value) = text.strip_prefix("path=") {
            conf.path = Some(context.template(value, &directive.span)?);
        } else if let Some(value) = text.strip_prefix("samesite=") {
            conf.samesite = Some(match value {
                "strict" => SameSite::Strict,
                "lax" => SameSite::Lax,
                "none" => SameSite::None,
                _ if value.contains('$') => {
                    SameSite::Variable(context.template(value, &directive.span)?)
                }
                _ => return Err(invalid(text, directive)),
            });
        } else if text == "secure" {
            conf.secure = true;
        } else if text == "httponly" {
            conf.httponly = true;
        } else {
            return Err(invalid(text, directive));
        }
    }
    Ok(conf)
}

fn learn(
    rest: &[&str],
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<LearnConf<HttpTemplate>, ConfError> {
    let (mut create, mut lookup, mut zone) = (None, None, None);
    let mut timeout = LEARN_TIMEOUT;
    let mut header = false;
    for &text in rest {
        if let Some(value) = text.strip_prefix("create=") {
            create = Some(variable(value, text, directive, context)?);
        } else if let Some(value) = text.strip_prefix("lookup=") {
            lookup = Some(variable(value, text, directive, context)?);
        } else if let Some(value) = text.strip_prefix("zone=") {
            let (name, size) = value
                .split_once(':')
                .ok_or_else(|| invalid(text, directive))?;
            let size = conf::value::parse_size(size)
                .filter(|size| *size >= 8192)
                .ok_or_else(|| {
                    ConfError::message(format!("zone \"{name}\" is too small"), &directive.span)
                })?;
            if name.is_empty() {
                return Err(invalid(text, directive));
            }
            zone = Some((name.to_owned(), size));
        } else if let Some(value) = text.strip_prefix("timeout=") {
            timeout = conf::value::parse_time(value)
                .filter(|timeout| !timeout.is_zero())
                .ok_or_else(|| invalid(text, directive))?;
        } else if text == "header" {
            header = true;
        } else if text == "sync" {
            // Zones are shared by the workers of one server; there is no cluster to sync.
        } else {
            return Err(invalid(text, directive));
        }
    }
    let missing = |what: &str| {
        ConfError::message(
            format!("\"sticky learn\" requires \"{what}\""),
            &directive.span,
        )
    };
    let create = create.ok_or_else(|| missing("create"))?;
    let lookup = lookup.ok_or_else(|| missing("lookup"))?;
    let (zone, size) = zone.ok_or_else(|| missing("zone"))?;
    Ok(LearnConf {
        create,
        lookup,
        header,
        sessions: Arc::new(Sessions::new(zone, size, timeout)),
    })
}

/// `create=` and `lookup=` name a variable.
fn variable(
    value: &str,
    text: &str,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<HttpTemplate, ConfError> {
    if !value.starts_with('$') {
        return Err(invalid(text, directive));
    }
    context.template(value, &directive.span)
}
