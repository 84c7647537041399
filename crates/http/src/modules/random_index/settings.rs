//! What the random index directive sets.

use crate::settings;

settings! {
    /// `random_index` per location.
    pub struct RandomIndexConf => RandomIndex (env) {
        random_index: bool = false,
    }
}
