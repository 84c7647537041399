//! What the addition directives set.

use std::sync::Arc;

use crate::settings;

/// `addition_types`: lower-cased MIME types (`text/html` always), or `*` for any.
#[derive(Clone, Debug, Default)]
pub struct AdditionTypes {
    pub any: bool,
    pub types: Vec<Box<[u8]>>,
}

impl AdditionTypes {
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
    /// `add_before_body`, `add_after_body` per location.
    pub struct AdditionConf => Addition (env) {
        /// `add_before_body URI`; `None` when not set (or set to an empty string).
        before_body: Option<Box<[u8]>> = None,
        after_body: Option<Box<[u8]>> = None,
        types: Arc<AdditionTypes> = Arc::new(AdditionTypes::default()),
    }
}
