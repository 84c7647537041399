//! Host validation as nginx's `ngx_http_validate_host` does it (nginx 1.29.4 rules).

use crate::error::RequestError;

/// Validates a `Host` header value or the authority of an absolute-form request target and
/// writes the host nginx uses for `$host` and server selection to `out` (cleared first):
/// lower-cased, without `:port` and without one trailing dot.
///
/// Accepted, per RFC 3986 §3.2.2: reg-name characters (letters, digits, `-._~`,
/// sub-delims, `%`), an IP-literal in brackets, then an optional `:` and a port of digits
/// up to 65535 (an empty port is accepted, as nginx does). Rejected: path separators, `..`,
/// control bytes, spaces, an empty host, a bracketed literal that is not closed or is
/// followed by anything but `:port`.
pub fn validate_host(raw: &[u8], out: &mut Vec<u8>) -> Result<(), RequestError> {
    out.clear();
    let host_len = host_len(raw).ok_or(RequestError::InvalidHost)?;
    out.extend(raw[..host_len].iter().map(u8::to_ascii_lowercase));
    Ok(())
}

/// The length of the host part of `raw` once `:port` and one trailing dot are removed, or
/// `None` if nginx rejects `raw`. Allocation-free, for use while parsing the head.
pub(crate) fn host_len(raw: &[u8]) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Name,
        IpLiteral,
        AfterIpLiteral,
        Port,
    }

    let mut state = if raw.first() == Some(&b'[') {
        State::IpLiteral
    } else {
        State::Name
    };
    let mut host_len = raw.len();
    let mut last_dot: Option<usize> = None;
    let mut port: u32 = 0;

    for (i, &byte) in raw.iter().enumerate() {
        match state {
            State::Name | State::IpLiteral => {
                if byte == b'.' {
                    // Two dots in a row would let a host name climb directories when it
                    // is used in a path (`root /sites/$host`).
                    if i > 0 && last_dot == Some(i - 1) {
                        return None;
                    }
                    last_dot = Some(i);
                } else if state == State::IpLiteral && i == 0 {
                    // The opening bracket.
                } else if byte.is_ascii_alphanumeric() || is_unreserved_or_sub_delim(byte) {
                } else if state == State::Name && byte == b'%' {
                    // pct-encoded is allowed in a reg-name only.
                } else if state == State::Name && byte == b':' {
                    host_len = i;
                    state = State::Port;
                } else if state == State::IpLiteral && byte == b':' {
                } else if state == State::IpLiteral && byte == b']' {
                    host_len = i + 1;
                    state = State::AfterIpLiteral;
                } else {
                    return None;
                }
            }
            State::AfterIpLiteral => {
                if byte != b':' {
                    return None;
                }
                state = State::Port;
            }
            State::Port => {
                if !byte.is_ascii_digit() {
                    return None;
                }
                port = port * 10 + u32::from(byte - b'0');
                if port > u32::from(u16::MAX) {
                    return None;
                }
            }
        }
    }

    if state == State::IpLiteral {
        return None;
    }
    if host_len > 0 && last_dot == Some(host_len - 1) {
        host_len -= 1;
    }
    if host_len == 0 {
        return None;
    }
    Some(host_len)
}

fn is_unreserved_or_sub_delim(byte: u8) -> bool {
    matches!(
        byte,
        b'-' | b'_'
            | b'~'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

#[cfg(test)]
mod tests {
    use super::validate_host;

    fn host(raw: &str) -> Option<String> {
        let mut out = Vec::new();
        validate_host(raw.as_bytes(), &mut out).ok()?;
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn accepts_and_normalises_as_http_host_t() {
        let cases = [
            ("l", "l"),
            ("L", "l"),
            ("abcd-ef.g02.xyz:", "abcd-ef.g02.xyz"),
            ("123.40.56.78:", "123.40.56.78"),
            ("abcd-ef.g02.xyz:8080", "abcd-ef.g02.xyz"),
            ("www.abcd-ef.g02.xyz.", "www.abcd-ef.g02.xyz"),
            ("abcd-ef.g02.xyz.:88", "abcd-ef.g02.xyz"),
            ("AbC-d93.0.34ZhGt-s.nk.Ru:88", "abc-d93.0.34zhgt-s.nk.ru"),
            ("123.49.0.78:987", "123.49.0.78"),
            ("[abcd::ef98:0:7654:321]", "[abcd::ef98:0:7654:321]"),
            ("[abcd::ef98:0:7654:321]:80", "[abcd::ef98:0:7654:321]"),
            ("[::ffff:12.30.67.89]", "[::ffff:12.30.67.89]"),
            ("[::123.45.67.89]:4321", "[::123.45.67.89]"),
            ("a%20b", "a%20b"),
            ("host:65535", "host"),
            (
                "[v0123456789aBcDeF.!$&'()*+,;=-._~AbCdEfGhIjKlMnOpQrStUvWxYz0123456789:]",
                "[v0123456789abcdef.!$&'()*+,;=-._~abcdefghijklmnopqrstuvwxyz0123456789:]",
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(host(raw).as_deref(), Some(expected), "{raw}");
        }
    }

    #[test]
    fn rejects_as_http_host_t() {
        let cases = [
            "",
            ".",
            ":80",
            "example.com.:1.2",
            "123.49.0.78:98777",
            "host:65536",
            "123.40.56.78:9000:80",
            "example.com/\\:552",
            "\\e/xample.com",
            "..examp-LE.com",
            "com.exa-m.45..:",
            "[abcd::e\\f98:0/:7654:321]",
            "[abcd::ef98:0:7654:321].",
            "[abcd::ef98:0:7654:321].:98",
            "[abcd::ef98:0:7654:321]..:98",
            "[ab..cd::ef98:0:7654:321]",
            "extra[abcd::ef98:0:7654:321]:98",
            "[abcd::ef98:0:7654:321",
            "[a%20b]",
            "localhost\x02",
            "local host",
        ];
        for raw in cases {
            assert_eq!(host(raw), None, "{raw:?}");
        }
    }
}
