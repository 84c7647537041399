//! Cache keys and where their files live.
//!
//! A key is the MD5 of the `proxy_cache_key` text (the file name, 32 lowercase hex digits)
//! and the IEEE CRC-32 of the same bytes (stored in the entry header as a collision check).
//! [`Layout`] turns a key into a path: `levels=1:2` takes the directory names from the end
//! of the hex name, so `b7f5...029c` lives in `ROOT/c/29/b7f5...029c`. Temp files written
//! beside the entry (`use_temp_path=off`) are named `<entry>.NNNNNNNNNN`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use md5::{Digest, Md5};

/// Length of a key's hex file name.
pub const HEX_LEN: usize = 32;

/// Number of digits in a temp file's suffix.
const TEMP_DIGITS: usize = 10;

/// The hashes of one cache key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// MD5 of the key text: the entry's name and its index key.
    pub md5: [u8; 16],
    /// IEEE CRC-32 of the key text, written into the entry header.
    pub crc32: u32,
}

impl Key {
    /// Hashes the concatenation of `parts` (the evaluated `proxy_cache_key`, in pieces).
    pub fn new(parts: &[&[u8]]) -> Key {
        let mut md5 = Md5::new();
        let mut crc = crc32fast::Hasher::new();
        for part in parts {
            md5.update(part);
            crc.update(part);
        }
        Key {
            md5: md5.finalize().into(),
            crc32: crc.finalize(),
        }
    }

    /// The file name: 32 lowercase hex digits of the MD5.
    pub fn hex(&self) -> [u8; HEX_LEN] {
        hex_of(&self.md5)
    }
}

/// The hasher of maps keyed by an MD5 (the index's shards, the workers' kept entries):
/// the key writes one `u64` taken from its digest ([`md5_bits`]), which the map uses as
/// it is, since an MD5 is spread already. Other writes fold their bytes in.
#[derive(Debug, Default)]
pub struct Md5Hasher(u64);

impl std::hash::Hasher for Md5Hasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// An MD5's first eight bytes, what a key hashed by [`Md5Hasher`] writes.
pub fn md5_bits(md5: &[u8; 16]) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&md5[..8]);
    u64::from_le_bytes(first)
}

/// Lowercase hex of a 16-byte hash.
pub fn hex_of(md5: &[u8; 16]) -> [u8; HEX_LEN] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; HEX_LEN];
    for (i, byte) in md5.iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(byte >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(byte & 0x0f)];
    }
    out
}

/// `levels=`: one to three directory levels, each named by one or two hex digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Levels {
    widths: [u8; 3],
    count: u8,
}

impl Levels {
    /// No subdirectories: entries sit in the root.
    pub const NONE: Levels = Levels {
        widths: [0; 3],
        count: 0,
    };

    /// Parses `1`, `1:2`, `2:2:1`...; `None` for anything else (the caller writes
    /// `invalid "levels" "levels=X"`).
    pub fn parse(text: &str) -> Option<Levels> {
        let mut levels = Levels::NONE;
        for part in text.split(':') {
            let width = match part {
                "1" => 1,
                "2" => 2,
                _ => return None,
            };
            if usize::from(levels.count) == levels.widths.len() {
                return None;
            }
            levels.widths[usize::from(levels.count)] = width;
            levels.count += 1;
        }
        Some(levels)
    }

    /// The width of each level, outermost first.
    pub fn widths(&self) -> &[u8] {
        &self.widths[..usize::from(self.count)]
    }
}

/// A cache path and its levels: where each key's file goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub root: PathBuf,
    pub levels: Levels,
}

impl Layout {
    /// `ROOT/<levels>/<32 hex>`.
    pub fn entry_path(&self, key: &Key) -> PathBuf {
        self.entry_path_of(&key.md5)
    }

    /// [`Layout::entry_path`] from the MD5 alone (the index knows no key text).
    pub fn entry_path_of(&self, md5: &[u8; 16]) -> PathBuf {
        let hex = hex_of(md5);
        // One allocation: the root, a separator and name per level, and the name.
        let mut path = PathBuf::with_capacity(self.root.as_os_str().len() + 3 * 4 + HEX_LEN + 1);
        path.push(&self.root);
        let mut end = HEX_LEN;
        for &width in self.levels.widths() {
            let start = end - usize::from(width);
            path.push(OsStr::from_bytes(&hex[start..end]));
            end = start;
        }
        path.push(OsStr::from_bytes(&hex));
        path
    }

