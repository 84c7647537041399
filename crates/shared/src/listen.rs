//! The `listen` directive and the grouping of listen addresses into sockets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use conf::{ConfError, Directive, Span};
use runtime::listener::SoKeepalive;
use runtime::{ListenAddress, ListenOptions};

/// One `listen` directive of one server.
#[derive(Clone, Debug)]
pub struct ListenSpec {
    pub address: ListenAddress,
    pub default_server: bool,
    /// `bind`: a socket of its own even when a wildcard on the same port exists.
    pub bind: bool,
    /// `ssl`: the address speaks TLS.
    pub ssl: bool,
    /// `proxy_protocol`: every connection starts with a PROXY protocol header.
    pub proxy_protocol: bool,
    /// `http2`: HTTP/2 on this address whatever the `http2` directive says (deprecated
    /// by nginx 1.25.1, which warns).
    pub http2: bool,
    /// `quic`: a UDP socket serving HTTP/3 over QUIC (its TLS is QUIC's, so `ssl`, a
    /// TCP matter, is given on another `listen` of the same port).
    pub quic: bool,
    pub options: ListenOptions,
    /// Whether any socket option was given (nginx allows them once per address).
    pub has_socket_options: bool,
    pub span: Span,
}

/// The default when a server has no `listen`: `*:80` for root, `*:8000` otherwise.
pub fn default_listen(span: &Span) -> ListenSpec {
    let port = if rustix::process::geteuid().is_root() {
        80
    } else {
        8000
    };
    ListenSpec {
        address: ListenAddress::Inet(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)),
        default_server: false,
        bind: false,
        ssl: false,
        proxy_protocol: false,
        http2: false,
        quic: false,
        options: ListenOptions::default(),
        has_socket_options: false,
        span: span.clone(),
    }
}

/// Parses `listen ADDRESS [PARAMETERS]`.
/// Parses `listen ADDRESS [PARAMETERS]`; a port range (`127.0.0.1:8000-8003`) gives one
/// listen address per port.
pub fn parse(directive: &Directive) -> Result<Vec<ListenSpec>, ConfError> {
    let span = &directive.span;
    let text = directive.arg(0);
    let mut specs = Vec::new();
    for address_text in expand_port_range(text, span)? {
        let address = parse_address(&address_text, span)?;
        specs.push(parse_one(directive, address)?);
    }
    Ok(specs)
}

/// Writes out `HOST:FIRST-LAST` as one address per port, as nginx does since 1.27.3.
fn expand_port_range(text: &str, span: &Span) -> Result<Vec<String>, ConfError> {
    if text.starts_with("unix:") {
        return Ok(vec![text.to_owned()]);
    }
    let (host, port) = if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        ("", text)
    } else {
        match split_host_port(text) {
            (host, Some(port)) => (host, port),
            (_, None) => return Ok(vec![text.to_owned()]),
        }
    };
    let Some((first, last)) = port.split_once('-') else {
        return Ok(vec![text.to_owned()]);
    };
    let invalid = || {
        ConfError::message(
            format!("invalid port range in \"{text}\" of the \"listen\" directive"),
            span,
        )
    };
    let first: u16 = first.parse().map_err(|_| invalid())?;
    let last: u16 = last.parse().map_err(|_| invalid())?;
    if first == 0 || last < first {
        return Err(invalid());
    }
    Ok((first..=last)
        .map(|port| {
            if host.is_empty() {
                port.to_string()
            } else {
                format!("{host}:{port}")
            }
        })
        .collect())
}

fn parse_one(directive: &Directive, address: ListenAddress) -> Result<ListenSpec, ConfError> {
    let span = &directive.span;
    let mut spec = ListenSpec {
        address,
        default_server: false,
        bind: false,
        ssl: false,
        proxy_protocol: false,
        http2: false,
        quic: false,
        options: ListenOptions::default(),
        has_socket_options: false,
        span: span.clone(),
    };
    for argument in &directive.args[1..] {
        parse_parameter(&mut spec, argument.as_str(), span)?;
    }
    if matches!(spec.address, ListenAddress::Unix(_)) && spec.options.reuseport {
        return Err(ConfError::message(
            "reuseport is not supported on unix sockets",
            span,
        ));
    }
    if spec.quic {
        check_quic(&spec, span)?;
    }
    Ok(spec)
}

