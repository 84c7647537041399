//! HTTP/2 (nginx's `ngx_http_v2_module`): its directives and the settings they fill, the
//! [`http2::connection::Config`] a connection is built with, and the h2c connection
//! driver (`connection.rs`, `stream.rs`; like the HTTP/1 connection loop, assembly).

pub mod directives;
pub mod settings;
pub mod variables;
