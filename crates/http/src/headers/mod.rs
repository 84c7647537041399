//! `add_header`: extra response headers (nginx's ngx_http_headers_module).

pub mod directives;

use crate::settings;
use crate::variables::HttpTemplate;

/// One `add_header NAME VALUE [always]`.
#[derive(Clone, Debug)]
pub struct AddHeader {
    pub name: Box<[u8]>,
    pub value: HttpTemplate,
    /// Without `always`, nginx adds the header only to these statuses.
    pub always: bool,
}

settings! {
    /// A level with its own `add_header` replaces the enclosing level's list entirely,
    /// as in nginx; several `add_header` at one level accumulate.
    pub struct HeadersConf => Headers (env) {
        /// `add_header`
        add_header: Vec<AddHeader> = Vec::new(),
    }
}

/// The statuses `add_header` without `always` applies to.
pub fn status_takes_added_headers(status: u16) -> bool {
    matches!(
        status,
        200 | 201 | 204 | 206 | 301 | 302 | 303 | 304 | 307 | 308
    )
}
