//! `$uid_got` and `$uid_set` (`$uid_reset` is any variable of that name: a `map` or `set`
//! gives it its value).

use crate::kernel::variables::evaluate::{RequestVariables, VariableDef};
use crate::modules::userid::settings::{Mode, UserId};
use crate::modules::userid::{got, hex_words, to_set};

pub const VARIABLES: &[VariableDef] = &[
    VariableDef {
        name: "uid_got",
        prefix: false,
        get: |variables, _, out| {
            let Some(settings) = settings(variables) else {
                return false;
            };
            if settings.mode == Mode::Off {
                return false;
            }
            match got(settings, variables.request) {
                Some(id) => {
                    push_named(out, settings, &id);
                    true
                }
                None => false,
            }
        },
    },
    VariableDef {
        name: "uid_set",
        prefix: false,
        get: |variables, _, out| {
            let Some(settings) = settings(variables) else {
                return false;
            };
            match to_set(variables, settings) {
                Some(id) => {
                    push_named(out, settings, &id);
                    true
                }
                None => false,
            }
        },
    },
];

fn push_named(out: &mut Vec<u8>, settings: &UserId, id: &[u8; 16]) {
    out.extend_from_slice(settings.name.as_bytes());
    out.push(b'=');
    out.extend_from_slice(hex_words(id).as_bytes());
}

fn settings<'a>(variables: &RequestVariables<'a>) -> Option<&'a UserId> {
    let location = variables.request.location?;
    Some(&variables.conf.location(location).settings.userid)
}
