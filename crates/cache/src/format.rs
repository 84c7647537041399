//! The on-disk entry format, byte-compatible with nginx's version-5 cache files on 64-bit
//! little-endian Linux, so a cache directory can move between nginx and Portico.
//!
//! An entry file is a fixed 336-byte header ([`EntryHeader`]), the line `"\nKEY: "` + key
//! text + `"\n"`, the upstream's response head as received (from `header_start`), and the
//! decoded body (from `body_start`) to the end of the file.
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 8 | version (5) |
//! | 8 | 8 | `valid_sec` |
//! | 16 | 8 | `updating_sec` |
//! | 24 | 8 | `error_sec` |
//! | 32 | 8 | `last_modified` |
//! | 40 | 8 | `date` |
//! | 48 | 4 | `crc32` |
//! | 52 | 2 | `valid_msec` |
//! | 54 | 2 | `header_start` |
//! | 56 | 2 | `body_start` |
//! | 58 | 1 + 128 | ETag length and bytes |
//! | 187 | 1 + 128 | Vary length and bytes |
//! | 316 | 16 | `variant` |
//! | 332 | 4 | zero padding |

use std::fmt;

use md5::{Digest, Md5};

use crate::key::Key;

/// Size of the fixed header.
pub const HEADER_SIZE: usize = 336;
/// The format version this module reads and writes.
pub const VERSION: u64 = 5;
/// Longest ETag the header holds (a longer one is not stored).
pub const ETAG_MAX: usize = 128;
/// Longest Vary value the header holds (a response with a longer one is not cacheable).
pub const VARY_MAX: usize = 128;

const KEY_PREFIX: &[u8] = b"\nKEY: ";

const OFFSET_VALID_SEC: usize = 8;
const OFFSET_UPDATING_SEC: usize = 16;
const OFFSET_ERROR_SEC: usize = 24;
const OFFSET_LAST_MODIFIED: usize = 32;
const OFFSET_DATE: usize = 40;
const OFFSET_CRC32: usize = 48;
const OFFSET_VALID_MSEC: usize = 52;
const OFFSET_HEADER_START: usize = 54;
const OFFSET_BODY_START: usize = 56;
const OFFSET_ETAG: usize = 58;
const OFFSET_VARY: usize = OFFSET_ETAG + 1 + ETAG_MAX;
const OFFSET_VARIANT: usize = OFFSET_VARY + 1 + VARY_MAX;

/// The fixed header of an entry file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryHeader {
    /// Fresh until this time (epoch seconds).
    pub valid_sec: i64,
    /// `stale-while-revalidate` seconds.
    pub updating_sec: i64,
    /// `stale-if-error` seconds.
    pub error_sec: i64,
    /// `Last-Modified` (epoch seconds), -1 when none.
    pub last_modified: i64,
    /// When the entry was stored or last revalidated (epoch seconds).
    pub date: i64,
    /// CRC-32 of the key text.
    pub crc32: u32,
    pub valid_msec: u16,
    /// Where the stored response head starts: [`header_start_for`] the key.
    pub header_start: u16,
    /// Where the body starts.
    pub body_start: u16,
    /// At most [`ETAG_MAX`] bytes.
    pub etag: Vec<u8>,
    /// At most [`VARY_MAX`] bytes.
    pub vary: Vec<u8>,
    /// MD5 of the Vary-selected request headers ([`variant`]), zero without Vary.
    pub variant: [u8; 16],
}

/// Where the stored head starts for a key text of `key_len` bytes.
pub fn header_start_for(key_len: usize) -> usize {
    HEADER_SIZE + KEY_PREFIX.len() + key_len + 1
}

/// The fixed 336 bytes of `header` (for a rewrite in place after a 304).
///
/// Panics if the ETag or Vary is longer than the header holds: the caller checks.
pub fn encode_fixed(header: &EntryHeader) -> [u8; HEADER_SIZE] {
    assert!(
        header.etag.len() <= ETAG_MAX,
        "etag too long for the header"
    );
    assert!(
        header.vary.len() <= VARY_MAX,
        "vary too long for the header"
    );
    let mut out = [0u8; HEADER_SIZE];
    out[..OFFSET_VALID_SEC].copy_from_slice(&VERSION.to_le_bytes());
    put_i64(&mut out, OFFSET_VALID_SEC, header.valid_sec);
    put_i64(&mut out, OFFSET_UPDATING_SEC, header.updating_sec);
    put_i64(&mut out, OFFSET_ERROR_SEC, header.error_sec);
    put_i64(&mut out, OFFSET_LAST_MODIFIED, header.last_modified);
    put_i64(&mut out, OFFSET_DATE, header.date);
    out[OFFSET_CRC32..OFFSET_CRC32 + 4].copy_from_slice(&header.crc32.to_le_bytes());
    put_u16(&mut out, OFFSET_VALID_MSEC, header.valid_msec);
    put_u16(&mut out, OFFSET_HEADER_START, header.header_start);
    put_u16(&mut out, OFFSET_BODY_START, header.body_start);
    put_bytes(&mut out, OFFSET_ETAG, &header.etag);
    put_bytes(&mut out, OFFSET_VARY, &header.vary);
    out[OFFSET_VARIANT..OFFSET_VARIANT + 16].copy_from_slice(&header.variant);
    out
}

