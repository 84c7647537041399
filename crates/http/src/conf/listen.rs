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
        options: ListenOptions::default(),
        has_socket_options: false,
        span: span.clone(),
    }
}

/// Parses `listen ADDRESS [PARAMETERS]`.
pub fn parse(directive: &Directive) -> Result<ListenSpec, ConfError> {
    let span = &directive.span;
    let text = directive.arg(0);
    let address = parse_address(text, span)?;
    let mut spec = ListenSpec {
        address,
        default_server: false,
        bind: false,
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
        parse(&directive).map_err(|error| error.to_string())
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
}
