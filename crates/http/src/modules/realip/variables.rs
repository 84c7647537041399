//! `$realip_remote_addr` and `$realip_remote_port`: the socket's peer, whatever address
//! realip found in a header.

use logging::time::push_number;
use runtime::PeerAddress;

use crate::kernel::request::write_peer;
use crate::kernel::variables::evaluate::VariableDef;

pub const VARIABLES: &[VariableDef] = &[
    VariableDef {
        name: "realip_remote_addr",
        prefix: false,
        get: |variables, _, out| {
            write_peer(out, &variables.connection.socket_peer);
            true
        },
    },
    VariableDef {
        name: "realip_remote_port",
        prefix: false,
        get: |variables, _, out| {
            if let PeerAddress::Inet(address) = variables.connection.socket_peer {
                push_number(out, address.port().into(), 1);
            }
            true
        },
    },
];
