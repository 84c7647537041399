//! `proxy_cookie_flags`: the `Secure`, `HttpOnly` and `SameSite` attributes of the
//! `Set-Cookie` fields of proxied responses, set or removed per cookie name (a name, a
//! name with variables, or a case-insensitive regex after `~`). The first rule whose name
//! matches applies; a set flag replaces any the upstream wrote, and goes at the end.

use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::settings::{CookieFlagRule, CookieName};

/// What one rule does to each attribute: `Some(None)` removes it, `Some(Some(value))` sets
/// it (`SameSite`'s value, or nothing for the others).
#[derive(Default)]
struct Edits {
    secure: Option<bool>,
    httponly: Option<bool>,
    samesite: Option<Option<&'static str>>,
}

fn edits_of(flags: &[Vec<u8>]) -> Edits {
    let mut edits = Edits::default();
    for flag in flags {
        match flag.to_ascii_lowercase().as_slice() {
            b"secure" => edits.secure = Some(true),
            b"nosecure" => edits.secure = Some(false),
            b"httponly" => edits.httponly = Some(true),
            b"nohttponly" => edits.httponly = Some(false),
            b"samesite" | b"samesite=strict" => edits.samesite = Some(Some("Strict")),
            b"samesite=lax" => edits.samesite = Some(Some("Lax")),
            b"samesite=none" => edits.samesite = Some(Some("None")),
            b"nosamesite" => edits.samesite = Some(None),
            _ => {}
        }
    }
    edits
}

/// The flags a literal or evaluated value names, in nginx's words; `None` for a word
/// that is no flag.
pub(crate) fn is_flag(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "secure"
            | "nosecure"
            | "httponly"
            | "nohttponly"
            | "samesite"
            | "samesite=strict"
            | "samesite=lax"
            | "samesite=none"
            | "nosamesite"
    )
}

/// Applies the first matching rule of `rules` to one `Set-Cookie` value.
pub(crate) fn apply(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    rules: &[CookieFlagRule],
    value: Vec<u8>,
) -> Vec<u8> {
    let name_end = value
        .iter()
        .position(|b| *b == b'=' || *b == b';')
        .unwrap_or(value.len());
    let name = value[..name_end].trim_ascii();
    let rule = rules.iter().find(|rule| match &rule.name {
        CookieName::Name(template) => {
            let wanted = render(worker, connection, request, template);
            !wanted.is_empty() && wanted.eq_ignore_ascii_case(name)
        }
        CookieName::Regex(regex) => regex.is_match(name),
    });
    let Some(rule) = rule else {
        return value;
    };
    let flags: Vec<Vec<u8>> = rule
        .flags
        .iter()
        .map(|template| render(worker, connection, request, template))
        .collect();
    let edits = edits_of(&flags);
    edit(&value, &edits)
}

/// The cookie with the edited attributes removed, then the set ones appended.
fn edit(value: &[u8], edits: &Edits) -> Vec<u8> {
    let mut parts = value.split(|b| *b == b';');
    let mut out = parts.next().unwrap_or_default().to_vec();
    for part in parts {
        let attribute = part.trim_ascii();
        let name = attribute
            .split(|b| *b == b'=')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        let edited = (name.eq_ignore_ascii_case(b"secure") && edits.secure.is_some())
            || (name.eq_ignore_ascii_case(b"httponly") && edits.httponly.is_some())
            || (name.eq_ignore_ascii_case(b"samesite") && edits.samesite.is_some());
        if !edited {
            out.push(b';');
            out.extend_from_slice(part);
        }
    }
    if edits.secure == Some(true) {
        out.extend_from_slice(b"; Secure");
    }
    if edits.httponly == Some(true) {
        out.extend_from_slice(b"; HttpOnly");
    }
    if let Some(Some(samesite)) = edits.samesite {
        out.extend_from_slice(b"; SameSite=");
        out.extend_from_slice(samesite.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{edit, edits_of};

    fn flags(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|word| word.as_bytes().to_vec()).collect()
    }

    #[test]
    fn flags_replace_and_remove() {
        let set = edits_of(&flags(&["secure", "httponly", "samesite=none"]));
        assert_eq!(
            edit(b"a=1; Domain=x;Secure;HttpOnly;SameSite=Lax", &set),
            b"a=1; Domain=x; Secure; HttpOnly; SameSite=None"
        );
        let remove = edits_of(&flags(&["nosecure", "nohttponly", "nosamesite"]));
        assert_eq!(
            edit(b"d=1; Domain=x;secure;httponly;samesite=lax", &remove),
            b"d=1; Domain=x"
        );
        assert_eq!(
            edit(b"e=1", &edits_of(&flags(&["samesite"]))),
            b"e=1; SameSite=Strict"
        );
    }
}
