//! The Huffman code of RFC 7541 Appendix B.
//!
//! The code is canonical: codes are handed out in order of length and, within one length,
//! in order of symbol. So the table below keeps only each symbol's code length (the 256
//! byte values, then EOS), and the codes are computed from it at compile time; the RFC's
//! examples (Appendix C.4, C.6) and the `h2` crate's encoder check the result.

use super::HpackError;

/// The end-of-string symbol; its code must never appear in a string (§5.2).
const EOS: usize = 256;
const LENGTH_MIN: usize = 5;
const LENGTH_MAX: usize = 30;

/// Code length in bits of each symbol, 0 to 255 then EOS (Appendix B).
#[rustfmt::skip]
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    30,
];

/// The canonical code tables: each symbol's code, and per length the first code, how many
/// codes have that length and where they start in `symbols` (symbols in code order).
struct Canonical {
    codes: [u32; 257],
    first: [u32; LENGTH_MAX + 1],
    count: [u16; LENGTH_MAX + 1],
    start: [u16; LENGTH_MAX + 1],
    symbols: [u16; 257],
}

const fn canonical() -> Canonical {
    let mut table = Canonical {
        codes: [0; 257],
        first: [0; LENGTH_MAX + 1],
        count: [0; LENGTH_MAX + 1],
        start: [0; LENGTH_MAX + 1],
        symbols: [0; 257],
    };
    let mut code: u32 = 0;
    let mut placed: u16 = 0;
    let mut length = LENGTH_MIN;
    while length <= LENGTH_MAX {
        table.first[length] = code;
        table.start[length] = placed;
        let mut symbol = 0;
        while symbol < 257 {
            if LENGTHS[symbol] as usize == length {
                table.codes[symbol] = code;
                table.symbols[placed as usize] = symbol as u16;
                table.count[length] += 1;
                placed += 1;
                code += 1;
            }
            symbol += 1;
        }
        code <<= 1;
        length += 1;
    }
    assert!(placed == 257);
    table
}

static TABLE: Canonical = canonical();

/// The length in bytes of `input` Huffman-encoded.
pub fn encoded_len(input: &[u8]) -> usize {
    let bits: usize = input
        .iter()
        .map(|&byte| usize::from(LENGTHS[usize::from(byte)]))
        .sum();
    bits.div_ceil(8)
}

/// Appends `input` Huffman-encoded, padded with the most significant bits of EOS (ones).
pub fn encode(input: &[u8], out: &mut Vec<u8>) {
    let mut bits: u64 = 0;
    let mut count: u32 = 0;
    for &byte in input {
        let symbol = usize::from(byte);
        let length = u32::from(LENGTHS[symbol]);
        bits = (bits << length) | u64::from(TABLE.codes[symbol]);
        count += length;
        while count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    if count > 0 {
        let padding = 8 - count;
        out.push(((bits << padding) as u8) | ((1u8 << padding) - 1));
    }
}

/// Appends the decoded form of `input`. The EOS symbol, padding of 8 bits or more and
/// padding that is not the start of EOS (all ones) are errors (§5.2).
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let mut code: u32 = 0;
    let mut length: usize = 0;
    for &byte in input {
        for shift in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> shift) & 1);
            length += 1;
            if length < LENGTH_MIN {
                continue;
            }
            if length > LENGTH_MAX {
                return Err(HpackError::BadHuffman);
            }
            let offset = code.wrapping_sub(TABLE.first[length]);
            if offset < u32::from(TABLE.count[length]) {
                let symbol =
                    usize::from(TABLE.symbols[usize::from(TABLE.start[length]) + offset as usize]);
                if symbol == EOS {
                    return Err(HpackError::BadHuffman);
                }
                out.push(symbol as u8);
                code = 0;
                length = 0;
            }
        }
    }
    if length >= 8 || code != (1 << length) - 1 {
        return Err(HpackError::BadHuffman);
    }
    Ok(())
}
