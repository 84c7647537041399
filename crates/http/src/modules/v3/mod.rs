//! HTTP/3 (nginx's `ngx_http_v3_module`): its directives, the settings they fill, the
//! endpoint configuration a `listen ... quic` socket is served with, and `$http3`. The
//! QUIC socket's loop and the streams' requests are assembly (`assembly/v3`).

pub mod directives;
pub mod settings;
pub mod variables;