    /// [`Layout::entry_path_of`] below the root, NUL-terminated for `openat`:
    /// `<levels>/<32 hex>`.
    pub fn relative_name_of(&self, md5: &[u8; 16]) -> RelativeName {
        let hex = hex_of(md5);
        let mut name = RelativeName {
            bytes: [0; RELATIVE_MAX],
            len: 0,
        };
        let mut end = HEX_LEN;
        for &width in self.levels.widths() {
            let start = end - usize::from(width);
            name.push(&hex[start..end]);
            name.push(b"/");
            end = start;
        }
        name.push(&hex);
        name
    }

    /// The directory holding a key's file (the level directories to create).
    pub fn entry_dir_of(&self, md5: &[u8; 16]) -> PathBuf {
        let mut path = self.entry_path_of(md5);
        path.pop();
        path
    }

    /// `<entry path>.NNNNNNNNNN`: a temp file beside the entry (`use_temp_path=off`).
    pub fn temp_path(&self, key: &Key, number: u32) -> PathBuf {
        let mut path = self.entry_path(key).into_os_string();
        path.push(format!(".{number:0TEMP_DIGITS$}"));
        PathBuf::from(path)
    }
}

/// The longest relative name: three levels of two digits, their slashes, the hex name
/// and a NUL.
const RELATIVE_MAX: usize = 3 * 3 + HEX_LEN + 1;

/// An entry's path below the cache root ([`Layout::relative_name_of`]), on the stack.
#[derive(Clone, Copy)]
pub struct RelativeName {
    bytes: [u8; RELATIVE_MAX],
    len: usize,
}

impl RelativeName {
    fn push(&mut self, part: &[u8]) {
        self.bytes[self.len..self.len + part.len()].copy_from_slice(part);
        self.len += part.len();
    }

    /// The name with its NUL (hex digits and slashes hold none).
    pub fn as_c_str(&self) -> &std::ffi::CStr {
        std::ffi::CStr::from_bytes_with_nul(&self.bytes[..=self.len])
            .expect("hex digits and slashes, then one NUL")
    }
}

impl std::fmt::Debug for RelativeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.bytes[..self.len]))
    }
}

/// Whether a file name is a temp file's: it ends in `.` and ten digits.
pub fn is_temp_name(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    let Some(dot) = bytes.len().checked_sub(TEMP_DIGITS + 1) else {
        return false;
    };
    bytes[dot] == b'.' && bytes[dot + 1..].iter().all(u8::is_ascii_digit)
}

