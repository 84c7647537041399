//! `$http2`: `h2` over TLS, `h2c` in cleartext, empty for HTTP/1.

use crate::kernel::variables::evaluate::VariableDef;

pub const VARIABLES: &[VariableDef] = &[VariableDef {
    name: "http2",
    prefix: false,
    get: |variables, _, out| {
        // Only an HTTP/2 stream's head says HTTP/2.0: HTTP/1 refuses that version.
        if variables.request.protocol() == b"HTTP/2.0" {
            match variables.connection.tls {
                Some(_) => out.extend_from_slice(b"h2"),
                None => out.extend_from_slice(b"h2c"),
            }
        }
        true
    },
}];
