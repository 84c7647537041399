//! Values a client controls that reach the headers module: conditional request headers
//! (`If-Match`, `If-None-Match`, `If-Modified-Since`, `If-Unmodified-Since`) and an
//! `expires` value from a variable. No panic, and the decisions keep their invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http::kernel::core::IfModifiedSince;
use portico_http::modules::headers::expires::{SendTime, expires_headers, parse_expires};
use portico_http::modules::not_modified::{Conditions, Outcome, Validators, check};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else { return };
    // Split the rest at the first NUL: a header value, then an entity tag.
    let (value, etag) = match input.iter().position(|&b| b == 0) {
        Some(at) => (&input[..at], &input[at + 1..]),
        None => (input, &b"\"6b022944-8\""[..]),
    };
    let validators = Validators {
        last_modified: Some(1_795_303_748),
        etag: Some(etag),
    };
    let mode = match selector % 3 {
        0 => IfModifiedSince::Off,
        1 => IfModifiedSince::Exact,
        _ => IfModifiedSince::Before,
    };
    let none_match = Conditions {
        if_none_match: Some(value),
        ..Conditions::default()
    };
    let outcome = check(&none_match, &validators, mode);
    assert_ne!(outcome, Outcome::PreconditionFailed);
    if value == b"*" {
        assert_eq!(outcome, Outcome::NotModified);
    }
    let matching = Conditions {
        if_match: Some(value),
        if_unmodified_since: Some(value),
        if_modified_since: Some(value),
        ..Conditions::default()
    };
    check(&matching, &validators, mode);
    let modified = selector & 4 != 0;
    if let Ok(parsed) = parse_expires(value, modified) {
        let now = SendTime {
            unix_seconds: 1_795_303_753,
            utc_offset_seconds: i64::from(selector as i8) * 900,
        };
        if let Some(headers) = expires_headers(parsed, selector & 8 != 0, now, Some(0)) {
            assert!(headers.expires.ends_with(b" GMT"), "an HTTP date");
            assert!(!headers.cache_control.is_empty());
        }
    }
});
