//! A `rewrite` replacement: how its text splits into the new URI and arguments, and the
//! escaping nginx applies when it builds a redirect or arguments from regex captures.

/// The replacement text cut as nginx reads it: a last `?` drops the request's arguments
/// and is not part of the text; an internal rewrite's first `?` starts the new arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct Split<'a> {
    pub uri: &'a str,
    pub args: Option<&'a str>,
    pub add_args: bool,
    pub has_query: bool,
}

pub fn split(text: &str, redirect: bool) -> Split<'_> {
    let (text, add_args) = match text.strip_suffix('?') {
        Some(rest) => (rest, false),
        None => (text, true),
    };
    let question = text.find('?');
    match question {
        Some(at) if !redirect => Split {
            uri: &text[..at],
            args: Some(&text[at + 1..]),
            add_args,
            has_query: true,
        },
        _ => Split {
            uri: text,
            args: None,
            add_args,
            has_query: question.is_some(),
        },
    }
}

/// Whether a replacement is a redirect by its text alone.
pub(crate) fn is_redirect_text(text: &str) -> bool {
    text.starts_with("http://") || text.starts_with("https://") || text.starts_with("$scheme")
}

/// Bytes nginx escapes in arguments built from captures: controls, space, `"#%&+;<>?\^`{|}`,
/// DEL and every byte above 0x7f.
fn needs_escape_in_args(byte: u8) -> bool {
    !(0x20..0x7f).contains(&byte)
        || matches!(
            byte,
            b' ' | b'"'
                | b'#'
                | b'%'
                | b'&'
                | b'+'
                | b';'
                | b'<'
                | b'>'
                | b'?'
                | b'\\'
                | b'^'
                | b'`'
                | b'{'
                | b'|'
                | b'}'
        )
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Appends `bytes` percent-escaped for use in arguments.
pub(crate) fn escape_args(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        if needs_escape_in_args(byte) {
            out.extend_from_slice(&[
                b'%',
                HEX_UPPER[usize::from(byte >> 4)],
                HEX_UPPER[usize::from(byte & 0xf)],
            ]);
        } else {
            out.push(byte);
        }
    }
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Unescapes a redirect's text as nginx does before it becomes `Location`: `%XX` is
/// decoded only to a printable byte after `%` (so `%20`, `%0D%0A` and `%25` stay escaped);
/// the first `?`, written or escaped as `%3F`, ends the unescaping and everything after it
/// is kept as it is. A `%` not followed by a hex digit is dropped; a `%` and one hex digit
/// followed by anything else are dropped with that byte.
pub(crate) fn unescape_redirect(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut at = 0;
    while at < input.len() {
        let byte = input[at];
        if byte == b'?' {
            out.extend_from_slice(&input[at..]);
            return out;
        }
        if byte != b'%' {
            out.push(byte);
            at += 1;
            continue;
        }
        let Some(&first) = input.get(at + 1) else {
            break;
        };
        let Some(high) = hex_value(first) else {
            out.push(first);
            at += 2;
            continue;
        };
        let Some(&second) = input.get(at + 2) else {
            break;
        };
        at += 3;
        let Some(low) = hex_value(second) else {
            continue;
        };
        let decoded = (high << 4) | low;
        // Only a hex letter in second place can make `?` (0x3f).
        if decoded == b'?' && !second.is_ascii_digit() {
            out.push(b'?');
            out.extend_from_slice(&input[at..]);
            return out;
        }
        if decoded > b'%' && decoded < 0x7f {
            out.push(decoded);
        } else {
            out.extend_from_slice(&[b'%', first, second]);
        }
    }
    out
}

/// Whether the request's own path was written with `%` escapes or `+`: nginx then escapes
/// captures copied into arguments or a redirect, as they were decoded from `$uri`.
pub(crate) fn path_was_escaped(request_uri: &[u8]) -> bool {
    let path_end = memchr::memchr(b'?', request_uri).unwrap_or(request_uri.len());
    request_uri[..path_end]
        .iter()
        .any(|&byte| byte == b'%' || byte == b'+')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unescape(text: &str) -> String {
        String::from_utf8(unescape_redirect(text.as_bytes())).unwrap()
    }

    #[test]
    fn split_keeps_or_drops_arguments() {
        assert_eq!(
            split("/new", false),
            Split {
                uri: "/new",
                args: None,
                add_args: true,
                has_query: false
            }
        );
        assert_eq!(
            split("/new?", false),
            Split {
                uri: "/new",
                args: None,
                add_args: false,
                has_query: false
            }
        );
        assert_eq!(
            split("/new?a=$1&b", false),
            Split {
                uri: "/new",
                args: Some("a=$1&b"),
                add_args: true,
                has_query: true
            }
        );
        assert_eq!(
            split("/new?a=1?", false),
            Split {
                uri: "/new",
                args: Some("a=1"),
                add_args: false,
                has_query: true
            }
        );
        // A redirect's text is the whole Location.
        assert_eq!(
            split("http://h/p?x=1", true),
            Split {
                uri: "http://h/p?x=1",
                args: None,
                add_args: true,
                has_query: true
            }
        );
        assert_eq!(split("$arg_r?", true).uri, "$arg_r");
        assert!(!split("$arg_r?", true).add_args);
    }

    #[test]
    fn redirect_text_is_recognised() {
        assert!(is_redirect_text("http://example.com/"));
        assert!(is_redirect_text("https://example.com/"));
        assert!(is_redirect_text("$scheme://$host/"));
        assert!(!is_redirect_text("/local"));
        assert!(!is_redirect_text("HTTP://upper"));
    }

    #[test]
    fn arguments_escape_like_nginx() {
        let mut out = Vec::new();
        escape_args(
            b"a b&c=d+e;f?g#h%i\"<>\\^`{|}\x01\x7f\xc3\xa9/:@!$'()*,~-._",
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a%20b%26c=d%2Be%3Bf%3Fg%23h%25i%22%3C%3E%5C%5E%60%7B%7C%7D%01%7F%C3%A9/:@!$'()*,~-._"
        );
    }

    #[test]
    fn redirects_unescape_printable_bytes_only() {
        assert_eq!(
            unescape("http%3A%2F%2Fexample.com%2F%3Ffrom"),
            "http://example.com/?from"
        );
        assert_eq!(
            unescape("http%3A%2F%2Fexample.com%0D%0Asplit"),
            "http://example.com%0D%0Asplit"
        );
        // Unescaping stops at the first `?`, escaped or not.
        assert_eq!(
            unescape("http%3A%2F%2Fexample.com%2F%3Ffrom%3Dblah"),
            "http://example.com/?from%3Dblah"
        );
        assert_eq!(unescape("/a%41?b%41"), "/aA?b%41");
        assert_eq!(unescape("/a%20b%25c%26"), "/a%20b%25c&");
        assert_eq!(unescape("/%7e%7E%7F"), "/~~%7F");
    }

    #[test]
    fn broken_escapes_are_dropped_as_nginx_drops_them() {
        assert_eq!(unescape("/a%zb"), "/azb");
        assert_eq!(unescape("/a%4zb"), "/ab");
        assert_eq!(unescape("/a%%41"), "/a%41");
        assert_eq!(unescape("/a%"), "/a");
        assert_eq!(unescape("/a%4"), "/a");
    }

    #[test]
    fn escaped_paths_are_detected_before_the_arguments() {
        assert!(path_was_escaped(b"/a%20b"));
        assert!(path_was_escaped(b"/a+b?x"));
        assert!(!path_was_escaped(b"/ab?x=%20+"));
        assert!(!path_was_escaped(b"/plain"));
    }
}
