//! `set_real_ip_from`, `real_ip_header`, `real_ip_recursive` (nginx's
//! ngx_http_realip_module): the client's address taken from a header or the PROXY
//! protocol when the connection comes from a trusted address.
//!
//! nginx runs the module twice: after the head is read, with the server's settings (so a
//! server-level `return` already sees the real address), and again in the preaccess
//! phase with the location's, for a request the first run left alone. Once it has
//! changed the address it does not look again for the rest of the request, internal
//! redirects included. The address found replaces the client's for everything that
//! follows, through [`ConnectionInfo::peer`]; the connection takes the socket's address
//! back when the request ends.

pub mod directives;
pub mod settings;
pub mod variables;

use std::net::{IpAddr, SocketAddr};

use runtime::PeerAddress;

use crate::kernel::conf::ServerId;
use crate::kernel::module_state::ModuleState;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::worker::HttpWorker;
pub use settings::{RealIp, RealIpConf, RealIpHeader};
pub use shared::realip::Trusted;

/// The post-read run, with the settings of `server`'s own level.
pub fn post_read(
    worker: &HttpWorker,
    server: ServerId,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
) {
    let conf = worker.conf();
    let settings = &conf.location(conf.server(server).location).settings.realip;
    apply(settings, connection, request);
}

/// The module's state in a request: it changed the client's address, and does not look
/// again in this request.
struct Applied;

impl ModuleState for Applied {}

/// Replaces the client's address for this request when `settings` say whom to trust and
/// where to look, and what is found there is an address.
pub fn apply(settings: &RealIp, connection: &ConnectionInfo, request: &mut Request<'_>) {
    if settings.from.is_empty() || request.modules.get::<Applied>().is_some() {
        return;
    }
    let peer = connection.peer.get();
    if !settings.from.contains(&peer) {
        return;
    }
    let found = match &settings.header {
        RealIpHeader::ProxyProtocol => connection.proxy_protocol.as_ref().and_then(|header| {
            let ip = std::str::from_utf8(&header.source_addr).ok()?;
            let ip: IpAddr = ip.parse().ok()?;
            Some(SocketAddr::new(ip, header.source_port))
        }),
        RealIpHeader::XForwardedFor => {
            let mut list = Vec::new();
            for value in request.headers(b"x-forwarded-for") {
                if !list.is_empty() {
                    list.extend_from_slice(b", ");
                }
                list.extend_from_slice(value);
            }
            forwarded_address(&list, peer, settings)
        }
        RealIpHeader::XRealIp => request
            .headers(b"x-real-ip")
            .next()
            .and_then(|value| forwarded_address(value, peer, settings)),
        RealIpHeader::Other(name) => request
            .headers(name)
            .next()
            .and_then(|value| forwarded_address(value, peer, settings)),
    };
    if let Some(address) = found {
        connection.peer.set(PeerAddress::Inet(address));
        request.modules.set(Applied);
    }
}

/// The client's address in a list of addresses separated by commas and spaces, as nginx
/// reads `X-Forwarded-For`: the last one, or with `real_ip_recursive on`, the last one
/// that is not trusted, walking from the right (the leftmost when all are). An element
/// that is not an address ends the walk: without a step taken, nothing is changed.
fn forwarded_address(list: &[u8], peer: PeerAddress, settings: &RealIp) -> Option<SocketAddr> {
    let mut current: Option<SocketAddr> = None;
    let mut trusted = settings.from.contains(&peer);
    let mut elements = list
        .split(|&byte| byte == b',' || byte == b' ')
        .filter(|element| !element.is_empty())
        .rev();
    while trusted {
        let Some(element) = elements.next() else {
            break;
        };
        let Some(address) = parse_address(element) else {
            break;
        };
        current = Some(address);
        if !settings.recursive {
            break;
        }
        trusted = settings.from.contains(&PeerAddress::Inet(address));
    }
    current
}

/// An address with an optional port, as nginx's `ngx_parse_addr_port` reads one:
/// `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1` or `[2001:db8::1]:80`. No port is port 0.
fn parse_address(text: &[u8]) -> Option<SocketAddr> {
    let text = std::str::from_utf8(text).ok()?;
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, 0));
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (ip, port) = rest.split_once(']')?;
        let ip: IpAddr = ip.parse().ok()?;
        let port = match port {
            "" => 0,
            port => parse_port(port.strip_prefix(':')?)?,
        };
        return Some(SocketAddr::new(ip, port));
    }
    let (ip, port) = text.rsplit_once(':')?;
    let ip: std::net::Ipv4Addr = ip.parse().ok()?;
    Some(SocketAddr::new(IpAddr::V4(ip), parse_port(port)?))
}

fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|port| *port != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::access::parse_target;

    fn settings(from: &[&str], recursive: bool) -> RealIp {
        let mut trusted = Trusted::default();
        for text in from {
            trusted.push(parse_target(text).unwrap().target);
        }
        RealIp {
            from: trusted,
            header: RealIpHeader::XForwardedFor,
            recursive,
        }
    }

    fn peer(text: &str) -> PeerAddress {
        PeerAddress::Inet(SocketAddr::new(text.parse().unwrap(), 5000))
    }

    fn found(list: &str, settings: &RealIp) -> Option<String> {
        forwarded_address(list.as_bytes(), peer("127.0.0.1"), settings)
            .map(|address| address.to_string())
    }

    #[test]
    fn last_address_without_recursion() {
        let off = settings(&["127.0.0.1/32", "10.0.1.0/24"], false);
        assert_eq!(found("10.0.0.1, 192.0.2.1", &off).unwrap(), "192.0.2.1:0");
        assert_eq!(
            found("192.0.2.1, 10.0.1.1, 127.0.0.1", &off).unwrap(),
            "127.0.0.1:0"
        );
        assert_eq!(found("192.0.2.1:8080", &off).unwrap(), "192.0.2.1:8080");
        assert_eq!(found("[2001:db8::1]:81", &off).unwrap(), "[2001:db8::1]:81");
        assert_eq!(found("2001:db8::1 ,, ", &off).unwrap(), "[2001:db8::1]:0");
        assert_eq!(found("192.0.2.1, junk", &off), None);
        assert_eq!(found("", &off), None);
    }

    #[test]
    fn recursion_skips_trusted_addresses_from_the_right() {
        let on = settings(&["127.0.0.1/32", "10.0.1.0/24"], true);
        assert_eq!(
            found("10.0.1.1, 192.0.2.1, 127.0.0.1", &on).unwrap(),
            "192.0.2.1:0"
        );
        // All trusted: the leftmost.
        assert_eq!(found("10.0.1.2, 10.0.1.1", &on).unwrap(), "10.0.1.2:0");
        // A bad element stops the walk at the last good one.
        assert_eq!(found("junk, 10.0.1.1", &on).unwrap(), "10.0.1.1:0");
    }

    #[test]
    fn untrusted_peer_changes_nothing() {
        let off = settings(&["10.0.0.0/8"], false);
        assert_eq!(found("192.0.2.1", &off), None);
    }

    #[test]
    fn trusted_unix_and_mapped_addresses() {
        let unix = settings(&["unix:"], false);
        assert!(unix.from.contains(&PeerAddress::Unix));
        assert!(!unix.from.contains(&peer("127.0.0.1")));
        let inet = settings(&["127.0.0.0/8"], false);
        assert!(inet.from.contains(&peer("::ffff:127.0.0.2")));
        assert!(!inet.from.contains(&PeerAddress::Unix));
    }
}
