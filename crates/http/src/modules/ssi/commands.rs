//! Running SSI commands: `echo`, `set`, `config`, `if`/`elif`/`else`/`endif`,
//! `block`/`endblock` and `include` (a subrequest, placed in order, captured with `set=`,
//! replaced by a block with `stub=`), with nginx's error words in the log and `errmsg` in
//! the page.

use logging::Level;
use runtime::Stream;

use crate::kernel::request::Request;
use crate::kernel::send::body::BodyContext;
use crate::kernel::send::pull::Puller;
use crate::kernel::variables::time_format::{DEFAULT_TIME_FORMAT, format_time};
use crate::kernel::variables::{RequestVariables, Variable};
use crate::modules::ssi::parse::{Command, Event};
use crate::modules::ssi::{Active, DEFAULT_ERRMSG, SsiBody, child_context, expr};

/// The most a subrequest whose failure a `stub=` covers may give before it is placed.
const STUB_CAPTURE_BYTES_MAX: usize = 1024 * 1024;

/// What nginx logs when a subrequest's answer is larger than its output buffer.
const TOO_BIG: &str = "too big subrequest response";

/// What the commands so far have set.
#[derive(Debug, Default)]
pub(super) struct State {
    condition: Option<Condition>,
    /// A block being recorded: its name and content.
    block: Option<(Vec<u8>, Vec<u8>)>,
    blocks: Vec<(Vec<u8>, Vec<u8>)>,
    errmsg: Option<Vec<u8>>,
    timefmt: Option<Vec<u8>>,
    /// Variables `set` and `include set=` made, by lower-cased name.
    variables: Vec<(Vec<u8>, Vec<u8>)>,
    /// An error that ends the whole response, as nginx ends it: an `include set=` whose
    /// answer outgrew `subrequest_output_buffer_size`. Logged already.
    pub(super) fatal: Option<String>,
}

/// Inside `if` ... `endif`.
#[derive(Clone, Copy, Debug)]
struct Condition {
    /// The current branch is output.
    taking: bool,
    /// A branch was taken already.
    taken: bool,
}

impl State {
    /// Whether output goes to the page now: no false branch, no block being recorded.
    pub(super) fn to_page(&self) -> bool {
        self.taking() && self.block.is_none()
    }

    fn taking(&self) -> bool {
        self.condition.is_none_or(|condition| condition.taking)
    }

    fn set_variable(&mut self, name: &[u8], value: Vec<u8>) {
        let name = name.to_ascii_lowercase();
        match self.variables.iter_mut().find(|(known, _)| *known == name) {
            Some((_, old)) => *old = value,
            None => self.variables.push((name, value)),
        }
    }
}

/// The parameters each command takes, and which of them it needs.
fn params_of(name: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    Some(match name {
        "echo" => (&["var", "default", "encoding"], &["var"]),
        "set" => (&["var", "value"], &["var", "value"]),
        "config" => (&["errmsg", "timefmt"], &[]),
        "include" => (&["virtual", "file", "stub", "set", "wait"], &[]),
        "if" | "elif" => (&["expr"], &["expr"]),
        "else" | "endif" | "endblock" => (&[], &[]),
        "block" => (&["name"], &["name"]),
        _ => return None,
    })
}

impl<'a> SsiBody<'a> {
    /// Handles what the scanner found; an `include` may give the subrequest whose body
    /// goes out next.
    pub(super) async fn handle(
        &mut self,
        event: Event,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> Option<Box<Active<'a>>> {
        match event {
            Event::Text(text) => {
                if self.state.taking() {
                    self.emit(out, &text);
                }
                None
            }
            Event::Invalid(message) => {
                if self.state.taking() {
                    self.error(context, request, out, &message);
                }
                None
            }
            Event::Command(command) => self.command(command, context, socket, request, out).await,
        }
    }

    async fn command(
        &mut self,
        command: Command,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> Option<Box<Active<'a>>> {
        let name = command.name.as_str();
        let Some((allowed, needed)) = params_of(name) else {
            if self.state.taking() {
                let message = format!("invalid SSI command: \"{name}\"");
                self.error(context, request, out, &message);
            }
            return None;
        };
        let conditional = matches!(name, "if" | "elif" | "else" | "endif");
        if !conditional && !self.state.taking() {
            return None;
        }
        if let Err(message) = check_params(&command, allowed, needed) {
            self.error(context, request, out, &message);
            return None;
        }
        match name {
            "if" | "elif" => self.condition(&command, context, request, out),
            "else" => {
                if let Some(condition) = &mut self.state.condition {
                    condition.taking = !condition.taken;
                    condition.taken = true;
                }
            }
            "endif" => self.state.condition = None,
            "echo" => self.echo(&command, context, request, out),
            "set" => {
                let value =
                    self.substitute(command.param("value").unwrap_or_default(), context, request);
                let var = command.param("var").unwrap_or_default().to_vec();
                self.state.set_variable(&var, value);
            }
            "config" => {
                if let Some(errmsg) = command.param("errmsg") {
                    self.state.errmsg = Some(errmsg.to_vec());
                }
                if let Some(timefmt) = command.param("timefmt") {
                    self.state.timefmt = Some(timefmt.to_vec());
                }
            }
            "block" => {
                let block_name = command.param("name").unwrap_or_default().to_vec();
                self.state.block = Some((block_name, Vec::new()));
            }
            "endblock" => {
                if let Some((block_name, content)) = self.state.block.take() {
                    self.state.blocks.retain(|(known, _)| *known != block_name);
                    self.state.blocks.push((block_name, content));
                }
            }
            _ => return self.include(&command, context, socket, request, out).await,
        }
        None
    }

