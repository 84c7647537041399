//! Running a level's script against a request.

use logging::Level;

use crate::kernel::conf::LocationId;
use crate::kernel::file::cache;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::response::Location;
use crate::kernel::variables::{HttpTemplate, RequestVariables, Variable};
use crate::kernel::worker::HttpWorker;
use crate::modules::rewrite::condition::value_is_true;
use crate::modules::rewrite::replacement::{escape_args, path_was_escaped, unescape_redirect};
use crate::modules::rewrite::settings::{Condition, FileKind};
use crate::modules::rewrite::{Flag, Op, Rewrite, SetTarget};

/// How a script ended.
#[derive(Debug)]
pub enum ScriptOutcome<'a> {
    /// The script ran to its end; a URI it changed is searched for again.
    Continue,
    /// `rewrite ... last`: search for the new URI now.
    Last,
    /// `break` or `rewrite ... break`: stay in the current location.
    Break,
    /// `return`.
    Return {
        status: u16,
        text: Option<&'a HttpTemplate>,
    },
    /// A redirect by `rewrite`; `Location` is set.
    Redirect(u16),
    /// End the request with this status (500 when the script cannot go on).
    Status(u16),
}

/// Runs the script of `owner` (a location, or a server's own level).
pub async fn run<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    owner: LocationId,
) -> ScriptOutcome<'a> {
    let location = worker.conf().location(owner);
    let script = &location.settings.script;
    if script.is_empty() {
        return ScriptOutcome::Continue;
    }
    if worker.conf().uses_realpath_root {
        crate::kernel::file::resolve_realpath_root(worker, connection, request).await;
    }
    let rewrite_log = location.settings.rewrite.log;
    let mut next = 0;
    while let Some(op) = script.ops.get(next) {
        next += 1;
        match op {
            Op::Return { status, text } => {
                return ScriptOutcome::Return {
                    status: *status,
                    text: text.as_ref(),
                };
            }
            Op::Break => {
                // nginx's `valid_location = 0`: the URI changed within this location.
                if request.uri_changed {
                    request.location_uri_changed = true;
                }
                request.uri_changed = false;
                return ScriptOutcome::Break;
            }
            Op::Set { target, value } => {
                let value = render(worker, connection, request, value, false);
                set(worker, connection, request, *target, value);
            }
            Op::If(condition) => {
                match test(
                    worker,
                    connection,
                    request,
                    &condition.condition,
                    rewrite_log,
                )
                .await
                {
                    Ok(true) => {
                        if let Some(block) = condition.block {
                            let block = location.if_blocks[block as usize];
                            orphan_proxy_handler(worker, request, block);
                            request.location = Some(block);
                        }
                    }
                    Ok(false) => next = condition.end as usize,
                    Err(status) => return ScriptOutcome::Status(status),
                }
            }
            Op::Rewrite(rewrite) => {
                if let Some(outcome) =
                    apply_rewrite(worker, connection, request, rewrite, rewrite_log)
                {
                    return outcome;
                }
            }
        }
    }
    ScriptOutcome::Continue
}

/// nginx's content handler stays the last one a matched level set: an `if` whose own
/// `proxy_pass` made the proxy the handler, followed by a matched `if` with no handler of its
/// own and no `proxy_pass` in its settings, leaves the proxy handler without an upstream.
fn orphan_proxy_handler(worker: &HttpWorker, request: &mut Request<'_>, next: LocationId) {
    let conf = worker.conf();
    let Some(current) = request.location.map(|id| conf.location(id)) else {
        return;
    };
    let next = conf.location(next);
    if current.own_content && current.settings.content.is_upstream() && !next.own_content {
        request.proxy_handler_orphaned = !next.settings.content.is_upstream();
    } else if next.own_content {
        request.proxy_handler_orphaned = false;
    }
}

