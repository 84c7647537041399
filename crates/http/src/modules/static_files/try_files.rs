//! `try_files file ... uri | =code` (nginx's precontent phase): the first candidate that
//! exists becomes the request's `$uri` for the content phase; otherwise the last parameter
//! is an internal redirect, a named location or a status.

use conf::{ConfError, Directive};
use logging::Level;

use crate::kernel::conf::{LoadContext, Location};
use crate::kernel::core::{AliasPart, DocumentRoot};
use crate::kernel::file::cache;
use crate::kernel::file::io::FileError;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::special::STATUS_CLOSE;
use crate::kernel::variables::HttpTemplate;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::static_files::settings::{Candidate, Fallback, TryFiles};

/// What the phase decided.
#[derive(Debug, PartialEq, Eq)]
pub enum TryOutcome {
    /// A candidate matched (`$uri` is now its name), or there is no `try_files`.
    Continue,
    Redirect {
        uri: Vec<u8>,
        args: Vec<u8>,
    },
    Named(Vec<u8>),
    Status(u16),
}

impl TryFiles {
    /// Parses the directive as nginx does: every parameter but the last may end with `/`
    /// to look for a directory; the last is `=code` (0..=999) or a URI.
    pub fn parse(
        directive: &Directive,
        context: &mut LoadContext<'_>,
    ) -> Result<TryFiles, ConfError> {
        let (last, files) = directive
            .args
            .split_last()
            .expect("the directive table requires two or more parameters");
        let mut candidates = Vec::with_capacity(files.len());
        for argument in files {
            let text = argument.as_str();
            let (text, test_dir) = match text.strip_suffix('/') {
                Some(name) => (name, true),
                None => (text, false),
            };
            candidates.push(Candidate {
                name: context.template(text, &directive.span)?,
                test_dir,
            });
        }
        let last = last.as_str();
        let fallback = match last.strip_prefix('=') {
            Some(digits) => match parse_code(digits) {
                // `=0` is no code for nginx: it is a URI like any other.
                Some(0) => Fallback::Uri(context.template(last, &directive.span)?),
                Some(code) => Fallback::Code(code),
                None => {
                    return Err(ConfError::message(
                        format!("invalid code \"{last}\""),
                        &directive.span,
                    ));
                }
            },
            None => Fallback::Uri(context.template(last, &directive.span)?),
        };
        Ok(TryFiles {
            candidates,
            fallback,
        })
    }
}

/// `=code`: decimal digits only, at most 999.
fn parse_code(digits: &str) -> Option<u16> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u16>().ok().filter(|&code| code <= 999)
}

/// Runs the location's `try_files`, if it has one. File tests run on the pool.
pub async fn run<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
) -> Result<TryOutcome, FileError> {
    let Some(try_files) = &location.settings.try_files else {
        return Ok(TryOutcome::Continue);
    };
    let root = render(
        worker,
        connection,
        request,
        location.settings.core.document_root.template(),
    );
    for candidate in &try_files.candidates {
        let name = candidate_name(worker, connection, request, location, &candidate.name);
        let mut path = root.clone();
        path.extend_from_slice(&name);
        let check = cache::symlink_check(worker, connection, request, location, &path);
        let io = cache::file_io(worker, connection, request, location);
        let info = match cache::test(worker, location, &io, &path, check).await? {
            Ok(info) => info,
            Err(failure) => {
                if !failure.is_not_found() {
                    let message = failure.message(&path);
                    log(
                        worker,
                        connection,
                        request,
                        Level::Crit,
                        format_args!("{message}"),
                    );
                }
                continue;
            }
        };
        if info.is_dir != candidate.test_dir {
            continue;
        }
        set_uri(request, location, name, candidate.test_dir);
        return Ok(TryOutcome::Continue);
    }
    Ok(match &try_files.fallback {
        Fallback::Code(code) => TryOutcome::Status(code_outcome(*code)),
        Fallback::Uri(template) => {
            let target = candidate_name(worker, connection, request, location, template);
            if target.starts_with(b"@") {
                TryOutcome::Named(target)
            } else {
                // nginx's split of `?args`: the fallback's own arguments replace the
                // request's, and a fallback without `?` has none.
                match memchr::memchr(b'?', &target) {
                    Some(question) => TryOutcome::Redirect {
                        uri: target[..question].to_vec(),
                        args: target[question + 1..].to_vec(),
                    },
                    None => TryOutcome::Redirect {
                        uri: target,
                        args: Vec::new(),
                    },
                }
            }
        }
    })
}

/// The status a `=code` ends the request with. nginx sends no response for a code below 300
/// other than 201 and 204 (it finalizes the request with a code that is not a response);
/// Portico closes the connection, as nginx does on HTTP/1.0.
fn code_outcome(code: u16) -> u16 {
    match code {
        201 | 204 => code,
        1..=299 => STATUS_CLOSE,
        _ => code,
    }
}

/// A parameter's value below the root. With `alias` in a prefix location, a value with
/// variables that starts with the location's part of `$uri` loses that part, as nginx
/// strips it (so `$uri` names the file under the alias).
fn candidate_name(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    template: &HttpTemplate,
) -> Vec<u8> {
    let name = render(worker, connection, request, template);
    if template.as_literal().is_some() {
        return name;
    }
    match &location.settings.core.document_root {
        DocumentRoot::Alias(_, AliasPart::Prefix(len)) if *len > 0 => {
            match request.uri.get(..*len) {
                Some(prefix) if name.starts_with(prefix) => name[*len..].to_vec(),
                _ => name,
            }
        }
        _ => name,
    }
}

/// The matched name becomes `$uri` for the content phase, as nginx sets it.
fn set_uri(request: &mut Request<'_>, location: &Location, name: Vec<u8>, test_dir: bool) {
    match &location.settings.core.document_root {
        DocumentRoot::Root(_) => request.uri = name,
        DocumentRoot::Alias(_, AliasPart::Whole) => {
            if !test_dir {
                request.uri = name;
                request.add_uri_to_alias = true;
            }
        }
        DocumentRoot::Alias(_, AliasPart::Prefix(len)) => {
            let mut uri = request.uri.get(..*len).unwrap_or_default().to_vec();
            uri.extend_from_slice(&name);
            request.uri = uri;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_decimal_up_to_999() {
        assert_eq!(parse_code("404"), Some(404));
        assert_eq!(parse_code("0"), Some(0));
        assert_eq!(parse_code("999"), Some(999));
        assert_eq!(parse_code("1000"), None);
        assert_eq!(parse_code(""), None);
        assert_eq!(parse_code("4o4"), None);
        assert_eq!(parse_code("+1"), None);
        assert_eq!(parse_code("99999999999"), None);
    }

    #[test]
    fn codes_that_are_not_responses_close() {
        assert_eq!(code_outcome(200), STATUS_CLOSE);
        assert_eq!(code_outcome(100), STATUS_CLOSE);
        assert_eq!(code_outcome(201), 201);
        assert_eq!(code_outcome(204), 204);
        assert_eq!(code_outcome(301), 301);
        assert_eq!(code_outcome(404), 404);
        assert_eq!(code_outcome(999), 999);
    }
}
