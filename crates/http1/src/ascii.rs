//! Field names compared without regard to case, eight bytes at a time.
//!
//! `<[u8]>::eq_ignore_ascii_case` lowers both sides a byte at a time, about sixteen
//! instructions per byte; the proxy compares every field of every upstream response with
//! the names it treats apart (measured at about 1,300 instructions per request under
//! `bench/instructions.sh proxy-ka`). Here a word of eight bytes is lowered in a handful of
//! operations. The result is the same for every input, control and non-ASCII bytes
//! included. Where one side is a known name of lower-case letters, digits and `-` (the
//! request head's well-known fields), [`eq_lowercase`] is the cheaper
//! form: it need not lower that side. This one is for names configured or received, which
//! may hold any byte.

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Whether `a` and `b` are equal when ASCII letters are compared without case, as
/// `<[u8]>::eq_ignore_ascii_case` says. The length check is inlined into every caller: most
/// comparisons of a field name with a known one end there.
#[inline(always)]
pub fn eq_ignore_case(a: &[u8], b: &[u8]) -> bool {
    // Names equal but for case have the same first byte once bit 0x20 is set in both: most
    // comparisons with another name of the same length end there, without a call.
    a.len() == b.len()
        && match (a.first(), b.first()) {
            (Some(x), Some(y)) => (x | 0x20) == (y | 0x20) && same_length_eq(a, b),
            _ => true,
        }
}

/// `name` equals `lower` ignoring ASCII case, where `lower` is made of lower-case letters,
/// digits and `-` (the names and values looked for: a field name Portico knows).
///
/// A letter of `lower` has bit 0x40 set and a digit or `-` has not, so `(lower & 0x40) >> 1`
/// is the case bit to ignore at that position: the comparison is exact and needs no
/// per-byte branch, and names of eight bytes or more are compared a word at a time. Name
/// lookup was the largest cost of reading a header line with `eq_ignore_ascii_case`.
#[inline]
pub fn eq_lowercase(name: &[u8], lower: &[u8]) -> bool {
    debug_assert!(
        lower
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    );
    if name.len() != lower.len() {
        return false;
    }
    let Some(last) = name.len().checked_sub(8) else {
        let differ = name.iter().zip(lower).fold(0, |differ, (&byte, &wanted)| {
            differ | ((byte | (wanted & 0x40) >> 1) ^ wanted)
        });
        return differ == 0;
    };
    let differ = |at: usize| match (name[at..].first_chunk(), lower[at..].first_chunk()) {
        (Some(&byte), Some(&wanted)) => {
            let (byte, wanted) = (u64::from_le_bytes(byte), u64::from_le_bytes(wanted));
            (byte | (wanted & CASE_BITS) >> 1) ^ wanted
        }
        // `at` is at most `last`, so both words are there.
        _ => u64::MAX,
    };
    // Whole words, then the last eight bytes, which may overlap the last whole word.
    (0..last)
        .step_by(8)
        .fold(differ(last), |all, at| all | differ(at))
        == 0
}

/// Bit 0x40 of every byte of a word.
const CASE_BITS: u64 = u64::from_ne_bytes([0x40; 8]);

fn same_length_eq(a: &[u8], b: &[u8]) -> bool {
    let len = a.len();
    if len < 8 {
        return lower(pack(a)) == lower(pack(b));
    }
    let mut offset = 0;
    while offset + 8 < len {
        if lower(word(a, offset)) != lower(word(b, offset)) {
            return false;
        }
        offset += 8;
    }
    // The last word ends at the end, overlapping what was compared when `len` is not a
    // multiple of eight.
    lower(word(a, len - 8)) == lower(word(b, len - 8))
}

fn word(bytes: &[u8], offset: usize) -> u64 {
    let mut chunk = [0; 8];
    chunk.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(chunk)
}

/// Fewer than eight bytes in one word: from four on, the first four and the last four
/// (overlapping), which is the same arrangement for two slices of the same length.
fn pack(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    if len >= 4 {
        let half = |at: usize| {
            let mut chunk = [0; 4];
            chunk.copy_from_slice(&bytes[at..at + 4]);
            u64::from(u32::from_le_bytes(chunk))
        };
        return half(0) | (half(len - 4) << 32);
    }
    bytes
        .iter()
        .fold(0, |packed, &byte| (packed << 8) | u64::from(byte))
}

/// Each byte of `word` with `A`..=`Z` lowered. Per byte, on its low seven bits: adding
/// `0x80 - b'A'` sets the high bit when the byte is at least `A`, adding `0x80 - b'Z' - 1`
/// when it is past `Z`; neither sum carries into the next byte. Bytes with the high bit
/// already set are not letters.
fn lower(word: u64) -> u64 {
    word | (uppercase_bits(word) >> 2)
}

/// Bit 0x80 of each byte of `word` that is `A`..=`Z`, the rest clear (see `lower`).
#[inline]
pub fn uppercase_bits(word: u64) -> u64 {
    let low7 = word & !HIGHS;
    let at_least_a = low7 + ONES * u64::from(0x80 - b'A');
    let past_z = low7 + ONES * u64::from(0x80 - b'Z' - 1);
    at_least_a & !past_z & !word & HIGHS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::TestRng;

    #[test]
    fn uppercase_bits_flag_exactly_the_capital_letters() {
        for byte in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = [b'a'; 8];
                bytes[at] = byte;
                let expected = if byte.is_ascii_uppercase() {
                    0x80u64 << (8 * at)
                } else {
                    0
                };
                assert_eq!(
                    uppercase_bits(u64::from_le_bytes(bytes)),
                    expected,
                    "{byte}"
                );
            }
        }
    }

    #[test]
    fn agrees_with_the_standard_library_on_every_byte_pair() {
        for x in 0..=255u8 {
            for y in 0..=255u8 {
                for len in [1, 7, 8, 9, 16, 17] {
                    let mut a = vec![b'k'; len];
                    let mut b = vec![b'K'; len];
                    a[len - 1] = x;
                    b[len - 1] = y;
                    a[0] = x;
                    b[0] = y;
                    assert_eq!(
                        eq_ignore_case(&a, &b),
                        a.eq_ignore_ascii_case(&b),
                        "{a:?} {b:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn agrees_with_the_standard_library_on_random_names() {
        let mut rng = TestRng::new(0x5eed);
        let alphabet = b"aAzZ@[`{-_09\x00\x7f\x80\xc1\xe1\xff";
        for _ in 0..100_000 {
            let len = rng.below(24);
            let a: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let b: Vec<u8> = a
                .iter()
                .map(|&byte| match rng.below(4) {
                    0 => byte.to_ascii_uppercase(),
                    1 => byte.to_ascii_lowercase(),
                    2 => alphabet[rng.below(alphabet.len())],
                    _ => byte,
                })
                .collect();
            assert_eq!(
                eq_ignore_case(&a, &b),
                a.eq_ignore_ascii_case(&b),
                "{a:?} {b:?}"
            );
        }
        assert!(eq_ignore_case(b"Content-Length", b"content-length"));
        assert!(!eq_ignore_case(b"Content-Length", b"content-lengtH "));
        assert!(eq_ignore_case(b"", b""));
    }
}
