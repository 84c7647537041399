//! Evaluating variables against a request.

use std::cell::Cell;
use std::net::IpAddr;
use std::time::Instant;

use logging::time::{Timestamp, push_number};
use runtime::PeerAddress;
use vars::Evaluator;

use crate::kernel::conf::HttpConf;
use crate::kernel::request::{ConnectionInfo, Request, write_peer};
use crate::kernel::variables::Variable;
use crate::modules::headers::settings::AddHeader;

pub use shared::NGINX_COMPATIBLE_VERSION;

/// A request seen through its variables.
pub struct RequestVariables<'a> {
    pub request: &'a Request<'a>,
    pub connection: &'a ConnectionInfo,
    pub conf: &'a HttpConf,
    pub now: Timestamp,
    pub now_monotonic: Instant,
    pub hostname: &'a str,
    /// Set while `$sent_http_NAME` evaluates `add_header` values, so that a header whose
    /// value names itself cannot recurse.
    in_added_header: Cell<bool>,
    /// What is left for evaluating `map` variables inside one another.
    pub(crate) computed_budget: Cell<crate::kernel::map::ComputedBudget>,
}

impl<'a> RequestVariables<'a> {
    pub fn new(
        request: &'a Request<'a>,
        connection: &'a ConnectionInfo,
        conf: &'a HttpConf,
        now: runtime::clock::Now,
        hostname: &'a str,
    ) -> RequestVariables<'a> {
        RequestVariables {
            request,
            connection,
            conf,
            now: now.wall,
            now_monotonic: now.monotonic,
            hostname,
            in_added_header: Cell::new(false),
            computed_budget: Cell::new(crate::kernel::map::ComputedBudget::FULL),
        }
    }

    /// The variables of `request` on `worker`, at the worker clock's time now.
    /// Writes a line about the request to its location's error log, at `level`.
    pub fn log(&self, level: logging::Level, message: std::fmt::Arguments<'_>) {
        let Some(location) = self.request.location.map(|id| self.conf.location(id)) else {
            return;
        };
        let error_log = &location.settings.core.error_log;
        if error_log.enabled(level) {
            let context = self.request.log_context(self.connection, self.conf);
            error_log.write(
                level,
                &self.now,
                Some(self.connection.id),
                message,
                Some(&context),
            );
        }
    }

    pub fn of(
        worker: &'a crate::kernel::worker::HttpWorker,
        connection: &'a ConnectionInfo,
        request: &'a Request<'a>,
    ) -> RequestVariables<'a> {
        RequestVariables::new(
            request,
            connection,
            worker.conf(),
            worker.clock.now(),
            &worker.generation.hostname,
        )
    }
}

/// A variable a module defines: its name (a prefix such as `ssl_client_` when `prefix`),
/// and the getter that appends its value for a request, `false` when it is not found
/// (the access log then writes `-`). `arg` is the rest of a prefixed name.
#[derive(Debug)]
pub struct VariableDef {
    pub name: &'static str,
    pub prefix: bool,
    pub get: Getter,
}

/// Appends a module variable's value; `false` for "not found".
pub type Getter = fn(variables: &RequestVariables<'_>, arg: &[u8], out: &mut Vec<u8>) -> bool;

static MODULE_GETTERS: std::sync::OnceLock<&'static [&'static [VariableDef]]> =
    std::sync::OnceLock::new();

/// Makes the modules' variable tables the ones evaluated (the assembly does, before a load).
pub fn register_module_getters(tables: &'static [&'static [VariableDef]]) {
    let _ = MODULE_GETTERS.set(tables);
}

impl Evaluator<Variable> for RequestVariables<'_> {
    fn variable(&mut self, variable: &Variable, out: &mut Vec<u8>) {
        self.append(variable, out);
    }

    fn capture(&mut self, index: u8, out: &mut Vec<u8>) {
        if let Some(group) = self.request.matches.borrow().captures.group(index.into()) {
            out.extend_from_slice(group);
        }
    }
}

