//! The words of an `upstream` block's `server` and `least_time` lines, read the same way
//! for the `http` and `stream` blocks (which take a few different parameters), with
//! nginx's error texts.

use std::time::Duration;

use conf::{ConfError, Span};

use crate::Balancer;
use crate::registry::{ServerEntry, split_host_port};

/// Which block's `upstream` a line is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// Takes `route=` and `drain` (for `sticky`); a server without a port is on port 80.
    Http,
    /// A server names its port, unless it is a Unix socket or a `service=`.
    Stream,
}

/// Reads `server ADDRESS [weight=N] [max_fails=N] [fail_timeout=TIME] [max_conns=N]
/// [backup] [down] [resolve] [service=NAME]` (and `route=`, `drain` in `http`).
/// `allows_backup` says whether the balancer declared so far takes `backup` servers.
pub fn read_server(
    args: &[&str],
    span: &Span,
    allows_backup: bool,
    block: Block,
) -> Result<ServerEntry, ConfError> {
    let address = args.first().copied().unwrap_or_default();
    let mut server = ServerEntry {
        address: address.to_owned(),
        weight: 1,
        max_fails: 1,
        fail_timeout: Duration::from_secs(10),
        max_conns: 0,
        backup: false,
        down: false,
        resolve: false,
        service: None,
        route: None,
        drain: false,
        span: span.clone(),
    };
    for text in args.iter().skip(1).copied() {
        let invalid = || ConfError::message(format!("invalid parameter \"{text}\""), span);
        let number = |value: &str| {
            conf::value::parse_number(value)
                .and_then(|number| u32::try_from(number).ok())
                .ok_or_else(invalid)
        };
        let http = block == Block::Http;
        if let Some(value) = text.strip_prefix("weight=") {
            server.weight = Some(number(value)?)
                .filter(|weight| *weight > 0)
                .ok_or_else(invalid)?;
        } else if let Some(value) = text.strip_prefix("max_fails=") {
            server.max_fails = number(value)?;
        } else if let Some(value) = text.strip_prefix("max_conns=") {
            server.max_conns = number(value)?;
        } else if let Some(value) = text.strip_prefix("fail_timeout=") {
            server.fail_timeout = conf::value::parse_time(value).ok_or_else(invalid)?;
        } else if text == "backup" {
            if !allows_backup {
                return Err(ConfError::message(
                    "balancing method does not support parameter \"backup\"",
                    span,
                ));
            }
            server.backup = true;
        } else if text == "down" {
            server.down = true;
        } else if text == "resolve" {
            server.resolve = true;
        } else if let Some(service) = text.strip_prefix("service=") {
            if service.is_empty() {
                return Err(invalid());
            }
            server.service = Some(service.to_owned());
        } else if http && text == "drain" {
            server.drain = true;
        } else if let Some(route) = text.strip_prefix("route=").filter(|_| http) {
            if route.is_empty() || route.len() > 32 {
                return Err(ConfError::message(
                    format!("invalid route \"{route}\""),
                    span,
                ));
            }
            server.route = Some(route.to_owned());
        } else {
            return Err(invalid());
        }
    }
    let (host, port) = split_host_port(address, span, "upstream")?;
    match (&server.service, port) {
        (Some(_), _) if !server.resolve => Err(ConfError::message(
            format!("service upstream \"{address}\" requires \"resolve\""),
            span,
        )),
        (Some(_), Some(_)) => Err(ConfError::message(
            format!("service upstream \"{address}\" may not have port"),
            span,
        )),
        (None, None) if block == Block::Stream && !host.starts_with("unix:") => Err(
            ConfError::message(format!("no port in upstream \"{address}\""), span),
        ),
        _ => Ok(server),
    }
}