/// Appends the fixed header and the key line to `out`; the stored head follows it.
///
/// Panics if `header.header_start` is not [`header_start_for`] the key text, or if the
/// ETag or Vary is too long: both are the caller's bugs.
pub fn encode(header: &EntryHeader, key_text: &[u8], out: &mut Vec<u8>) {
    assert_eq!(
        usize::from(header.header_start),
        header_start_for(key_text.len()),
        "header_start does not match the key"
    );
    out.extend_from_slice(&encode_fixed(header));
    out.extend_from_slice(KEY_PREFIX);
    out.extend_from_slice(key_text);
    out.push(b'\n');
}

/// A fixed header that cannot be decoded at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// Fewer than 336 bytes.
    TooShort { len: usize },
    /// Another format version.
    Version { found: u64 },
    /// An ETag length above 128.
    EtagLength { len: u8 },
    /// A Vary length above 128.
    VaryLength { len: u8 },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::TooShort { len } => write!(f, "header of {len} bytes is too short"),
            FormatError::Version { found } => write!(f, "version {found} is not {VERSION}"),
            FormatError::EtagLength { len } => write!(f, "etag length {len} is above {ETAG_MAX}"),
            FormatError::VaryLength { len } => write!(f, "vary length {len} is above {VARY_MAX}"),
        }
    }
}

impl std::error::Error for FormatError {}

/// Decodes the fixed header at the start of `buf`.
pub fn decode(buf: &[u8]) -> Result<EntryHeader, FormatError> {
    let Some(fixed) = buf.get(..HEADER_SIZE) else {
        return Err(FormatError::TooShort { len: buf.len() });
    };
    let version = u64::from_le_bytes(array(fixed, 0));
    if version != VERSION {
        return Err(FormatError::Version { found: version });
    }
    let etag_len = fixed[OFFSET_ETAG];
    if usize::from(etag_len) > ETAG_MAX {
        return Err(FormatError::EtagLength { len: etag_len });
    }
    let vary_len = fixed[OFFSET_VARY];
    if usize::from(vary_len) > VARY_MAX {
        return Err(FormatError::VaryLength { len: vary_len });
    }
    Ok(EntryHeader {
        valid_sec: i64::from_le_bytes(array(fixed, OFFSET_VALID_SEC)),
        updating_sec: i64::from_le_bytes(array(fixed, OFFSET_UPDATING_SEC)),
        error_sec: i64::from_le_bytes(array(fixed, OFFSET_ERROR_SEC)),
        last_modified: i64::from_le_bytes(array(fixed, OFFSET_LAST_MODIFIED)),
        date: i64::from_le_bytes(array(fixed, OFFSET_DATE)),
        crc32: u32::from_le_bytes(array(fixed, OFFSET_CRC32)),
        valid_msec: u16::from_le_bytes(array(fixed, OFFSET_VALID_MSEC)),
        header_start: u16::from_le_bytes(array(fixed, OFFSET_HEADER_START)),
        body_start: u16::from_le_bytes(array(fixed, OFFSET_BODY_START)),
        etag: fixed[OFFSET_ETAG + 1..][..usize::from(etag_len)].to_vec(),
        vary: fixed[OFFSET_VARY + 1..][..usize::from(vary_len)].to_vec(),
        variant: array(fixed, OFFSET_VARIANT),
    })
}

/// The key text of an entry file from its start (`buf`: at least the header and key
/// line), whatever the key; `None` when the header or key line is not well formed.
pub fn key_text_of(buf: &[u8]) -> Option<&[u8]> {
    let header = decode(buf).ok()?;
    let line = buf.get(HEADER_SIZE..usize::from(header.header_start))?;
    line.strip_prefix(KEY_PREFIX)?.strip_suffix(b"\n")
}

/// Why an entry file read for a request cannot be used (the request becomes a MISS).
///
/// `Display` gives nginx's words after the file name; the caller writes
/// `cache file "F" {error}` at [`ReadError::is_crit`]'s level (`crit`, else `info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Shorter than the header and key line.
    TooSmall,
    /// Another format version (`info`: nginx upgrades leave these behind).
    VersionMismatch,
    /// CRC-32, `header_start` or key text differ from the request's key.
    Md5Collision,
    /// `body_start` beyond the file's end or before the head (the caller also reports
    /// this when `body_start` exceeds its `proxy_buffer_size`).
    TooLongHeader,
    /// A Vary or ETag length above 128.
    IncorrectVaryLength,
    /// A secondary (variant) file whose variant is not the request's (the caller checks).
    IncorrectVaryHash,
}

