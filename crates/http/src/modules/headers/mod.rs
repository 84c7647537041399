//! The headers module (nginx's ngx_http_headers_module): `add_header`, `add_trailer` and
//! `expires`.

pub mod directives;
pub mod expires;
pub mod settings;

pub use settings::{AddHeader, Headers, HeadersConf, status_takes_added_headers};
pub use settings::{Expires, ExpiresValue};
