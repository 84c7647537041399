//! The two primitives of QPACK's representations: prefixed integers (RFC 7541 §5.1, with
//! values up to 2^62 - 1 as RFC 9204 §4.1.1 requires) and string literals with a Huffman
//! flag just above the length's prefix (§4.1.2).
//!
//! Readers return `Ok(None)` when `input` ends inside the item: on a stream that means
//! "wait for more", in a complete field section the caller turns it into an error.

use super::Cause;

/// Appends `value` with a `prefix_bits`-bit prefix; `first` holds the bits above it.
pub fn encode_integer(value: u64, prefix_bits: u8, first: u8, out: &mut Vec<u8>) {
    debug_assert!((1..=8).contains(&prefix_bits));
    let max_prefix = (1u64 << prefix_bits) - 1;
    if value < max_prefix {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Reads an integer whose prefix is the low `prefix_bits` bits of `input[0]`: the value and
/// the bytes it took.
pub fn decode_integer(input: &[u8], prefix_bits: u8) -> Result<Option<(u64, usize)>, Cause> {
    debug_assert!((1..=8).contains(&prefix_bits));
    let max_prefix = (1u64 << prefix_bits) - 1;
    let Some(&first) = input.first() else {
        return Ok(None);
    };
    let mut value = u64::from(first) & max_prefix;
    if value < max_prefix {
        return Ok(Some((value, 1)));
    }
    let mut shift = 0u32;
    for (position, &byte) in input.iter().enumerate().skip(1) {
        let bits = u64::from(byte & 0x7f);
        // 2^62 - 1 needs at most 9 continuation bytes; past 62 bits is an error.
        if shift > 56 || (bits << shift) >> shift != bits {
            return Err(Cause::IntegerOverflow);
        }
        value = value
            .checked_add(bits << shift)
            .filter(|&sum| sum <= crate::varint::MAX)
            .ok_or(Cause::IntegerOverflow)?;
        if byte & 0x80 == 0 {
            return Ok(Some((value, position + 1)));
        }
        shift += 7;
    }
    Ok(None)
}

/// Appends a string literal: the Huffman bit (`0x80 >> (7 - prefix_bits)`), the length with
/// a `prefix_bits`-bit prefix, the bytes. Huffman is used when asked and shorter.
pub fn encode_string(value: &[u8], prefix_bits: u8, first: u8, huffman: bool, out: &mut Vec<u8>) {
    let flag = 1u8 << prefix_bits;
    let coded_len = http2::hpack::huffman::encoded_len(value);
    if huffman && coded_len < value.len() {
        encode_integer(coded_len as u64, prefix_bits, first | flag, out);
        http2::hpack::huffman::encode(value, out);
    } else {
        encode_integer(value.len() as u64, prefix_bits, first, out);
        out.extend_from_slice(value);
    }
}

/// Reads a string literal whose Huffman bit sits just above a `prefix_bits`-bit length:
/// the decoded bytes and the input bytes taken. A length above `max_len` is refused before
/// its bytes arrive.
pub fn decode_string(
    input: &[u8],
    prefix_bits: u8,
    max_len: u64,
) -> Result<Option<(Vec<u8>, usize)>, Cause> {
    let Some(&first) = input.first() else {
        return Ok(None);
    };
    let huffman = first & (1u8 << prefix_bits) != 0;
    let Some((length, used)) = decode_integer(input, prefix_bits)? else {
        return Ok(None);
    };
    if length > max_len {
        return Err(Cause::StringTooLong { length });
    }
    let end = used + length as usize;
    let Some(bytes) = input.get(used..end) else {
        return Ok(None);
    };
    let value = if huffman {
        let mut decoded = Vec::with_capacity(bytes.len() * 8 / 5);
        http2::hpack::huffman::decode(bytes, &mut decoded).map_err(|_| Cause::BadHuffman)?;
        decoded
    } else {
        bytes.to_vec()
    };
    Ok(Some((value, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_at_every_prefix() {
        for prefix_bits in 1..=8u8 {
            for value in [
                0,
                1,
                30,
                31,
                127,
                128,
                255,
                1337,
                1 << 40,
                crate::varint::MAX,
            ] {
                let mut out = Vec::new();
                encode_integer(value, prefix_bits, 0, &mut out);
                assert_eq!(
                    decode_integer(&out, prefix_bits),
                    Ok(Some((value, out.len())))
                );
                for cut in 0..out.len() {
                    assert_eq!(decode_integer(&out[..cut], prefix_bits), Ok(None));
                }
            }
        }
    }

    #[test]
    fn rfc_7541_c_1_examples() {
        let mut out = Vec::new();
        encode_integer(10, 5, 0, &mut out);
        assert_eq!(out, [0x0a]);
        out.clear();
        encode_integer(1337, 5, 0, &mut out);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
    }

    #[test]
    fn integer_past_62_bits_is_refused() {
        let mut too_big = vec![0xff];
        too_big.extend_from_slice(&[0xff; 9]);
        too_big.push(0x01);
        assert_eq!(decode_integer(&too_big, 8), Err(Cause::IntegerOverflow));
        // 2^62 exactly: one past the maximum.
        let mut out = Vec::new();
        encode_integer(1 << 62, 8, 0, &mut out);
        assert_eq!(decode_integer(&out, 8), Err(Cause::IntegerOverflow));
    }

    #[test]
    fn strings_with_and_without_huffman() {
        for huffman in [false, true] {
            let mut out = Vec::new();
            encode_string(b"www.example.com", 7, 0, huffman, &mut out);
            assert_eq!(out[0] & 0x80 != 0, huffman);
            assert_eq!(
                decode_string(&out, 7, 100),
                Ok(Some((b"www.example.com".to_vec(), out.len())))
            );
            for cut in 0..out.len() {
                assert_eq!(decode_string(&out[..cut], 7, 100), Ok(None));
            }
        }
        // RFC 7541 C.4.1: "www.example.com" Huffman-coded.
        let mut out = Vec::new();
        encode_string(b"www.example.com", 7, 0, true, &mut out);
        assert_eq!(
            out,
            [
                0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff
            ]
        );
        assert_eq!(
            decode_string(&[0x05, b'a'], 7, 4),
            Err(Cause::StringTooLong { length: 5 })
        );
        assert_eq!(decode_string(&[0x81, 0x00], 7, 4), Err(Cause::BadHuffman));
    }
}
