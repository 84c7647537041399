//! MurmurHash2, 32-bit, as nginx computes it for `split_clients`.

const MULTIPLIER: u32 = 0x5bd1_e995;

/// The hash of `data` with seed 0. Bytes are read four at a time as little-endian words
/// whatever the machine's byte order, so a key lands in the same bucket as in nginx.
pub fn murmur_hash2(data: &[u8]) -> u32 {
    // nginx seeds with the length truncated to 32 bits.
    let mut hash = data.len() as u32;
    let mut words = data.chunks_exact(4);
    for word in &mut words {
        let mut k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        k = k.wrapping_mul(MULTIPLIER);
        k ^= k >> 24;
        k = k.wrapping_mul(MULTIPLIER);
        hash = hash.wrapping_mul(MULTIPLIER);
        hash ^= k;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        if let Some(&byte) = tail.get(2) {
            hash ^= u32::from(byte) << 16;
        }
        if let Some(&byte) = tail.get(1) {
            hash ^= u32::from(byte) << 8;
        }
        hash ^= u32::from(tail[0]);
        hash = hash.wrapping_mul(MULTIPLIER);
    }
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(MULTIPLIER);
    hash ^= hash >> 15;
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of nginx's `ngx_murmur_hash2` (a C transcription of it, run once) for every
    /// tail length and multi-word keys; `map.rs` in the e2e tests checks buckets against
    /// nginx itself.
    #[test]
    fn matches_nginx() {
        let vectors: &[(&[u8], u32)] = &[
            (b"", 0),
            (b"a", 0x9268_5f5e),
            (b"ab", 0x1aa1_4063),
            (b"abc", 0x1357_7c9b),
            (b"abcd", 0x2687_3021),
            (b"abcde", 0x5f09_a8de),
            (b"/index.html", 0x7a72_597d),
            (b"127.0.0.1", 0xb613_1d91),
        ];
        for (key, expected) in vectors {
            assert_eq!(
                murmur_hash2(key),
                *expected,
                "{}",
                String::from_utf8_lossy(key)
            );
        }
    }
}
