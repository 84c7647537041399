//! What the auth_basic directives set.

use crate::kernel::variables::HttpTemplate;
use crate::settings;

settings! {
    /// `auth_basic` and its user file, per location.
    pub struct AuthBasicConf => AuthBasic (env) {
        /// `auth_basic REALM`; `None` is `off` (a value `off` from variables too).
        realm: Option<HttpTemplate> = None,
        /// `auth_basic_user_file FILE`.
        user_file: Option<HttpTemplate> = None,
    }
}
