//! Recoding tables (`charset_map`) and the recoder the charset filter runs over a body, as
//! nginx's charset filter recodes: byte for byte between one-byte charsets, or between a
//! one-byte charset and UTF-8 (characters without a mapping become `&#N;` or `?`).

use std::sync::Arc;

use crate::modules::charset::settings::{CharsetMap, Table};

/// The most bytes a character of a one-byte charset may take in UTF-8 (nginx's limit).
const UTF8_BYTES_MAX: usize = 3;

/// `ngx_utf8_decode`'s answer for an invalid sequence.
const UTF8_INVALID: u32 = 0xffff_ffff;

/// `ngx_utf8_decode`'s answer for a sequence cut short by the end of the buffer.
const UTF8_INCOMPLETE: u32 = 0xffff_fffe;

/// The longest text an unmapped character becomes: `&#1114111;`.
const ENTITY_BYTES_MAX: usize = 10;

impl Table {
    /// Whether recoding may change the body's length (nginx then drops `Content-Length`).
    pub(crate) fn changes_length(&self) -> bool {
        !matches!(self, Table::Byte(_))
    }
}

/// What a line of a `charset_map` block was wrong about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MapLineError {
    /// nginx's "invalid parameters number".
    ParameterCount,
    /// nginx's `invalid value "X"`, naming the value.
    InvalidValue(String),
}

/// Builds a map's tables as it reads its lines (`XX YY;`, hexadecimal).
#[derive(Debug)]
pub(crate) struct MapBuilder {
    forward: Table,
    backward: Table,
}

impl MapBuilder {
    /// A map to `to`: ASCII maps to itself, other bytes to `?` until a line says otherwise.
    pub fn new(to_utf8: bool) -> MapBuilder {
        if to_utf8 {
            let mut forward = Box::new([[0u8; 4]; 256]);
            let mut page = Box::new([0u8; 256]);
            for byte in 0..=255u8 {
                let entry = &mut forward[usize::from(byte)];
                entry[0] = 1;
                entry[1] = if byte < 0x80 { byte } else { b'?' };
                if byte < 0x80 {
                    page[usize::from(byte)] = byte;
                }
            }
            let mut pages = vec![None; 256];
            pages[0] = Some(page);
            return MapBuilder {
                forward: Table::ToUtf8(forward),
                backward: Table::FromUtf8(pages),
            };
        }
        let mut table = Box::new([b'?'; 256]);
        for byte in 0..0x80u8 {
            table[usize::from(byte)] = byte;
        }
        MapBuilder {
            forward: Table::Byte(table.clone()),
            backward: Table::Byte(table),
        }
    }

    /// One line: the source byte and its destination (one byte, or UTF-8 bytes in hex).
    pub fn line(&mut self, source: &str, destination: &str) -> Result<(), MapLineError> {
        let invalid = |value: &str| MapLineError::InvalidValue(value.to_owned());
        let from = hex_byte(source).ok_or_else(|| invalid(source))?;
        match (&mut self.forward, &mut self.backward) {
            (Table::Byte(forward), Table::Byte(backward)) => {
                let to = hex_byte(destination).ok_or_else(|| invalid(destination))?;
                forward[usize::from(from)] = to;
                backward[usize::from(to)] = from;
            }
            (Table::ToUtf8(forward), Table::FromUtf8(pages)) => {
                let bytes = utf8_bytes(destination).ok_or_else(|| invalid(destination))?;
                let (code, _) = decode_utf8(&bytes);
                if code > 0xffff {
                    return Err(invalid(destination));
                }
                let entry = &mut forward[usize::from(from)];
                *entry = [0; 4];
                entry[0] = bytes.len() as u8;
                entry[1..=bytes.len()].copy_from_slice(&bytes);
                let page = pages[(code >> 8) as usize].get_or_insert_with(|| Box::new([0; 256]));
                page[(code & 0xff) as usize] = from;
            }
            _ => unreachable!("a map's two tables are built as a pair"),
        }
        Ok(())
    }

