//! What the SSI directives set.

use std::sync::Arc;

use crate::kernel::core::settings::MimeTypeList;
use crate::settings;

settings! {
    /// The SSI filter's settings per location.
    pub struct SsiConf => Ssi (env) {
        ssi: bool = false,
        silent_errors: bool = false,
        types: Arc<MimeTypeList> = Arc::new(MimeTypeList::default()),
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
