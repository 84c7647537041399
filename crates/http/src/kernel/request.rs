//! A request's state from its head to its log line. One `Request` is reused for every
//! request of a connection, so its buffers keep their memory between requests.

use std::net::SocketAddr;
use std::time::Instant;

use http1::{RequestHead, RequestInfo};
use logging::LogContext;
use runtime::PeerAddress;

use crate::kernel::conf::location::MatchState;
use crate::kernel::conf::{HttpConf, LocationId, ServerId};
use crate::kernel::response::ResponseHead;

/// What the connection knows that requests and variables need (an HTTP/2 stream has its
/// own copy: its `requests` count, and the address realip finds for its request).
#[derive(Clone, Debug)]
pub struct ConnectionInfo {
    /// nginx's connection serial number (`$connection`, `*N` in the error log).
    pub id: u64,
    /// The client's address as everything after the head sees it (`$remote_addr`,
    /// `allow`/`deny`, limits keyed by address, `ip_hash`, `X-Forwarded-For`, both logs):
    /// the socket's peer, or for the rest of one request the address realip found there.
    pub peer: std::cell::Cell<PeerAddress>,
    /// The socket's peer, which realip does not change (`$realip_remote_addr`).
    pub socket_peer: PeerAddress,
    /// What the PROXY protocol header said, on a `proxy_protocol` address
    /// (`$proxy_protocol_addr`); `None` for `UNKNOWN`, `LOCAL` or no header.
    pub proxy_protocol: Option<Box<shared::proxy_protocol::ProxyHeader>>,
    /// The address the client connected to, when known (`$server_addr`).
    pub local: Option<SocketAddr>,
    pub accepted: Instant,
    /// Requests started on this connection, this one included (`$connection_requests`).
    pub requests: u64,
    /// The TLS handshake's facts, on an HTTPS connection (`$https`, `$ssl_*`).
    pub tls: Option<std::rc::Rc<tls::HandshakeInfo>>,
    /// `debug_connection` names the client: its debug lines go to every error log,
    /// whatever the log's level.
    pub debug: bool,
}

/// Byte counts for the log.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sent {
    pub header_bytes: u64,
    pub body_bytes: u64,
}

