//! The `http` block's `resolve` servers, followed by the `upstream` crate's discovery
//! (`upstream::discovery`): the worker gives it the groups and the main error log.

use logging::Level;

pub use upstream::discovery::{carry_over, follow_resolvable_servers};

use crate::kernel::upstream::Group;
use crate::kernel::variables::HttpTemplate;
use crate::kernel::worker::HttpWorker;

impl upstream::discovery::BlockGroups for HttpWorker {
    type Key = HttpTemplate;

    fn groups(&self) -> &[Group] {
        &self.conf().upstreams
    }

    fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
        let error_log = &self.generation.error_log;
        if error_log.enabled(level) {
            error_log.write(level, &self.clock.wall(), None, message, None);
        }
    }
}
