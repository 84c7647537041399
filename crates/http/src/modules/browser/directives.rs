//! The browser module's directives, with nginx's errors.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::modules::browser::parse_version;
use crate::modules::browser::settings::{Family, ModernBrowser};
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "ancient_browser",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::ONE_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Location(set_ancient_browser),
    },
    HttpDirective {
        name: "modern_browser",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE12,
        block: BlockKind::Simple,
        set: Setter::Location(set_modern_browser),
    },
    HttpDirective {
        name: "ancient_browser_value",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_ancient_value),
    },
    HttpDirective {
        name: "modern_browser_value",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_modern_value),
    },
];

fn value(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Box<[u8]>, ConfError> {
    Ok(directive.arg(0).as_bytes().into())
}

set_once!(
    set_ancient_value,
    LocationScope,
    browser.ancient_value,
    value
);
set_once!(set_modern_value, LocationScope, browser.modern_value, value);

/// `ancient_browser STRING ...`: lines at one level add up.
fn set_ancient_browser(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let browser = &mut scope.browser;
    for argument in &directive.args {
        if argument.as_str() == "netscape4" {
            browser.netscape4 = Some(true);
        } else {
            browser
                .ancient
                .get_or_insert_with(Vec::new)
                .push(argument.as_str().as_bytes().into());
        }
    }
    Ok(())
}

/// `modern_browser NAME VERSION` or `modern_browser unlisted`: lines at one level add up.
fn set_modern_browser(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let name = directive.arg(0);
    if directive.args.len() == 1 {
        if name == "unlisted" {
            scope.browser.unlisted_modern = Some(true);
            return Ok(());
        }
        return Err(ConfError::message(
            format!(
                "invalid number of arguments in \"{}\" directive",
                directive.name
            ),
            &directive.span,
        ));
    }
    let family = Family::from_name(name).ok_or_else(|| {
        ConfError::message(format!("unknown browser name \"{name}\""), &directive.span)
    })?;
    let text = directive.arg(1);
    let version = parse_version(text.as_bytes()).ok_or_else(|| {
        ConfError::message(
            format!("invalid browser version \"{text}\""),
            &directive.span,
        )
    })?;
    let modern = scope.browser.modern.get_or_insert_with(Vec::new);
    modern.push(ModernBrowser { family, version });
    modern.sort_by_key(|browser| browser.family);
    Ok(())
}
