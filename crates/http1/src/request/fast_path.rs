//! The common shapes of request and header lines, read in one pass with table lookups.
//!
//! Each function here either returns exactly what the exact scanners in `request_line.rs`
//! and `header_line.rs` would return for the same line, or `None` to hand the line to them.
//! It answers only for complete lines it fully understands: an origin-form target followed
//! by one space and `HTTP/1.d`, a header name of letters, digits, `-` and `_` directly
//! followed by `:`, values without NUL, and CRLF or LF line ends. Everything else (leading
//! empty lines, absolute-form targets, CONNECT, extra spaces, HTTP/0.9, invalid names,
//! lines that have not fully arrived, every error) goes to the exact scanners, so errors
//! and their offsets always come from them. `parse_head_exact` skips this file;
//! `tests_fast_path.rs` and the `http1_request_head` fuzz target check that both agree.
//!
//! Measured with `benches/head_parse.rs`, parse_head + analyze, medians of 9 runs on a
//! shared 2-core machine, interleaved with the previous design (byte-at-a-time request line
//! and Host scanners; header lines through httparse, then walked again): wrk's head (`GET /`,
//! `Host: 127.0.0.1:18500`) 124 ns then, 48 ns with this file and the table-driven Host and
//! name checks; the 650-byte browser head 490 ns then, 258 ns now.

use crate::method::Method;
use crate::request::Version;
use crate::request::header_line::{FieldLine, Line};
use crate::request::request_line::RequestLine;

/// Path bytes nginx copies without a second look (`is_plain_path_byte` in
/// `request_line.rs`): everything but controls, space, `#%+./?` and DEL.
const PLAIN_PATH: [bool; 256] = plain_path_bytes();

const fn plain_path_bytes() -> [bool; 256] {
    let mut table = [true; 256];
    let mut byte = 0;
    while byte <= 0x20 {
        table[byte] = false;
        byte += 1;
    }
    table[0x7f] = false;
    let special = b"#%+./?";
    let mut i = 0;
    while i < special.len() {
        table[special[i] as usize] = false;
        i += 1;
    }
    table
}

/// What a header-name byte is to the fast path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NameByte {
    /// A letter, a digit or `-`: valid in every configuration.
    Token,
    /// Valid only with `underscores_in_headers`.
    Underscore,
    /// `:`, the end of the name.
    Colon,
    /// Anything else: the exact scanner decides.
    Other,
}

const NAME_BYTES: [NameByte; 256] = name_bytes();

const fn name_bytes() -> [NameByte; 256] {
    let mut table = [NameByte::Other; 256];
    let mut byte = 0;
    while byte < 256 {
        if (byte as u8).is_ascii_alphanumeric() || byte == b'-' as usize {
            table[byte] = NameByte::Token;
        }
        byte += 1;
    }
    table[b'_' as usize] = NameByte::Underscore;
    table[b':' as usize] = NameByte::Colon;
    table
}

/// Reads a request line of the common shape at the start of `buf`: method, one space,
/// an origin-form target, one space, `HTTP/1.` and one digit, CRLF or LF.
// Inlined: returned through memory, the line was read back with wider loads than the
// stores that wrote it, and the caller stalled until those stores reached the cache.
#[inline]
pub(super) fn scan_request_line(buf: &[u8]) -> Option<RequestLine> {
    let method_len = buf
        .iter()
        .position(|&byte| !(byte.is_ascii_uppercase() || byte == b'_' || byte == b'-'))?;
    if method_len == 0 || buf[method_len] != b' ' || buf.get(method_len + 1) != Some(&b'/') {
        return None;
    }
    let method = Method::from_bytes(&buf[..method_len]);
    if method == Method::Connect {
        // CONNECT takes an authority, never a path.
        return None;
    }
    let target_start = method_len + 1;
    let (target_end, complex) = scan_target(buf, target_start)?;

    let protocol_start = target_end + 1;
    let (protocol, rest) = buf.get(protocol_start..)?.split_at_checked(8)?;
    let (prefix, minor) = protocol.split_at(7);
    if prefix != b"HTTP/1." || !minor[0].is_ascii_digit() {
        return None;
    }
    let line_end = protocol_start + 8;
    let lf = match rest {
        [b'\n', ..] => line_end,
        [b'\r', b'\n', ..] => line_end + 1,
        _ => return None,
    };
    Some(RequestLine {
        start: 0,
        line_end,
        end: lf + 1,
        method,
        method_bytes: 0..method_len,
        target: target_start..target_end,
        version: if minor[0] == b'0' {
            Version::Http10
        } else {
            Version::Http11
        },
        protocol: protocol_start..line_end,
        scheme: None,
        authority: None,
        port_colon: None,
        complex,
    })
}