    fn condition(
        &mut self,
        command: &Command,
        context: &BodyContext<'_>,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) {
        let elif = command.name == "elif";
        match (&self.state.condition, elif) {
            (Some(_), false) => {
                let message = "the \"if\" command inside the \"if\" command";
                return self.error(context, request, out, message);
            }
            (None, true) => {
                return self.error(context, request, out, "the \"elif\" command without \"if\"");
            }
            (Some(condition), true) if condition.taken => {
                self.state.condition = Some(Condition {
                    taking: false,
                    taken: true,
                });
                return;
            }
            _ => {}
        }
        let expr_text = command.param("expr").unwrap_or_default();
        let mut captured = Vec::new();
        let result = {
            let mut value_of = |name: &[u8]| self.value_of(name, context, request);
            expr::evaluate(expr_text, &mut value_of, &mut captured)
        };
        for (name, value) in captured {
            self.state.set_variable(&name, value);
        }
        match result {
            Ok(truth) => {
                self.state.condition = Some(Condition {
                    taking: truth,
                    taken: truth,
                });
            }
            Err(message) => {
                self.state.condition = Some(Condition {
                    taking: false,
                    taken: false,
                });
                self.error(context, request, out, &message);
            }
        }
    }

    fn echo(
        &mut self,
        command: &Command,
        context: &BodyContext<'_>,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) {
        let var = command.param("var").unwrap_or_default();
        let value = self
            .value_of(var, context, request)
            .or_else(|| command.param("default").map(<[u8]>::to_vec))
            .unwrap_or_else(|| b"(none)".to_vec());
        let encoded = match command.param("encoding").unwrap_or(b"entity") {
            b"none" => value,
            b"url" => escape_url(&value),
            b"entity" => escape_entity(&value),
            other => {
                let message = format!(
                    "unknown encoding \"{}\" in the \"echo\" command",
                    String::from_utf8_lossy(other)
                );
                return self.error(context, request, out, &message);
            }
        };
        self.emit(out, &encoded);
    }

    async fn include(
        &mut self,
        command: &Command,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> Option<Box<Active<'a>>> {
        let (child, stub) = self.prepare_include(command, context, request, out)?;
        let done = self
            .runner
            .run(self.worker, context.connection, socket, Box::new(child))
            .await;
        let mut child = done.request;
        let Some(body) = done.body.and_then(Puller::new) else {
            if let Some(stub) = stub {
                self.emit(out, &stub);
            }
            return None;
        };
        let captured_max = match (command.param("set"), &stub) {
            // `subrequest_output_buffer_size` of the subrequest's location, as nginx reads it.
            (Some(_), _) => usize::try_from(
                crate::kernel::find::current_location(self.worker, &child)
                    .settings
                    .ssi
                    .subrequest_output_buffer_size,
            )
            .unwrap_or(usize::MAX),
            (None, Some(_)) => STUB_CAPTURE_BYTES_MAX,
            (None, None) if self.state.block.is_none() => {
                return Some(Box::new(Active {
                    request: child,
                    body,
                }));
            }
            (None, None) => STUB_CAPTURE_BYTES_MAX,
        };
        let captured = self
            .capture(context, socket, &mut child, body, captured_max)
            .await;
        let failed = child.response.status >= 300 || child.response.status == 0;
        match (captured, command.param("set"), stub) {
            (Ok(captured), Some(var), _) => self.state.set_variable(var, captured),
            (Ok(captured), None, Some(stub)) if failed || captured.is_empty() => {
                self.emit(out, &stub)
            }
            (Ok(captured), None, _) => self.emit(out, &captured),
            (Err(_), None, Some(stub)) => self.emit(out, &stub),
            (Err(message), Some(_), _) if message == TOO_BIG => {
                // nginx fails the request: the variable cannot hold the answer, and the
                // page is not sent with it missing.
                crate::kernel::request_log::log(
                    self.worker,
                    context.connection,
                    request,
                    Level::Error,
                    format_args!("{message}"),
                );
                self.state.fatal = Some(message);
            }
            (Err(message), _, _) => self.error(context, request, out, &message),
        }
        None
    }

