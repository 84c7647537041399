//! The stream variables: names resolved once at load into [`Variable`], values read from a
//! session's [`SessionVars`] by an [`Eval`].
//!
//! Named variables (`set`, `map`, `split_clients`, a map regex's named captures) get a
//! numbered slot at load; a session keeps the values of `set` and of captures by slot, and
//! computes a `map` or `split_clients` value when it is read.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use logging::time::Timestamp;
use runtime::PeerAddress;
use shared::proxy_protocol::{ProxyHeader, TlvName};
use shared::regex::Captures;
use vars::{Evaluator, Template};

use crate::conf::StreamConf;

/// A compiled stream template.
pub type StreamTemplate = Template<Variable>;

/// One variable a template names, resolved at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variable {
    RemoteAddr,
    RemotePort,
    BinaryRemoteAddr,
    ServerAddr,
    ServerPort,
    Protocol,
    Connection,
    BytesSent,
    BytesReceived,
    SessionTime,
    Status,
    Msec,
    TimeLocal,
    TimeIso8601,
    NginxVersion,
    Hostname,
    Pid,
    UpstreamAddr,
    UpstreamBytesSent,
    UpstreamBytesReceived,
    UpstreamConnectTime,
    UpstreamFirstByteTime,
    UpstreamSessionTime,
    ProxyProtocolAddr,
    ProxyProtocolPort,
    ProxyProtocolServerAddr,
    ProxyProtocolServerPort,
    ProxyProtocolTlv(TlvName),
    RealipRemoteAddr,
    RealipRemotePort,
    SslPrereadServerName,
    SslPrereadAlpnProtocols,
    SslPrereadProtocol,
    LimitConnStatus,
    ServerName,
    Ssl(shared::ssl_variables::SslVariable),
    /// A `set`, `map`, `split_clients` or named-capture variable, by slot.
    Named(usize),
}

/// What fills a named slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// `set`, or a map regex's named capture: a value the session stores.
    Stored,
    /// `map`: the map's index in [`StreamConf::maps`].
    Map(usize),
    /// `split_clients`: its index in [`StreamConf::splits`].
    Split(usize),
    /// `geo`: its index in [`StreamConf::geos`].
    Geo(usize),
}

/// The built-in variables by name.
const BUILT_IN: &[(&str, Variable)] = &[
    ("remote_addr", Variable::RemoteAddr),
    ("remote_port", Variable::RemotePort),
    ("binary_remote_addr", Variable::BinaryRemoteAddr),
    ("server_addr", Variable::ServerAddr),
    ("server_port", Variable::ServerPort),
    ("protocol", Variable::Protocol),
    ("connection", Variable::Connection),
    ("bytes_sent", Variable::BytesSent),
    ("bytes_received", Variable::BytesReceived),
    ("session_time", Variable::SessionTime),
    ("status", Variable::Status),
    ("msec", Variable::Msec),
    ("time_local", Variable::TimeLocal),
    ("time_iso8601", Variable::TimeIso8601),
    ("nginx_version", Variable::NginxVersion),
    ("hostname", Variable::Hostname),
    ("pid", Variable::Pid),
    ("upstream_addr", Variable::UpstreamAddr),
    ("upstream_bytes_sent", Variable::UpstreamBytesSent),
    ("upstream_bytes_received", Variable::UpstreamBytesReceived),
    ("upstream_connect_time", Variable::UpstreamConnectTime),
    ("upstream_first_byte_time", Variable::UpstreamFirstByteTime),
    ("upstream_session_time", Variable::UpstreamSessionTime),
    ("proxy_protocol_addr", Variable::ProxyProtocolAddr),
    ("proxy_protocol_port", Variable::ProxyProtocolPort),
    (
        "proxy_protocol_server_addr",
        Variable::ProxyProtocolServerAddr,
    ),
    (
        "proxy_protocol_server_port",
        Variable::ProxyProtocolServerPort,
    ),
    ("realip_remote_addr", Variable::RealipRemoteAddr),
    ("realip_remote_port", Variable::RealipRemotePort),
    ("ssl_preread_server_name", Variable::SslPrereadServerName),
    (
        "ssl_preread_alpn_protocols",
        Variable::SslPrereadAlpnProtocols,
    ),
    ("ssl_preread_protocol", Variable::SslPrereadProtocol),
    ("limit_conn_status", Variable::LimitConnStatus),
    ("server_name", Variable::ServerName),
];

