//! Name-value pairs (FastCGI 1.0 §3.4): each length in one byte below 128, else in four
//! bytes big-endian with the high bit set, then the name and the value.

/// The largest length the four-byte form can carry (31 bits).
const LENGTH_MAX: usize = 0x7fff_ffff;

/// Lengths below this take one byte.
const SHORT_LENGTH_LIMIT: usize = 128;

/// Bytes one pair takes on the wire.
pub(super) fn pair_len(name: &[u8], value: &[u8]) -> usize {
    length_len(name.len())
        .saturating_add(length_len(value.len()))
        .saturating_add(name.len())
        .saturating_add(value.len())
}

fn length_len(len: usize) -> usize {
    if len < SHORT_LENGTH_LIMIT { 1 } else { 4 }
}

/// Appends one pair. The caller has checked that it fits a record, so each length fits
/// the four-byte form.
pub(super) fn put_pair(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    put_length(out, name.len());
    put_length(out, value.len());
    out.extend_from_slice(name);
    out.extend_from_slice(value);
}

fn put_length(out: &mut Vec<u8>, len: usize) {
    debug_assert!(len <= LENGTH_MAX);
    match u8::try_from(len) {
        Ok(short) if len < SHORT_LENGTH_LIMIT => out.push(short),
        _ => {
            let long = u32::try_from(len).expect("pairs are checked to fit a record") | 0x8000_0000;
            out.extend_from_slice(&long.to_be_bytes());
        }
    }
}

/// The name-value pairs in the content of a PARAMS stream, as an application reads them.
/// Iteration stops at the first pair that is not whole; [`NameValuePairs::rest`] then
/// holds its bytes. nginx never reads pairs; this serves peers written in tests and the
/// encoder's round-trip checks.
#[derive(Clone, Debug)]
pub struct NameValuePairs<'a> {
    rest: &'a [u8],
}

impl<'a> NameValuePairs<'a> {
    pub fn new(content: &'a [u8]) -> NameValuePairs<'a> {
        NameValuePairs { rest: content }
    }

    /// What follows the last whole pair: empty when the content was all pairs.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for NameValuePairs<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (name_len, after_name_len) = read_length(self.rest)?;
        let (value_len, after_lengths) = read_length(after_name_len)?;
        let name = after_lengths.get(..name_len)?;
        let value = after_lengths.get(name_len..name_len.checked_add(value_len)?)?;
        self.rest = &after_lengths[name_len + value_len..];
        Some((name, value))
    }
}

/// One length and what follows it, or `None` if the bytes end first.
fn read_length(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let first = *bytes.first()?;
    if first & 0x80 == 0 {
        return Some((usize::from(first), &bytes[1..]));
    }
    let long: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    let len = u32::from_be_bytes(long) & 0x7fff_ffff;
    Some((usize::try_from(len).ok()?, &bytes[4..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(name: &[u8], value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_pair(&mut out, name, value);
        assert_eq!(out.len(), pair_len(name, value));
        out
    }

    #[test]
    fn lengths_take_one_byte_below_128_and_four_from_128() {
        assert_eq!(encoded(b"A", b"bc"), b"\x01\x02Abc");
        let name = [b'n'; 127];
        let value = [b'v'; 128];
        let out = encoded(&name, &value);
        assert_eq!(out[..5], [127, 0x80, 0, 0, 128]);
        assert_eq!(out.len(), 1 + 4 + 127 + 128);
        let long = vec![b'x'; 70_000];
        let out = encoded(b"", &long);
        assert_eq!(out[..5], [0, 0x80, 0x01, 0x11, 0x70]);
    }

    #[test]
    fn pairs_read_back_as_written() {
        let pairs: [(&[u8], &[u8]); 4] = [
            (b"SCRIPT_FILENAME", b"/srv/index.php"),
            (b"EMPTY", b""),
            (&[b'N'; 200], &[b'V'; 127]),
            (b"", &[0u8; 300]),
        ];
        let mut content = Vec::new();
        for (name, value) in pairs {
            put_pair(&mut content, name, value);
        }
        let mut read = NameValuePairs::new(&content);
        assert!(read.by_ref().eq(pairs.iter().copied()));
        assert!(read.rest().is_empty());
    }

    #[test]
    fn a_pair_cut_anywhere_is_left_in_rest() {
        let content = encoded(&[b'n'; 130], b"value");
        for cut in 0..content.len() {
            let mut read = NameValuePairs::new(&content[..cut]);
            assert_eq!(read.next(), None, "cut at {cut}");
            assert_eq!(read.rest(), &content[..cut]);
        }
    }

    #[test]
    fn the_four_byte_form_is_read_for_short_lengths_too() {
        let content = b"\x80\x00\x00\x01\x01ab";
        let pairs: Vec<_> = NameValuePairs::new(content).collect();
        assert_eq!(pairs, [(&b"a"[..], &b"b"[..])]);
    }
}
