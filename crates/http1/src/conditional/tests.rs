use super::*;

const ETAG: &[u8] = b"\"6b022944-8\"";

fn weak(list: &[u8], etag: &[u8]) -> bool {
    etag_listed(list, Some(etag), Comparison::Weak)
}

fn strong(list: &[u8], etag: &[u8]) -> bool {
    etag_listed(list, Some(etag), Comparison::Strong)
}

#[test]
fn dates_and_the_error_value() {
    assert_eq!(date(b"Sat, 21 Nov 2026 23:29:08 GMT"), 1_795_303_748);
    assert_eq!(date(b"Sunday, 06-Nov-94 08:49:37 GMT"), 784_111_777);
    assert_eq!(date(b"Sun Nov  6 08:49:37 1994"), 784_111_777);
    assert_eq!(date(b"garbage"), -1);
    assert_eq!(date(b""), -1);
}

#[test]
fn lists_star_and_weak_tags() {
    assert!(weak(ETAG, ETAG));
    assert!(!weak(b"\"foo\"", ETAG));
    assert!(weak(b"\"foo\", \"bar\", \"6b022944-8\" , \"baz\"", ETAG));
    assert!(weak(b"\"foo\",\t\"6b022944-8\"", ETAG));
    assert!(weak(b"*", ETAG));
    assert!(weak(b"W/\"6b022944-8\"", ETAG));
    // A prefix of a longer tag is not the tag.
    assert!(!weak(b"\"6b022944-8\"x", ETAG));
    assert!(!weak(b"\"6b022944-8", ETAG));
    // A comma inside a tag: scanning goes on after the tag, as nginx's does.
    assert!(weak(b"\"a,b\"x, \"a,b\"", b"\"a,b\""));
    assert!(weak(b"\"a\", \"a,b\" ", b"\"a,b\""));
    // ... and can hide a tag that holds a comma from the weak comparison (found by fuzzing).
    let hidden = b"W/\"other\", W/";
    assert!(strong(b"\"other\", W/\"other\", W/", hidden));
    assert!(!weak(b"\"other\", W/\"other\", W/", hidden));
    assert!(weak(b"\"abc\"", b"W/\"abc\""));
    assert!(weak(b"W/\"abc\"", b"W/\"abc\""));
    // Without an ETag only `*` matches.
    assert!(!etag_listed(ETAG, None, Comparison::Weak));
    assert!(etag_listed(b"*", None, Comparison::Weak));
    assert!(etag_listed(b"*", None, Comparison::Strong));
}

#[test]
fn strong_comparison_keeps_weak_tags_apart() {
    assert!(strong(ETAG, ETAG));
    assert!(!strong(b"\"foo\"", ETAG));
    assert!(strong(
        b"\"foo\", \"bar\", \t\"6b022944-8\" , \"baz\"",
        ETAG
    ));
    assert!(strong(b"*", ETAG));
    assert!(!strong(b"W/\"6b022944-8\"", ETAG));
    assert!(!etag_listed(ETAG, None, Comparison::Strong));
}

/// Lists built from the bytes that matter to the scanner, at every length up to 12:
/// no panic, `*` and the tag itself always match, and a strong match is a weak one.
#[test]
fn scanning_any_list_is_safe() {
    const ALPHABET: &[u8] = b"W/\"a, \t*";
    let etags: [&[u8]; 4] = [b"\"a\"", b"W/\"a\"", b"a", b""];
    let mut state = 0x2545_f491_u32;
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = (state % 13) as usize;
        let list: Vec<u8> = (0..len)
            .map(|index| ALPHABET[((state >> (index % 24)) as usize + index) % ALPHABET.len()])
            .collect();
        for etag in etags {
            let strong = strong(&list, etag);
            let weak = weak(&list, etag);
            if list == b"*" || (list == etag && !etag.is_empty()) {
                assert!(strong && weak, "{list:?} {etag:?}");
            }
            if strong && !etag.starts_with(b"W/") {
                assert!(weak, "{list:?} {etag:?}");
            }
        }
    }
}
