//! `error_page CODE ... [=[RESPONSE]] URI | @name`.

use conf::{ConfError, Directive};

use crate::kernel::conf::{LoadContext, LocationScope};
use crate::kernel::core::settings::ErrorPage;
use crate::kernel::variables::HttpTemplate;

/// nginx's internal 49x codes: their error pages answer 400 unless `=` says otherwise.
fn reported_as_bad_request(status: u16) -> bool {
    matches!(status, 494..=497)
}

/// Several `error_page` directives at one level add up; a level with any replaces the
/// enclosing level's list.
pub(crate) fn set_error_page(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let args: Vec<&str> = directive.args.iter().map(|arg| arg.as_str()).collect();
    let invalid = |value: &str| ConfError::message(format!("invalid value \"{value}\""), span);
    let last = args.len() - 1;
    let (overwrite, codes) = match args[last - 1].strip_prefix('=') {
        Some(_) if last - 1 == 0 => return Err(invalid(args[last - 1])),
        Some("") => (Some(0), &args[..last - 1]),
        Some(code) => match code.parse::<u16>() {
            Ok(code) if code_is_digits(args[last - 1]) => (Some(code), &args[..last - 1]),
            _ => return Err(invalid(args[last - 1])),
        },
        None => (None, &args[..last]),
    };
    let uri_text = args[last];
    let template = context.template(uri_text, span)?;
    let (uri, page_args) = match template.as_literal() {
        Some(literal) if literal.starts_with(b"/") => match memchr::memchr(b'?', literal) {
            Some(question) => (
                HttpTemplate::from_literal(&literal[..question]),
                Some(literal[question + 1..].into()),
            ),
            None => (template, None),
        },
        _ => (template, None),
    };
    let pages = scope.core.error_page.get_or_insert_with(Vec::new);
    for code in codes {
        let status = match code.parse::<u64>() {
            Ok(status) if code_is_digits(code) && status != 499 => status,
            _ => return Err(invalid(code)),
        };
        if !(300..=599).contains(&status) {
            return Err(ConfError::message(
                format!("value \"{code}\" must be between 300 and 599"),
                span,
            ));
        }
        let status = status as u16;
        let overwrite = match overwrite {
            None if reported_as_bad_request(status) => Some(400),
            other => other,
        };
        pages.push(ErrorPage {
            status,
            overwrite,
            uri: uri.clone(),
            args: page_args.clone(),
        });
    }
    Ok(())
}

fn code_is_digits(text: &str) -> bool {
    let digits = text.trim_start_matches('=');
    !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit())
}
