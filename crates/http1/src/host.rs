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
    write_lowercase(&raw[..host_len], out);
    Ok(())
}

/// [`validate_host`] for a host [`host_len`] has accepted, as `parse_head` does for every
/// host `analyze` reads: the checks are not repeated, only where the host ends is found.
pub(crate) fn write_validated_host(raw: &[u8], out: &mut Vec<u8>) {
    // Hosts are short: a byte loop beats `memchr`, whose setup costs more than the search.
    let host_len = match raw.first() {
        // A valid IP literal has one `]`, its last byte or the one before `:port`.
        Some(b'[') => raw
            .iter()
            .position(|&byte| byte == b']')
            .map_or(raw.len(), |close| close + 1),
        // A valid reg-name has no `:` but the one before the port, which has no dot.
        _ => {
            let end = raw
                .iter()
                .position(|&byte| byte == b':')
                .unwrap_or(raw.len());
            end - usize::from(end > 0 && raw[end - 1] == b'.')
        }
    };
    debug_assert_eq!(Some(host_len), self::host_len(raw), "{raw:?} was validated");
    write_lowercase(&raw[..host_len], out);
}

fn write_lowercase(host: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.resize(host.len(), 0);
    // Zipped slices make a loop without capacity checks, which compiles to vector code.
    // Lower-casing in place after a copy would be shorter, but reading bytes just written
    // by `memcpy` stalls until they reach the cache.
    for (lower, &byte) in out.iter_mut().zip(host) {
        *lower = byte.to_ascii_lowercase();
    }
}

/// The length of the host part of `raw` once `:port` and one trailing dot are removed, or
/// `None` if nginx rejects `raw`. Allocation-free, for use while parsing the head.
pub(crate) fn host_len(raw: &[u8]) -> Option<usize> {
    if raw.first() == Some(&b'[') {
        return ip_literal_host_len(raw);
    }
    // Whether the byte before the current one is a dot.
    let mut after_dot = false;
    for (i, &byte) in raw.iter().enumerate() {
        let class = HOST_BYTES[usize::from(byte)];
        // Tested first and apart: most bytes are name bytes, and a chain of comparisons
        // is cheaper here than the jump table a `match` becomes.
        if class == HostByte::Name || class == HostByte::Percent {
            after_dot = false;
        } else if class == HostByte::Dot {
            // Two dots in a row would let a host name climb directories when it is used
            // in a path (`root /sites/$host`).
            if after_dot {
                return None;
            }
            after_dot = true;
        } else if class == HostByte::Colon && is_port(&raw[i + 1..]) {
            return without_trailing_dot(i, after_dot);
        } else {
            return None;
        }
    }
    without_trailing_dot(raw.len(), after_dot)
}

/// The host length of `[literal]` or `[literal]:port`: in the brackets, reg-name bytes but
/// `%`, and `:`; no two dots in a row.
fn ip_literal_host_len(raw: &[u8]) -> Option<usize> {
    let mut after_dot = false;
    for (i, &byte) in raw.iter().enumerate().skip(1) {
        match HOST_BYTES[usize::from(byte)] {
            HostByte::Name | HostByte::Colon => after_dot = false,
            HostByte::Dot if after_dot => return None,
            HostByte::Dot => after_dot = true,
            HostByte::Other if byte == b']' => {
                return match &raw[i + 1..] {
                    [] => Some(i + 1),
                    [b':', port @ ..] if is_port(port) => Some(i + 1),
                    _ => None,
                };
            }
            HostByte::Percent | HostByte::Other => return None,
        }
    }
    // The bracket is not closed.
    None
}

/// `host_len` of a reg-name ending before `end`, dropping one trailing dot; an empty host
/// is rejected.
fn without_trailing_dot(end: usize, after_dot: bool) -> Option<usize> {
    let host_len = end - usize::from(after_dot);
    (host_len > 0).then_some(host_len)
}

/// Digits up to 65535 (leading zeros allowed), or nothing.
fn is_port(port: &[u8]) -> bool {
    let mut value: u32 = 0;
    for &byte in port {
        if !byte.is_ascii_digit() {
            return false;
        }
        value = value * 10 + u32::from(byte - b'0');
        if value > u32::from(u16::MAX) {
            return false;
        }
    }
    true
}

/// What a byte is in a host, one table lookup instead of a chain of comparisons.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HostByte {
    /// Letters, digits, unreserved and sub-delims of RFC 3986: allowed everywhere.
    Name,
    /// Part of pct-encoded: allowed in a reg-name, not in an IP literal.
    Percent,
    Dot,
    Colon,
    Other,
}

const HOST_BYTES: [HostByte; 256] = host_bytes();

const fn host_bytes() -> [HostByte; 256] {
    let mut table = [HostByte::Other; 256];
    let mut byte = 0;
    while byte < 256 {
        if (byte as u8).is_ascii_alphanumeric() {
            table[byte] = HostByte::Name;
        }
        byte += 1;
    }
    let unreserved_and_sub_delims = b"-_~!$&'()*+,;=";
    let mut i = 0;
    while i < unreserved_and_sub_delims.len() {
        table[unreserved_and_sub_delims[i] as usize] = HostByte::Name;
        i += 1;
    }
    table[b'%' as usize] = HostByte::Percent;
    table[b'.' as usize] = HostByte::Dot;
    table[b':' as usize] = HostByte::Colon;
    table
}

#[cfg(test)]
mod tests_reference;

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
