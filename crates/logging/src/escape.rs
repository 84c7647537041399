//! `log_format ... escape=`: how a variable's value is written into an access-log line, the
//! same in the http and stream blocks.

/// `escape=` of `log_format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// `"`, `\` and bytes outside 0x20..=0x7e as `\xHH`.
    Default,
    /// JSON string escaping.
    Json,
    None,
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Appends `value` to `out` as nginx's access log writes it under `mode`.
pub fn escape(mode: Escape, value: &[u8], out: &mut Vec<u8>) {
    match mode {
        Escape::None => out.extend_from_slice(value),
        Escape::Default => {
            for &byte in value {
                if byte == b'"' || byte == b'\\' || !(0x20..0x7f).contains(&byte) {
                    out.extend_from_slice(&[
                        b'\\',
                        b'x',
                        HEX[usize::from(byte >> 4)],
                        HEX[usize::from(byte & 0xf)],
                    ]);
                } else {
                    out.push(byte);
                }
            }
        }
        Escape::Json => {
            for &byte in value {
                match byte {
                    b'"' => out.extend_from_slice(b"\\\""),
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    0x08 => out.extend_from_slice(b"\\b"),
                    0x0c => out.extend_from_slice(b"\\f"),
                    0..0x20 => out.extend_from_slice(&[
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[usize::from(byte >> 4)],
                        HEX[usize::from(byte & 0xf)],
                    ]),
                    _ => out.push(byte),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(mode: Escape, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        escape(mode, value, &mut out);
        out
    }

    #[test]
    fn default_escaping_matches_nginx() {
        assert_eq!(
            escaped(Escape::Default, b"a\"b\\c\x01\xff"),
            b"a\\x22b\\x5Cc\\x01\\xFF"
        );
        assert_eq!(escaped(Escape::Default, b"plain text"), b"plain text");
    }

    #[test]
    fn json_escaping() {
        assert_eq!(
            escaped(Escape::Json, b"a\"b\\c\n\x01"),
            b"a\\\"b\\\\c\\n\\u0001"
        );
        assert_eq!(escaped(Escape::Json, "é".as_bytes()), "é".as_bytes());
    }

    #[test]
    fn no_escaping() {
        assert_eq!(escaped(Escape::None, b"\"\x01"), b"\"\x01");
    }
}
