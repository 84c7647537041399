//! What the SSI directives set.

use std::sync::Arc;

use crate::settings;

/// `ssi_types`: lower-cased MIME types (`text/html` always), or `*` for any.
#[derive(Clone, Debug, Default)]
pub struct SsiTypes {
    pub any: bool,
    pub types: Vec<Box<[u8]>>,
}

impl SsiTypes {
    pub fn contains(&self, content_type: &[u8]) -> bool {
        self.any
            || content_type.eq_ignore_ascii_case(b"text/html")
            || self
                .types
                .iter()
                .any(|listed| listed.eq_ignore_ascii_case(content_type))
    }
}

settings! {
    /// The SSI filter's settings per location.
    pub struct SsiConf => Ssi (env) {
        ssi: bool = false,
        silent_errors: bool = false,
        types: Arc<SsiTypes> = Arc::new(SsiTypes::default()),
        /// `ssi_value_length`: the longest parameter value.
        value_length: u64 = 256,
        /// `ssi_min_file_chunk`: accepted; Portico reads a file body in pieces anyway.
        min_file_chunk: u64 = 1024,
        /// `ssi_last_modified`: keep `Last-Modified` (and a weak `ETag`).
        last_modified: bool = false,
        /// `subrequest_output_buffer_size`: the most a subrequest captured into a
        /// variable (`include set=`) may give; one page, as nginx's default.
        subrequest_output_buffer_size: u64 = 4096,
    }
}