fn parse_parameter(spec: &mut ListenSpec, parameter: &str, span: &Span) -> Result<(), ConfError> {
    let invalid = || ConfError::message(format!("invalid parameter \"{parameter}\""), span);
    let (name, value) = match parameter.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (parameter, None),
    };
    match (name, value) {
        ("default_server" | "default", None) => spec.default_server = true,
        ("bind", None) => spec.bind = true,
        ("ssl", None) => spec.ssl = true,
        ("proxy_protocol", None) => spec.proxy_protocol = true,
        ("http2", None) => spec.http2 = true,
        ("quic", None) => {
            spec.quic = true;
            spec.options.datagram = true;
        }
        ("reuseport", None) => {
            spec.options.reuseport = true;
            spec.bind = true;
            spec.has_socket_options = true;
        }
        ("deferred", None) => {
            spec.options.deferred = true;
            spec.bind = true;
            spec.has_socket_options = true;
        }
        ("backlog", Some(value)) => {
            let backlog = value.parse::<i32>().ok().filter(|backlog| *backlog != 0);
            spec.options.backlog = backlog
                .ok_or_else(|| ConfError::message(format!("invalid backlog \"{value}\""), span))?;
            spec.bind = true;
            spec.has_socket_options = true;
        }
        ("rcvbuf" | "sndbuf", Some(value)) => {
            let size = conf::value::parse_size(value)
                .and_then(|size| usize::try_from(size).ok())
                .ok_or_else(|| ConfError::message(format!("invalid {name} \"{value}\""), span))?;
            if name == "rcvbuf" {
                spec.options.rcvbuf = Some(size);
            } else {
                spec.options.sndbuf = Some(size);
            }
            spec.bind = true;
            spec.has_socket_options = true;
        }
        ("ipv6only", Some(value)) => {
            spec.options.ipv6only = match value {
                "on" => true,
                "off" => false,
                _ => {
                    return Err(ConfError::message(
                        format!("invalid ipv6only flags \"{value}\""),
                        span,
                    ));
                }
            };
            spec.bind = true;
            spec.has_socket_options = true;
        }
        ("so_keepalive", Some(value)) => {
            spec.options.so_keepalive = parse_so_keepalive(value).ok_or_else(|| {
                ConfError::message(format!("invalid so_keepalive value: \"{value}\""), span)
            })?;
            spec.bind = true;
            spec.has_socket_options = true;
        }
        _ => return Err(invalid()),
    }
    Ok(())
}

/// The parameters nginx refuses beside `quic`, in its words: TLS over TCP, HTTP/2 and
/// the PROXY protocol are TCP's.
fn check_quic(spec: &ListenSpec, span: &Span) -> Result<(), ConfError> {
    let incompatible = |parameter: &str| {
        ConfError::message(
            format!("\"{parameter}\" parameter is incompatible with \"quic\""),
            span,
        )
    };
    if matches!(spec.address, ListenAddress::Unix(_)) {
        return Err(ConfError::message(
            "\"quic\" parameter is incompatible with unix sockets",
            span,
        ));
    }
    if spec.ssl {
        return Err(incompatible("ssl"));
    }
    if spec.http2 {
        return Err(incompatible("http2"));
    }
    if spec.proxy_protocol {
        return Err(incompatible("proxy_protocol"));
    }
    Ok(())
}

