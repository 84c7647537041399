//! Variables: every `$name` a template may use, resolved to a [`Variable`] at config load
//! and evaluated against a request by matching on it, never by looking a name up.

pub(crate) mod evaluate;
mod registry;
pub mod time_format;

use vars::Template;

pub(crate) use evaluate::Reborrow;
pub use evaluate::{NGINX_COMPATIBLE_VERSION, RequestVariables, escape_header_name};
pub use registry::{
    ModuleNames, NamedSlot, Settable, VariableRegistry, find, find_prefixed, register_module_names,
};

/// A template whose variables are ours.
pub(crate) type HttpTemplate = Template<Variable>;

/// Every variable Portico knows. Names in comments are nginx's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Variable {
    /// `$uri`, `$document_uri`: the normalised path.
    Uri,
    /// `$request_uri`: the original target, with arguments.
    RequestUri,
    /// `$args`, `$query_string`.
    Args,
    /// `$is_args`: `?` when there are arguments.
    IsArgs,
    /// `$arg_NAME` (NAME lowercased is compared case-insensitively, as nginx does).
    Arg(Box<[u8]>),
    /// `$request`: the request line.
    Request,
    RequestMethod,
    /// `$server_protocol`: `HTTP/1.1`.
    ServerProtocol,
    Scheme,
    /// `$https`: `on` or empty.
    Https,
    /// `$request_length`: bytes of the request head and body read so far.
    RequestLength,
    /// `$request_completion`: `OK` once the response was sent whole, else empty.
    RequestCompletion,
    RemoteAddr,
    /// `$binary_remote_addr`: 4 or 16 bytes.
    BinaryRemoteAddr,
    RemotePort,
    /// `$proxy_protocol_addr`: the source address of the PROXY protocol header.
    ProxyProtocolAddr,
    /// `$proxy_protocol_port`.
    ProxyProtocolPort,
    /// `$proxy_protocol_server_addr`: the destination address of the header.
    ProxyProtocolServerAddr,
    /// `$proxy_protocol_server_port`.
    ProxyProtocolServerPort,
    /// `$proxy_protocol_tlv_NAME`: a TLV of a version 2 header; `None` for a name nginx
    /// does not know, which is always empty.
    ProxyProtocolTlv(Option<shared::proxy_protocol::TlvName>),
    ServerAddr,
    ServerPort,
    /// `$connection`: the connection serial number.
    Connection,
    /// `$connection_requests`: requests made over this connection so far.
    ConnectionRequests,
    /// `$connection_time`: seconds since the connection was accepted, with milliseconds.
    ConnectionTime,
    /// `$host`: the request's host name (lowercased), else the server name.
    Host,
    /// `$hostname`: the machine's host name.
    Hostname,
    /// `$server_name`: the first name of the server that serves the request.
    ServerName,
    /// `$http_NAME`: a request header; `-` in NAME matches `_`.
    HttpHeader(Box<[u8]>),
    /// `$cookie_NAME`.
    Cookie(Box<[u8]>),
    ContentLength,
    ContentType,
    /// `$remote_user`: from Basic authorization.
    RemoteUser,
    /// `$sent_http_NAME`: a response header.
    SentHttp(Box<[u8]>),
    /// `$sent_trailer_NAME`: a field of the response's trailer section (`add_trailer`).
    SentTrailer(Box<[u8]>),
    /// `$limit_rate`: the response's rate limit in bytes per second.
    LimitRate,
    /// `$status`.
    Status,
    BodyBytesSent,
    BytesSent,
    /// `$request_time`: seconds since the first byte was read, with milliseconds.
    RequestTime,
    Msec,
    TimeLocal,
    TimeIso8601,
    /// `$date_local`, `$date_gmt`: now, in SSI's default `timefmt`.
    DateLocal,
    DateGmt,
    Pid,
    /// `$nginx_version`: the nginx version whose behaviour Portico follows.
    NginxVersion,
    /// `$portico_version`.
    PorticoVersion,
    DocumentRoot,
    RealpathRoot,
    RequestFilename,
    /// `$request_id`: 16 random bytes in hex, the same for the whole request.
    RequestId,
    /// `$request_port`: the port of the request's host (absolute URI or `Host`), if given.
    RequestPort,
    /// `$is_request_port`: `:` when `$request_port` is not empty.
    IsRequestPort,
    /// `$request_body`: the body, when a handler read it into memory.
    RequestBody,
    /// `$pipe`: `p` for a pipelined request, else `.`.
    Pipe,
    /// `$request_body_file`: the temporary file holding the body, when it went to one.
    RequestBodyFile,
    /// `$upstream_addr`: each server tried, `, `-separated.
    UpstreamAddr,
    UpstreamStatus,
    UpstreamResponseTime,
    UpstreamConnectTime,
    UpstreamHeaderTime,
    UpstreamResponseLength,
    UpstreamBytesReceived,
    UpstreamBytesSent,
    /// `$upstream_cache_status`: how the cache answered (HIT, MISS, ...), not found when
    /// no cache was involved.
    UpstreamCacheStatus,
    /// `$upstream_http_NAME`: a field of the upstream's response.
    UpstreamHttp(Box<[u8]>),
    /// `$upstream_cookie_NAME`: a cookie the upstream's `Set-Cookie` fields set.
    UpstreamCookie(Box<[u8]>),
    /// A variable of the configuration: a named regex capture, a `set` variable, or a
    /// `map` or `split_clients` variable.
    Named(NamedSlot),
    /// A variable a module defines in its table (`$ssl_protocol`, `$gzip_ratio`, ...).
    Module(ModuleVariable),
}

/// A module's variable as a template holds it: where its definition is in the modules'
/// tables (`variables::evaluate::VariableDef`), and for a prefixed one the rest of the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleVariable {
    pub table: u16,
    pub index: u16,
    pub arg: Box<[u8]>,
}
