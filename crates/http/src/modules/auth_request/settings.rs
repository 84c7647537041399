//! What the auth_request directives set.

use crate::kernel::variables::{HttpTemplate, Settable};
use crate::settings;

/// `auth_request_set $variable value`: set in the request once the subrequest answered,
/// from the subrequest's variables (`$upstream_http_*`, `$status`, ...).
#[derive(Clone, Debug)]
pub struct AuthRequestSet {
    pub variable: Settable,
    pub value: HttpTemplate,
}

settings! {
    /// `auth_request` per location.
    pub struct AuthRequestConf => AuthRequest (env) {
        /// `auth_request URI`; `None` is `off`.
        uri: Option<Box<[u8]>> = None,
        /// `auth_request_set`, in order (inherited as a whole when a level has none).
        set: Vec<AuthRequestSet> = Vec::new(),
    }
}