/// Names to variables while a configuration loads.
#[derive(Debug, Default)]
pub struct Registry {
    /// Named slots: lower-case name and kind.
    pub slots: Vec<(String, SlotKind)>,
}

impl Registry {
    /// The slot of `name`, made `Stored` if new.
    pub fn slot(&mut self, name: &str) -> usize {
        let name = name.to_ascii_lowercase();
        if let Some(index) = self.slots.iter().position(|(known, _)| *known == name) {
            return index;
        }
        self.slots.push((name, SlotKind::Stored));
        self.slots.len() - 1
    }

    /// Declares `name` as filled by `kind` (a `map` or `split_clients` target).
    pub fn define(&mut self, name: &str, kind: SlotKind) -> Result<usize, String> {
        let index = self.slot(name);
        if self.slots[index].1 != SlotKind::Stored && kind != SlotKind::Stored {
            return Err(format!("the duplicate \"{name}\" variable"));
        }
        self.slots[index].1 = kind;
        Ok(index)
    }

    /// Resolves a name a template uses; an unknown one is nginx's `unknown "NAME" variable`.
    pub fn resolve(&self, name: &str) -> Result<Variable, String> {
        let lower = name.to_ascii_lowercase();
        if let Some((_, variable)) = BUILT_IN.iter().find(|(known, _)| *known == lower) {
            return Ok(*variable);
        }
        if let Some((_, ssl)) = crate::ssl::VARIABLES
            .iter()
            .find(|(known, _)| *known == lower)
        {
            return Ok(Variable::Ssl(*ssl));
        }
        if let Some(tlv) = lower.strip_prefix("proxy_protocol_tlv_")
            && let Some(tlv) = TlvName::parse(tlv)
        {
            return Ok(Variable::ProxyProtocolTlv(tlv));
        }
        match self.slots.iter().position(|(known, _)| *known == lower) {
            Some(index) => Ok(Variable::Named(index)),
            None => Err(format!("unknown \"{name}\" variable")),
        }
    }
}

/// `tcp` or `udp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
}

/// One try of an upstream peer, for the `$upstream_*` variables.
#[derive(Clone, Debug, Default)]
pub struct UpstreamTry {
    pub name: std::sync::Arc<str>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub connect_time: Option<Duration>,
    pub first_byte_time: Option<Duration>,
    pub session_time: Option<Duration>,
}

/// What `ssl_preread` found in a ClientHello.
#[derive(Clone, Debug, Default)]
pub struct Preread {
    pub server_name: Vec<u8>,
    pub alpn_protocols: Vec<u8>,
    pub protocol: Vec<u8>,
}

/// What a session knows that variables read.
#[derive(Debug)]
pub struct SessionVars {
    pub connection: u64,
    pub protocol: Protocol,
    /// The client, after `set_real_ip_from` (`$remote_addr`).
    pub remote: PeerAddress,
    /// The client the socket says (`$realip_remote_addr`).
    pub socket_remote: PeerAddress,
    /// The connection's local address; `None` on a unix socket.
    pub local: Option<SocketAddr>,
    pub started: Instant,
    /// Bytes written to and read from the client.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub status: u16,
    pub upstream: Vec<UpstreamTry>,
    pub proxy_header: Option<ProxyHeader>,
    pub preread: Preread,
    /// The server serving the session (`$server_name`), by index.
    pub server: usize,
    /// What the TLS handshake with the client agreed on.
    pub tls: Option<std::rc::Rc<tls::HandshakeInfo>>,
    /// `$limit_conn_status`: `PASSED`, `REJECTED` or `REJECTED_DRY_RUN`.
    pub limit_conn_status: Option<&'static str>,
    /// Values of `Stored` slots.
    pub slots: Vec<Option<Vec<u8>>>,
    /// The groups of the last regex that matched (`$1`..`$9`).
    pub captures: Captures,
}

