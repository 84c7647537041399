//! `$connections_active`, `$connections_reading`, `$connections_writing`,
//! `$connections_waiting`: the `stub_status` figures, summed over the workers.

use logging::time::push_number;

use crate::kernel::variables::evaluate::VariableDef;

/// A table entry for one figure of the workers' totals.
macro_rules! figure {
    ($name:literal, $field:ident) => {
        VariableDef {
            name: $name,
            prefix: false,
            get: |_, _, out| {
                push_number(out, metrics::GLOBAL.totals().$field as i64, 1);
                true
            },
        }
    };
}

pub const VARIABLES: &[VariableDef] = &[
    figure!("connections_active", active),
    figure!("connections_reading", reading),
    figure!("connections_writing", writing),
    figure!("connections_waiting", waiting),
];