/// One request.
#[derive(Debug, Default)]
pub struct Request<'a> {
    /// The head as received; `head`'s ranges point into it.
    pub head_bytes: Vec<u8>,
    pub head: RequestHead,
    pub info: RequestInfo,
    /// `$uri`: starts as the normalised path and changes with internal redirects.
    pub uri: Vec<u8>,
    /// `$args`.
    pub args: Vec<u8>,
    pub server: Option<ServerId>,
    pub location: Option<LocationId>,
    /// Regex captures (`$1`) and named variables' values. Evaluating a `map` variable
    /// writes here through a shared reference (its regex captures and its cached value),
    /// as nginx's lazily evaluated variables do.
    pub matches: std::cell::RefCell<MatchState>,
    pub started: Option<Instant>,
    /// Bytes of the head plus body bytes read (`$request_length`).
    pub length: u64,
    pub response: ResponseHead<'a>,
    pub sent: Sent,
    /// Whether the response was fully sent.
    pub completed: bool,
    /// URI changes and internal redirects still allowed (nginx allows ten).
    pub uri_changes: u8,
    /// The rewrite phase changed the URI: the location is searched for again.
    pub uri_changed: bool,
    /// The request was rewritten or redirected internally: `internal` locations serve it.
    pub internal: bool,
    /// An `error_page` was used (without `recursive_error_pages`, no second one is).
    pub error_page: bool,
    /// The status `error_page` decided (nginx's `err_status`): it replaces the status of
    /// the page the error page was redirected to; 0 keeps that page's own status.
    pub err_status: u16,
    /// The request is ending with a status or a response of its own: the body, if any,
    /// is not read, and `client_max_body_size` is not checked again.
    pub discard_body: bool,
    /// `error_page` made the method GET (`$request_method` then says so).
    pub method_is_get: bool,
    /// The response's rate limit in bytes per second (`$limit_rate`; 0 is none): `None`
    /// until `set $limit_rate` sets it or the response starts and takes the location's
    /// `limit_rate`.
    pub limit_rate: Option<u64>,
    /// `$request_id`, made on first use.
    pub request_id: std::cell::OnceCell<[u8; 32]>,
    /// `$realpath_root`: the document root it was resolved for, and its real path.
    pub realpath_root: Option<(Vec<u8>, Vec<u8>)>,
    /// The file the static handler mapped the URI to (`$request_filename`).
    pub filename: Vec<u8>,
    /// `try_files` matched a file in a regex location with `alias`: the file is the alias
    /// followed by `$uri` from now on (nginx's `add_uri_to_alias`).
    pub add_uri_to_alias: bool,
    /// Whether the connection may carry another request after this one.
    pub keepalive: bool,
    /// The head was already read with the previous request's bytes (`$pipe`).
    pub pipelined: bool,
    /// `set $args` ran: the request target as received no longer says what is asked.
    pub args_changed: bool,
    /// A `rewrite ... break` (or `break` after a rewrite) changed the URI within the
    /// current location (nginx's `valid_location = 0`): `proxy_pass` then sends the whole
    /// URI rather than replacing the location's prefix.
    pub location_uri_changed: bool,
    /// An `if` with its own `proxy_pass` matched, then a later `if` without a handler of
    /// its own and without `proxy_pass`: nginx keeps the proxy handler, which finds no
    /// upstream in the later block's settings and answers 500.
    pub proxy_handler_orphaned: bool,
    /// The body, once a handler has read it (`$request_body` for a body in memory).
    pub body: Option<crate::kernel::body::temp::RequestBody>,
    /// The rest of a body still arriving while the response is sent (a bidirectional gRPC
    /// call): the handler that passes it on left it here for the connection to pump.
    pub(crate) body_relay: Option<std::rc::Rc<crate::kernel::body::relay::BodyRelay>>,
    /// `$request_body_file`: where the body was written, when it went to a file.
    pub body_file: Option<std::path::PathBuf>,
    /// The length of a body read whole, framed by `Content-Length` or not (`$content_length`
    /// of a chunked body once it is read).
    pub body_length: Option<u64>,
    /// What the proxy did: for `$upstream_*` and the error log.
    pub upstream: crate::kernel::upstream::info::UpstreamInfo,
    /// `$gzip_ratio`: the bytes gzip took and gave, once a compressed body has ended.
    pub gzip_ratio: Option<(u64, u64)>,
    /// The userid module's decision, made once per request: the 16 bytes of the
    /// identifier to send in a cookie, or `None` when none is sent.
    pub userid_set: std::cell::OnceCell<Option<[u8; 16]>>,
    pub cleanups: Cleanups,
    /// How deep this request is among subrequests: 0 for the client's own request.
    pub subrequest_depth: u8,
    /// Subrequests the main request may still make, shared by all its subrequests.
    pub subrequests_left: std::rc::Rc<std::cell::Cell<u32>>,
    /// What modules keep for this request, each in its own slot (nginx's `r->ctx`).
    pub modules: crate::kernel::module_state::ModuleStates,
    /// `mirror_request_body off` applied to the mirror that made this subrequest.
    pub without_body: bool,
    /// Nobody waits for this request's answer (a mirror's subrequest, `post_action`): a
    /// client that goes away does not end it, as nginx's upstream does not watch for it.
    pub background: bool,
}

/// Subrequests one client request may make in all (nginx's reference counter limit).
pub const SUBREQUESTS_MAX: u32 = 65_535;

/// Values a module holds for as long as the request runs (nginx's request-pool cleanups,
/// such as a `limit_conn` count): dropped when the request ends, on every path.
#[derive(Default)]
pub struct Cleanups(pub Vec<Box<dyn std::any::Any>>);

impl std::fmt::Debug for Cleanups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cleanups({})", self.0.len())
    }
}

/// nginx's limit on URI rewrites and internal redirects per request, plus one.
pub(crate) const URI_CHANGES: u8 = 11;

impl<'a> Request<'a> {
    /// Clears everything for the next request on the connection.
    pub fn reset(&mut self) {
        self.head_bytes.clear();
        self.uri.clear();
        self.args.clear();
        self.server = None;
        self.location = None;
        let matches = self.matches.get_mut();
        matches.captures.clear();
        matches.named.clear();
        self.started = None;
        self.length = 0;
        self.response.clear();
        self.sent = Sent::default();
        self.completed = false;
        self.uri_changes = URI_CHANGES;
        self.uri_changed = false;
        self.internal = false;
        self.error_page = false;
        self.err_status = 0;
        self.discard_body = false;
        self.method_is_get = false;
        self.limit_rate = None;
        self.request_id = std::cell::OnceCell::new();
        self.realpath_root = None;
        self.filename.clear();
        self.add_uri_to_alias = false;
        self.keepalive = false;
        self.pipelined = false;
        self.args_changed = false;
        self.location_uri_changed = false;
        self.proxy_handler_orphaned = false;
        self.body = None;
        self.body_relay = None;
        self.body_file = None;
        self.body_length = None;
        self.upstream.clear();
        self.gzip_ratio = None;
        self.userid_set = std::cell::OnceCell::new();
        self.cleanups.0.clear();
        self.subrequest_depth = 0;
        self.modules.clear();
        self.without_body = false;
        self.background = false;
        // The count is shared with subrequests; once they are gone it is this request's
        // alone and is set again rather than made anew.
        match std::rc::Rc::get_mut(&mut self.subrequests_left) {
            Some(left) => left.set(SUBREQUESTS_MAX),
            None => {
                self.subrequests_left = std::rc::Rc::new(std::cell::Cell::new(SUBREQUESTS_MAX));
            }
        }
    }

