//! The proxy module's variables: `$proxy_host`, `$proxy_port`,
//! `$proxy_add_x_forwarded_for`, and the slice's `$slice_range`.

use crate::kernel::request::write_peer;
use crate::kernel::variables::evaluate::VariableDef;

pub const VARIABLES: &[VariableDef] = &[
    VariableDef {
        name: "proxy_host",
        prefix: false,
        get: |variables, _, out| {
            out.extend_from_slice(&variables.request.upstream.proxy_host);
            true
        },
    },
    VariableDef {
        name: "proxy_port",
        prefix: false,
        get: |variables, _, out| {
            out.extend_from_slice(&variables.request.upstream.proxy_port);
            true
        },
    },
    VariableDef {
        name: "proxy_add_x_forwarded_for",
        prefix: false,
        get: |variables, _, out| {
            // The client's `X-Forwarded-For` fields, then its address.
            for value in variables.request.headers(b"x_forwarded_for") {
                out.extend_from_slice(value);
                out.extend_from_slice(b", ");
            }
            write_peer(out, &variables.connection.peer.get());
            true
        },
    },
    VariableDef {
        name: "slice_range",
        prefix: false,
        get: |variables, _, out| {
            if let Some((first, last)) = variables.request.upstream.slice {
                out.extend_from_slice(format!("bytes={first}-{last}").as_bytes());
            }
            true
        },
    },
];
