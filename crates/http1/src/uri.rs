//! The request target: its parts, nginx's `$uri` normalisation and `%`-unescaping.

use std::ops::Range;

use crate::error::RequestError;

/// A parsed request target. Ranges index the head buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    pub form: TargetForm,
    /// The path to give [`normalize`]: from the first `/` up to the `?` that starts the
    /// arguments. When a `#` comes before any `?`, the path runs to the end of the target
    /// and normalisation stops at the `#`. Empty for `http://host?args` (its `$uri` is `/`).
    pub path: Range<usize>,
    /// The bytes after `?` (`$args`), ending at a `#` when there is one. nginx treats an
    /// empty argument string as no arguments.
    pub args: Option<Range<usize>>,
    /// The path has `%`, `#`, `//` or a dot segment, or is empty: `$uri` differs from
    /// `path` and needs [`normalize`].
    pub complex: bool,
    /// `host[:port]` as written in an absolute-form target or a CONNECT request.
    pub authority: Option<Range<usize>>,
}

/// The four request-target forms of RFC 9112 §3.2.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TargetForm {
    /// `/path?args`
    #[default]
    Origin,
    /// `scheme://host[:port][/path][?args]`: nginx accepts any scheme here.
    Absolute {
        scheme: Range<usize>,
        host: Range<usize>,
        port: Option<Range<usize>>,
    },
    /// `host:port`, only with CONNECT.
    Authority,
    /// `*`: nginx rejects `OPTIONS *` as an invalid request, so parsing never produces it.
    Asterisk,
}

/// Writes nginx's `$uri` for `path` to `out` (cleared first), as
/// `ngx_http_parse_complex_uri` computes it: `%XX` escapes are decoded (a decoded `/` or `.`
/// then takes part in dot-segment removal, a decoded `?`, `%` or `#` is kept as a literal
/// byte), `/./` and `/x/../` segments are removed, a `#` ends the path, a `?` ends it
/// (arguments follow), and with `merge_slashes` runs of `/` become one.
///
/// Errors are nginx's "client sent invalid request" (400): a bad or truncated escape, `%00`,
/// a `..` that would climb above `/`, or a path that does not start with `/`. An empty path
/// (absolute-form `http://host?args`) normalises to `/`.
pub fn normalize(path: &[u8], merge_slashes: bool, out: &mut Vec<u8>) -> Result<(), RequestError> {
    out.clear();
    out.reserve(path.len() + 1);
    match path.first() {
        None => {
            out.push(b'/');
            return Ok(());
        }
        Some(b'/') => {}
        Some(_) => return Err(RequestError::InvalidRequest),
    }

    let mut state = Segment::Usual;
    let mut input = path.iter();
    while let Some(&byte) = input.next() {
        let decoded = if byte == b'%' {
            let high = input.next().and_then(|&b| hex_value(b));
            let low = input.next().and_then(|&b| hex_value(b));
            let (Some(high), Some(low)) = (high, low) else {
                return Err(RequestError::InvalidRequest);
            };
            match high << 4 | low {
                0 => return Err(RequestError::InvalidRequest),
                // An escaped `%`, `#` or `?` stays a literal byte of the path.
                literal @ (b'%' | b'#' | b'?') => {
                    out.push(literal);
                    state = Segment::Usual;
                    continue;
                }
                other => other,
            }
        } else {
            if byte == b'?' || byte == b'#' {
                break;
            }
            byte
        };
        state = normalize_byte(decoded, state, merge_slashes, out)?;
    }

    match state {
        Segment::Dot => {
            out.pop();
        }
        Segment::DotDot => climb(out)?,
        Segment::Usual | Segment::Slash => {}
    }
    Ok(())
}

/// Where the normaliser is within the current path segment.
#[derive(Clone, Copy, PartialEq)]
enum Segment {
    Usual,
    /// Just after a `/`.
    Slash,
    /// After `/.`.
    Dot,
    /// After `/..`.
    DotDot,
}

/// Feeds one (decoded) path byte to the dot-segment and slash logic.
fn normalize_byte(
    byte: u8,
    state: Segment,
    merge_slashes: bool,
    out: &mut Vec<u8>,
) -> Result<Segment, RequestError> {
    let next = match (state, byte) {
        (Segment::Slash, b'/') => {
            if !merge_slashes {
                out.push(b'/');
            }
            Segment::Slash
        }
        (_, b'/') if state == Segment::Dot => {
            // `/./`: drop the dot, keep the slash already written.
            out.pop();
            Segment::Slash
        }
        (Segment::DotDot, b'/') => {
            climb(out)?;
            Segment::Slash
        }
        (_, b'/') => {
            out.push(b'/');
            Segment::Slash
        }
        (Segment::Slash, b'.') => {
            out.push(b'.');
            Segment::Dot
        }
        (Segment::Dot, b'.') => {
            out.push(b'.');
            Segment::DotDot
        }
        _ => {
            out.push(byte);
            Segment::Usual
        }
    };
    Ok(next)
}