    pub fn finish(self, from: &str, to: &str) -> CharsetMap {
        CharsetMap {
            from: from.into(),
            to: to.into(),
            forward: Arc::new(self.forward),
            backward: Arc::new(self.backward),
        }
    }
}

/// A hexadecimal byte as nginx's `ngx_hextoi` reads it (any number of digits, at most 255).
fn hex_byte(text: &str) -> Option<u8> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let digits = text.trim_start_matches('0');
    if digits.len() > 2 {
        return None;
    }
    u8::from_str_radix(if digits.is_empty() { "0" } else { digits }, 16).ok()
}

/// The bytes of a UTF-8 mapping: pairs of hexadecimal digits, at most three bytes.
fn utf8_bytes(text: &str) -> Option<Vec<u8>> {
    if text.is_empty() || !text.len().is_multiple_of(2) || text.len() / 2 > UTF8_BYTES_MAX {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| std::str::from_utf8(pair).ok().and_then(hex_byte))
        .collect()
}

/// nginx's `ngx_utf8_decode`: the code point and how many bytes it took. A sequence cut
/// short gives [`UTF8_INCOMPLETE`] and takes nothing; an invalid one gives
/// [`UTF8_INVALID`] and takes the bytes read up to the fault.
fn decode_utf8(bytes: &[u8]) -> (u32, usize) {
    let Some(&first) = bytes.first() else {
        return (UTF8_INCOMPLETE, 0);
    };
    let (mut code, valid_above, len) = match first {
        0xf8..=0xff => return (UTF8_INVALID, 1),
        0xf0..=0xf7 => (u32::from(first & 0x07), 0xffff, 3),
        0xe0..=0xef => (u32::from(first & 0x0f), 0x7ff, 2),
        0xc2..=0xdf => (u32::from(first & 0x1f), 0x7f, 1),
        _ => return (UTF8_INVALID, 1),
    };
    if bytes.len() - 1 < len {
        return (UTF8_INCOMPLETE, 0);
    }
    for (index, &byte) in bytes[1..=len].iter().enumerate() {
        if byte < 0x80 {
            return (UTF8_INVALID, index + 2);
        }
        code = (code << 6) | u32::from(byte & 0x3f);
    }
    if code > valid_above {
        (code, len + 1)
    } else {
        (UTF8_INVALID, len + 1)
    }
}

/// Recodes a body buffer by buffer, keeping a UTF-8 sequence split between two buffers.
#[derive(Debug)]
pub struct Recoder {
    table: Arc<Table>,
    saved: Vec<u8>,
}

impl Recoder {
    pub fn new(table: Arc<Table>) -> Recoder {
        Recoder {
            table,
            saved: Vec::new(),
        }
    }

    pub(crate) fn changes_length(&self) -> bool {
        self.table.changes_length()
    }

    /// Appends the recoding of one buffer of the body to `out`.
    pub fn recode(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let table = Arc::clone(&self.table);
        match &*table {
            Table::Byte(table) => out.extend(input.iter().map(|&b| table[usize::from(b)])),
            Table::ToUtf8(table) => recode_to_utf8(table, input, out),
            Table::FromUtf8(pages) => {
                let pages: &[Option<Box<[u8; 256]>>] = pages;
                let rest = self.recode_saved(pages, input, out);
                self.recode_from_utf8(pages, rest, out);
            }
        }
    }

