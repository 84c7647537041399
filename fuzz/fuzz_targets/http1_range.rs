//! A `Range` header value (and `If-Range`, an entity tag or a date) against a body of some
//! length: no panic, every range lies inside the body and is not empty, no more ranges than
//! `max_ranges`, and the ranges written back as a header parse to the same ranges.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http1::range::{
    Decision, MAX_RANGES_UNLIMITED, Parsed, RangeInput, decide, parse,
};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, value)) = data.split_first() else { return };
    let content_length = match selector & 3 {
        0 => 0,
        1 => 1,
        2 => 1000,
        _ => u64::from(selector) << 40,
    };
    let max_ranges = match selector >> 2 & 3 {
        0 => MAX_RANGES_UNLIMITED,
        1 => 1,
        2 => 2,
        _ => 0,
    };
    let input = RangeInput {
        range: Some(value),
        if_range: match selector >> 4 & 3 {
            0 => None,
            1 => Some(&b"\"6b022944-8\""[..]),
            2 => Some(&b"Sat, 21 Nov 2026 23:29:08 GMT"[..]),
            _ => Some(&b"Sat, 21 Nov 2026 23:29:09 GMT"[..]),
        },
        etag: Some(b"\"6b022944-8\""),
        last_modified: Some(1_795_303_748),
        content_length,
        max_ranges,
    };
    if let Decision::Ranges(ranges) = decide(&input) {
        assert!(max_ranges > 0);
        assert!(!ranges.is_empty());
        // An If-Range that does not hold gives the whole body.
        assert_ne!(selector >> 4 & 3, 3);
    }
    let Parsed::Ranges(ranges) = parse(value, content_length, max_ranges) else { return };
    assert!(!ranges.is_empty());
    assert!(ranges.len() == 1 || ranges.len() as u64 <= max_ranges);
    for range in &ranges {
        assert!(range.start < range.end && range.end <= content_length, "{range:?}");
    }
    let written: Vec<String> = ranges
        .iter()
        .map(|range| format!("{}-{}", range.start, range.end - 1))
        .collect();
    let again = parse(written.join(",").as_bytes(), content_length, max_ranges);
    assert_eq!(again, Parsed::Ranges(ranges));
});
