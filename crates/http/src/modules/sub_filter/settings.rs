//! What the sub_filter directives set.

use std::sync::Arc;

use crate::kernel::core::settings::MimeTypeList;
use crate::kernel::variables::HttpTemplate;
use crate::settings;

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
        types: Arc<MimeTypeList> = Arc::new(MimeTypeList::default()),
        last_modified: bool = false,
    }
}
