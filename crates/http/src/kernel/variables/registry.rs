//! Resolving variable names at config load.

use std::collections::HashMap;

use conf::{ConfError, ConfErrorKind, Span};

use super::Variable;

pub use shared::captures::NamedSlot;

#[derive(Debug)]
struct NamedEntry {
    name: String,
    defined: bool,
    /// Declared by `set`: reading it before any `set` ran warns (`uninitialized_variable_warn`).
    set: bool,
}

/// What `set $name` may write to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settable {
    /// `$args`
    Args,
    /// `$limit_rate`
    LimitRate,
    Named(NamedSlot),
    /// A built-in variable nginx does not let `set` change.
    Fixed,
}

/// Knows every variable name of one configuration. Built-in names resolve at once; other
/// names get a [`NamedSlot`] on first use and must be defined by the end of the load (by a
/// regex with that named group), else the load fails with `unknown "name" variable`, as
/// nginx checks once the whole configuration has been read.
#[derive(Debug, Default)]
pub struct VariableRegistry {
    named: Vec<NamedEntry>,
    by_name: HashMap<String, NamedSlot>,
    /// Some template uses `$realpath_root`, which needs a `realpath()` on the file pool.
    pub uses_realpath_root: bool,
}

/// The variables the modules define, by name: what the registry asks about a name that is
/// not one of the kernel's. The assembly answers from the modules' tables.
pub trait ModuleNames: Sync {
    /// The module variable a lower-cased name names: a whole name, or a prefix of its
    /// table followed by the rest.
    fn find(&self, lower: &str) -> Option<super::ModuleVariable>;
}

static MODULE_NAMES: std::sync::OnceLock<&'static dyn ModuleNames> = std::sync::OnceLock::new();

/// Makes the modules' variables known by name (the assembly does, before a load).
pub fn register_module_names(names: &'static dyn ModuleNames) {
    let _ = MODULE_NAMES.set(names);
}

fn module_variable(lower: &str) -> Option<Variable> {
    MODULE_NAMES.get()?.find(lower).map(Variable::Module)
}

/// Makes a variable from the rest of a prefixed name (`http_x_foo` gives `x_foo`).
type FromSuffix = fn(Box<[u8]>) -> Variable;

const PREFIXED: &[(&str, FromSuffix)] = &[
    ("http_", Variable::HttpHeader),
    ("sent_http_", Variable::SentHttp),
    ("sent_trailer_", Variable::SentTrailer),
    ("cookie_", Variable::Cookie),
    ("arg_", Variable::Arg),
    ("upstream_http_", Variable::UpstreamHttp),
    ("upstream_cookie_", Variable::UpstreamCookie),
];