    /// Completes a sequence the previous buffer ended in; returns the input left.
    fn recode_saved<'i>(
        &mut self,
        pages: &[Option<Box<[u8; 256]>>],
        input: &'i [u8],
        out: &mut Vec<u8>,
    ) -> &'i [u8] {
        if self.saved.is_empty() {
            return input;
        }
        let before = self.saved.len();
        let taken = (4 - before).min(input.len());
        self.saved.extend_from_slice(&input[..taken]);
        let (code, consumed) = decode_utf8(&self.saved);
        if code == UTF8_INCOMPLETE && self.saved.len() < 4 {
            return &[];
        }
        let consumed = match code {
            UTF8_INCOMPLETE => {
                out.push(b'?');
                self.saved.len()
            }
            _ if code > 0x10ffff => {
                out.push(b'?');
                consumed.max(before)
            }
            _ => {
                push_character(pages, code, out);
                consumed
            }
        };
        self.saved.clear();
        &input[(consumed - before).min(input.len())..]
    }

    fn recode_from_utf8(
        &mut self,
        pages: &[Option<Box<[u8; 256]>>],
        input: &[u8],
        out: &mut Vec<u8>,
    ) {
        let mut position = 0;
        while position < input.len() {
            let byte = input[position];
            if byte < 0x80 {
                out.push(byte);
                position += 1;
                continue;
            }
            let (code, consumed) = decode_utf8(&input[position..]);
            if code == UTF8_INCOMPLETE {
                self.saved.extend_from_slice(&input[position..]);
                return;
            }
            position += consumed;
            if code > 0x10ffff {
                out.push(b'?');
            } else {
                push_character(pages, code, out);
            }
        }
    }
}

/// A decoded character: its byte when the map has one, else `&#N;`.
fn push_character(pages: &[Option<Box<[u8; 256]>>], code: u32, out: &mut Vec<u8>) {
    if code < 0x10000
        && let Some(page) = &pages[(code >> 8) as usize]
        && page[(code & 0xff) as usize] != 0
    {
        out.push(page[(code & 0xff) as usize]);
        return;
    }
    out.reserve(ENTITY_BYTES_MAX);
    out.extend_from_slice(format!("&#{code};").as_bytes());
}

