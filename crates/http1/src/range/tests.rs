//! The range parser and decision against nginx 1.22's answers (each case was sent to
//! nginx with a 1000-byte file).

use super::*;

const LEN: u64 = 1000;

fn ranges(pairs: &[(u64, u64)]) -> Parsed {
    Parsed::Ranges(
        pairs
            .iter()
            .map(|&(start, end)| ByteRange { start, end })
            .collect(),
    )
}

fn header(value: &str) -> Decision {
    decide(&RangeInput {
        range: Some(value.as_bytes()),
        content_length: LEN,
        max_ranges: MAX_RANGES_UNLIMITED,
        ..RangeInput::default()
    })
}

fn spec(value: &str) -> Parsed {
    parse(value.as_bytes(), LEN, MAX_RANGES_UNLIMITED)
}

#[test]
fn single_ranges() {
    assert_eq!(spec("0-8"), ranges(&[(0, 9)]));
    assert_eq!(spec("-10"), ranges(&[(990, 1000)]));
    assert_eq!(spec("990-"), ranges(&[(990, 1000)]));
    assert_eq!(spec("990-1990"), ranges(&[(990, 1000)]));
    assert_eq!(spec("0-10001"), ranges(&[(0, 1000)]));
    assert_eq!(spec("-2000"), ranges(&[(0, 1000)]));
    assert_eq!(spec("0-0"), ranges(&[(0, 1)]));
    assert_eq!(spec(" 1-2"), ranges(&[(1, 3)]));
    assert_eq!(spec("1 - 2"), ranges(&[(1, 3)]));
    assert_eq!(
        spec("9223372036854775806-9223372036854775807"),
        Parsed::NotSatisfiable
    );
}

#[test]
fn malformed_specs_are_not_satisfiable() {
    for bad in [
        "alpha",
        "10-alpha",
        "10",
        "10-11 12-",
        "-0",
        "5-1",
        "1-2,",
        ",1-2",
        "1-2,,3-4",
        "99999999999999999999-",
        "9223372036854775807-",
        "9223372036854775808-",
        "1000-",
        "0-1\t",
        "0--1",
        "-",
        "--1",
        "1-2-3",
        "",
    ] {
        assert_eq!(spec(bad), Parsed::NotSatisfiable, "{bad:?}");
    }
}

#[test]
fn several_ranges() {
    assert_eq!(
        spec("0-9, -10, 10-19"),
        ranges(&[(0, 10), (990, 1000), (10, 20)])
    );
    // A range past the end is dropped; the others stay.
    assert_eq!(
        spec("0-9, -10, 100000-, 10-19"),
        ranges(&[(0, 10), (990, 1000), (10, 20)])
    );
    assert_eq!(spec("0-0,-1"), ranges(&[(0, 1), (999, 1000)]));
    // Reversed ranges are dropped, leaving one.
    assert_eq!(spec("5-1,2-3"), ranges(&[(2, 4)]));
    assert_eq!(spec("1-0,0-0"), ranges(&[(0, 1)]));
    assert_eq!(spec("0-1,5-1"), ranges(&[(0, 2)]));
}

#[test]
fn ranges_larger_than_the_body_give_it_whole() {
    assert_eq!(spec("0-10001, 0-0"), Parsed::Whole);
    assert_eq!(spec("0-499,500-999,0-1"), Parsed::Whole);
    // A range starting at 0 of an empty body.
    assert_eq!(parse(b"0-", 0, MAX_RANGES_UNLIMITED), Parsed::Whole);
    assert_eq!(parse(b"-5", 0, MAX_RANGES_UNLIMITED), Parsed::Whole);
    assert_eq!(
        parse(b"5-", 0, MAX_RANGES_UNLIMITED),
        Parsed::NotSatisfiable
    );
}

#[test]
fn many_small_ranges_with_the_default_limit() {
    // 17 one-byte ranges: 17 + 17 * 256 > 1000 + 4096.
    let many: Vec<String> = (0..17).map(|index| format!("{0}-{0}", index * 2)).collect();
    let many = many.join(",");
    // nginx 1.22 sends these: its check adds 256 per range only past 4096 + the length.
    assert!(matches!(spec(&many), Parsed::Ranges(list) if list.len() == 17));
    let more: Vec<String> = (0..20).map(|index| format!("{0}-{0}", index * 2)).collect();
    assert_eq!(spec(&more.join(",")), Parsed::Whole);
    // With an explicit limit the check is not made.
    assert!(matches!(
        parse(more.join(",").as_bytes(), LEN, 100),
        Parsed::Ranges(list) if list.len() == 20
    ));
}