    /// Checks an `include` and makes its child request; the `stub=` block's content.
    /// A refusal is an SSI error, written to `out`.
    pub(super) fn prepare_include(
        &mut self,
        command: &Command,
        context: &BodyContext<'_>,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> Option<(Request<'a>, Option<Vec<u8>>)> {
        let target = match (command.param("virtual"), command.param("file")) {
            (Some(_), Some(_)) => Err("inclusion may be either virtual=\"\" or file=\"\""),
            (None, None) => Err("no parameter in \"include\" SSI command"),
            (Some(uri), None) | (None, Some(uri)) => Ok(uri),
        };
        let wait = command.param("wait");
        let checked =
            target.and_then(
                |target| match (command.param("set"), command.param("stub")) {
                    (Some(_), Some(_)) => {
                        Err("\"stub\" and \"set\" parameters can not be used together")
                    }
                    _ if wait.is_some_and(|wait| wait != b"yes" && wait != b"no") => {
                        Err("invalid value in the \"wait\" parameter")
                    }
                    _ => Ok(target),
                },
            );
        let target = match checked {
            Ok(target) => self.substitute(target, context, request),
            Err(message) => {
                self.error(context, request, out, message);
                return None;
            }
        };
        let stub = match command.param("stub") {
            None => None,
            Some(name) => match self.state.blocks.iter().find(|(known, _)| known == name) {
                Some((_, content)) => Some(content.clone()),
                None => {
                    let message = format!(
                        "\"{}\" SSI block is not defined",
                        String::from_utf8_lossy(name)
                    );
                    self.error(context, request, out, &message);
                    return None;
                }
            },
        };
        let (path, args) = match subrequest_target(&request.uri, &target) {
            Ok(split) => split,
            Err(message) => {
                self.error(context, request, out, &message);
                return None;
            }
        };
        match request.child(path, args) {
            Ok(child) => Some((child, stub)),
            Err(refused) => {
                let message = refused.message(&target);
                self.error(context, request, out, &message);
                None
            }
        }
    }

    /// A subrequest's whole body, up to `limit` bytes.
    async fn capture(
        &self,
        context: &BodyContext<'_>,
        socket: &Stream,
        child: &mut Request<'a>,
        mut body: Puller<'a>,
        limit: usize,
    ) -> Result<Vec<u8>, String> {
        let child_context = child_context(self.worker, context, child);
        let mut captured = Vec::new();
        loop {
            let more = body
                .next(&child_context, socket, child, &mut captured)
                .await
                .map_err(|error| format!("subrequest failed: {error}"))?;
            if captured.len() > limit {
                return Err(TOO_BIG.to_owned());
            }
            if !more {
                return Ok(captured);
            }
        }
    }

    /// Output goes to the page, or to the block being recorded.
    fn emit(&mut self, out: &mut Vec<u8>, bytes: &[u8]) {
        match &mut self.state.block {
            Some((_, content)) => content.extend_from_slice(bytes),
            None => out.extend_from_slice(bytes),
        }
    }

    /// An SSI error: logged at `error`, and `errmsg` in the page unless
    /// `ssi_silent_errors`.
    fn error(
        &mut self,
        context: &BodyContext<'_>,
        request: &Request<'_>,
        out: &mut Vec<u8>,
        message: &str,
    ) {
        crate::kernel::request_log::log(
            self.worker,
            context.connection,
            request,
            Level::Error,
            format_args!("{message}"),
        );
        if !self.settings.silent_errors {
            let errmsg = self.state.errmsg.clone();
            self.emit(out, errmsg.as_deref().unwrap_or(DEFAULT_ERRMSG));
        }
    }

    fn substitute(&self, text: &[u8], context: &BodyContext<'_>, request: &Request<'_>) -> Vec<u8> {
        let mut value_of = |name: &[u8]| self.value_of(name, context, request);
        expr::substitute(text, &mut value_of)
    }

