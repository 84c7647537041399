//! `$http3`: `h3` on an HTTP/3 request, empty otherwise.

use crate::kernel::variables::evaluate::VariableDef;

pub const VARIABLES: &[VariableDef] = &[VariableDef {
    name: "http3",
    prefix: false,
    get: |variables, _, out| {
        // Only an HTTP/3 stream's head says HTTP/3.0: HTTP/1 refuses that version.
        if variables.request.protocol() == b"HTTP/3.0" {
            out.extend_from_slice(b"h3");
        }
        true
    },
}];