/// A template's value for this request; `escape_captures` escapes `$1`.. as arguments.
pub fn render(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    template: &HttpTemplate,
    escape_captures: bool,
) -> Vec<u8> {
    if let Some(literal) = template.as_literal() {
        return literal.to_vec();
    }
    let mut variables = request_variables(worker, connection, request);
    let mut out = Vec::new();
    if escape_captures {
        template.evaluate(&mut EscapingCaptures(&mut variables), &mut out);
    } else {
        template.evaluate(&mut variables, &mut out);
    }
    out
}

fn request_variables<'r>(
    worker: &'r HttpWorker,
    connection: &'r ConnectionInfo,
    request: &'r Request<'_>,
) -> RequestVariables<'r> {
    RequestVariables::of(worker, connection, request)
}

/// Evaluates templates with regex captures escaped for arguments.
struct EscapingCaptures<'v, 'r>(&'v mut RequestVariables<'r>);

impl vars::Evaluator<Variable> for EscapingCaptures<'_, '_> {
    fn variable(&mut self, variable: &Variable, out: &mut Vec<u8>) {
        self.0.variable(variable, out);
    }

    fn capture(&mut self, index: u8, out: &mut Vec<u8>) {
        if let Some(group) = self.0.request.matches.borrow().captures.group(index.into()) {
            escape_args(group, out);
        }
    }
}

fn set(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    target: SetTarget,
    value: Vec<u8>,
) {
    match target {
        SetTarget::Named(slot) => request.matches.get_mut().set_named(slot, Some(value)),
        SetTarget::Args => {
            request.args = value;
            request.args_changed = true;
        }
        SetTarget::LimitRate => match parse_size(&value) {
            Some(rate) => request.limit_rate = Some(rate),
            None => log(
                worker,
                connection,
                request,
                Level::Error,
                format_args!(
                    "invalid $limit_rate \"{}\"",
                    String::from_utf8_lossy(&value)
                ),
            ),
        },
    }
}

/// A size as nginx's `ngx_parse_size` reads it: digits with an optional `k` or `m`.
fn parse_size(value: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(value).ok()?;
    conf::value::parse_size(text)
}

/// An `if` condition's answer; `Err` is the status to end the request with.
async fn test(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    condition: &Condition,
    rewrite_log: bool,
) -> Result<bool, u16> {
    match condition {
        Condition::Variable(variable) => Ok(value_is_true(&value_of(
            worker, connection, request, variable,
        ))),
        Condition::Equal {
            variable,
            value,
            negate,
        } => {
            let left = value_of(worker, connection, request, variable);
            let right = render(worker, connection, request, value, false);
            Ok((left == right) != *negate)
        }
        Condition::Match {
            variable,
            regex,
            negate,
        } => {
            let subject = value_of(worker, connection, request, variable);
            let matches = request.matches.get_mut();
            let matched = regex.regex.captures(&subject, &mut matches.captures);
            if matched {
                regex.store(&matches.captures, &mut matches.named);
            } else {
                matches.captures.clear();
            }
            if rewrite_log {
                log_match(
                    worker,
                    connection,
                    request,
                    regex.regex.pattern(),
                    &subject,
                    matched,
                );
            }
            Ok(matched != *negate)
        }
        Condition::File { path, test, negate } => {
            let path = render(worker, connection, request, path, false);
            // As nginx's file tests: through `open_file_cache` and `disable_symlinks`.
            let location = crate::kernel::find::current_location(worker, request);
            let check = cache::symlink_check(worker, connection, request, location, &path);
            let io = cache::file_io(worker, connection, request, location);
            let tested = cache::test(worker, location, &io, &path, check)
                .await
                .map_err(|error| {
                    log(
                        worker,
                        connection,
                        request,
                        error.level,
                        format_args!("{}", error.message),
                    );
                    error.status
                })?;
            let kind = match tested {
                Ok(info) => FileKind {
                    // As nginx tests it: a FIFO or a socket does not "exist" for `-e`.
                    exists: info.is_file || info.is_dir,
                    is_file: info.is_file,
                    is_dir: info.is_dir,
                    is_exec: info.is_exec,
                },
                Err(failure) => {
                    // ENOENT, ENOTDIR and ENAMETOOLONG are plain "no"; anything else is worth
                    // a line, as nginx writes it.
                    if !failure.is_not_found() {
                        log(
                            worker,
                            connection,
                            request,
                            Level::Crit,
                            format_args!(
                                "{} \"{}\" failed ({}: {})",
                                failure.call,
                                String::from_utf8_lossy(&path),
                                failure.errno,
                                runtime::sys::linux::strerror(failure.errno)
                            ),
                        );
                    }
                    FileKind::default()
                }
            };
            Ok(test.holds(kind) != *negate)
        }
    }
}

