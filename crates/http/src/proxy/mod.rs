//! The reverse proxy. So far only `proxy_temp_path`, which every nginx-style configuration
//! may carry in `http`; `proxy_pass` and the rest arrive with the proxy issue.

pub mod directives;

use crate::core::TempPath;
use crate::settings;

settings! {
    /// Proxy settings per location.
    pub struct ProxyConf => Proxy (env) {
        /// `proxy_temp_path`: where buffered upstream responses spill to disk.
        proxy_temp_path: TempPath = TempPath { path: env.prefix.join("proxy_temp"), levels: Vec::new() },
    }
}
