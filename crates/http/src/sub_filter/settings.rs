//! What the sub_filter directives set.

use std::sync::Arc;

use crate::settings;
use crate::variables::HttpTemplate;

/// `sub_filter_types`: lower-cased MIME types (`text/html` always), or `*` for any.
#[derive(Clone, Debug, Default)]
pub struct SubFilterTypes {
    pub any: bool,
    pub types: Vec<Box<[u8]>>,
}

impl SubFilterTypes {
    pub fn contains(&self, content_type: &[u8]) -> bool {
        self.any
            || content_type.eq_ignore_ascii_case(b"text/html")
            || self
                .types
                .iter()
                .any(|listed| listed.eq_ignore_ascii_case(content_type))
    }
}

/// One `sub_filter string replacement`.
#[derive(Clone, Debug)]
pub struct Substitution {
    pub string: HttpTemplate,
    pub replacement: HttpTemplate,
}

settings! {
    /// The sub filter's settings per location.
    pub struct SubFilterConf => SubFilter (env) {
        /// `sub_filter`, in order; a level's list replaces the one it inherits.
        substitutions: Arc<Vec<Substitution>> = Arc::new(Vec::new()),
        /// `sub_filter_once`: each string is replaced at its first match only.
        once: bool = true,
        types: Arc<SubFilterTypes> = Arc::new(SubFilterTypes::default()),
        last_modified: bool = false,
    }
}
