//! `$modern_browser`, `$ancient_browser` and `$msie`.

use crate::kernel::variables::evaluate::{RequestVariables, VariableDef};
use crate::modules::browser::settings::Browser;
use crate::modules::browser::{Age, judge};

pub const VARIABLES: &[VariableDef] = &[
    VariableDef {
        name: "modern_browser",
        prefix: false,
        get: |variables, _, out| {
            if let Some(browser) = settings(variables)
                && judge(browser, variables.request.header(b"user-agent")) == Some(Age::Modern)
            {
                out.extend_from_slice(&browser.modern_value);
            }
            true
        },
    },
    VariableDef {
        name: "ancient_browser",
        prefix: false,
        get: |variables, _, out| {
            if let Some(browser) = settings(variables)
                && judge(browser, variables.request.header(b"user-agent")) == Some(Age::Ancient)
            {
                out.extend_from_slice(&browser.ancient_value);
            }
            true
        },
    },
    VariableDef {
        name: "msie",
        prefix: false,
        get: |variables, _, out| {
            if variables.request.info.browser.msie {
                out.push(b'1');
            }
            true
        },
    },
];

fn settings<'a>(variables: &RequestVariables<'a>) -> Option<&'a Browser> {
    let location = variables.request.location?;
    Some(&variables.conf.location(location).settings.browser)
}