fn parse_so_keepalive(value: &str) -> Option<SoKeepalive> {
    match value {
        "on" => return Some(SoKeepalive::On),
        "off" => return Some(SoKeepalive::Off),
        _ => {}
    }
    let mut parts = value.split(':');
    let (idle, interval, count) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let time = |text: &str| -> Option<Option<Duration>> {
        if text.is_empty() {
            return Some(None);
        }
        conf::value::parse_time_seconds(text).map(Some)
    };
    let count = if count.is_empty() {
        None
    } else {
        Some(count.parse().ok()?)
    };
    let tuned = SoKeepalive::Tuned {
        idle: time(idle)?,
        interval: time(interval)?,
        count,
    };
    if tuned
        == (SoKeepalive::Tuned {
            idle: None,
            interval: None,
            count: None,
        })
    {
        return None;
    }
    Some(tuned)
}

/// `127.0.0.1:8080`, `8080`, `*:8080`, `127.0.0.1`, `[::]:8080`, `localhost:8080`,
/// `unix:/path`.
pub fn parse_address(text: &str, span: &Span) -> Result<ListenAddress, ConfError> {
    if let Some(path) = text.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(ConfError::message(
                format!("no path in the unix domain socket \"{text}\""),
                span,
            ));
        }
        return Ok(ListenAddress::Unix(PathBuf::from(path)));
    }
    let invalid_port = || {
        ConfError::message(
            format!("invalid port in \"{text}\" of the \"listen\" directive"),
            span,
        )
    };
    let port_of = |port: &str| -> Result<u16, ConfError> {
        match port.parse::<u16>() {
            Ok(port) if port > 0 => Ok(port),
            _ => Err(invalid_port()),
        }
    };
    if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() {
        let port = port_of(text)?;
        return Ok(ListenAddress::Inet(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port,
        )));
    }
    let (host, port) = split_host_port(text);
    let port = match port {
        Some(port) => port_of(port)?,
        None => 80,
    };
    if host == "*" || host.is_empty() {
        return Ok(ListenAddress::Inet(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port,
        )));
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let ip: Ipv6Addr = inner.parse().map_err(|_| {
            ConfError::message(
                format!("invalid IPv6 address in \"{text}\" of the \"listen\" directive"),
                span,
            )
        })?;
        return Ok(ListenAddress::Inet(SocketAddr::new(IpAddr::V6(ip), port)));
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(ListenAddress::Inet(SocketAddr::new(IpAddr::V4(ip), port)));
    }
    // A host name is resolved once, at config load, as nginx does; the master may block here.
    let resolved = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next());
    match resolved {
        Some(address) => Ok(ListenAddress::Inet(address)),
        None => Err(ConfError::message(
            format!("host not found in \"{text}\" of the \"listen\" directive"),
            span,
        )),
    }
}