/// Removes a trailing `/..` and the segment before it, keeping the slash that precedes
/// that segment. Climbing above the root is an invalid request.
fn climb(out: &mut Vec<u8>) -> Result<(), RequestError> {
    // `out` ends with "/.."; look for the slash before the segment that "/.." cancels.
    let before = out
        .len()
        .checked_sub(4)
        .ok_or(RequestError::InvalidRequest)?;
    let slash = out[..=before]
        .iter()
        .rposition(|&b| b == b'/')
        .ok_or(RequestError::InvalidRequest)?;
    out.truncate(slash + 1);
    Ok(())
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `input` into `out` (appending), as nginx's `ngx_unescape_uri` does for
/// `$arg_*` and similar: a `%` followed by a non-hex byte is dropped and the byte kept; a
/// `%` and hex digit followed by a non-hex byte are all dropped; a truncated escape at the
/// end is dropped. `+` is not a space.
pub fn unescape(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut rest = input.iter();
    while let Some(&byte) = rest.next() {
        if byte != b'%' {
            out.push(byte);
            continue;
        }
        let Some(&first) = rest.next() else { return };
        let Some(high) = hex_value(first) else {
            out.push(first);
            continue;
        };
        let Some(&second) = rest.next() else { return };
        if let Some(low) = hex_value(second) {
            out.push(high << 4 | low);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{normalize, unescape};
    use crate::error::RequestError;

    fn uri(path: &str, merge_slashes: bool) -> Result<String, RequestError> {
        let mut out = Vec::new();
        normalize(path.as_bytes(), merge_slashes, &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn dot_segments_as_http_uri_t() {
        let cases = [
            ("/foo/bar/.?args", "/foo/bar/"),
            ("/foo/bar/.#frag", "/foo/bar/"),
            ("/foo/bar/..?args", "/foo/"),
            ("/foo/bar/..#frag", "/foo/"),
            ("/foo/bar/.", "/foo/bar/"),
            ("/foo/bar/..", "/foo/"),
            ("/%02", "/\x02"),
            ("/a/./b/../c", "/a/c"),
            ("/a/%2e%2E/b", "/b"),
            ("/a%2F..%2Fb", "/b"),
            ("/a/..", "/"),
            ("/..a/b", "/..a/b"),
            ("/a./b", "/a./b"),
            ("/a/...", "/a/..."),
            ("/%3F?x", "/?"),
            ("/%25%23", "/%#"),
            ("/a+b", "/a+b"),
            ("/", "/"),
            ("", "/"),
        ];
        for (path, expected) in cases {
            assert_eq!(uri(path, true).as_deref(), Ok(expected), "{path}");
        }
    }

    #[test]
    fn merge_slashes_on_and_off() {
        assert_eq!(uri("//a///b//", true).as_deref(), Ok("/a/b/"));
        assert_eq!(uri("//a///b//", false).as_deref(), Ok("//a///b//"));
        assert_eq!(uri("/a//../b", true).as_deref(), Ok("/b"));
        assert_eq!(uri("/a//../b", false).as_deref(), Ok("/a/b"));
        // nginx 1.22 with merge_slashes off.
        assert_eq!(uri("//a//b/../c", false).as_deref(), Ok("//a//c"));
        assert_eq!(uri("/a//../..", false).as_deref(), Ok("/"));
    }

    #[test]
    fn invalid_paths() {
        for path in [
            "/foo/bar%",
            "/foo/bar%1",
            "/%zz",
            "/%00",
            "/..",
            "/../a",
            "/a/../..",
            "x",
        ] {
            assert_eq!(uri(path, true), Err(RequestError::InvalidRequest), "{path}");
        }
    }

    #[test]
    fn unescape_as_ngx_unescape_uri() {
        let cases: [(&[u8], &[u8]); 7] = [
            (b"a%20b", b"a b"),
            (b"a+b", b"a+b"),
            (b"%zz", b"zz"),
            (b"%4zq", b"q"),
            (b"tail%", b"tail"),
            (b"tail%4", b"tail"),
            (b"%3f%3F", b"??"),
        ];
        for (input, expected) in cases {
            let mut out = Vec::new();
            unescape(input, &mut out);
            assert_eq!(out, expected, "{:?}", String::from_utf8_lossy(input));
        }
    }
}