/// nginx passes a buffer whose every byte maps to one byte unchanged, and recodes the
/// whole buffer otherwise.
fn recode_to_utf8(table: &[[u8; 4]; 256], input: &[u8], out: &mut Vec<u8>) {
    if input.iter().all(|&b| table[usize::from(b)][0] == 1) {
        out.extend_from_slice(input);
        return;
    }
    for &byte in input {
        let entry = &table[usize::from(byte)];
        out.extend_from_slice(&entry[1..=usize::from(entry[0])]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recode(table: &Arc<Table>, buffers: &[&[u8]]) -> Vec<u8> {
        let mut recoder = Recoder::new(Arc::clone(table));
        let mut out = Vec::new();
        for buffer in buffers {
            recoder.recode(buffer, &mut out);
        }
        out
    }

    fn utf8_map() -> CharsetMap {
        let mut builder = MapBuilder::new(true);
        builder.line("E9", "C3A9").unwrap();
        builder.line("F6", "C3B6").unwrap();
        builder.finish("A", "utf-8")
    }

    #[test]
    fn byte_maps_both_ways() {
        let mut builder = MapBuilder::new(false);
        builder.line("58", "59").unwrap();
        let map = builder.finish("B", "A");
        assert_eq!(recode(&map.forward, &[b"XaX\x80"]), b"YaY?");
        assert_eq!(recode(&map.backward, &[b"YaX"]), b"XaX");
    }

    #[test]
    fn map_lines_are_checked_as_nginx_does() {
        let mut bytes = MapBuilder::new(false);
        assert_eq!(
            bytes.line("100", "1"),
            Err(MapLineError::InvalidValue("100".into()))
        );
        assert_eq!(
            bytes.line("zz", "1"),
            Err(MapLineError::InvalidValue("zz".into()))
        );
        assert_eq!(bytes.line("0041", "42"), Ok(()));
        let mut utf8 = MapBuilder::new(true);
        // ASCII is no valid UTF-8 mapping for ngx_utf8_decode; neither are odd digit counts
        // or more than three bytes.
        for bad in ["41", "C3A", "F0908080", "", "C3"] {
            assert_eq!(
                utf8.line("80", bad),
                Err(MapLineError::InvalidValue(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(utf8.line("80", "E282AC"), Ok(()));
    }

    #[test]
    fn to_utf8_recodes_a_buffer_only_when_it_must() {
        let map = utf8_map();
        assert_eq!(recode(&map.forward, &[b"h\xe9!"]), "hé!".as_bytes());
        // Every byte one byte long: the buffer passes as it is, unmapped bytes included.
        assert_eq!(recode(&map.forward, &[b"h\x80"]), b"h\x80");
        // Recoded: unmapped bytes become '?'.
        assert_eq!(recode(&map.forward, &[b"\xe9\x80"]), "é?".as_bytes());
    }

    #[test]
    fn from_utf8_maps_entities_and_split_sequences() {
        let map = utf8_map();
        let backward = &map.backward;
        assert_eq!(recode(backward, &["hé wö".as_bytes()]), b"h\xe9 w\xf6");
        assert_eq!(recode(backward, &["€".as_bytes()]), b"&#8364;");
        assert_eq!(recode(backward, &["😀".as_bytes()]), b"&#128512;");
        assert_eq!(recode(backward, &[b"a\xffb"]), b"a?b");
        // An ASCII byte inside a sequence is taken with it, as nginx does.
        assert_eq!(recode(backward, &[b"\xc3Ab"]), b"?b");
        let e_acute = "é".as_bytes();
        assert_eq!(
            recode(backward, &[b"x", &e_acute[..1], &e_acute[1..], b"y"]),
            b"x\xe9y"
        );
        let euro = "€".as_bytes();
        assert_eq!(
            recode(backward, &[&euro[..1], &euro[1..2], &euro[2..]]),
            b"&#8364;"
        );
        // A sequence never completed is dropped at the end.
        assert_eq!(recode(backward, &[b"ab\xc3"]), b"ab");
    }

    #[test]
    fn decode_follows_ngx_utf8_decode() {
        assert_eq!(decode_utf8(b"\xc3\xa9"), (0xe9, 2));
        assert_eq!(decode_utf8(b"\xc0\x80"), (UTF8_INVALID, 1));
        assert_eq!(decode_utf8(b"\xe0\x80\x80"), (UTF8_INVALID, 3));
        assert_eq!(decode_utf8(b"\xe2\x82"), (UTF8_INCOMPLETE, 0));
        assert_eq!(decode_utf8(b"\xf4\x90\x80\x80"), (0x110000, 4));
    }

    /// From valid UTF-8, where a buffer ends does not change the output: a split sequence
    /// is joined as if it had come whole. (Broken sequences differ, as in nginx: the bytes
    /// saved from the end of a buffer after a fault are dropped.)
    #[test]
    fn from_valid_utf8_does_not_depend_on_buffer_ends() {
        let map = utf8_map();
        let characters = ["a", "é", "ö", "€", "😀", " "];
        let mut state = 0x1234_5678_u32;
        for _ in 0..5_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let count = (state % 6) as usize;
            let text: String = (0..count)
                .map(|index| characters[(state as usize >> (index * 3)) % characters.len()])
                .collect();
            let input = text.as_bytes();
            let whole = recode(&map.backward, &[input]);
            for split in 0..=input.len() {
                let (head, tail) = input.split_at(split);
                assert_eq!(
                    recode(&map.backward, &[head, tail]),
                    whole,
                    "{text:?} at {split}"
                );
            }
        }
        // A fault after a saved sequence: the saved bytes after it are dropped.
        assert_eq!(recode(&map.backward, &[b"\xf0a\xc3", b"\x80"]), b"??");
        assert_eq!(recode(&map.backward, &[b"\xf0a\xc3\x80"]), b"?&#192;");
    }

    #[test]
    fn any_input_recodes_without_panic() {
        let map = utf8_map();
        let mut state = 0x9e37_79b9_u32;
        for _ in 0..2000 {
            let mut recoder = Recoder::new(Arc::clone(&map.backward));
            let mut out = Vec::new();
            for _ in 0..4 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let buffer: Vec<u8> = (0..(state % 7)).map(|i| (state >> (i * 3)) as u8).collect();
                recoder.recode(&buffer, &mut out);
            }
            assert!(recoder.saved.len() < 4);
        }
    }
}