/// The target starting with the `/` at `start`, up to the space after it. Returns that
/// space's offset and whether `$uri` needs normalising, following the path states of the
/// exact scanner: a `/` or `.` right after a `/` (a `+` in between does not count), `%`
/// or `#` make the path complex; from then on, or after `?`, only the end matters.
fn scan_target(buf: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut after_slash = true;
    for (i, &byte) in buf.iter().enumerate().skip(start + 1) {
        if PLAIN_PATH[usize::from(byte)] {
            after_slash = false;
            continue;
        }
        match byte {
            b'/' | b'.' if after_slash => return scan_target_rest(buf, i + 1, true),
            b'/' => after_slash = true,
            b'.' | b'+' => {}
            b'?' => return scan_target_rest(buf, i + 1, false),
            b'%' | b'#' => return scan_target_rest(buf, i + 1, true),
            b' ' => return Some((i, false)),
            // Control bytes, DEL, and CR or LF of an HTTP/0.9 line.
            _ => return None,
        }
    }
    None
}

/// The rest of a target after `?` or once it is complex: any byte but controls and DEL
/// up to the space; a `#` makes it complex.
fn scan_target_rest(buf: &[u8], start: usize, mut complex: bool) -> Option<(usize, bool)> {
    for (i, &byte) in buf.iter().enumerate().skip(start) {
        if byte > b' ' && byte != 0x7f {
            complex |= byte == b'#';
            continue;
        }
        return (byte == b' ').then_some((i, complex));
    }
    None
}

/// Reads the header line at `start` if it is the end of the head or `name: value` with a
/// plain name, no NUL in the value, and a CRLF or LF end that has arrived.
// Inlined for the same reason as `scan_request_line`.
#[inline]
pub(super) fn scan_header_line(buf: &[u8], start: usize, underscores: bool) -> Option<Line> {
    let line = buf.get(start..)?;
    match line {
        [b'\r', b'\n', ..] => {
            return Some(Line::End {
                start,
                lf: start + 1,
            });
        }
        [b'\n', ..] => return Some(Line::End { start, lf: start }),
        _ => {}
    }
    let mut underscore = false;
    let mut name_len = 0;
    loop {
        match NAME_BYTES[usize::from(*line.get(name_len)?)] {
            NameByte::Token => {}
            NameByte::Underscore => underscore = true,
            NameByte::Colon if name_len > 0 => break,
            NameByte::Colon | NameByte::Other => return None,
        }
        name_len += 1;
    }
    let colon = start + name_len;
    let spaces = buf[colon + 1..].iter().take_while(|&&b| b == b' ').count();
    let value_start = colon + 1 + spaces;
    let terminator = value_start + find_value_end(&buf[value_start..])?;
    let lf = match &buf[terminator..] {
        [b'\n', ..] => terminator,
        [b'\r', b'\n', ..] => terminator + 1,
        // NUL, a lone CR, several CRs, or a line end still to come.
        _ => return None,
    };
    let trailing = buf[value_start..terminator]
        .iter()
        .rev()
        .take_while(|&&b| b == b' ')
        .count();
    Some(Line::Field(FieldLine {
        start,
        name: start..colon,
        value: value_start..terminator - trailing,
        lf,
        invalid_name: underscore && !underscores,
    }))
}

/// The offset of the first NUL, CR or LF in `value`: where nginx stops reading a value.
///
/// Eight bytes at a time: a word is searched for any byte below 0x0e, which covers the
/// three stop bytes and the rare other control bytes (a tab, say); those are stepped
/// over one at a time. Cheaper than `memchr3` on the short values most headers have.
#[inline]
fn find_value_end(value: &[u8]) -> Option<usize> {
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const BELOW: u64 = u64::from_ne_bytes([0x0e; 8]);
    let mut offset = 0;
    while let Some(word) = value.get(offset..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*word);
        // The lowest flagged byte is the first one below 0x0e; flags above it may be
        // false, which does not matter.
        let low = word.wrapping_sub(BELOW) & !word & HIGHS;
        if low == 0 {
            offset += 8;
            continue;
        }
        let at = offset + (low.trailing_zeros() / 8) as usize;
        if is_value_end(value[at]) {
            return Some(at);
        }
        offset = at + 1;
    }
    let tail = value.get(offset..)?;
    tail.iter()
        .position(|&byte| is_value_end(byte))
        .map(|at| offset + at)
}

fn is_value_end(byte: u8) -> bool {
    matches!(byte, b'\r' | b'\n' | 0)
}