impl RequestVariables<'_> {
    /// Appends the value of `variable`; `false` when the variable is "not found" (the
    /// access log then writes `-`, as nginx does).
    pub fn append(&self, variable: &Variable, out: &mut Vec<u8>) -> bool {
        let request = self.request;
        match variable {
            Variable::Uri => out.extend_from_slice(&request.uri),
            Variable::RequestUri => out.extend_from_slice(request.request_uri()),
            Variable::Args => out.extend_from_slice(&request.args),
            Variable::IsArgs => {
                if !request.args.is_empty() {
                    out.push(b'?');
                }
            }
            Variable::Arg(name) => return append_argument(&request.args, name, out),
            // A refused request line is logged as far as it arrived, as nginx does.
            Variable::Request => out.extend_from_slice(request.request_line_for_log()),
            Variable::RequestMethod => out.extend_from_slice(request.method_bytes()),
            Variable::ServerProtocol => out.extend_from_slice(request.protocol()),
            Variable::Scheme => match self.connection.tls {
                Some(_) => out.extend_from_slice(b"https"),
                None => out.extend_from_slice(b"http"),
            },
            Variable::Https => {
                if self.connection.tls.is_some() {
                    out.extend_from_slice(b"on");
                }
            }
            Variable::Module(variable) => {
                let definition = MODULE_GETTERS.get().and_then(|tables| {
                    tables
                        .get(usize::from(variable.table))?
                        .get(usize::from(variable.index))
                });
                return match definition {
                    Some(definition) => (definition.get)(self, &variable.arg, out),
                    None => false,
                };
            }
            Variable::RequestLength => push_number(out, request.length as i64, 1),
            Variable::RequestCompletion => {
                if request.completed {
                    out.extend_from_slice(b"OK");
                }
            }
            Variable::RemoteAddr => write_peer(out, &self.connection.peer.get()),
            Variable::BinaryRemoteAddr => {
                out.extend_from_slice(&BinaryAddress::of(self.connection.peer.get()));
            }
            // An address realip took from a header without a port has none to show.
            Variable::RemotePort => match self.connection.peer.get() {
                PeerAddress::Inet(address) if address.port() != 0 => {
                    push_number(out, address.port().into(), 1)
                }
                _ => {}
            },
            Variable::ProxyProtocolAddr
            | Variable::ProxyProtocolPort
            | Variable::ProxyProtocolServerAddr
            | Variable::ProxyProtocolServerPort
            | Variable::ProxyProtocolTlv(_) => {
                if let Some(header) = &self.connection.proxy_protocol {
                    append_proxy_protocol(variable, header, out);
                }
            }
            Variable::ServerAddr => match self.connection.local {
                Some(address) => crate::kernel::request::push_ip(out, address.ip()),
                None => out.extend_from_slice(b"unix:"),
            },
            Variable::ServerPort => {
                if let Some(address) = self.connection.local {
                    push_number(out, address.port().into(), 1);
                }
            }
            Variable::Connection => push_number(out, self.connection.id as i64, 1),
            Variable::ConnectionRequests => push_number(out, self.connection.requests as i64, 1),
            Variable::ConnectionTime => push_seconds_millis(
                out,
                self.now_monotonic
                    .saturating_duration_since(self.connection.accepted),
            ),
            Variable::Host => {
                if request.info.host.is_empty() {
                    out.extend_from_slice(self.server_name());
                } else {
                    out.extend_from_slice(&request.info.host);
                }
            }
            Variable::Hostname => out.extend_from_slice(self.hostname.as_bytes()),
            Variable::ServerName => out.extend_from_slice(self.server_name()),
            Variable::HttpHeader(name) => return self.append_request_header(name, out),
            Variable::Cookie(name) => return append_cookie(request, name, out),
            // A body read whole without a `Content-Length` (chunked) counts as its length.
            Variable::ContentLength => match request.body_length {
                Some(length) if request.info.known.content_length.is_none() => {
                    push_number(out, length as i64, 1);
                }
                _ => return append_known(request, request.info.known.content_length, out),
            },
            // Several `Content-Type` fields are joined, as `$http_content_type` joins them.
            Variable::ContentType => return self.append_request_header(b"content_type", out),
            Variable::RemoteUser => return append_remote_user(request, out),
            Variable::SentHttp(name) => return self.append_sent_header(name, out),
            Variable::SentTrailer(name) => return self.append_sent_trailer(name, out),
            Variable::LimitRate => push_number(out, request.limit_rate.unwrap_or(0) as i64, 1),
            Variable::Status => {
                let status = crate::kernel::special::status_on_wire(request.response.status);
                if status == 0 {
                    out.extend_from_slice(b"000");
                } else {
                    push_number(out, status.into(), 3);
                }
            }
            Variable::BodyBytesSent => push_number(out, request.sent.body_bytes as i64, 1),
            Variable::BytesSent => push_number(
                out,
                (request.sent.header_bytes + request.sent.body_bytes) as i64,
                1,
            ),
            Variable::RequestTime => {
                let started = request.started.unwrap_or(self.now_monotonic);
                push_seconds_millis(out, self.now_monotonic.saturating_duration_since(started));
            }
            Variable::Msec => self.now.write_msec(out),
            Variable::TimeLocal => self.now.write_time_local(out),
            Variable::DateLocal | Variable::DateGmt => super::time_format::format_time(
                super::time_format::DEFAULT_TIME_FORMAT,
                &self.now,
                *variable == Variable::DateGmt,
                out,
            ),
            Variable::TimeIso8601 => self.now.write_iso8601(out),
            Variable::Pid => push_number(out, std::process::id().into(), 1),
            Variable::NginxVersion => out.extend_from_slice(NGINX_COMPATIBLE_VERSION.as_bytes()),
            Variable::PorticoVersion => out.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes()),
            Variable::DocumentRoot => return self.append_document_root(out),
            Variable::RealpathRoot => return self.append_realpath_root(out),
            Variable::RequestFilename => return self.append_request_filename(out),
            Variable::RequestId => {
                let id = request.request_id.get_or_init(new_request_id);
                out.extend_from_slice(id);
            }
            Variable::RequestPort => {
                if let Some(port) = request_port(request) {
                    push_number(out, port.into(), 1);
                }
            }
            Variable::IsRequestPort => {
                if request_port(request).is_some() {
                    out.push(b':');
                }
            }
            // No handler reads a body into memory yet.
            Variable::RequestBody => match &request.body {
                Some(crate::kernel::body::temp::RequestBody::Memory(bytes)) => {
                    out.extend_from_slice(bytes)
                }
                _ => return false,
            },
            Variable::RequestBodyFile => match &request.body_file {
                Some(path) => out.extend_from_slice(path.as_os_str().as_encoded_bytes()),
                None => return false,
            },
            Variable::UpstreamAddr => {
                return upstream_list(request, out, |attempt, out| {
                    out.extend_from_slice(attempt.addr.as_bytes())
                });
            }
            Variable::UpstreamCacheStatus => {
                let Some(status) = request.upstream.cache_status else {
                    return false;
                };
                out.extend_from_slice(status.as_bytes());
            }
            Variable::UpstreamStatus => {
                return upstream_list(request, out, |attempt, out| {
                    let status = attempt.status.unwrap_or(attempt.failed_status);
                    push_number(out, status.into(), 3)
                });
            }
            Variable::UpstreamResponseTime => {
                return upstream_list(request, out, |attempt, out| {
                    push_optional_time(out, attempt.response_time)
                });
            }
            Variable::UpstreamConnectTime => {
                return upstream_list(request, out, |attempt, out| {
                    push_optional_time(out, attempt.connect_time)
                });
            }
            Variable::UpstreamHeaderTime => {
                return upstream_list(request, out, |attempt, out| {
                    push_optional_time(out, attempt.header_time)
                });
            }
            Variable::UpstreamResponseLength => {
                return upstream_list(request, out, |attempt, out| {
                    push_number(out, attempt.response_length as i64, 1)
                });
            }
            Variable::UpstreamBytesReceived => {
                return upstream_list(request, out, |attempt, out| {
                    push_number(out, attempt.bytes_received as i64, 1)
                });
            }
            Variable::UpstreamBytesSent => {
                return upstream_list(request, out, |attempt, out| {
                    push_number(out, attempt.bytes_sent as i64, 1)
                });
            }
            Variable::UpstreamCookie(name) => {
                // The first `NAME=value` of each `Set-Cookie`, as nginx reads them.
                for (field, value) in request.upstream.fields() {
                    if !field.eq_ignore_ascii_case(b"set-cookie") {
                        continue;
                    }
                    let pair = value.split(|&byte| byte == b';').next().unwrap_or_default();
                    let Some(equals) = pair.iter().position(|&byte| byte == b'=') else {
                        continue;
                    };
                    // Spaces (not tabs) may surround `=`, and the value ends at `;`
                    // without its trailing spaces, as nginx reads a `Set-Cookie`.
                    let spaces = |byte: &u8| *byte == b' ';
                    let key = &pair[..equals];
                    let key =
                        &key[..key.len() - key.iter().rev().take_while(|b| spaces(b)).count()];
                    if key.eq_ignore_ascii_case(name) {
                        let value = &pair[equals + 1..];
                        let value = &value[value.iter().take_while(|b| spaces(b)).count()..];
                        let value = &value
                            [..value.len() - value.iter().rev().take_while(|b| spaces(b)).count()];
                        out.extend_from_slice(value);
                        return !value.is_empty();
                    }
                }
                return false;
            }
            Variable::UpstreamHttp(name) => {
                let mut found = false;
                for (field, value) in request.upstream.fields() {
                    if crate::kernel::request::header_name_matches(field, name) {
                        if found {
                            out.extend_from_slice(b", ");
                        }
                        out.extend_from_slice(value);
                        found = true;
                    }
                }
                return found;
            }
            Variable::Pipe => out.push(if request.pipelined { b'p' } else { b'.' }),
            Variable::Named(slot) => {
                if let Some(Some(value)) = request.matches.borrow().named.get(slot.0 as usize) {
                    out.extend_from_slice(value);
                    return true;
                }
                if let Some(computed) = self.conf.maps.get(*slot) {
                    return self.append_computed(*slot, computed, out);
                }
                return self.uninitialized(*slot);
            }
        }
        true
    }

    /// A named variable without a value: "not found" for a regex capture; for a `set`
    /// variable an empty value and, with `uninitialized_variable_warn`, a warning.
    fn uninitialized(&self, slot: crate::kernel::variables::NamedSlot) -> bool {
        let Some((name, true)) = self.conf.named_variables.get(slot.0 as usize) else {
            return false;
        };
        let Some(location) = self.request.location.map(|id| self.conf.location(id)) else {
            return true;
        };
        let error_log = &location.settings.core.error_log;
        if location.settings.rewrite.uninitialized_variable_warn
            && error_log.enabled(logging::Level::Warn)
        {
            let context = self.request.log_context(self.connection, self.conf);
            error_log.write(
                logging::Level::Warn,
                &self.now,
                Some(self.connection.id),
                format_args!("using uninitialized \"{name}\" variable"),
                Some(&context),
            );
        }
        true
    }

    fn server_name(&self) -> &[u8] {
        match self.request.server {
            Some(server) => &self.conf.server(server).name,
            None => b"",
        }
    }

    /// `$http_NAME`: several headers of the same name are joined with `, ` (`; ` for
    /// Cookie), as nginx 1.23 and later do.
    fn append_request_header(&self, name: &[u8], out: &mut Vec<u8>) -> bool {
        let separator: &[u8] = if name == b"cookie" { b"; " } else { b", " };
        let mut found = false;
        for value in self.request.headers(name) {
            if found {
                out.extend_from_slice(separator);
            }
            out.extend_from_slice(value);
            found = true;
        }
        found
    }

    /// `$sent_http_NAME`: the response headers the header filter writes, including those
    /// `add_header` adds.
    fn append_sent_header(&self, name: &[u8], out: &mut Vec<u8>) -> bool {
        let request = self.request;
        let response = &request.response;
        let location = request.location.map(|id| self.conf.location(id));
        let keepalive_header = location.and_then(|l| l.settings.core.keepalive_timeout.header);
        match name {
            b"content_type" => match &response.content_type {
                Some(value) => out.extend_from_slice(value.as_slice()),
                None => return false,
            },
            b"content_length" => match response.content_length {
                Some(length) => push_number(out, length as i64, 1),
                None => return false,
            },
            b"location" => match &response.location {
                Some(location) => out.extend_from_slice(&location.value),
                None => return false,
            },
            b"last_modified" => match (&response.last_modified_added, response.last_modified) {
                (Some((_, value)), _) => out.extend_from_slice(value),
                (None, Some(modified)) => http1::response::write_http_date(out, modified),
                (None, None) => return false,
            },
            b"etag" => match &response.etag {
                Some(etag) => out.extend_from_slice(etag),
                None => return false,
            },
            b"content_range" if response.content_range.is_some() => {
                out.extend_from_slice(response.content_range.as_deref().unwrap_or_default());
            }
            b"accept_ranges" if response.accept_ranges => out.extend_from_slice(b"bytes"),
            // What the head said: an upgrade, else whether the connection stays.
            b"connection" if response.status == 101 => out.extend_from_slice(b"upgrade"),
            b"connection" => out.extend_from_slice(if request.keepalive {
                b"keep-alive"
            } else {
                b"close"
            }),
            b"keep_alive" => match keepalive_header.filter(|_| request.keepalive) {
                Some(header) => {
                    out.extend_from_slice(b"timeout=");
                    push_number(out, header.as_secs() as i64, 1);
                }
                None => return false,
            },
            _ => return self.append_other_sent_header(name, location, out),
        }
        true
    }

    fn append_other_sent_header(
        &self,
        name: &[u8],
        location: Option<&crate::kernel::conf::Location>,
        out: &mut Vec<u8>,
    ) -> bool {
        let dashed = dash_name(name);
        // Several fields of one name are joined with `, `, as nginx 1.23 and later do.
        let mut found = false;
        for (key, value) in &self.request.response.headers {
            if key.as_slice().eq_ignore_ascii_case(&dashed) {
                if found {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(value.as_slice());
                found = true;
            }
        }
        match location {
            Some(location) => {
                let fields = &location.settings.headers.add_header;
                self.append_added_field(fields, &dashed, found, out) || found
            }
            None => found,
        }
    }

    /// `$sent_trailer_NAME`: an upstream's trailer or an `add_trailer` field, once the
    /// response's body has ended.
    fn append_sent_trailer(&self, name: &[u8], out: &mut Vec<u8>) -> bool {
        let request = self.request;
        let dashed = dash_name(name);
        let mut found = false;
        for (key, value) in &request.response.trailers {
            if key.eq_ignore_ascii_case(&dashed) {
                if found {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(value);
                found = true;
            }
        }
        if !request.response.trailers_added {
            return found;
        }
        let Some(location) = request.location.map(|id| self.conf.location(id)) else {
            return found;
        };
        self.append_added_field(&location.settings.headers.add_trailer, &dashed, found, out)
            || found
    }

    /// The values of the `add_header` (or `add_trailer`) fields named `dashed` that apply to
    /// this response, joined with `, ` (after `earlier` values already written). A field
    /// whose value names a sent field is evaluated without following that one further.
    fn append_added_field(
        &self,
        fields: &[AddHeader],
        dashed: &[u8],
        earlier: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        if self.in_added_header.replace(true) {
            return false;
        }
        let status = crate::kernel::special::status_on_wire(self.request.response.status);
        let status_ok = crate::modules::headers::settings::status_takes_added_headers(status);
        let mut found = false;
        let mut value = Vec::new();
        for field in fields {
            if !field.name.eq_ignore_ascii_case(dashed) || !(field.always || status_ok) {
                continue;
            }
            value.clear();
            field.value.evaluate(&mut Reborrow(self), &mut value);
            if value.is_empty() {
                continue;
            }
            if found || earlier {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(&value);
            found = true;
        }
        self.in_added_header.set(false);
        found
    }

    /// `$document_root`: the `root` or `alias` of the request's location, evaluated.
    fn append_document_root(&self, out: &mut Vec<u8>) -> bool {
        let Some(location) = self.request.location else {
            return false;
        };
        let template = self
            .conf
            .location(location)
            .settings
            .core
            .document_root
            .template();
        template.evaluate(&mut Reborrow(self), out);
        true
    }

    /// `$realpath_root`: resolved on the file pool before templates that use it run (see
    /// `phases::resolve_realpath_root`); not found when it could not be.
    fn append_realpath_root(&self, out: &mut Vec<u8>) -> bool {
        let mut root = Vec::new();
        if !self.append_document_root(&mut root) {
            return false;
        }
        match &self.request.realpath_root {
            Some((resolved_for, real)) if *resolved_for == root => {
                out.extend_from_slice(real);
                true
            }
            _ => false,
        }
    }

    /// `$request_filename`: the URI mapped to a path under the location's root or alias.
    fn append_request_filename(&self, out: &mut Vec<u8>) -> bool {
        let Some(location) = self.request.location.map(|id| self.conf.location(id)) else {
            return false;
        };
        let mut root = Vec::new();
        self.append_document_root(&mut root);
        out.extend_from_slice(&crate::kernel::file::map_path(
            location,
            &root,
            self.request,
        ));
        true
    }
}

fn append_known(request: &Request<'_>, index: Option<usize>, out: &mut Vec<u8>) -> bool {
    match request.known_header(index) {
        Some(value) => {
            out.extend_from_slice(value);
            true
        }
        None => false,
    }
}

/// Lets a shared `RequestVariables` act as the `&mut` evaluator templates take.
pub(crate) struct Reborrow<'b, 'a>(pub(crate) &'b RequestVariables<'a>);

impl Evaluator<Variable> for Reborrow<'_, '_> {
    fn variable(&mut self, variable: &Variable, out: &mut Vec<u8>) {
        self.0.append(variable, out);
    }

    fn capture(&mut self, index: u8, out: &mut Vec<u8>) {
        if let Some(group) = self.0.request.matches.borrow().captures.group(index.into()) {
            out.extend_from_slice(group);
        }
    }
}

thread_local! {
    /// The key and counter `$request_id` hashes, as nginx does with SipHash: the key is
    /// random per worker thread, the counter makes every id different.
    static REQUEST_IDS: (std::collections::hash_map::RandomState, Cell<u64>) =
        (std::collections::hash_map::RandomState::new(), Cell::new(0));
}

/// A new `$request_id`: 128 unpredictable bits as 32 lowercase hex digits.
pub(crate) fn new_request_id() -> [u8; 32] {
    use std::hash::BuildHasher;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    REQUEST_IDS.with(|(key, counter)| {
        let mut id = [0u8; 32];
        for half in 0..2 {
            counter.set(counter.get().wrapping_add(1));
            let bits = key.hash_one(counter.get());
            for (index, byte) in bits.to_be_bytes().iter().enumerate() {
                id[half * 16 + index * 2] = HEX[usize::from(byte >> 4)];
                id[half * 16 + index * 2 + 1] = HEX[usize::from(byte & 0xf)];
            }
        }
        id
    })
}

/// A `$upstream_*` value: one entry per server tried, `, `-separated; not found when the
/// request was not proxied.
fn upstream_list(
    request: &Request<'_>,
    out: &mut Vec<u8>,
    mut write: impl FnMut(&crate::kernel::upstream::info::Attempt, &mut Vec<u8>),
) -> bool {
    let attempts = &request.upstream.attempts;
    if attempts.is_empty() {
        return false;
    }
    for (index, attempt) in attempts.iter().enumerate() {
        if index > 0 {
            out.extend_from_slice(b", ");
        }
        write(attempt, out);
    }
    true
}

/// Seconds with milliseconds, or `-` when there is no such time.
fn push_optional_time(out: &mut Vec<u8>, time: Option<std::time::Duration>) {
    match time {
        Some(time) => push_seconds_millis(out, time),
        None => out.push(b'-'),
    }
}

/// The port of the request's host: an absolute URI's, else `Host`'s; `None` when absent
/// or zero.
fn request_port(request: &Request<'_>) -> Option<u16> {
    let raw = match &request.info.target.authority {
        Some(range) => request.head_bytes.get(range.clone())?,
        None => request.known_header(request.info.known.host)?,
    };
    let after_host = match raw.first() {
        Some(b'[') => &raw[memchr::memchr(b']', raw)? + 1..],
        _ => raw,
    };
    let digits = &after_host[memchr::memchr(b':', after_host)? + 1..];
    let mut port: u32 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        port = port * 10 + u32::from(digit - b'0');
        if port > 65535 {
            return None;
        }
    }
    u16::try_from(port).ok().filter(|&port| port != 0)
}

/// `$remote_user`: the user name of `Authorization: Basic` (`Proxy-Authorization` for
/// CONNECT), as nginx decodes it.
fn append_remote_user(request: &Request<'_>, out: &mut Vec<u8>) -> bool {
    let Some(header) = request.credentials_field() else {
        return false;
    };
    let Some(scheme) = header.get(..6) else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case(b"Basic ") {
        return false;
    }
    let encoded = header[6..].trim_ascii_start();
    let Some(decoded) = decode_base64(encoded).filter(|decoded| !decoded.is_empty()) else {
        return false;
    };
    match memchr::memchr(b':', &decoded) {
        Some(colon) if colon > 0 => {
            out.extend_from_slice(&decoded[..colon]);
            true
        }
        _ => false,
    }
}

/// Base64 as nginx decodes it: the standard alphabet, up to the first `=`; any other byte,
/// or a length that leaves a single character, is an error.
pub(crate) fn decode_base64(input: &[u8]) -> Option<Vec<u8>> {
    fn value(byte: u8) -> Option<u32> {
        Some(u32::from(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    let end = memchr::memchr(b'=', input).unwrap_or(input.len());
    let input = &input[..end];
    if input.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() / 4 * 3 + 2);
    for chunk in input.chunks(4) {
        let mut bits = 0u32;
        for &byte in chunk {
            bits = (bits << 6) | value(byte)?;
        }
        bits <<= 6 * (4 - chunk.len() as u32);
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// `$arg_NAME`: the first argument whose name matches case-insensitively; its value is
/// not unescaped, as in nginx.
pub(crate) fn append_argument(args: &[u8], name: &[u8], out: &mut Vec<u8>) -> bool {
    // `$arg_` names no argument, not one with an empty name.
    if name.is_empty() {
        return false;
    }
    for pair in args.split(|&b| b == b'&') {
        let (key, value) = match memchr::memchr(b'=', pair) {
            Some(equals) => (&pair[..equals], &pair[equals + 1..]),
            None => (pair, &b""[..]),
        };
        if key.eq_ignore_ascii_case(name) {
            out.extend_from_slice(value);
            return true;
        }
    }
    false
}

/// `$cookie_NAME`: the value of the first cookie with that name in any Cookie header.
fn append_cookie(request: &Request<'_>, name: &[u8], out: &mut Vec<u8>) -> bool {
    if name.is_empty() {
        return false;
    }
    for header in request.headers(b"cookie") {
        // Pairs end at `;` only: a comma belongs to the value, as in current nginx.
        for pair in header.split(|&b| b == b';') {
            let pair = pair.trim_ascii_start();
            if let Some(equals) = memchr::memchr(b'=', pair)
                && pair[..equals].eq_ignore_ascii_case(name)
            {
                out.extend_from_slice(&pair[equals + 1..]);
                return true;
            }
        }
    }
    false
}

/// `1.234`: seconds with milliseconds, as `$request_time`.
/// The connection counts of every worker, summed (`$connections_*`).
/// `$proxy_protocol_*` from the connection's PROXY protocol header.
fn append_proxy_protocol(
    variable: &Variable,
    header: &shared::proxy_protocol::ProxyHeader,
    out: &mut Vec<u8>,
) {
    match variable {
        Variable::ProxyProtocolAddr => out.extend_from_slice(&header.source_addr),
        Variable::ProxyProtocolPort => push_number(out, header.source_port.into(), 1),
        Variable::ProxyProtocolServerAddr => out.extend_from_slice(&header.destination_addr),
        Variable::ProxyProtocolServerPort => push_number(out, header.destination_port.into(), 1),
        Variable::ProxyProtocolTlv(Some(name)) => name.find(&header.tlvs, out),
        _ => {}
    }
}

fn push_seconds_millis(out: &mut Vec<u8>, elapsed: std::time::Duration) {
    push_number(out, elapsed.as_secs() as i64, 1);
    out.push(b'.');
    push_number(out, elapsed.subsec_millis().into(), 3);
}

/// `x_foo` (a variable name's suffix) to `x-foo`, to compare with field names.
fn dash_name(name: &[u8]) -> Vec<u8> {
    name.iter()
        .map(|&b| if b == b'_' { b'-' } else { b })
        .collect()
}

/// `X-Foo` to the `x_foo` form `$http_` and `$sent_http_` use.
pub fn escape_header_name(name: &[u8]) -> Vec<u8> {
    name.iter()
        .map(|&b| {
            if b == b'-' {
                b'_'
            } else {
                b.to_ascii_lowercase()
            }
        })
        .collect()
}

/// A template's value for a request.
pub fn render(
    worker: &crate::kernel::worker::HttpWorker,
    connection: &crate::kernel::request::ConnectionInfo,
    request: &crate::kernel::request::Request<'_>,
    template: &super::HttpTemplate,
) -> Vec<u8> {
    if let Some(literal) = template.as_literal() {
        return literal.to_vec();
    }
    let mut variables = RequestVariables::of(worker, connection, request);
    let mut out = Vec::new();
    template.evaluate(&mut variables, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_match_names_case_insensitively() {
        let mut out = Vec::new();
        assert!(append_argument(b"a=1&L=ok&l=2", b"l", &mut out));
        assert_eq!(out, b"ok");
        out.clear();
        assert!(append_argument(b"flag&x=1", b"flag", &mut out));
        assert_eq!(out, b"");
        assert!(!append_argument(b"a=1", b"b", &mut out));
        assert!(!append_argument(b"", b"a", &mut out));
    }

    #[test]
    fn base64_decodes_like_nginx() {
        assert_eq!(decode_base64(b"dXNlcjpwYXNz").unwrap(), b"user:pass");
        assert_eq!(decode_base64(b"dXNlcjpwYXM=").unwrap(), b"user:pas");
        assert_eq!(decode_base64(b"dXNlcjpwYQ==").unwrap(), b"user:pa");
        assert_eq!(decode_base64(b"dXNlcjpwYQ==garbage!").unwrap(), b"user:pa");
        assert!(decode_base64(b"dXNlc").is_none());
        assert!(decode_base64(b"dXN*cjpw").is_none());
        assert_eq!(decode_base64(b"").unwrap(), b"");
    }

    #[test]
    fn request_ids_are_hex_and_differ() {
        let first = new_request_id();
        let second = new_request_id();
        assert_ne!(first, second);
        assert!(
            first
                .iter()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn seconds_with_milliseconds() {
        let mut out = Vec::new();
        push_seconds_millis(&mut out, std::time::Duration::from_millis(1005));
        assert_eq!(out, b"1.005");
    }
}

/// `$binary_remote_addr`'s value without a buffer: 4 bytes for IPv4, 16 for IPv6, none for
/// a UNIX-domain peer.
#[derive(Clone, Copy, Debug)]
pub struct BinaryAddress {
    bytes: [u8; 16],
    len: u8,
}

impl BinaryAddress {
    pub fn of(peer: PeerAddress) -> BinaryAddress {
        let mut bytes = [0; 16];
        let len = match peer {
            PeerAddress::Inet(address) => match address.ip() {
                IpAddr::V4(ip) => {
                    bytes[..4].copy_from_slice(&ip.octets());
                    4
                }
                IpAddr::V6(ip) => {
                    bytes = ip.octets();
                    16
                }
            },
            PeerAddress::Unix => 0,
        };
        BinaryAddress { bytes, len }
    }
}

impl std::ops::Deref for BinaryAddress {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}
