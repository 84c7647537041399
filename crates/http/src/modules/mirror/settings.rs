//! What the mirror directives set.

use crate::settings;

settings! {
    /// `mirror` per location.
    pub struct MirrorConf => Mirror (env) {
        /// `mirror URI`, in order; empty for `mirror off`.
        uris: Vec<Box<[u8]>> = Vec::new(),
        /// `mirror_request_body`: the request body goes to the mirrors too.
        request_body: bool = true,
        /// `log_subrequest`: subrequests (mirrors) write access-log lines.
        log_subrequest: bool = false,
    }
}
