//! Prefixed integers (RFC 7541 §5.1).

use super::HpackError;

/// The most octets an integer may take, its prefix's included, as nginx decodes them: three
/// continuation octets carry 21 bits, more than any size or index a 64 KiB header block
/// can need. A longer integer is refused as soon as its fourth octet says more follow,
/// without waiting for the rest of its frame.
pub const OCTETS_MAX: usize = 4;

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
/// value and the bytes it took. `input` is the rest of a complete header block.
pub fn decode(input: &[u8], prefix_bits: u8) -> Result<(u64, usize), HpackError> {
    decode_declared(input, prefix_bits, input.len())
}

/// [`decode`] when only part of the block has arrived: `declared` bytes from `input[0]` on
/// are known to be in the block (its frames' lengths say so), `input` holds those that
/// came. [`HpackError::Truncated`] then means that more bytes are needed, or, when
/// `declared` bytes came, that the block ends inside the integer. An integer whose
/// [`OCTETS_MAX`] octets all say more follow is [`HpackError::IntegerOverflow`] when the
/// block goes on past them; when it ends there it is a truncated block, as nginx says
/// (a size error rather than a compression error).
pub fn decode_declared(
    input: &[u8],
    prefix_bits: u8,
    declared: usize,
) -> Result<(u64, usize), HpackError> {
    debug_assert!((1..=8).contains(&prefix_bits));
    let max_prefix = (1u64 << prefix_bits) - 1;
    let &first = input.first().ok_or(HpackError::Truncated)?;
    let mut value = u64::from(first) & max_prefix;
    if value < max_prefix {
        return Ok((value, 1));
    }
    let mut shift = 0u32;
    for (position, &byte) in input.iter().enumerate().take(OCTETS_MAX).skip(1) {
        value += u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, position + 1));
        }
        shift += 7;
    }
    if input.len() >= OCTETS_MAX && declared > OCTETS_MAX {
        return Err(HpackError::IntegerOverflow);
    }
    Err(HpackError::Truncated)
}