    /// A variable's value: SSI's own first, then `$date_local` and `$date_gmt` in the
    /// current `timefmt`, then the request's.
    fn value_of(
        &self,
        name: &[u8],
        context: &BodyContext<'_>,
        request: &Request<'_>,
    ) -> Option<Vec<u8>> {
        let lower = name.to_ascii_lowercase();
        if let Some((_, value)) = self
            .state
            .variables
            .iter()
            .find(|(known, _)| *known == lower)
        {
            return Some(value.clone());
        }
        let worker = self.worker;
        if lower == b"date_local" || lower == b"date_gmt" {
            let format = self.state.timefmt.as_deref().unwrap_or(DEFAULT_TIME_FORMAT);
            let mut out = Vec::new();
            format_time(format, &worker.clock.wall(), lower == b"date_gmt", &mut out);
            return Some(out);
        }
        let conf = worker.conf();
        let mut variable = crate::kernel::variables::find(&lower, &conf.named_variables)?;
        // A prefixed name `set` declares elsewhere is still the header (or argument, ...)
        // where no `set` gave it a value, as nginx keeps the prefix's handler.
        if let Variable::Named(slot) = variable {
            let index = slot.0 as usize;
            let has_value = request
                .matches
                .borrow()
                .named
                .get(index)
                .is_some_and(Option::is_some);
            if !has_value
                && conf.maps.get(slot).is_none()
                && let Some(prefixed) = crate::kernel::variables::find_prefixed(&lower)
            {
                variable = prefixed;
            }
        }
        let variables = RequestVariables::new(
            request,
            context.connection,
            conf,
            worker.clock.now(),
            &worker.generation.hostname,
        );
        let mut out = Vec::new();
        variables.append(&variable, &mut out).then_some(out)
    }
}

fn check_params(command: &Command, allowed: &[&str], needed: &[&str]) -> Result<(), String> {
    let name = &command.name;
    for (index, (param, _)) in command.params.iter().enumerate() {
        if !allowed.contains(&param.as_str()) {
            return Err(format!(
                "invalid parameter \"{param}\" in \"{name}\" SSI command"
            ));
        }
        if command.params[..index]
            .iter()
            .any(|(seen, _)| seen == param)
        {
            return Err(format!(
                "duplicate \"{param}\" parameter in \"{name}\" SSI command"
            ));
        }
    }
    match needed.iter().find(|param| command.param(param).is_none()) {
        Some(param) => Err(format!(
            "no \"{param}\" parameter in \"{name}\" SSI command"
        )),
        None => Ok(()),
    }
}

/// The subrequest's path and arguments: relative to the document's directory unless
/// absolute, the path percent-decoded, and refused when it would climb out of the root.
fn subrequest_target(current: &[u8], target: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (raw_path, args) = match memchr::memchr(b'?', target) {
        Some(at) => (&target[..at], target[at + 1..].to_vec()),
        None => (target, Vec::new()),
    };
    let mut path = Vec::new();
    if !raw_path.starts_with(b"/") {
        let dir = memchr::memrchr(b'/', current).map_or(&b"/"[..], |at| &current[..=at]);
        path.extend_from_slice(dir);
    }
    let mut at = 0;
    while at < raw_path.len() {
        let byte = raw_path[at];
        let hex = |b: u8| (b as char).to_digit(16);
        if byte == b'%'
            && let (Some(high), Some(low)) = (
                raw_path.get(at + 1).and_then(|&b| hex(b)),
                raw_path.get(at + 2).and_then(|&b| hex(b)),
            )
        {
            path.push((high * 16 + low) as u8);
            at += 3;
            continue;
        }
        path.push(byte);
        at += 1;
    }
    let unsafe_path =
        path.split(|&b| b == b'/').any(|segment| segment == b"..") || path.contains(&0);
    if unsafe_path {
        return Err(format!(
            "unsafe URI \"{}\" was detected",
            String::from_utf8_lossy(target)
        ));
    }
    Ok((path, args))
}

/// `encoding="entity"`: HTML's special characters as entities.
fn escape_entity(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    for &byte in value {
        match byte {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            other => out.push(other),
        }
    }
    out
}

/// `encoding="url"`: what is unsafe in a URL as `%XX`.
fn escape_url(value: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(value.len());
    for &byte in value {
        if byte <= b' ' || byte >= 0x7f || b"\"#%'<>?".contains(&byte) {
            out.extend_from_slice(&[
                b'%',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 15)],
            ]);
        } else {
            out.push(byte);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_relative_decoded_and_safe() {
        let (path, args) = subrequest_target(b"/dir/page.html", b"inc.html?a=1").unwrap();
        assert_eq!(
            (path.as_slice(), args.as_slice()),
            (&b"/dir/inc.html"[..], &b"a=1"[..])
        );
        let (path, _) = subrequest_target(b"/", b"/tes%741.html").unwrap();
        assert_eq!(path, b"/test1.html");
        let (path, args) = subrequest_target(b"/", b"/unescape.html%3f").unwrap();
        assert_eq!(
            (path.as_slice(), args.as_slice()),
            (&b"/unescape.html?"[..], &b""[..])
        );
        assert!(subrequest_target(b"/", b"/a/../../etc").is_err());
    }

    #[test]
    fn encodings() {
        assert_eq!(escape_entity(b"<test>&\""), b"&lt;test&gt;&amp;&quot;");
        assert_eq!(escape_url(b"<test> ?"), b"%3Ctest%3E%20%3F");
    }
}