    /// Whether this is a subrequest (nginx's `r != r->main`).
    pub fn is_subrequest(&self) -> bool {
        self.subrequest_depth > 0
    }

    /// Whether the client talks to Portico as to a proxy: a CONNECT request, whose
    /// credentials come in `Proxy-Authorization` and whose challenge is a 407 with
    /// `Proxy-Authenticate` (nginx's `ngx_http_proxy_auth`).
    pub fn is_proxy_auth(&self) -> bool {
        self.head.method == http1::Method::Connect
    }

    /// The field that carries the client's credentials: `Proxy-Authorization` for
    /// CONNECT, else `Authorization`.
    pub fn credentials_field(&self) -> Option<&[u8]> {
        if self.is_proxy_auth() {
            self.header(b"proxy-authorization")
        } else {
            self.known_header(self.info.known.authorization)
        }
    }

    /// A request header's value, by lowercase name with `_` matching `-` (as `$http_*`).
    pub fn header<'b>(&'b self, lowercase_name: &'b [u8]) -> Option<&'b [u8]> {
        self.headers(lowercase_name).next()
    }

    /// Every value of a header, in order.
    pub fn headers<'b>(&'b self, lowercase_name: &'b [u8]) -> impl Iterator<Item = &'b [u8]> + 'b {
        self.head.headers.iter().filter_map(move |field| {
            let name = self.head_bytes.get(field.name.clone())?;
            let value = self.head_bytes.get(field.value.clone())?;
            header_name_matches(name, lowercase_name).then_some(value)
        })
    }

    /// `$request`: the request line.
    pub(crate) fn request_line(&self) -> &[u8] {
        self.head_bytes
            .get(self.head.request_line.clone())
            .unwrap_or_default()
    }

    /// The request line for error-log context: the parsed one, or for a head rejected in
    /// its first line, that line as far as it was received, as nginx quotes it.
    pub(crate) fn request_line_for_log(&self) -> &[u8] {
        let parsed = self.request_line();
        if !parsed.is_empty() {
            return parsed;
        }
        let start = self
            .head_bytes
            .iter()
            .position(|&b| b != b'\r' && b != b'\n');
        let Some(start) = start else {
            return b"";
        };
        let rest = &self.head_bytes[start..];
        let end = rest
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(rest.len());
        &rest[..end]
    }

    /// The value of a well-known header by its index, if the index is valid for this head.
    pub(crate) fn known_header(&self, index: Option<usize>) -> Option<&[u8]> {
        let field = self.head.headers.get(index?)?;
        self.head_bytes.get(field.value.clone())
    }

    /// `$request_uri`.
    pub fn request_uri(&self) -> &[u8] {
        self.head_bytes
            .get(self.head.target.clone())
            .unwrap_or_default()
    }

    pub(crate) fn method_bytes(&self) -> &[u8] {
        if self.method_is_get {
            return b"GET";
        }
        self.head_bytes
            .get(self.head.method_bytes.clone())
            .unwrap_or_default()
    }

    pub(crate) fn protocol(&self) -> &[u8] {
        self.head_bytes
            .get(self.head.protocol.clone())
            .unwrap_or_default()
    }

    pub(crate) fn is_head(&self) -> bool {
        self.head.method == http1::Method::Head
    }

    /// The error-log context of this request on `connection`.
    pub(crate) fn log_context<'b>(
        &'b self,
        connection: &'b ConnectionInfo,
        conf: &'b HttpConf,
    ) -> RequestLogContext<'b> {
        RequestLogContext {
            request: Some(self),
            connection,
            conf,
            action: None,
        }
    }
}

/// `$http_x_foo` matches `X-Foo`: case-insensitive, and `_` in the wanted name matches `-`.
pub(crate) fn header_name_matches(name: &[u8], wanted: &[u8]) -> bool {
    name.len() == wanted.len()
        && name.iter().zip(wanted).all(|(&have, &want)| {
            let have = have.to_ascii_lowercase();
            have == want || (have == b'-' && want == b'_')
        })
}

/// What follows an error-log message about a connection or request, as nginx writes it:
/// ` while ACTION, client: ADDR, server: NAME, request: "LINE", host: "HOST"`.
pub(crate) struct RequestLogContext<'a> {
    pub request: Option<&'a Request<'a>>,
    pub connection: &'a ConnectionInfo,
    pub conf: &'a HttpConf,
    /// What the connection was doing (`reading client request line`).
    pub action: Option<&'static str>,
}