/// Reads `least_time MEASURE [inflight]`: `header` or `last_byte` in `http`, `connect`,
/// `first_byte` or `last_byte` in `stream`.
pub fn read_least_time<K>(
    args: &[&str],
    span: &Span,
    block: Block,
) -> Result<Balancer<K>, ConfError> {
    let invalid = |text: &str| ConfError::message(format!("invalid parameter \"{text}\""), span);
    let first = args.first().copied().unwrap_or_default();
    let measure = match (block, first) {
        (Block::Http, "header") | (Block::Stream, "first_byte") => TimeMeasure::FirstByte,
        (Block::Stream, "connect") => TimeMeasure::Connect,
        (_, "last_byte") => TimeMeasure::LastByte,
        (_, other) => return Err(invalid(other)),
    };
    let inflight = match args.get(1).copied() {
        None => false,
        Some("inflight") => true,
        Some(other) => return Err(invalid(other)),
    };
    Ok(Balancer::LeastTime { measure, inflight })
}

/// What `least_time` measures of a try, from when it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeMeasure {
    /// Until the connection is open (`stream`'s `connect`).
    Connect,
    /// Until the response head (`http`'s `header`) or the upstream's first byte
    /// (`stream`'s `first_byte`).
    FirstByte,
    /// Until the last byte of the response, or the end of the session.
    LastByte,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span() -> Span {
        Span::file(std::sync::Arc::from(std::path::Path::new("t.conf")), 3)
    }

    fn message(result: Result<ServerEntry, ConfError>) -> String {
        result.map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn stream_servers_name_a_port_unless_a_service_or_a_socket() {
        let read = |args: &[&str]| read_server(args, &span(), true, Block::Stream);
        assert!(message(read(&["example.net"])).contains("no port in upstream \"example.net\""));
        assert!(read(&["unix:/tmp/s"]).is_ok());
        let service = read(&["example.net", "resolve", "service=http"]).expect("a service");
        assert_eq!(
            (service.resolve, service.service.as_deref()),
            (true, Some("http"))
        );
        assert!(
            message(read(&["example.net:80", "resolve", "service=http"]))
                .contains("service upstream \"example.net:80\" may not have port")
        );
        assert!(
            message(read(&["example.net", "service=http"]))
                .contains("service upstream \"example.net\" requires \"resolve\"")
        );
        // `route=` and `drain` are the http block's (`sticky`).
        assert!(message(read(&["a:1", "drain"])).contains("invalid parameter \"drain\""));
        assert!(message(read(&["a:1", "route=x"])).contains("invalid parameter \"route=x\""));
    }

    #[test]
    fn http_servers_take_routes_and_default_to_port_80() {
        let read = |args: &[&str]| read_server(args, &span(), true, Block::Http);
        let server = read(&["example.net", "route=a", "drain", "weight=3"]).expect("valid");
        assert_eq!(
            (server.route.as_deref(), server.drain, server.weight),
            (Some("a"), true, 3)
        );
        assert!(message(read(&["a", "weight=0"])).contains("invalid parameter \"weight=0\""));
        assert!(message(read(&["a", "max_fails=-1"])).contains("invalid parameter"));
    }

    #[test]
    fn backup_needs_a_balancer_that_takes_it() {
        let refused = read_server(&["a:1", "backup"], &span(), false, Block::Stream);
        assert!(message(refused).contains("does not support parameter \"backup\""));
    }

    #[test]
    fn least_time_measures_what_each_block_names() {
        let read = |args: &[&str], block| {
            read_least_time::<()>(args, &span(), block).map(|balancer| match balancer {
                Balancer::LeastTime { measure, inflight } => (measure, inflight),
                _ => unreachable!("least_time reads a least_time balancer"),
            })
        };
        assert_eq!(
            read(&["connect"], Block::Stream).ok(),
            Some((TimeMeasure::Connect, false))
        );
        assert_eq!(
            read(&["first_byte", "inflight"], Block::Stream).ok(),
            Some((TimeMeasure::FirstByte, true))
        );
        assert_eq!(
            read(&["header"], Block::Http).ok(),
            Some((TimeMeasure::FirstByte, false))
        );
        assert_eq!(
            read(&["last_byte"], Block::Http).ok(),
            Some((TimeMeasure::LastByte, false))
        );
        assert!(read(&["header"], Block::Stream).is_err());
        assert!(read(&["connect"], Block::Http).is_err());
        assert!(read(&["last_byte", "later"], Block::Http).is_err());
    }
}
