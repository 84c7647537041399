//! The target of a `proxy_pass` with variables: an `upstream` group by name, a literal
//! address, or the addresses `resolver` finds.

use std::time::Duration;

use crate::kernel::conf::HttpConf;
use crate::kernel::upstream::{Balancer, Group, Peer, PeerAddr};
use crate::modules::proxy::Proxy;
use crate::modules::proxy::handler::GroupRef;
use crate::modules::proxy::pass::{host_header, literal_address, parse_url};

/// The target of a `proxy_pass` with variables.
pub(super) struct Resolved<'a> {
    pub group: GroupRef<'a>,
    /// `$proxy_host` and `$proxy_port`.
    pub host: Vec<u8>,
    pub port: Vec<u8>,
    /// The URL's URI part.
    pub uri: Option<Vec<u8>>,
    /// `https://`
    pub tls: bool,
}

/// A `proxy_pass` with variables: a group by name (and port), else a literal address,
/// else the addresses the location's `resolver` finds for the name. A failure is the
/// status and the message to log.
pub(super) async fn resolve_variable_url<'a>(
    conf: &'a HttpConf,
    proxy: &Proxy,
    url: &[u8],
    notes: &mut Vec<shared::resolver::Note>,
) -> Result<Resolved<'a>, (u16, String)> {
    let text = String::from_utf8_lossy(url);
    let parsed = parse_url(&text).map_err(|error| match error {
        crate::modules::proxy::pass::UrlError::Prefix => {
            (500, format!("invalid URL prefix in \"{text}\""))
        }
        other => (500, other.message(&text)),
    })?;
    let host = host_header(parsed.host, parsed.port, parsed.tls).to_vec();
    let port = parsed.port_or_default().to_string().into_bytes();
    let uri = parsed.uri.map(|uri| uri.as_bytes().to_vec());
    if let Some((_, group)) = conf.find_upstream(parsed.host, parsed.port, parsed.port_or_default())
    {
        return Ok(Resolved {
            group: GroupRef::Conf(group),
            host,
            port,
            uri,
            tls: parsed.tls,
        });
    }
    let addresses = match literal_address(parsed.host, parsed.port_or_default()) {
        Some(address) => vec![address],
        None => {
            let Some(resolver) = &proxy.resolver else {
                return Err((
                    502,
                    format!("no resolver defined to resolve {}", parsed.host),
                ));
            };
            let found =
                shared::resolver::resolve(resolver, proxy.resolver_timeout, parsed.host, notes)
                    .await
                    .map_err(|error| {
                        (
                            502,
                            format!(
                                "{} could not be resolved ({}: {})",
                                parsed.host, error.code, error.text
                            ),
                        )
                    })?;
            found
                .into_iter()
                .map(|ip| PeerAddr::Inet(std::net::SocketAddr::new(ip, parsed.port_or_default())))
                .collect()
        }
    };
    let peers = addresses
        .into_iter()
        .map(|address| Peer {
            name: address.to_string().into(),
            server: address.to_string().into(),
            address,
            weight: 1,
            max_fails: 1,
            fail_timeout: Duration::from_secs(10),
            max_conns: 0,
            down: false,
            route: None,
            drain: false,
        })
        .collect();
    let host = if parsed.host.starts_with("unix:") {
        b"localhost".to_vec()
    } else {
        host
    };
    let group = Group::new(
        parsed.host.into(),
        peers,
        Vec::new(),
        Balancer::RoundRobin,
        None,
        true,
        parsed.port,
    );
    Ok(Resolved {
        group: GroupRef::Own(Box::new(group)),
        host,
        port,
        uri,
        tls: parsed.tls,
    })
}