impl SessionVars {
    pub fn new(
        connection: u64,
        protocol: Protocol,
        remote: PeerAddress,
        local: Option<SocketAddr>,
        slots: usize,
    ) -> SessionVars {
        SessionVars {
            connection,
            protocol,
            remote,
            socket_remote: remote,
            local,
            started: runtime::clock::monotonic(),
            bytes_sent: 0,
            bytes_received: 0,
            status: 200,
            upstream: Vec::new(),
            proxy_header: None,
            preread: Preread::default(),
            limit_conn_status: None,
            tls: None,
            server: 0,
            slots: vec![None; slots],
            captures: Captures::default(),
        }
    }

    /// The current try, made on first use.
    pub fn last_try(&mut self) -> &mut UpstreamTry {
        if self.upstream.is_empty() {
            self.upstream.push(UpstreamTry::default());
        }
        let last = self.upstream.len() - 1;
        &mut self.upstream[last]
    }
}

/// nginx limits how deep variables may refer to one another through maps.
const DEPTH_MAX: u32 = 32;

/// Evaluates templates for one session.
pub struct Eval<'a> {
    pub conf: &'a StreamConf,
    pub vars: &'a mut SessionVars,
    pub wall: Timestamp,
    pub hostname: &'a str,
    depth: u32,
}

impl<'a> Eval<'a> {
    pub fn new(
        conf: &'a StreamConf,
        vars: &'a mut SessionVars,
        wall: Timestamp,
        hostname: &'a str,
    ) -> Eval<'a> {
        Eval {
            conf,
            vars,
            wall,
            hostname,
            depth: 0,
        }
    }

    pub fn render(&mut self, template: &StreamTemplate) -> Vec<u8> {
        template.render(self)
    }

    fn named(&mut self, slot: usize, out: &mut Vec<u8>) {
        if self.depth >= DEPTH_MAX {
            return;
        }
        self.depth += 1;
        // A `set` of a `map` variable replaces the map's value.
        if let Some(Some(value)) = self.vars.slots.get(slot) {
            out.extend_from_slice(value);
            self.depth -= 1;
            return;
        }
        match self.conf.slots.get(slot).copied() {
            Some(SlotKind::Stored) => {
                if let Some(Some(value)) = self.vars.slots.get(slot) {
                    out.extend_from_slice(value);
                }
            }
            Some(SlotKind::Map(index)) => {
                let map = &self.conf.maps[index];
                crate::map::evaluate(map, self, out);
            }
            Some(SlotKind::Geo(index)) => {
                let geo = &self.conf.geos[index];
                crate::geo::evaluate(geo, self, out);
            }
            Some(SlotKind::Split(index)) => {
                let split = &self.conf.splits[index];
                let key = self.render(&split.source);
                out.extend_from_slice(split.parts.choose(&key));
            }
            None => {}
        }
        self.depth -= 1;
    }
}

fn push_address(out: &mut Vec<u8>, peer: &PeerAddress) {
    match peer {
        PeerAddress::Inet(address) => push_ip(out, address.ip()),
        PeerAddress::Unix => out.extend_from_slice(b"unix:"),
    }
}

/// An address as nginx prints it: IPv4-mapped IPv6 addresses stay IPv6.
fn push_ip(out: &mut Vec<u8>, ip: IpAddr) {
    use std::io::Write as _;
    let _ = write!(out, "{ip}");
}

fn push_port(out: &mut Vec<u8>, peer: &PeerAddress) {
    if let PeerAddress::Inet(address) = peer {
        out.extend_from_slice(address.port().to_string().as_bytes());
    }
}

