//! Prefixed integers (RFC 7541 §5.1).

use super::HpackError;

/// The largest value decoded: HTTP/2 never needs more than 32 bits (sizes and indexes).
const VALUE_MAX: u64 = u32::MAX as u64;

/// Appends `value` with an `prefix_bits`-bit prefix; `first` holds the bits above the prefix
/// (the representation's pattern).
pub fn encode(value: u64, prefix_bits: u8, first: u8, out: &mut Vec<u8>) {
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

/// Decodes an integer whose prefix is the low `prefix_bits` bits of `input[0]`; returns the
/// value and the bytes it took.
pub fn decode(input: &[u8], prefix_bits: u8) -> Result<(u64, usize), HpackError> {
    debug_assert!((1..=8).contains(&prefix_bits));
    let max_prefix = (1u64 << prefix_bits) - 1;
    let &first = input.first().ok_or(HpackError::Truncated)?;
    let mut value = u64::from(first) & max_prefix;
    if value < max_prefix {
        return Ok((value, 1));
    }
    let mut shift = 0u32;
    for (position, &byte) in input.iter().enumerate().skip(1) {
        value += u64::from(byte & 0x7f) << shift;
        if value > VALUE_MAX {
            return Err(HpackError::IntegerOverflow);
        }
        if byte & 0x80 == 0 {
            return Ok((value, position + 1));
        }
        shift += 7;
        // Five continuation bytes carry 35 bits: more is padding with zeros or an overflow.
        if shift > 28 {
            return Err(HpackError::IntegerOverflow);
        }
    }
    Err(HpackError::Truncated)
}