impl ReadError {
    /// `crit` for damage, `info` for a version mismatch.
    pub fn is_crit(&self) -> bool {
        !matches!(self, ReadError::VersionMismatch)
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadError::TooSmall => "is too small",
            ReadError::VersionMismatch => "version mismatch",
            ReadError::Md5Collision => "has md5 collision",
            ReadError::TooLongHeader => "has too long header",
            ReadError::IncorrectVaryLength => "has incorrect vary length",
            ReadError::IncorrectVaryHash => "has incorrect vary hash",
        })
    }
}

impl std::error::Error for ReadError {}

/// Checks the start of an entry file (`buf`, at least the header and key line when the
/// file has them) read for `key`, whose text is `key_text`, in nginx's order.
pub fn check(
    buf: &[u8],
    key: &Key,
    key_text: &[u8],
    file_len: u64,
) -> Result<EntryHeader, ReadError> {
    let header_start = header_start_for(key_text.len());
    let available = u64::try_from(buf.len()).unwrap_or(u64::MAX).min(file_len);
    if available < u64::try_from(header_start).unwrap_or(u64::MAX) {
        return Err(ReadError::TooSmall);
    }
    let header = match decode(buf) {
        Ok(header) => header,
        Err(FormatError::TooShort { .. }) => return Err(ReadError::TooSmall),
        Err(FormatError::Version { .. }) => return Err(ReadError::VersionMismatch),
        Err(FormatError::EtagLength { .. } | FormatError::VaryLength { .. }) => {
            return Err(ReadError::IncorrectVaryLength);
        }
    };
    let key_line = &buf[HEADER_SIZE..header_start];
    let key_matches = key_line.starts_with(KEY_PREFIX)
        && &key_line[KEY_PREFIX.len()..key_line.len() - 1] == key_text
        && key_line.ends_with(b"\n");
    if header.crc32 != key.crc32 || usize::from(header.header_start) != header_start || !key_matches
    {
        return Err(ReadError::Md5Collision);
    }
    if usize::from(header.body_start) < header_start || u64::from(header.body_start) > file_len {
        return Err(ReadError::TooLongHeader);
    }
    Ok(header)
}

/// The variant hash of a response with `Vary: vary_value` for one request.
///
/// MD5 of the main key's MD5, then for each name in `vary_value` (split on spaces and
/// commas, lowercased): `name:values\r\n`, where `values` are the request's values of that
/// header (`request_header` gets the lowercase name and returns every value in order)
/// joined by `,`. For `accept-charset`, `accept-encoding` and `accept-language` each value
/// is split on spaces and commas too and the tokens are joined by `,`.
pub fn variant<'a>(
    main_md5: &[u8; 16],
    vary_value: &[u8],
    request_header: impl Fn(&[u8]) -> Vec<&'a [u8]>,
) -> [u8; 16] {
    let mut md5 = Md5::new();
    md5.update(main_md5);
    for name in tokens(vary_value) {
        let name = name.to_ascii_lowercase();
        md5.update(&name);
        md5.update(b":");
        let values = request_header(&name);
        let normalize = matches!(
            name.as_slice(),
            b"accept-charset" | b"accept-encoding" | b"accept-language"
        );
        let mut first = true;
        for value in values {
            if normalize {
                for token in tokens(value) {
                    if !first {
                        md5.update(b",");
                    }
                    first = false;
                    md5.update(token);
                }
            } else {
                if !first {
                    md5.update(b",");
                }
                first = false;
                md5.update(value);
            }
        }
        md5.update(b"\r\n");
    }
    md5.finalize().into()
}

/// The non-empty pieces of `text` between spaces and commas.
fn tokens(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&b| b == b' ' || b == b',')
        .filter(|token| !token.is_empty())
}

fn put_i64(out: &mut [u8], offset: usize, value: i64) {
    out[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

fn put_u16(out: &mut [u8], offset: usize, value: u16) {
    out[offset..offset + 2].copy_from_slice(&value.to_le_bytes());
}

/// A length byte then the bytes, in a field of 1 + 128.
fn put_bytes(out: &mut [u8], offset: usize, bytes: &[u8]) {
    out[offset] = u8::try_from(bytes.len()).unwrap_or(u8::MAX);
    out[offset + 1..offset + 1 + bytes.len()].copy_from_slice(bytes);
}

fn array<const N: usize>(buf: &[u8], offset: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&buf[offset..offset + N]);
    out
}

#[cfg(test)]
mod tests;
