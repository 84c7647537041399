//! The rewrite module's directive table. `if` is a block the loader opens itself
//! (the `http` block walk); its condition is parsed by [`super::condition::parse`].

use conf::{Arity, BlockKind as Shape, ConfError, Contexts, Directive};

use crate::kernel::conf::{
    BlockKind, HttpDirective, LoadContext, LocationScope, NamedCaptures, Setter, directive,
};
use crate::kernel::core::directives::flag;
use crate::kernel::variables::Settable;
use crate::modules::rewrite::settings::Replacement;
use crate::modules::rewrite::{Flag, Op, Rewrite, SetTarget, replacement};
use crate::set_once;
use shared::regex::Regex;

/// Where script directives may appear: `server`, `location` and `if` in either.
const SCRIPT: Contexts = Contexts::SERVER
    .with(Contexts::LOCATION)
    .with(Contexts::SERVER_IF)
    .with(Contexts::LOCATION_IF);

const SETTING: Contexts = Contexts::HTTP.with(SCRIPT);

pub const DIRECTIVES: &[HttpDirective] = &[
    directive(
        "rewrite",
        SCRIPT,
        Arity::TAKE23,
        Setter::Location(set_rewrite),
    ),
    directive(
        "return",
        SCRIPT,
        Arity::TAKE12,
        Setter::Location(set_return),
    ),
    directive("break", SCRIPT, Arity::NONE, Setter::Location(set_break)),
    directive("set", SCRIPT, Arity::TAKE2, Setter::Location(set_set)),
    HttpDirective {
        name: "if",
        contexts: Contexts::SERVER.with(Contexts::LOCATION),
        arity: Arity::ONE_OR_MORE,
        block: Shape::Block,
        set: Setter::Block(BlockKind::If),
    },
    directive(
        "rewrite_log",
        SETTING,
        Arity::FLAG,
        Setter::Location(set_rewrite_log),
    ),
    directive(
        "uninitialized_variable_warn",
        SETTING,
        Arity::FLAG,
        Setter::Location(set_uninitialized_variable_warn),
    ),
];

/// `rewrite REGEX REPLACEMENT [last | break | redirect | permanent]`.
fn set_rewrite(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let text = directive.arg(1);
    if text.is_empty() {
        return Err(ConfError::message("empty replacement", span));
    }
    let regex = Regex::compile(directive.arg(0), false)
        .map_err(|error| ConfError::message(error.0, span))?;
    // nginx looks at the text without a last `?` to decide whether it is a redirect.
    let without_last = text.strip_suffix('?').unwrap_or(text);
    let mut flag = if replacement::is_redirect_text(without_last) {
        Flag::Redirect(302)
    } else {
        Flag::Continue
    };
    if let Some(argument) = directive.args.get(2) {
        flag = match argument.as_str() {
            "last" => Flag::Last,
            "break" => Flag::Break,
            "redirect" => Flag::Redirect(302),
            "permanent" => Flag::Redirect(301),
            other => {
                return Err(ConfError::message(
                    format!("invalid parameter \"{other}\""),
                    span,
                ));
            }
        };
        // A URL replacement stays a redirect whatever `last` or `break` say.
        if replacement::is_redirect_text(without_last) && !matches!(flag, Flag::Redirect(_)) {
            flag = Flag::Redirect(302);
        }
    }
    let split = replacement::split(text, matches!(flag, Flag::Redirect(_)));
    let args = match split.args {
        Some(args) => Some(context.template(args, span)?),
        None => None,
    };
    let replacement = Replacement {
        uri: context.template(split.uri, span)?,
        args,
        add_args: split.add_args,
        has_query: split.has_query,
    };
    scope.script.ops.push(Op::Rewrite(Box::new(Rewrite {
        regex: NamedCaptures::new(regex, |name| context.variables.define(name)),
        replacement,
        flag,
    })));
    Ok(())
}

/// `return CODE [TEXT]` | `return URL`: a single URL argument means 302 when it starts
/// with `http://`, `https://` or `$scheme`, as nginx decides.
fn set_return(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let first = directive.arg(0);
    let invalid =
        || ConfError::message(format!("invalid return code \"{first}\""), &directive.span);
    let op = match first.parse::<u16>() {
        Ok(status) if status <= 999 && first.bytes().all(|b| b.is_ascii_digit()) => {
            let text = match directive.args.get(1) {
                Some(text) => Some(context.template(text.as_str(), &directive.span)?),
                None => None,
            };
            Op::Return { status, text }
        }
        _ if directive.args.len() == 1 && replacement::is_redirect_text(first) => Op::Return {
            status: 302,
            text: Some(context.template(first, &directive.span)?),
        },
        _ => return Err(invalid()),
    };
    scope.script.ops.push(op);
    Ok(())
}

fn set_break(
    scope: &mut LocationScope,
    _directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    scope.script.ops.push(Op::Break);
    Ok(())
}

/// `set $name value`. Built-in variables cannot be set, except `$args` and `$limit_rate`
/// (nginx's "changeable" ones).
fn set_set(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let written = directive.arg(0);
    let Some(name) = written.strip_prefix('$') else {
        return Err(ConfError::message(
            format!("invalid variable name \"{written}\""),
            span,
        ));
    };
    if name.is_empty() {
        return Err(ConfError::message("invalid variable name \"$\"", span));
    }
    let target = match context.variables.resolve_settable(name) {
        Settable::Args => SetTarget::Args,
        Settable::LimitRate => SetTarget::LimitRate,
        Settable::Named(slot) => SetTarget::Named(slot),
        Settable::Fixed => {
            return Err(ConfError::message(
                format!("the duplicate \"{name}\" variable"),
                span,
            ));
        }
    };
    let value = context.template(directive.arg(1), span)?;
    scope.script.ops.push(Op::Set { target, value });
    Ok(())
}

set_once!(set_rewrite_log, LocationScope, rewrite.log, flag);

set_once!(
    set_uninitialized_variable_warn,
    LocationScope,
    rewrite.uninitialized_variable_warn,
    flag
);