/// The MD5 an entry's file name spells: exactly 32 hex digits, else `None`.
pub fn parse_entry_name(name: &OsStr) -> Option<[u8; 16]> {
    let bytes = name.as_bytes();
    if bytes.len() != HEX_LEN {
        return None;
    }
    let mut md5 = [0u8; 16];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        md5[i] = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
    }
    Some(md5)
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn crc32_is_ieee() {
        // The standard CRC-32 check value.
        assert_eq!(Key::new(&[b"123456789"]).crc32, 0xcbf4_3926);
    }

    #[test]
    fn md5_matches_known_vectors() {
        assert_eq!(&Key::new(&[]).hex(), b"d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            &Key::new(&[b"The quick brown fox jumps over the lazy dog"]).hex(),
            b"9e107d9d372bb6826bd81d3542a419d6"
        );
    }

    #[test]
    fn parts_are_concatenated() {
        let whole = Key::new(&[b"http://backend/a?b"]);
        let split = Key::new(&[b"http://", b"backend", b"/a?b"]);
        assert_eq!(whole, split);
    }

    #[test]
    fn levels_parse() {
        assert_eq!(
            Levels::parse("1").map(|l| l.widths().to_vec()),
            Some(vec![1])
        );
        assert_eq!(
            Levels::parse("1:2").map(|l| l.widths().to_vec()),
            Some(vec![1, 2])
        );
        assert_eq!(
            Levels::parse("2:2:1").map(|l| l.widths().to_vec()),
            Some(vec![2, 2, 1])
        );
        for bad in ["", "3", "1:", ":1", "1:2:1:1", "0", "1:22", "a"] {
            assert_eq!(Levels::parse(bad), None, "{bad:?}");
        }
    }

    fn key_with_hex(hex: &str) -> Key {
        let md5 = parse_entry_name(OsStr::new(hex)).expect("32 hex digits");
        Key { md5, crc32: 0 }
    }

    #[test]
    fn levels_come_from_the_end_of_the_name() {
        let key = key_with_hex("b7f54b2df7773722d382f4809d65029c");
        let layout = Layout {
            root: PathBuf::from("/cache"),
            levels: Levels::parse("1:2").expect("levels"),
        };
        assert_eq!(
            layout.entry_path(&key),
            Path::new("/cache/c/29/b7f54b2df7773722d382f4809d65029c")
        );
        let layout = Layout {
            root: PathBuf::from("/cache"),
            levels: Levels::parse("2:1:2").expect("levels"),
        };
        assert_eq!(
            layout.entry_path(&key),
            Path::new("/cache/9c/2/50/b7f54b2df7773722d382f4809d65029c")
        );
        let flat = Layout {
            root: PathBuf::from("/cache"),
            levels: Levels::NONE,
        };
        assert_eq!(
            flat.entry_path(&key),
            Path::new("/cache/b7f54b2df7773722d382f4809d65029c")
        );
        assert_eq!(flat.entry_dir_of(&key.md5), Path::new("/cache"));
    }

    #[test]
    fn relative_names_are_the_entry_paths_below_the_root() {
        let key = key_with_hex("b7f54b2df7773722d382f4809d65029c");
        for levels in ["1", "2", "1:2", "2:1:2", "2:2:2"] {
            let layout = Layout {
                root: PathBuf::from("/cache"),
                levels: Levels::parse(levels).expect("levels"),
            };
            let relative = layout.relative_name_of(&key.md5);
            assert_eq!(
                Path::new("/cache").join(OsStr::from_bytes(relative.as_c_str().to_bytes())),
                layout.entry_path(&key),
                "levels={levels}"
            );
        }
        let flat = Layout {
            root: PathBuf::from("/cache"),
            levels: Levels::NONE,
        };
        assert_eq!(
            flat.relative_name_of(&key.md5).as_c_str().to_bytes(),
            b"b7f54b2df7773722d382f4809d65029c"
        );
    }

    #[test]
    fn temp_names() {
        let key = key_with_hex("b7f54b2df7773722d382f4809d65029c");
        let layout = Layout {
            root: PathBuf::from("/cache"),
            levels: Levels::parse("1:2").expect("levels"),
        };
        let temp = layout.temp_path(&key, 1234);
        assert_eq!(
            temp,
            Path::new("/cache/c/29/b7f54b2df7773722d382f4809d65029c.0000001234")
        );
        let name = temp.file_name().expect("name");
        assert!(is_temp_name(name));
        assert!(!is_temp_name(OsStr::new(
            "b7f54b2df7773722d382f4809d65029c"
        )));
        assert!(!is_temp_name(OsStr::new("x.000000123")));
        assert!(!is_temp_name(OsStr::new("x.00000012a4")));
        assert!(is_temp_name(OsStr::new(".4294967295")));
    }

    #[test]
    fn entry_names() {
        let key = Key::new(&[b"http://backend/"]);
        let hex = key.hex();
        assert_eq!(parse_entry_name(OsStr::from_bytes(&hex)), Some(key.md5));
        let upper = String::from_utf8_lossy(&hex).to_uppercase();
        assert_eq!(parse_entry_name(OsStr::new(&upper)), Some(key.md5));
        assert_eq!(parse_entry_name(OsStr::from_bytes(&hex[..31])), None);
        assert_eq!(
            parse_entry_name(OsStr::new("g7f54b2df7773722d382f4809d65029c")),
            None
        );
        assert_eq!(
            parse_entry_name(OsStr::new("b7f54b2df7773722d382f4809d65029c.0000000001")),
            None
        );
    }
}
