//! What the addition directives set.

use std::sync::Arc;

use crate::kernel::core::settings::MimeTypeList;
use crate::settings;

settings! {
    /// `add_before_body`, `add_after_body` per location.
    pub struct AdditionConf => Addition (env) {
        /// `add_before_body URI`; `None` when not set (or set to an empty string).
        before_body: Option<Box<[u8]>> = None,
        after_body: Option<Box<[u8]>> = None,
        types: Arc<MimeTypeList> = Arc::new(MimeTypeList::default()),
    }
}
