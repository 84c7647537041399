//! `$secure_link` and `$secure_link_expires`.

use crate::kernel::variables::evaluate::{Reborrow, RequestVariables, VariableDef};
use crate::modules::secure_link::settings::SecureLink;
use crate::modules::secure_link::{Verdict, check_md5, check_secret, parse_expires, split_expires};

pub const VARIABLES: &[VariableDef] = &[
    VariableDef {
        name: "secure_link",
        prefix: false,
        get: |variables, _, out| {
            let Some(settings) = settings(variables) else {
                return false;
            };
            if let Some(secret) = &settings.secret {
                return match check_secret(variables.request.request_uri(), secret) {
                    Some(link) => {
                        out.extend_from_slice(link);
                        true
                    }
                    None => false,
                };
            }
            let (Some(variable), Some(md5)) = (&settings.variable, &settings.md5) else {
                return false;
            };
            let link = render(variables, variable);
            let text = render(variables, md5);
            match check_md5(&link, &text, variables.now.unix_seconds) {
                Verdict::Valid => out.push(b'1'),
                Verdict::Expired => out.push(b'0'),
                Verdict::Invalid => return false,
            }
            true
        },
    },
    VariableDef {
        name: "secure_link_expires",
        prefix: false,
        get: |variables, _, out| {
            let Some(variable) = settings(variables).and_then(|s| s.variable.as_ref()) else {
                return false;
            };
            let link = render(variables, variable);
            match split_expires(&link).1 {
                // As nginx, only an expiry time that is valid is shown.
                Some(expires) if parse_expires(expires).is_some() => {
                    out.extend_from_slice(expires);
                    true
                }
                _ => false,
            }
        },
    },
];

fn settings<'a>(variables: &RequestVariables<'a>) -> Option<&'a SecureLink> {
    let location = variables.request.location?;
    Some(&variables.conf.location(location).settings.secure_link)
}

fn render(
    variables: &RequestVariables<'_>,
    template: &crate::kernel::variables::HttpTemplate,
) -> Vec<u8> {
    let mut out = Vec::new();
    template.evaluate(&mut Reborrow(variables), &mut out);
    out
}
