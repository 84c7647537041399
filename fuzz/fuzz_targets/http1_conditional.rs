//! Conditional request fields: an entity-tag list (`If-Match`, `If-None-Match`) and the tag
//! after the first NUL, and the same bytes as a date (`If-Modified-Since`). No panic; `*`
//! and the tag itself always match; a strong match is a weak one; a tag after other entries
//! is found (unless it holds a comma: nginx's scan resumes after the next comma, which can
//! fall inside a tag); a date that parses is written and read back to the same second.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http1::conditional::{Comparison, date, etag_listed};
use portico_http1::response::write_http_date;

/// 9999-12-31 23:59:59 GMT, the last second with a four-digit year.
const FOUR_DIGIT_YEARS_END: i64 = 253_402_300_799;

fuzz_target!(|data: &[u8]| {
    let (list, etag) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"\"6b022944-8\""[..]),
    };
    let strong = etag_listed(list, Some(etag), Comparison::Strong);
    let weak = etag_listed(list, Some(etag), Comparison::Weak);
    if list == b"*" {
        assert!(strong && weak);
    }
    if strong && !etag.starts_with(b"W/") {
        assert!(weak);
    }
    assert_eq!(etag_listed(list, None, Comparison::Weak), list == b"*");
    if !etag.is_empty() && !matches!(etag[0], b' ' | b'\t') && !etag.contains(&b',') {
        assert!(etag_listed(etag, Some(etag), Comparison::Strong));
        let mut longer = b"\"other\", ".to_vec();
        longer.extend_from_slice(etag);
        assert!(etag_listed(&longer, Some(etag), Comparison::Strong), "{longer:?}");
        assert!(etag_listed(&longer, Some(etag), Comparison::Weak), "{longer:?}");
    }
    let seconds = date(data);
    if (0..=FOUR_DIGIT_YEARS_END).contains(&seconds) {
        let mut written = Vec::new();
        write_http_date(&mut written, seconds);
        assert_eq!(date(&written), seconds, "{:?}", String::from_utf8_lossy(&written));
    }
});
