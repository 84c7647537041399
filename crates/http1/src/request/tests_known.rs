//! `Known::from_name` and `eq_lowercase` against what they replaced: the candidate list
//! compared with `eq_ignore_ascii_case`, kept here as the reference.

use super::known::{Known, eq_lowercase};
use crate::test_rng::TestRng;

const NAMES: [&[u8]; 23] = [
    b"te",
    b"host",
    b"range",
    b"cookie",
    b"expect",
    b"referer",
    b"upgrade",
    b"if-match",
    b"if-range",
    b"connection",
    b"user-agent",
    b"keep-alive",
    b"content-type",
    b"if-none-match",
    b"authorization",
    b"content-range",
    b"content-length",
    b"x-forwarded-for",
    b"accept-encoding",
    b"if-modified-since",
    b"transfer-encoding",
    b"if-unmodified-since",
    b"proxy-authorization",
];

/// Lower-case strings `eq_lowercase` is used with besides the names.
const VALUES: [&[u8]; 5] = [b"keep-alive", b"close", b"chunked", b"100-continue", b"a1-"];

#[test]
fn from_name_matches_the_reference_on_every_one_byte_change() {
    let mut rng = TestRng::new(0x6e61);
    for name in NAMES {
        for _ in 0..8 {
            let mut variant: Vec<u8> = name
                .iter()
                .map(|&b| {
                    if rng.one_in(2) {
                        b.to_ascii_uppercase()
                    } else {
                        b
                    }
                })
                .collect();
            check_from_name(&variant);
            for at in 0..variant.len() {
                let original = variant[at];
                for byte in 0..=255 {
                    variant[at] = byte;
                    check_from_name(&variant);
                }
                variant[at] = original;
            }
            check_from_name(&variant[1..]);
            check_from_name(&variant[..variant.len() - 1]);
            variant.push(b'-');
            check_from_name(&variant);
        }
    }
}

#[test]
fn from_name_matches_the_reference_on_random_names() {
    let alphabet = b"acehiknoprstuxAEHIKT-_\r\x0d\x00\xc8.";
    let mut rng = TestRng::new(0x6e62);
    let mut name = Vec::new();
    for _ in 0..100_000 {
        name.clear();
        for _ in 0..rng.below(21) {
            name.push(alphabet[rng.below(alphabet.len())]);
        }
        check_from_name(&name);
    }
}

#[test]
fn eq_lowercase_matches_eq_ignore_ascii_case_on_every_one_byte_change() {
    for lower in NAMES.iter().chain(&VALUES) {
        let mut name = lower.to_ascii_uppercase();
        assert!(eq_lowercase(&name, lower));
        for at in 0..name.len() {
            let original = name[at];
            for byte in 0..=255 {
                name[at] = byte;
                let expected = name.eq_ignore_ascii_case(lower);
                assert_eq!(eq_lowercase(&name, lower), expected, "{name:?} {lower:?}");
            }
            name[at] = original;
        }
        assert!(!eq_lowercase(&name[1..], lower));
    }
}

fn check_from_name(name: &[u8]) {
    assert_eq!(
        Known::from_name(name),
        reference_from_name(name),
        "{:?}",
        String::from_utf8_lossy(name)
    );
}

/// `Known::from_name` as it was before candidates were picked by length and first byte.
fn reference_from_name(name: &[u8]) -> Option<Known> {
    let candidates: &[(&[u8], Known)] = match name.len() {
        2 => &[(b"te", Known::Te)],
        4 => &[(b"host", Known::Host)],
        5 => &[(b"range", Known::Range)],
        6 => &[(b"cookie", Known::Cookie), (b"expect", Known::Expect)],
        7 => &[(b"referer", Known::Referer), (b"upgrade", Known::Upgrade)],
        8 => &[(b"if-match", Known::IfMatch), (b"if-range", Known::IfRange)],
        10 => &[
            (b"connection", Known::Connection),
            (b"user-agent", Known::UserAgent),
            (b"keep-alive", Known::KeepAlive),
        ],
        12 => &[(b"content-type", Known::ContentType)],
        13 => &[
            (b"if-none-match", Known::IfNoneMatch),
            (b"authorization", Known::Authorization),
            (b"content-range", Known::ContentRange),
        ],
        14 => &[(b"content-length", Known::ContentLength)],
        15 => &[
            (b"x-forwarded-for", Known::XForwardedFor),
            (b"accept-encoding", Known::AcceptEncoding),
        ],
        17 => &[
            (b"if-modified-since", Known::IfModifiedSince),
            (b"transfer-encoding", Known::TransferEncoding),
        ],
        19 => &[
            (b"if-unmodified-since", Known::IfUnmodifiedSince),
            (b"proxy-authorization", Known::ProxyAuthorization),
        ],
        _ => return None,
    };
    candidates
        .iter()
        .find(|(known, _)| name.eq_ignore_ascii_case(known))
        .map(|&(_, k)| k)
}

/// Browser detection as six searches, one per word, the way it was written before the
/// two-pass [`super::known`] version: the reference the new one must agree with.
fn reference_detect(browser: &mut super::Browser, user_agent: &[u8]) {
    let find = |haystack: &[u8], needle: &[u8]| {
        haystack
            .windows(needle.len())
            .position(|window| window == needle)
    };
    if let Some(at) = find(user_agent, b"MSIE ")
        && at + 7 < user_agent.len()
    {
        browser.msie = true;
        if user_agent[at + 6] == b'.' {
            match user_agent[at + 5] {
                b'4' | b'5' => browser.msie6 = true,
                b'6' if find(&user_agent[at + 8..], b"SV1").is_none() => browser.msie6 = true,
                _ => {}
            }
        }
    }
    if find(user_agent, b"Opera").is_some() {
        browser.opera = true;
        browser.msie = false;
        browser.msie6 = false;
    }
    if browser.msie || browser.opera {
        return;
    }
    if find(user_agent, b"Gecko/").is_some() {
        browser.gecko = true;
    } else if find(user_agent, b"Chrome/").is_some() {
        browser.chrome = true;
    } else if find(user_agent, b"Safari/").is_some() && find(user_agent, b"Mac OS X").is_some() {
        browser.safari = true;
    } else if find(user_agent, b"Konqueror").is_some() {
        browser.konqueror = true;
    }
}

#[test]
fn browser_detection_agrees_with_one_search_per_word() {
    const PIECES: [&[u8]; 16] = [
        b"MSIE ",
        b"MSIE 6.0",
        b"MSIE 5.5",
        b"SV1",
        b"Opera",
        b"Gecko/",
        b"Chrome/",
        b"Safari/",
        b"Mac OS X",
        b"Konqueror",
        b"M",
        b"O",
        b"G",
        b"C",
        b"S",
        b" x.6",
    ];
    let mut rng = TestRng::new(0xb70);
    for _ in 0..50_000 {
        let mut agent = Vec::new();
        for _ in 0..rng.below(6) {
            agent.extend_from_slice(PIECES[rng.below(PIECES.len())]);
            if rng.one_in(3) {
                agent.push(b' ');
            }
        }
        // A second header accumulates on the first one's flags, as in nginx.
        let mut detected = super::Browser::default();
        let mut expected = super::Browser::default();
        for _ in 0..1 + usize::from(rng.one_in(4)) {
            detected.detect(&agent);
            reference_detect(&mut expected, &agent);
        }
        assert_eq!(detected, expected, "{:?}", String::from_utf8_lossy(&agent));
    }
}