/// Seconds with milliseconds: `1.002`.
pub fn push_seconds(out: &mut Vec<u8>, took: Duration) {
    use std::io::Write as _;
    let millis = took.as_millis();
    let _ = write!(out, "{}.{:03}", millis / 1000, millis % 1000);
}

/// The values of every try, joined as nginx joins them (`, `).
fn push_tries(
    out: &mut Vec<u8>,
    tries: &[UpstreamTry],
    value: impl Fn(&UpstreamTry, &mut Vec<u8>),
) {
    for (index, attempt) in tries.iter().enumerate() {
        if index > 0 {
            out.extend_from_slice(b", ");
        }
        value(attempt, out);
    }
}

fn push_time(out: &mut Vec<u8>, took: Option<Duration>) {
    match took {
        Some(took) => push_seconds(out, took),
        None => out.push(b'-'),
    }
}

impl Evaluator<Variable> for Eval<'_> {
    fn variable(&mut self, variable: &Variable, out: &mut Vec<u8>) {
        let vars = &*self.vars;
        match *variable {
            Variable::RemoteAddr => push_address(out, &vars.remote),
            Variable::RemotePort => push_port(out, &vars.remote),
            Variable::BinaryRemoteAddr => match vars.remote {
                PeerAddress::Inet(address) => match address.ip() {
                    IpAddr::V4(ip) => out.extend_from_slice(&ip.octets()),
                    IpAddr::V6(ip) => out.extend_from_slice(&ip.octets()),
                },
                PeerAddress::Unix => {}
            },
            Variable::ServerAddr => match vars.local {
                Some(local) => push_ip(out, local.ip()),
                None => out.extend_from_slice(b"unix:"),
            },
            Variable::ServerPort => {
                if let Some(local) = vars.local {
                    out.extend_from_slice(local.port().to_string().as_bytes());
                }
            }
            Variable::Protocol => out.extend_from_slice(match vars.protocol {
                Protocol::Tcp => b"TCP",
                Protocol::Udp => b"UDP",
            }),
            Variable::Connection => out.extend_from_slice(vars.connection.to_string().as_bytes()),
            Variable::BytesSent => out.extend_from_slice(vars.bytes_sent.to_string().as_bytes()),
            Variable::BytesReceived => {
                out.extend_from_slice(vars.bytes_received.to_string().as_bytes());
            }
            Variable::SessionTime => push_seconds(out, runtime::clock::since(vars.started)),
            Variable::Status => out.extend_from_slice(vars.status.to_string().as_bytes()),
            Variable::Msec => self.wall.write_msec(out),
            Variable::TimeLocal => self.wall.write_time_local(out),
            Variable::TimeIso8601 => self.wall.write_iso8601(out),
            Variable::NginxVersion => {
                out.extend_from_slice(shared::NGINX_COMPATIBLE_VERSION.as_bytes());
            }
            Variable::Hostname => out.extend_from_slice(self.hostname.as_bytes()),
            Variable::Pid => out.extend_from_slice(std::process::id().to_string().as_bytes()),
            Variable::UpstreamAddr => push_tries(out, &vars.upstream, |attempt, out| {
                out.extend_from_slice(attempt.name.as_bytes());
            }),
            Variable::UpstreamBytesSent => push_tries(out, &vars.upstream, |attempt, out| {
                out.extend_from_slice(attempt.bytes_sent.to_string().as_bytes());
            }),
            Variable::UpstreamBytesReceived => push_tries(out, &vars.upstream, |attempt, out| {
                out.extend_from_slice(attempt.bytes_received.to_string().as_bytes());
            }),
            Variable::UpstreamConnectTime => push_tries(out, &vars.upstream, |attempt, out| {
                push_time(out, attempt.connect_time);
            }),
            Variable::UpstreamFirstByteTime => push_tries(out, &vars.upstream, |attempt, out| {
                push_time(out, attempt.first_byte_time);
            }),
            Variable::UpstreamSessionTime => push_tries(out, &vars.upstream, |attempt, out| {
                push_time(out, attempt.session_time);
            }),
            Variable::ProxyProtocolAddr => {
                if let Some(header) = &vars.proxy_header {
                    out.extend_from_slice(&header.source_addr);
                }
            }
            Variable::ProxyProtocolPort => {
                if let Some(header) = &vars.proxy_header {
                    out.extend_from_slice(header.source_port.to_string().as_bytes());
                }
            }
            Variable::ProxyProtocolServerAddr => {
                if let Some(header) = &vars.proxy_header {
                    out.extend_from_slice(&header.destination_addr);
                }
            }
            Variable::ProxyProtocolServerPort => {
                if let Some(header) = &vars.proxy_header {
                    out.extend_from_slice(header.destination_port.to_string().as_bytes());
                }
            }
            Variable::ProxyProtocolTlv(tlv) => {
                if let Some(header) = &vars.proxy_header {
                    tlv.find(&header.tlvs, out);
                }
            }
            Variable::RealipRemoteAddr => push_address(out, &vars.socket_remote),
            Variable::RealipRemotePort => push_port(out, &vars.socket_remote),
            Variable::SslPrereadServerName => out.extend_from_slice(&vars.preread.server_name),
            Variable::SslPrereadAlpnProtocols => {
                out.extend_from_slice(&vars.preread.alpn_protocols);
            }
            Variable::SslPrereadProtocol => out.extend_from_slice(&vars.preread.protocol),
            Variable::Ssl(ssl) => {
                shared::ssl_variables::append(ssl, vars.tls.as_deref(), out);
            }
            Variable::ServerName => {
                if let Some(name) = self
                    .conf
                    .servers
                    .get(vars.server)
                    .and_then(|server| server.names.first())
                {
                    // `.example.com` is named `example.com`.
                    let name = name.strip_prefix('.').unwrap_or(name);
                    out.extend_from_slice(name.as_bytes());
                }
            }
            Variable::LimitConnStatus => {
                if let Some(status) = vars.limit_conn_status {
                    out.extend_from_slice(status.as_bytes());
                }
            }
            Variable::Named(slot) => self.named(slot, out),
        }
    }

    fn capture(&mut self, index: u8, out: &mut Vec<u8>) {
        if let Some(group) = self.vars.captures.group(usize::from(index)) {
            out.extend_from_slice(group);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_and_named_variables_resolve_and_unknown_ones_fail_as_nginx_words_it() {
        let mut registry = Registry::default();
        assert_eq!(registry.resolve("remote_addr"), Ok(Variable::RemoteAddr));
        assert_eq!(registry.resolve("Remote_Addr"), Ok(Variable::RemoteAddr));
        assert_eq!(
            registry.resolve("nope"),
            Err("unknown \"nope\" variable".to_owned())
        );
        let slot = registry.slot("x");
        assert_eq!(registry.resolve("x"), Ok(Variable::Named(slot)));
        assert!(registry.define("m", SlotKind::Map(0)).is_ok());
        assert!(registry.define("m", SlotKind::Map(1)).is_err());
        assert!(matches!(
            registry.resolve("proxy_protocol_tlv_alpn"),
            Ok(Variable::ProxyProtocolTlv(_))
        ));
    }

    #[test]
    fn times_have_milliseconds_and_tries_are_joined() {
        let mut out = Vec::new();
        push_seconds(&mut out, Duration::from_millis(1002));
        assert_eq!(out, b"1.002");
        let tries = [
            UpstreamTry {
                name: "a".into(),
                connect_time: None,
                ..UpstreamTry::default()
            },
            UpstreamTry {
                name: "b".into(),
                connect_time: Some(Duration::from_millis(5)),
                ..UpstreamTry::default()
            },
        ];
        let mut out = Vec::new();
        push_tries(&mut out, &tries, |attempt, out| {
            push_time(out, attempt.connect_time)
        });
        assert_eq!(out, b"-, 0.005");
    }
}