fn builtin(name: &str) -> Option<Variable> {
    Some(match name {
        "uri" | "document_uri" => Variable::Uri,
        "request_uri" => Variable::RequestUri,
        "args" | "query_string" => Variable::Args,
        "is_args" => Variable::IsArgs,
        "request" => Variable::Request,
        "request_method" => Variable::RequestMethod,
        "server_protocol" => Variable::ServerProtocol,
        "scheme" => Variable::Scheme,
        "https" => Variable::Https,
        "request_length" => Variable::RequestLength,
        "request_completion" => Variable::RequestCompletion,
        "remote_addr" => Variable::RemoteAddr,
        "binary_remote_addr" => Variable::BinaryRemoteAddr,
        "remote_port" => Variable::RemotePort,
        "proxy_protocol_addr" => Variable::ProxyProtocolAddr,
        "proxy_protocol_port" => Variable::ProxyProtocolPort,
        "proxy_protocol_server_addr" => Variable::ProxyProtocolServerAddr,
        "proxy_protocol_server_port" => Variable::ProxyProtocolServerPort,
        "server_addr" => Variable::ServerAddr,
        "server_port" => Variable::ServerPort,
        "connection" => Variable::Connection,
        "connection_requests" => Variable::ConnectionRequests,
        "connection_time" => Variable::ConnectionTime,
        "host" => Variable::Host,
        "hostname" => Variable::Hostname,
        "server_name" => Variable::ServerName,
        "content_length" => Variable::ContentLength,
        "content_type" => Variable::ContentType,
        "remote_user" => Variable::RemoteUser,
        "status" => Variable::Status,
        "body_bytes_sent" => Variable::BodyBytesSent,
        "bytes_sent" => Variable::BytesSent,
        "request_time" => Variable::RequestTime,
        "msec" => Variable::Msec,
        "time_local" => Variable::TimeLocal,
        "time_iso8601" => Variable::TimeIso8601,
        "date_local" => Variable::DateLocal,
        "date_gmt" => Variable::DateGmt,
        "pid" => Variable::Pid,
        "nginx_version" => Variable::NginxVersion,
        "portico_version" => Variable::PorticoVersion,
        "document_root" => Variable::DocumentRoot,
        "realpath_root" => Variable::RealpathRoot,
        "request_filename" => Variable::RequestFilename,
        "request_id" => Variable::RequestId,
        "request_port" => Variable::RequestPort,
        "is_request_port" => Variable::IsRequestPort,
        "request_body" => Variable::RequestBody,
        "request_body_file" => Variable::RequestBodyFile,
        "limit_rate" => Variable::LimitRate,
        "pipe" => Variable::Pipe,
        "upstream_addr" => Variable::UpstreamAddr,
        "upstream_status" => Variable::UpstreamStatus,
        "upstream_response_time" => Variable::UpstreamResponseTime,
        "upstream_connect_time" => Variable::UpstreamConnectTime,
        "upstream_header_time" => Variable::UpstreamHeaderTime,
        "upstream_response_length" => Variable::UpstreamResponseLength,
        "upstream_bytes_received" => Variable::UpstreamBytesReceived,
        "upstream_bytes_sent" => Variable::UpstreamBytesSent,
        "upstream_cache_status" => Variable::UpstreamCacheStatus,
        _ => return module_variable(name),
    })
}

/// The variable `name` names while a request runs (SSI's `echo`, `set`, `if`): a built-in
/// one, a prefixed one, or one of the configuration's by its slot. Nothing is defined.
pub fn find(name: &[u8], named: &[(Box<str>, bool)]) -> Option<Variable> {
    let lower = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    if let Some(variable) = builtin(&lower) {
        return Some(variable);
    }
    if let Some(slot) = named.iter().position(|(known, _)| **known == *lower) {
        return Some(Variable::Named(NamedSlot(slot as u32)));
    }
    find_prefixed(lower.as_bytes())
}

/// The prefixed variable (`$http_NAME`, `$arg_NAME`, ...) a lower-cased name would be.
pub fn find_prefixed(lower: &[u8]) -> Option<Variable> {
    let lower = std::str::from_utf8(lower).ok()?;
    PREFIXED.iter().find_map(|(prefix, make)| {
        lower
            .strip_prefix(prefix)
            .map(|rest| make(rest.as_bytes().into()))
    })
}

impl VariableRegistry {
    /// The variable a template's `$name` refers to. Names are case-insensitive.
    pub fn resolve(&mut self, name: &str) -> Variable {
        let lower = name.to_ascii_lowercase();
        if let Some(variable) = builtin(&lower) {
            self.uses_realpath_root |= variable == Variable::RealpathRoot;
            return variable;
        }
        // A name `set` declared wins over a prefix, as nginx resolves names once the whole
        // configuration is read.
        if let Some(slot) = self.by_name.get(&lower) {
            return Variable::Named(*slot);
        }
        if let Some(tlv) = lower.strip_prefix("proxy_protocol_tlv_") {
            return Variable::ProxyProtocolTlv(shared::proxy_protocol::TlvName::parse(tlv));
        }
        for (prefix, make) in PREFIXED {
            // A bare prefix (`$arg_`) is accepted too and names nothing, as in nginx.
            if let Some(rest) = lower.strip_prefix(prefix) {
                return make(rest.as_bytes().into());
            }
        }
        Variable::Named(self.slot(&lower))
    }

