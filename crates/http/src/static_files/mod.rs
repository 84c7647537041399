//! Static files: mapping a URI to a file under `root` or `alias`, `index`, and sending the
//! file. Opening, stat-ing and reading run on a thread pool, never on the worker's loop.

pub mod content;
pub mod directives;
pub mod handler;

use crate::settings;
use crate::variables::HttpTemplate;

settings! {
    /// Static-file settings per location.
    pub struct StaticConf => Static (env) {
        /// `index`: tried in order for a URI ending in `/`.
        index: Vec<HttpTemplate> = vec![HttpTemplate::from_literal(b"index.html")],
    }
}
