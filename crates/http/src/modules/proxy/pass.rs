//! `proxy_pass URL`: the URL as written, or a template evaluated per request.

use conf::{ConfError, Span};

use crate::kernel::conf::{Location, LocationKind};
use crate::kernel::upstream::PeerAddr;
use crate::kernel::upstream::registry::split_host_port;
use crate::modules::proxy::settings::{ProxyPass, Target};

/// A URL split into its parts (at load or per request).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Url<'u> {
    /// The host as written (a name, an IP literal, `[v6]`, or `unix:/path`).
    pub host: &'u str,
    pub port: Option<u16>,
    pub uri: Option<&'u str>,
    /// `https://`
    pub tls: bool,
}

impl Url<'_> {
    /// The port, or the scheme's default.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(if self.tls { 443 } else { 80 })
    }
}

/// Why a URL is refused, in nginx's words.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum UrlError {
    Prefix,
    Port,
    NoHost,
}

/// Splits `http://host[:port][/uri]` or `http://unix:/path[:/uri]`.
pub(crate) fn parse_url(url: &str) -> Result<Url<'_>, UrlError> {
    let (rest, tls) = if url.len() >= 7 && url[..7].eq_ignore_ascii_case("http://") {
        (&url[7..], false)
    } else if url.len() >= 8 && url[..8].eq_ignore_ascii_case("https://") {
        (&url[8..], true)
    } else {
        return Err(UrlError::Prefix);
    };
    if rest.len() >= 5 && rest[..5].eq_ignore_ascii_case("unix:") {
        return Ok(match rest[5..].find(':') {
            Some(colon) => Url {
                host: &rest[..5 + colon],
                port: None,
                uri: Some(&rest[5 + colon + 1..]).filter(|uri| !uri.is_empty()),
                tls,
            },
            None => Url {
                host: rest,
                port: None,
                uri: None,
                tls,
            },
        });
    }
    let (authority, uri) = match rest.find(['/', '?']) {
        Some(slash) => (&rest[..slash], Some(&rest[slash..])),
        None => (rest, None),
    };
    if authority.is_empty() {
        return Err(UrlError::NoHost);
    }
    let (host, port) = split_authority(authority)?;
    Ok(Url {
        host,
        port,
        uri,
        tls,
    })
}

fn split_authority(authority: &str) -> Result<(&str, Option<u16>), UrlError> {
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(close) => match authority[close + 1..].strip_prefix(':') {
                Some(port) => (&authority[..=close], Some(port)),
                None if close + 1 == authority.len() => (authority, None),
                None => return Err(UrlError::Port),
            },
            None => return Err(UrlError::NoHost),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(UrlError::NoHost);
    }
    let port = match port {
        None => None,
        Some(text) => Some(
            text.parse::<u16>()
                .ok()
                .filter(|port| *port != 0 && text.bytes().all(|byte| byte.is_ascii_digit()))
                .ok_or(UrlError::Port)?,
        ),
    };
    Ok((host, port))
}

impl UrlError {
    pub fn message(&self, url: &str) -> String {
        match self {
            UrlError::Prefix => "invalid URL prefix".to_owned(),
            UrlError::Port => format!("invalid port in upstream \"{url}\""),
            UrlError::NoHost => format!("no host in upstream \"{url}\""),
        }
    }
}

/// `$proxy_host` for a host and optional port: the port is shown unless it is the
/// scheme's default (80, or 443 for `https`).
pub(crate) fn host_header(host: &str, port: Option<u16>, tls: bool) -> Box<[u8]> {
    let default = if tls { 443 } else { 80 };
    match port {
        Some(port) if port != default => format!("{host}:{port}").into_bytes().into(),
        _ => host.as_bytes().into(),
    }
}

/// A literal address for a `proxy_pass` with variables that names no group.
pub(crate) fn literal_address(host: &str, port: u16) -> Option<PeerAddr> {
    if let Some(path) = host.strip_prefix("unix:") {
        return Some(PeerAddr::Unix(path.into()));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ip = bare.parse::<std::net::IpAddr>().ok()?;
    Some(PeerAddr::Inet(std::net::SocketAddr::new(ip, port)))
}

/// Parses a `proxy_pass` without variables and registers its group.
pub(crate) fn load_target(
    url: &str,
    span: &Span,
    upstreams: &mut crate::kernel::upstream::UpstreamRegistry,
) -> Result<Target, ConfError> {
    load_target_with(url, span, upstreams, DefaultPort::Scheme)
}

/// The port an address without one connects to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DefaultPort {
    /// The scheme's (80, or 443 for `https`).
    Scheme,
    /// None: the address must name an `upstream` block (`tunnel_pass`), else the
    /// configuration fails with `no port in upstream`.
    Required,
}