/// Splits `host:port`, `[v6]:port`, `[v6]`, `host`.
fn split_host_port(text: &str) -> (&str, Option<&str>) {
    if text.starts_with('[') {
        return match text.find(']') {
            Some(end) => match text[end + 1..].strip_prefix(':') {
                Some(port) => (&text[..=end], Some(port)),
                None => (text, None),
            },
            None => (text, None),
        };
    }
    match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conf::Argument;

    fn listen(args: &[&str]) -> Result<ListenSpec, String> {
        let directive = Directive {
            name: "listen".to_owned(),
            args: args
                .iter()
                .map(|a| Argument {
                    value: (*a).to_owned(),
                    quoted: false,
                })
                .collect(),
            block: None,
            span: Span::CommandLine,
        };
        let mut specs = parse(&directive).map_err(|error| error.to_string())?;
        assert_eq!(specs.len(), 1, "one address");
        Ok(specs.remove(0))
    }

    fn inet(text: &str) -> ListenAddress {
        ListenAddress::Inet(text.parse().unwrap())
    }

    #[test]
    fn address_forms() {
        assert_eq!(
            listen(&["127.0.0.1:8080"]).unwrap().address,
            inet("127.0.0.1:8080")
        );
        assert_eq!(listen(&["8080"]).unwrap().address, inet("0.0.0.0:8080"));
        assert_eq!(listen(&["*:8080"]).unwrap().address, inet("0.0.0.0:8080"));
        assert_eq!(
            listen(&["127.0.0.1"]).unwrap().address,
            inet("127.0.0.1:80")
        );
        assert_eq!(listen(&["[::]:8080"]).unwrap().address, inet("[::]:8080"));
        assert_eq!(listen(&["[::1]"]).unwrap().address, inet("[::1]:80"));
        assert_eq!(
            listen(&["localhost:8080"]).unwrap().address,
            inet("127.0.0.1:8080")
        );
        assert_eq!(
            listen(&["unix:/tmp/x.sock"]).unwrap().address,
            ListenAddress::Unix(PathBuf::from("/tmp/x.sock"))
        );
    }

    #[test]
    fn port_ranges_give_one_address_per_port() {
        let directive = |text: &str| Directive {
            name: "listen".to_owned(),
            args: vec![Argument {
                value: text.to_owned(),
                quoted: false,
            }],
            block: None,
            span: Span::CommandLine,
        };
        let ports = |text: &str| -> Vec<String> {
            parse(&directive(text))
                .unwrap()
                .iter()
                .map(|spec| spec.address.to_string())
                .collect()
        };
        assert_eq!(
            ports("127.0.0.1:8000-8002"),
            ["127.0.0.1:8000", "127.0.0.1:8001", "127.0.0.1:8002"]
        );
        assert_eq!(ports("[::1]:90-91"), ["[::1]:90", "[::1]:91"]);
        assert_eq!(ports("70-70"), ["0.0.0.0:70"]);
        let error = parse(&directive("127.0.0.1:9-8")).unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid port range in \"127.0.0.1:9-8\" of the \"listen\" directive in command line"
        );
    }

    #[test]
    fn parameters() {
        let spec = listen(&[
            "8080",
            "default_server",
            "reuseport",
            "backlog=1024",
            "deferred",
            "rcvbuf=64k",
            "sndbuf=1m",
            "so_keepalive=30s::10",
        ])
        .unwrap();
        assert!(spec.default_server && spec.bind && spec.has_socket_options);
        assert!(spec.options.reuseport && spec.options.deferred);
        assert_eq!(spec.options.backlog, 1024);
        assert_eq!(spec.options.rcvbuf, Some(65536));
        assert_eq!(spec.options.sndbuf, Some(1024 * 1024));
        assert_eq!(
            spec.options.so_keepalive,
            SoKeepalive::Tuned {
                idle: Some(Duration::from_secs(30)),
                interval: None,
                count: Some(10)
            }
        );
        assert!(!listen(&["8080"]).unwrap().has_socket_options);
    }

    #[test]
    fn errors_use_nginx_wording() {
        assert_eq!(
            listen(&["127.0.0.1:99999"]).unwrap_err(),
            "invalid port in \"127.0.0.1:99999\" of the \"listen\" directive in command line"
        );
        assert_eq!(
            listen(&["127.0.0.1:0"]).unwrap_err(),
            "invalid port in \"127.0.0.1:0\" of the \"listen\" directive in command line"
        );
        assert_eq!(
            listen(&["8080", "fast"]).unwrap_err(),
            "invalid parameter \"fast\" in command line"
        );
        assert_eq!(
            listen(&["no-such-host.invalid:80"]).unwrap_err(),
            "host not found in \"no-such-host.invalid:80\" of the \"listen\" directive in command line"
        );
        assert_eq!(
            listen(&["8080", "backlog=x"]).unwrap_err(),
            "invalid backlog \"x\" in command line"
        );
        assert!(listen(&["unix:/tmp/x", "reuseport"]).is_err());
    }

    #[test]
    fn quic_is_a_datagram_socket_without_tcp_parameters() {
        let spec = listen(&["8443", "quic", "reuseport"]).unwrap();
        assert!(spec.quic && spec.options.datagram && spec.options.reuseport);
        assert!(!listen(&["8443"]).unwrap().options.datagram);
        for parameter in ["ssl", "http2", "proxy_protocol"] {
            assert_eq!(
                listen(&["8443", "quic", parameter]).unwrap_err(),
                format!("\"{parameter}\" parameter is incompatible with \"quic\" in command line")
            );
        }
        assert!(listen(&["unix:/tmp/x", "quic"]).is_err());
    }
}
