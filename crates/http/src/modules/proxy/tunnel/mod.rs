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

/// The head a connected tunnel answers with: the relay starts behind it. Nothing is read
/// from the peer before the relay; the proxy's exchange stands this in for its head.
pub(crate) const CONNECTED_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::CONNECTED_HEAD;

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