#[test]
fn max_ranges() {
    assert_eq!(parse(b"0-9, -10", LEN, 2), ranges(&[(0, 10), (990, 1000)]));
    assert_eq!(
        parse(b"0-9, -10, 10000-", LEN, 2),
        ranges(&[(0, 10), (990, 1000)])
    );
    assert_eq!(parse(b"0-9, -10, 10-19", LEN, 2), Parsed::Whole);
    assert_eq!(parse(b"0-9", LEN, 1), ranges(&[(0, 10)]));
    let zero = RangeInput {
        range: Some(b"bytes=0-9"),
        content_length: LEN,
        max_ranges: 0,
        ..RangeInput::default()
    };
    assert_eq!(decide(&zero), Decision::Skip);
}

#[test]
fn header_prefix() {
    assert_eq!(
        header("bytes=0-1"),
        Decision::Ranges(vec![ByteRange { start: 0, end: 2 }])
    );
    assert_eq!(
        header("BYTES=0-1"),
        Decision::Ranges(vec![ByteRange { start: 0, end: 2 }])
    );
    assert_eq!(header("bytes="), Decision::Whole);
    assert_eq!(header("items=0-1"), Decision::Whole);
    assert_eq!(header("bytes=x"), Decision::NotSatisfiable);
    let none = RangeInput {
        content_length: LEN,
        max_ranges: MAX_RANGES_UNLIMITED,
        ..RangeInput::default()
    };
    assert_eq!(decide(&none), Decision::Whole);
}

#[test]
fn if_range() {
    let modified = 1_795_303_748; // Sat, 21 Nov 2026 23:29:08 GMT
    let input = |if_range: &'static str, etag: Option<&'static [u8]>, last: Option<i64>| {
        decide(&RangeInput {
            range: Some(b"bytes=0-9"),
            if_range: Some(if_range.as_bytes()),
            etag,
            last_modified: last,
            content_length: LEN,
            max_ranges: MAX_RANGES_UNLIMITED,
        })
    };
    let partial = Decision::Ranges(vec![ByteRange { start: 0, end: 10 }]);
    let etag: Option<&[u8]> = Some(b"\"6b02328b-3e8\"");
    assert_eq!(input("\"6b02328b-3e8\"", etag, Some(modified)), partial);
    assert_eq!(input("\"other\"", etag, Some(modified)), Decision::Whole);
    assert_eq!(
        input("W/\"6b02328b-3e8\"", etag, Some(modified)),
        Decision::Whole
    );
    assert_eq!(
        input("\"6b02328b-3e8\"", None, Some(modified)),
        Decision::Whole
    );
    let date = "Sat, 21 Nov 2026 23:29:08 GMT";
    assert_eq!(input(date, etag, Some(modified)), partial);
    assert_eq!(
        input("Sat, 21 Nov 2026 23:29:09 GMT", etag, Some(modified)),
        Decision::Whole
    );
    assert_eq!(input(date, etag, None), Decision::Whole);
    assert_eq!(input("wrong", etag, Some(modified)), Decision::Whole);
    // A lone quote is no entity tag: it is read as a date.
    assert_eq!(input("\"", etag, Some(modified)), Decision::Whole);
}

/// Byte strings built from the bytes that matter to the parser: no panic, every range
/// lies inside the body, and a single range is never empty.
#[test]
fn parsing_any_spec_is_safe() {
    const ALPHABET: &[u8] = b"0123456789- ,x9";
    let mut state = 0x2545_f491_u32;
    for _ in 0..50_000 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = (state % 14) as usize;
        let text: Vec<u8> = (0..len)
            .map(|index| ALPHABET[((state >> (index % 24)) as usize + index) % ALPHABET.len()])
            .collect();
        for (length, limit) in [(LEN, MAX_RANGES_UNLIMITED), (0, 2), (7, 1)] {
            if let Parsed::Ranges(list) = parse(&text, length, limit) {
                assert!(!list.is_empty() && list.len() as u64 <= limit.max(1));
                for range in list {
                    assert!(range.start < range.end && range.end <= length, "{text:?}");
                }
            }
        }
    }
}
