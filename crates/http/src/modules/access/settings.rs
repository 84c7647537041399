//! What `allow` and `deny` set: each level's rules (the rules themselves are
//! [`shared::access`], which the stream block uses too).

use shared::access::Rules;

use crate::settings;

settings! {
    /// A level with any `allow` or `deny` uses only its own rules; a level with none
    /// inherits the enclosing level's whole list, as in nginx.
    pub struct AccessConf => Access (env) {
        /// `allow` and `deny`, in order.
        rules: Rules = Rules::default(),
    }
}
