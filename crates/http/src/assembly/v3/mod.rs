//! The HTTP/3 driver: a `listen ... quic` socket's endpoint on a worker (`socket`), its
//! streams' requests (`stream`) and their request bodies (`body`). The module's
//! directives and settings are `modules::v3`; QUIC and the HTTP/3 codec are the `quic`
//! and `http3` crates.

mod body;
pub mod socket;
mod stream;