fn value_of(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    variable: &Variable,
) -> Vec<u8> {
    let variables = request_variables(worker, connection, request);
    let mut out = Vec::new();
    variables.append(variable, &mut out);
    out
}

fn log_match(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    pattern: &str,
    subject: &[u8],
    matched: bool,
) {
    let verb = if matched { "matches" } else { "does not match" };
    log(
        worker,
        connection,
        request,
        Level::Notice,
        format_args!(
            "\"{pattern}\" {verb} \"{}\"",
            String::from_utf8_lossy(subject)
        ),
    );
}

/// `rewrite`: `None` when the script goes on.
fn apply_rewrite<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    rewrite: &Rewrite,
    rewrite_log: bool,
) -> Option<ScriptOutcome<'a>> {
    let subject = std::mem::take(&mut request.uri);
    let matched = rewrite
        .regex
        .regex
        .captures(&subject, &mut request.matches.get_mut().captures);
    request.uri = subject;
    if rewrite_log {
        let pattern = rewrite.regex.regex.pattern();
        log_match(worker, connection, request, pattern, &request.uri, matched);
    }
    if !matched {
        request.matches.get_mut().captures.clear();
        return None;
    }
    let matches = request.matches.get_mut();
    rewrite.regex.store(&matches.captures, &mut matches.named);
    request.internal = true;
    let replacement = &rewrite.replacement;
    let escape = path_was_escaped(request.request_uri());
    if let Flag::Redirect(status) = rewrite.flag {
        let text = render(worker, connection, request, &replacement.uri, escape);
        let mut value = unescape_redirect(&text);
        if replacement.add_args && !request.args.is_empty() {
            value.push(if replacement.has_query { b'&' } else { b'?' });
            value.extend_from_slice(&request.args);
        }
        if rewrite_log {
            log(
                worker,
                connection,
                request,
                Level::Notice,
                format_args!(
                    "rewritten redirect: \"{}\"",
                    String::from_utf8_lossy(&value)
                ),
            );
        }
        request.response.location = Some(Location { value });
        return Some(ScriptOutcome::Redirect(status));
    }
    let uri = render(worker, connection, request, &replacement.uri, false);
    match &replacement.args {
        Some(args) => {
            let mut new_args = render(worker, connection, request, args, escape);
            if replacement.add_args && !request.args.is_empty() {
                new_args.push(b'&');
                new_args.extend_from_slice(&request.args);
            }
            request.args = new_args;
        }
        None if !replacement.add_args => request.args.clear(),
        None => {}
    }
    if rewrite_log {
        log(
            worker,
            connection,
            request,
            Level::Notice,
            format_args!(
                "rewritten data: \"{}\", args: \"{}\"",
                String::from_utf8_lossy(&uri),
                String::from_utf8_lossy(&request.args)
            ),
        );
    }
    if uri.is_empty() {
        log(
            worker,
            connection,
            request,
            Level::Error,
            format_args!("the rewritten URI has a zero length"),
        );
        return Some(ScriptOutcome::Status(500));
    }
    request.uri = uri;
    match rewrite.flag {
        Flag::Continue => {
            request.uri_changed = true;
            None
        }
        Flag::Last => {
            request.uri_changed = true;
            Some(ScriptOutcome::Last)
        }
        Flag::Break | Flag::Redirect(_) => {
            request.uri_changed = false;
            request.location_uri_changed = true;
            Some(ScriptOutcome::Break)
        }
    }
}