    /// Whether `name` is a built-in variable, which `map` and `split_clients` cannot
    /// define (nginx: `the duplicate "uri" variable`).
    pub(crate) fn is_builtin(name: &str) -> bool {
        builtin(&name.to_ascii_lowercase()).is_some()
    }

    /// Declares that a named variable gets its value somewhere (a regex named group), and
    /// returns its slot.
    pub(crate) fn define(&mut self, name: &str) -> NamedSlot {
        let slot = self.slot(&name.to_ascii_lowercase());
        self.named[slot.0 as usize].defined = true;
        slot
    }

    /// The variable `set $name` writes. A name that is not built in becomes a variable of
    /// the configuration, even one with a prefix such as `http_`, as in nginx.
    pub(crate) fn resolve_settable(&mut self, name: &str) -> Settable {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "args" => return Settable::Args,
            "limit_rate" => return Settable::LimitRate,
            _ => {}
        }
        if builtin(&lower).is_some() {
            return Settable::Fixed;
        }
        let slot = self.define(&lower);
        self.named[slot.0 as usize].set = true;
        Settable::Named(slot)
    }

    /// The names of the named variables by slot, and whether `set` declares each.
    pub(crate) fn named_variables(&self) -> Vec<(Box<str>, bool)> {
        self.named
            .iter()
            .map(|entry| (entry.name.as_str().into(), entry.set))
            .collect()
    }

    fn slot(&mut self, lower: &str) -> NamedSlot {
        if let Some(slot) = self.by_name.get(lower) {
            return *slot;
        }
        let slot = NamedSlot(self.named.len() as u32);
        self.named.push(NamedEntry {
            name: lower.to_owned(),
            defined: false,
            set: false,
        });
        self.by_name.insert(lower.to_owned(), slot);
        slot
    }

    /// How many named slots a request needs room for.
    pub fn named_len(&self) -> usize {
        self.named.len()
    }

    /// Fails with nginx's `unknown "name" variable` for the first name used but never
    /// defined. nginx reports this without a file and line; so do we.
    pub(crate) fn check_defined(&self) -> Result<(), ConfError> {
        match self.named.iter().find(|entry| !entry.defined) {
            Some(entry) => Err(ConfError::new(
                ConfErrorKind::Message(format!("unknown \"{}\" variable", entry.name)),
                None::<Span>,
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_prefixes_and_named() {
        let mut registry = VariableRegistry::default();
        assert_eq!(registry.resolve("URI"), Variable::Uri);
        assert_eq!(registry.resolve("query_string"), Variable::Args);
        assert_eq!(
            registry.resolve("http_X_Foo"),
            Variable::HttpHeader(b"x_foo"[..].into())
        );
        assert_eq!(registry.resolve("arg_l"), Variable::Arg(b"l"[..].into()));
        assert_eq!(
            registry.resolve("sent_http_connection"),
            Variable::SentHttp(b"connection"[..].into())
        );
        assert_eq!(
            registry.resolve("sent_trailer_X_Var"),
            Variable::SentTrailer(b"x_var"[..].into())
        );
        assert_eq!(registry.resolve("limit_rate"), Variable::LimitRate);
        let Variable::Named(slot) = registry.resolve("name") else {
            panic!("not named")
        };
        assert!(registry.check_defined().is_err());
        assert_eq!(registry.define("Name"), slot);
        registry.check_defined().unwrap();
        assert_eq!(registry.named_len(), 1);
    }

    #[test]
    fn undefined_names_fail_like_nginx() {
        let mut registry = VariableRegistry::default();
        registry.resolve("foo");
        assert_eq!(
            registry.check_defined().unwrap_err().to_string(),
            "unknown \"foo\" variable"
        );
    }

    #[test]
    fn a_bare_prefix_is_its_family_with_an_empty_name() {
        let mut registry = VariableRegistry::default();
        assert_eq!(registry.resolve("arg_"), Variable::Arg(b""[..].into()));
        assert_eq!(
            registry.resolve("http_"),
            Variable::HttpHeader(b""[..].into())
        );
        registry.check_defined().unwrap();
    }
}
