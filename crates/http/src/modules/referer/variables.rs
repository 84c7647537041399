//! `$invalid_referer`: empty when the request's `Referer` is valid, `1` when not.

use crate::kernel::variables::evaluate::VariableDef;

pub const VARIABLES: &[VariableDef] = &[VariableDef {
    name: "invalid_referer",
    prefix: false,
    get: |variables, _, out| {
        let request = variables.request;
        let Some(location) = request.location else {
            return true;
        };
        let settings = &variables.conf.location(location).settings.referer;
        let Some(referers) = settings.valid_referers.as_deref() else {
            return true;
        };
        let names = match request.server {
            Some(server) => variables.conf.server(server).names.as_slice(),
            None => &[],
        };
        if !super::is_valid(referers, request.header(b"referer"), names) {
            out.push(b'1');
        }
        true
    },
}];
