//! `$limit_req_status` and `$limit_conn_status`: not found until the module has judged the
//! request.

use crate::kernel::variables::evaluate::VariableDef;
use crate::modules::limit::verdicts;

pub const VARIABLES: &[VariableDef] = &[
    VariableDef {
        name: "limit_req_status",
        prefix: false,
        get: |variables, _, out| match verdicts(variables.request).req {
            Some(status) => {
                out.extend_from_slice(status.as_bytes());
                true
            }
            None => false,
        },
    },
    VariableDef {
        name: "limit_conn_status",
        prefix: false,
        get: |variables, _, out| match verdicts(variables.request).conn {
            Some(status) => {
                out.extend_from_slice(status.as_bytes());
                true
            }
            None => false,
        },
    },
];
