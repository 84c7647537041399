//! The HTTP tunnel: `tunnel_pass` answers a CONNECT request by opening a TCP connection
//! to the address it names (`$host:$request_port` unless told otherwise), then relays
//! bytes both ways. It is the proxy's upstream engine with nothing on the wire before the
//! relay: peers, tries (`tunnel_next_upstream*`), the resolver, `error_page` for its
//! 502 and 504, and the relay of an upgraded connection are the proxy's.
//!
//! Once a peer accepts the connection the client gets `200 OK` at once (no body framing,
//! `Connection: close`) and the connection is the tunnel's until either side closes or
//! nothing moves for `tunnel_read_timeout` (`send::tunnel`).

pub mod directives;

use logging::Level;

use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::worker::HttpWorker;

/// The head a connected tunnel answers with: the relay starts behind it. Nothing is read
/// from the peer before the relay; the proxy's exchange stands this in for its head.
pub(crate) const CONNECTED_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\n\r\n";

/// The host of a tunnel address (`http://` before it, as the proxy keeps it) that names
/// no port: such an address must name an `upstream` group (nginx's `no port in
/// upstream`). `None` when a port is given, or for a Unix socket.
pub(crate) fn host_without_port(url: &[u8]) -> Option<&[u8]> {
    let address = url.strip_prefix(b"http://").unwrap_or(url);
    if address.starts_with(b"unix:") {
        return None;
    }
    let after_host = match address.first() {
        Some(b'[') => memchr::memchr(b']', address).map_or(address.len(), |close| close + 1),
        _ => memchr::memchr(b':', address).unwrap_or(address.len()),
    };
    (after_host == address.len()).then_some(address)
}

/// A tunnel address made by variables without a port must name an `upstream` group;
/// else nginx's error line and 500.
#[cold]
pub(crate) fn check_port(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    url: &[u8],
) -> Result<(), u16> {
    let Some(host) = host_without_port(url) else {
        return Ok(());
    };
    let host = String::from_utf8_lossy(host);
    if worker.conf().find_upstream(&host, None, 0).is_some() {
        return Ok(());
    }
    log(
        worker,
        info,
        request,
        Level::Error,
        format_args!("no port in upstream \"{host}\""),
    );
    Err(500)
}

#[cfg(test)]
mod tests {
    use super::{CONNECTED_HEAD, host_without_port};

    #[test]
    fn an_address_without_a_port_is_found() {
        assert_eq!(host_without_port(b"http://backend"), Some(&b"backend"[..]));
        assert_eq!(host_without_port(b"http://[::1]"), Some(&b"[::1]"[..]));
        assert_eq!(host_without_port(b"http://backend:443"), None);
        assert_eq!(host_without_port(b"http://[::1]:443"), None);
        assert_eq!(host_without_port(b"http://unix:/run/socket"), None);
    }

    #[test]
    fn connected_head_is_a_bodyless_200() {
        let head = crate::modules::proxy::response::parse(CONNECTED_HEAD)
            .expect("valid")
            .expect("whole");
        assert_eq!(head.status, 200);
        assert_eq!(head.len, CONNECTED_HEAD.len());
        assert!(head.fields.is_empty());
    }
}
