//! HTTP/2 (nginx's `ngx_http_v2_module`): its directives and the settings they fill, and
//! the [`http2::connection::Config`] a connection is built with. The connection driver
//! comes next (ARCHITECTURE.md, "HTTP/2", the wiring plan).

pub mod directives;
pub mod settings;
