//! The Huffman code of RFC 7541 Appendix B.
//!
//! The code is canonical: codes are handed out in order of length and, within one length,
//! in order of symbol. So the table below keeps only each symbol's code length (the 256
//! byte values, then EOS), and the codes, the decoding tree and its four-bit steps are
//! computed from it at compile time; the RFC's examples (Appendix C.4, C.6) and the `h2`
//! crate's encoder check the result.

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

/// Each symbol's code: within one length, codes go up with the symbol; a longer length
/// starts at the next free code of the shorter one, shifted left.
const fn canonical() -> [u32; 257] {
    let mut codes = [0; 257];
    let mut code: u32 = 0;
    let mut placed = 0;
    let mut length = LENGTH_MIN;
    while length <= LENGTH_MAX {
        let mut symbol = 0;
        while symbol < 257 {
            if LENGTHS[symbol] as usize == length {
                codes[symbol] = code;
                placed += 1;
                code += 1;
            }
            symbol += 1;
        }
        code <<= 1;
        length += 1;
    }
    assert!(placed == 257);
    codes
}

static CODES: [u32; 257] = canonical();

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
        bits = (bits << length) | u64::from(CODES[symbol]);
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

/// The decoding tree: 256 internal nodes (0 is the root), each with two children that are
/// either another node or `LEAF | symbol`.
const LEAF: u16 = 0x8000;

const fn tree() -> [[u16; 2]; 256] {
    let codes = canonical();
    let mut nodes = [[0u16; 2]; 256];
    let mut count: u16 = 1;
    let mut symbol = 0;
    while symbol < 257 {
        let code = codes[symbol];
        let mut bit = LENGTHS[symbol] as u32;
        let mut node = 0usize;
        while bit > 0 {
            bit -= 1;
            let side = ((code >> bit) & 1) as usize;
            if bit == 0 {
                nodes[node][side] = LEAF | symbol as u16;
            } else {
                if nodes[node][side] == 0 {
                    nodes[node][side] = count;
                    count += 1;
                }
                node = nodes[node][side] as usize;
            }
        }
        symbol += 1;
    }
    assert!(count == 256);
    nodes
}

/// One step of four bits from a node: bits 0-7 the next node, bit 8 set when a symbol was
/// completed (bits 9-16 hold it), bit 17 set when the bits complete EOS.
const EMITS: u32 = 1 << 8;
const FAILS: u32 = 1 << 17;

const fn steps() -> [u32; 256 * 16] {
    let nodes = tree();
    let mut steps = [0u32; 256 * 16];
    let mut node = 0;
    while node < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut current = node;
            let mut step = 0u32;
            let mut bit = 4;
            while bit > 0 {
                bit -= 1;
                let child = nodes[current][(nibble >> bit) & 1];
                if child & LEAF != 0 {
                    let symbol = (child & !LEAF) as u32;
                    if symbol as usize == EOS {
                        step |= FAILS;
                    } else {
                        step |= EMITS | (symbol << 9);
                    }
                    current = 0;
                } else {
                    current = child as usize;
                }
            }
            steps[node * 16 + nibble] = step | current as u32;
            nibble += 1;
        }
        node += 1;
    }
    steps
}

/// The nodes where a string may end: the root, and the all-ones path under it up to 8 bits.
/// RFC 7541 §5.2 allows at most 7 bits of padding; nginx also accepts a whole byte of ones
/// after a string that ends on a byte boundary (nginx-tests' own encoder sends one), and so
/// does Portico.
const fn endings() -> [bool; 256] {
    let nodes = tree();
    let mut endings = [false; 256];
    let mut node = 0usize;
    let mut depth = 0;
    while depth <= 8 {
        endings[node] = true;
        node = nodes[node][1] as usize;
        depth += 1;
    }
    endings
}

static STEPS: [u32; 256 * 16] = steps();
static ENDINGS: [bool; 256] = endings();

/// Appends the decoded form of `input`, four bits at a time. The EOS symbol, padding of more
/// than 8 bits and padding that is not the start of EOS (all ones) are errors (§5.2).
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let mut node = 0usize;
    for &byte in input {
        for nibble in [byte >> 4, byte & 0x0f] {
            let step = STEPS[node * 16 + usize::from(nibble)];
            if step & FAILS != 0 {
                return Err(HpackError::BadHuffman);
            }
            if step & EMITS != 0 {
                out.push((step >> 9) as u8);
            }
            node = (step & 0xff) as usize;
        }
    }
    if !ENDINGS[node] {
        return Err(HpackError::BadHuffman);
    }
    Ok(())
}
