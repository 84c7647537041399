//! QUIC variable-length integers (RFC 9000 §16): the two high bits of the first byte give
//! the length (1, 2, 4 or 8 bytes), the rest is the value in network order.

/// The largest value a varint carries: 2^62 - 1.
pub const MAX: u64 = (1 << 62) - 1;

/// The bytes `value` takes.
pub fn len(value: u64) -> usize {
    debug_assert!(value <= MAX);
    match value {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `value` in the shortest form.
pub fn encode(value: u64, out: &mut Vec<u8>) {
    debug_assert!(value <= MAX);
    match len(value) {
        1 => out.push(value as u8),
        2 => out.extend_from_slice(&(value as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(value as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Decodes the varint at the start of `input`: the value and the bytes it took, or `None`
/// when `input` holds only part of it.
pub fn decode(input: &[u8]) -> Option<(u64, usize)> {
    let &first = input.first()?;
    let length = 1usize << (first >> 6);
    let bytes = input.get(..length)?;
    let mut value = u64::from(first & 0x3f);
    for &byte in &bytes[1..] {
        value = (value << 8) | u64::from(byte);
    }
    Some((value, length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_9000_appendix_a_examples() {
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(decode(bytes), Some((value, bytes.len())));
            let mut out = Vec::new();
            encode(value, &mut out);
            assert_eq!(out, bytes);
        }
        // A non-shortest form decodes to the same value.
        assert_eq!(decode(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn partial_input_asks_for_more() {
        let mut out = Vec::new();
        encode(MAX, &mut out);
        assert_eq!(out.len(), 8);
        for cut in 0..out.len() {
            assert_eq!(decode(&out[..cut]), None);
        }
        assert_eq!(decode(&out), Some((MAX, 8)));
    }

    #[test]
    fn length_boundaries() {
        for (value, expected) in [(63, 1), (64, 2), (16_383, 2), (16_384, 4), (1 << 30, 8)] {
            let mut out = Vec::new();
            encode(value, &mut out);
            assert_eq!(out.len(), expected, "{value}");
            assert_eq!(len(value), expected);
            assert_eq!(decode(&out), Some((value, expected)));
        }
    }
}