impl RequestLogContext<'_> {
    pub(crate) fn with_action(mut self, action: &'static str) -> Self {
        self.action = Some(action);
        self
    }
}

impl LogContext for RequestLogContext<'_> {
    fn write_context(&self, out: &mut Vec<u8>) {
        if let Some(action) = self.action {
            out.extend_from_slice(b" while ");
            out.extend_from_slice(action.as_bytes());
        }
        out.extend_from_slice(b", client: ");
        write_peer(out, &self.connection.peer.get());
        out.extend_from_slice(b", server: ");
        match self.request.and_then(|request| request.server) {
            Some(server) => out.extend_from_slice(&self.conf.server(server).name),
            // Before a request exists nginx names the address the client connected to.
            None => match self.connection.local {
                Some(local) => out.extend_from_slice(local.to_string().as_bytes()),
                None => out.extend_from_slice(b"unix:"),
            },
        }
        let Some(request) = self.request else {
            return;
        };
        let line = request.request_line_for_log();
        if !line.is_empty() {
            out.extend_from_slice(b", request: \"");
            out.extend_from_slice(line);
            out.push(b'"');
        }
        if request.upstream.trying
            && let Some(attempt) = request.upstream.attempts.last()
        {
            out.extend_from_slice(b", upstream: \"");
            match request.upstream.scheme {
                "" => out.extend_from_slice(b"http://"),
                // A tunnel's peer is named without a scheme, as nginx names it.
                "tunnel" => {}
                scheme => {
                    out.extend_from_slice(scheme.as_bytes());
                    out.extend_from_slice(b"://");
                }
            }
            out.extend_from_slice(attempt.addr.as_bytes());
            out.extend_from_slice(&request.upstream.uri);
            out.push(b'"');
        }
        // The head may be incomplete or rejected: every range is checked, never trusted.
        if let Some(host) = request.known_header(request.head.known.host) {
            out.extend_from_slice(b", host: \"");
            out.extend_from_slice(host);
            out.push(b'"');
        }
        if let Some(referer) = request.known_header(request.head.known.referer) {
            out.extend_from_slice(b", referrer: \"");
            out.extend_from_slice(referer);
            out.push(b'"');
        }
    }
}

/// `$remote_addr`.
pub(crate) fn write_peer(out: &mut Vec<u8>, peer: &PeerAddress) {
    match peer {
        PeerAddress::Inet(address) => push_ip(out, address.ip()),
        PeerAddress::Unix => out.extend_from_slice(b"unix:"),
    }
}

/// Appends an address as its `Display` writes it; an IPv4 one without the formatting
/// machinery (`$remote_addr` is in most access-log lines, `$server_addr` in every
/// gateway's params).
pub(crate) fn push_ip(out: &mut Vec<u8>, ip: std::net::IpAddr) {
    match ip {
        std::net::IpAddr::V4(v4) => {
            for (index, octet) in v4.octets().into_iter().enumerate() {
                if index > 0 {
                    out.push(b'.');
                }
                if octet >= 100 {
                    out.push(b'0' + octet / 100);
                }
                if octet >= 10 {
                    out.push(b'0' + octet / 10 % 10);
                }
                out.push(b'0' + octet % 10);
            }
        }
        std::net::IpAddr::V6(v6) => {
            use std::io::Write;
            let _ = write!(out, "{v6}");
        }
    }
}

/// Client bytes for a log line: printable ASCII as is, anything else as `\xNN`.
pub(crate) fn push_quoted(out: &mut String, bytes: &[u8]) {
    for &byte in bytes {
        if (0x20..0x7f).contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("\\x{byte:02X}"));
        }
    }
}

#[cfg(test)]
mod tests_ip {
    use super::push_ip;

    #[test]
    fn addresses_are_written_as_display_writes_them() {
        for text in [
            "127.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "10.20.30.4",
            "192.168.100.9",
            "::1",
            "2001:db8::8:800:200c:417a",
            "::ffff:10.0.0.1",
        ] {
            let ip: std::net::IpAddr = text.parse().expect("an address");
            let mut out = Vec::new();
            push_ip(&mut out, ip);
            assert_eq!(out, ip.to_string().as_bytes(), "{text}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_match_like_http_variables() {
        assert!(header_name_matches(b"X-Foo", b"x_foo"));
        assert!(header_name_matches(b"x-foo", b"x_foo"));
        assert!(header_name_matches(b"X_Foo", b"x_foo"));
        assert!(!header_name_matches(b"X-Foo", b"x-foo-bar"));
        assert!(!header_name_matches(b"X-Fob", b"x_foo"));
    }
}
