//! Computing a `map` or `split_clients` variable for a request, on its first use.

use crate::kernel::map::{ComputedVariable, Kind, Map};
use crate::kernel::variables::{NamedSlot, Reborrow, RequestVariables};
use shared::map::keys::Found;

impl RequestVariables<'_> {
    /// Appends the value of the computed variable in `slot`, which has no value yet in
    /// this request (or is `volatile`), and keeps it for the rest of the request unless
    /// the map is `volatile`, as nginx caches an indexed variable. `false` when the
    /// variable is met again too deep inside its own evaluation (a cycle): it is then "not
    /// found" there, and the levels above it go on with an empty value, as in nginx.
    pub(crate) fn append_computed(
        &self,
        slot: NamedSlot,
        variable: &ComputedVariable,
        out: &mut Vec<u8>,
    ) -> bool {
        let mut budget = self.computed_budget.get();
        if budget.depth_left == 0 || budget.evaluations_left == 0 {
            if !budget.cycle_logged {
                budget.cycle_logged = true;
                self.computed_budget.set(budget);
                self.log_cycle(&variable.name);
            }
            return false;
        }
        budget.depth_left -= 1;
        budget.evaluations_left -= 1;
        self.computed_budget.set(budget);
        let mut source = Vec::new();
        variable.source.evaluate(&mut Reborrow(self), &mut source);
        let value = match &variable.kind {
            Kind::Map(map) => self.map_value(map, source),
            Kind::SplitClients(parts) => parts.choose(&source).to_vec(),
            Kind::Lookup(table) => table.value(self, &source),
        };
        let mut budget = self.computed_budget.get();
        budget.depth_left += 1;
        self.computed_budget.set(budget);
        out.extend_from_slice(&value);
        if !variable.volatile {
            self.request
                .matches
                .borrow_mut()
                .set_named(slot, Some(value));
        }
        true
    }

    /// The value `map` chooses for `source`. A regex key's match becomes the request's
    /// `$1`..`$9` and sets its named groups' variables, as in nginx, so the value (and
    /// anything evaluated after it) sees them.
    fn map_value(&self, map: &Map, mut source: Vec<u8>) -> Vec<u8> {
        if map.keys.hostnames && source.last() == Some(&b'.') {
            source.pop();
        }
        let found = {
            let mut matches = self.request.matches.borrow_mut();
            let matches = &mut *matches;
            let found = map.keys.find(&source, &mut matches.captures);
            if let Some(Found {
                regex: Some(regex), ..
            }) = &found
            {
                regex.store(&matches.captures, &mut matches.named);
            }
            found.map(|found| found.value)
        };
        match found.or(map.default) {
            Some(index) => map.values[index].render(&mut Reborrow(self)),
            None => Vec::new(),
        }
    }

    /// nginx's `cycle while evaluating variable "NAME"`, at `error`.
    fn log_cycle(&self, name: &str) {
        let Some(location) = self.request.location.map(|id| self.conf.location(id)) else {
            return;
        };
        let error_log = &location.settings.core.error_log;
        if error_log.enabled(logging::Level::Error) {
            let context = self.request.log_context(self.connection, self.conf);
            error_log.write(
                logging::Level::Error,
                &self.now,
                Some(self.connection.id),
                format_args!("cycle while evaluating variable \"{name}\""),
                Some(&context),
            );
        }
    }
}
