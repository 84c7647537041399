//! Looking through a header block while it arrives, before it can be decoded: the integers
//! of its representations are read as their bytes come, so that one too long for its
//! block is refused at once, as nginx (which decodes as bytes arrive) refuses it, rather
//! than when a frame that may never be completed is complete.
//!
//! Only what needs no table is checked (the integers' lengths); the decoder checks the
//! rest when the block is whole. The scan keeps its place between looks, so a block that
//! arrives a byte at a time is looked through once, not once per byte.

use super::{HpackError, integer};

/// What the scan reads next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Expect {
    /// The first octet of a representation and its integer.
    #[default]
    Representation,
    /// The length of a string literal (then its bytes, which are skipped); `name_first`
    /// says the literal's name comes before its value.
    String { name_first: bool },
}

/// A place in a header block that is arriving.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockScan {
    /// The block offset of what comes next; past the bytes that arrived while a string's
    /// bytes are still coming.
    at: usize,
    expect: Expect,
}

impl BlockScan {
    /// Reads on through the block's bytes that arrived: `head` then `tail` (the bytes held
    /// from earlier frames, then the current frame's), of a block known to have at least
    /// `declared` bytes. Stops where bytes are missing; an integer too long is an error.
    pub fn advance(&mut self, head: &[u8], tail: &[u8], declared: usize) -> Result<(), HpackError> {
        loop {
            let mut window = [0u8; integer::OCTETS_MAX];
            let filled = peek(head, tail, self.at, &mut window);
            if filled == 0 {
                return Ok(());
            }
            let input = &window[..filled];
            let left = declared.saturating_sub(self.at);
            // The representation's integer and whether a literal follows it.
            let (prefix_bits, literal) = match self.expect {
                Expect::String { .. } => (7, false),
                Expect::Representation => match input[0] {
                    0x80.. => (7, false),
                    0x40.. => (6, true),
                    0x20.. => (5, false),
                    _ => (4, true),
                },
            };
            let (value, used) = match integer::decode_declared(input, prefix_bits, left) {
                Ok(decoded) => decoded,
                Err(HpackError::Truncated) => return Ok(()),
                Err(error) => return Err(error),
            };
            self.at += used;
            self.expect = match self.expect {
                Expect::String { name_first } => {
                    self.at = self
                        .at
                        .saturating_add(usize::try_from(value).unwrap_or(usize::MAX));
                    if name_first {
                        Expect::String { name_first: false }
                    } else {
                        Expect::Representation
                    }
                }
                // A literal: its name is a string when its index is 0, its value always.
                Expect::Representation if literal => Expect::String {
                    name_first: value == 0,
                },
                Expect::Representation => Expect::Representation,
            };
        }
    }
}

/// Copies up to `window.len()` bytes at `at` of `head` followed by `tail`; returns how many.
fn peek(head: &[u8], tail: &[u8], at: usize, window: &mut [u8]) -> usize {
    let mut filled = 0;
    for &byte in head.iter().chain(tail).skip(at).take(window.len()) {
        window[filled] = byte;
        filled += 1;
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scans `block` arriving in pieces of `step` bytes, of a block known to be `declared`.
    fn scan_in_steps(block: &[u8], step: usize, declared: usize) -> Result<BlockScan, HpackError> {
        let mut scan = BlockScan::default();
        let mut arrived = 0;
        while arrived < block.len() {
            arrived = (arrived + step).min(block.len());
            scan.advance(&[], &block[..arrived], declared)?;
        }
        Ok(scan)
    }

    #[test]
    fn a_valid_block_scans_to_its_end_whatever_its_pieces() {
        // Indexed, literal with indexing and a literal name, literal without indexing on an
        // indexed name, a size update, never indexed with a literal name.
        let mut block = vec![0x82, 0x40, 3];
        block.extend_from_slice(b"abc");
        block.push(2);
        block.extend_from_slice(b"de");
        block.extend_from_slice(&[0x04, 0x7f, 0x01]);
        block.extend(std::iter::repeat_n(b'v', 128));
        block.push(0x3f);
        block.push(0x01);
        block.extend_from_slice(&[0x10, 1, b'n', 1, b'v']);
        for step in 1..=block.len() {
            let scan = scan_in_steps(&block, step, block.len()).expect("valid block");
            assert_eq!(scan.at, block.len(), "step {step}");
            assert_eq!(scan.expect, Expect::Representation, "step {step}");
        }
    }

    #[test]
    fn a_block_held_in_two_parts_reads_across_them() {
        let block = [0x40, 3, b'a', b'b', b'c', 0x7f, 0x01];
        for split in 0..=block.len() {
            let mut scan = BlockScan::default();
            let (head, tail) = block.split_at(split);
            scan.advance(head, tail, 200).expect("valid so far");
            // The value's length is read: the scan waits past its 128 bytes.
            assert_eq!(scan.at, block.len() + 128, "split {split}");
        }
    }

    #[test]
    fn an_integer_too_long_fails_before_its_block_is_complete() {
        // An index whose four octets all say more follow, in a block of five.
        let index = [0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            scan_in_steps(&index, 1, 5),
            Err(HpackError::IntegerOverflow)
        );
        // The same integer as a value's length, after an indexed name.
        let length = [0x42, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            scan_in_steps(&length, 2, 6),
            Err(HpackError::IntegerOverflow)
        );
        // Fewer octets so far, or a block that ends with them, is not yet an error.
        assert!(scan_in_steps(&index[..3], 1, 5).is_ok());
        assert!(scan_in_steps(&index, 1, 4).is_ok());
        // Three continuation octets are allowed.
        let mut scan = BlockScan::default();
        scan.advance(&[], &[0xff, 0xff, 0xff, 0x7f], 10)
            .expect("a 4-octet index");
        assert_eq!(scan.at, 4);
    }
}