/// [`load_target`], with the port an address without one gets.
pub(crate) fn load_target_with(
    url: &str,
    span: &Span,
    upstreams: &mut crate::kernel::upstream::UpstreamRegistry,
    default_port: DefaultPort,
) -> Result<Target, ConfError> {
    let parsed = parse_url(url).map_err(|error| ConfError::message(error.message(url), span))?;
    if !parsed.host.starts_with("unix:") {
        // The same checks `server` lines get.
        split_host_port(parsed.host, span, "upstream")?;
    }
    let default = match default_port {
        DefaultPort::Scheme => parsed.port_or_default(),
        DefaultPort::Required => crate::kernel::upstream::registry::NO_PORT,
    };
    let upstream = upstreams.reference(parsed.host, parsed.port, default, span)?;
    Ok(Target {
        url: url.into(),
        upstream,
        host: if parsed.host.starts_with("unix:") {
            b"localhost".as_slice().into()
        } else {
            host_header(parsed.host, parsed.port, parsed.tls)
        },
        port: parsed.port_or_default().to_string().into_bytes().into(),
        uri: parsed.uri.map(|uri| uri.as_bytes().into()),
        tls: parsed.tls,
        span: span.clone(),
    })
}

/// A `proxy_pass` URL with a URI part needs a location prefix to replace.
pub(crate) fn check_uri_parts(locations: &[Location]) -> Result<(), ConfError> {
    for location in locations {
        let Some(pass) = location.settings.proxy.pass.as_deref() else {
            continue;
        };
        let ProxyPass::Static(target) = pass else {
            continue;
        };
        let without_prefix = matches!(
            location.kind,
            LocationKind::Regex(_) | LocationKind::Named(_) | LocationKind::Block { .. }
        );
        // An `if` or `limit_except` block inherits its location's `proxy_pass` (the same
        // one, shared): that one was checked where it was written.
        let is_block = |location: &Location| matches!(location.kind, LocationKind::Block { .. });
        let own = !is_block(location)
            || !locations.iter().any(|other| {
                !is_block(other)
                    && other
                        .settings
                        .proxy
                        .pass
                        .as_ref()
                        .is_some_and(|other| std::ptr::eq(&**other, pass))
            });
        if target.uri.is_some() && without_prefix && own {
            return Err(ConfError::message(
                concat!(
                    "\"proxy_pass\" cannot have URI part in location given by regular expression, ",
                    "or inside named location, or inside \"if\" statement, ",
                    "or inside \"limit_except\" block"
                ),
                &target.span,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_like_nginx() {
        assert_eq!(
            parse_url("http://127.0.0.1:8081/path/").unwrap(),
            Url {
                host: "127.0.0.1",
                port: Some(8081),
                uri: Some("/path/"),
                tls: false
            }
        );
        assert_eq!(
            parse_url("HTTP://backend").unwrap(),
            Url {
                host: "backend",
                port: None,
                uri: None,
                tls: false
            }
        );
        assert_eq!(
            parse_url("http://[::1]:80/").unwrap(),
            Url {
                host: "[::1]",
                port: Some(80),
                uri: Some("/"),
                tls: false
            }
        );
        assert_eq!(
            parse_url("http://unix:/tmp/sock:/uri").unwrap(),
            Url {
                host: "unix:/tmp/sock",
                port: None,
                uri: Some("/uri"),
                tls: false
            }
        );
        assert_eq!(parse_url("ftp://x"), Err(UrlError::Prefix));
        assert_eq!(
            parse_url("https://x").map(|url| (url.tls, url.port_or_default())),
            Ok((true, 443))
        );
        assert_eq!(parse_url("http://x:0/"), Err(UrlError::Port));
        assert_eq!(parse_url("http://x:http/"), Err(UrlError::Port));
        assert_eq!(parse_url("http:///"), Err(UrlError::NoHost));
    }

    #[test]
    fn host_header_shows_ports_other_than_80() {
        assert_eq!(&*host_header("a", Some(80), false), b"a");
        assert_eq!(&*host_header("a", None, false), b"a");
        assert_eq!(&*host_header("a", Some(8080), false), b"a:8080");
        assert_eq!(&*host_header("a", Some(443), true), b"a");
        assert_eq!(&*host_header("a", Some(80), true), b"a:80");
    }
}
