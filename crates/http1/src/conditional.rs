//! Conditional request fields (RFC 9110 §13.1) read as nginx's not-modified filter reads
//! them: `If-Modified-Since` and `If-Unmodified-Since` dates, `If-Match` and
//! `If-None-Match` entity-tag lists. Pure; the caller decides between 200, 304 and 412.

use crate::response::parse_http_date;

/// A conditional date in Unix seconds; a value that is no HTTP date is nginx's error value,
/// -1, and takes part in every comparison as that number.
pub fn date(value: &[u8]) -> i64 {
    parse_http_date(value).unwrap_or(-1)
}

/// How entity tags compare (RFC 9110 §8.8.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `If-Match`: the tags compare byte for byte.
    Strong,
    /// `If-None-Match`: a `W/` prefix is ignored on either side.
    Weak,
}

/// Whether `list` (`*`, or comma-separated entity tags) names `etag`, scanned as nginx
/// scans it: an entry matches when it starts with the tag and only spaces or tabs follow
/// before the next comma. Without an `etag` only `*` matches.
pub fn etag_listed(list: &[u8], etag: Option<&[u8]>, comparison: Comparison) -> bool {
    if list == b"*" {
        return true;
    }
    let Some(mut etag) = etag else {
        return false;
    };
    let weak = comparison == Comparison::Weak;
    if weak && etag.len() > 2 && etag.starts_with(b"W/") {
        etag = &etag[2..];
    }
    let mut position = 0;
    while position < list.len() {
        if weak && list.len() - position > 2 && list[position..].starts_with(b"W/") {
            position += 2;
        }
        if etag.len() > list.len() - position {
            return false;
        }
        if list[position..].starts_with(etag) {
            position += etag.len();
            position += count_while(&list[position..], |b| b == b' ' || b == b'\t');
            if position == list.len() || list[position] == b',' {
                return true;
            }
        }
        position += count_while(&list[position..], |b| b != b',');
        position += count_while(&list[position..], |b| matches!(b, b' ' | b'\t' | b','));
    }
    false
}

/// How many bytes at the start of `bytes` satisfy `test`.
fn count_while(bytes: &[u8], test: impl Fn(u8) -> bool) -> usize {
    bytes.iter().position(|&b| !test(b)).unwrap_or(bytes.len())
}

#[cfg(test)]
mod tests;
