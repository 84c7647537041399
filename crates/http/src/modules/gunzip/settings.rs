//! What the gunzip directives set.

use crate::settings;

settings! {
    /// `gunzip` per location.
    pub struct GunzipConf => Gunzip (env) {
        gunzip: bool = false,
    }
}
