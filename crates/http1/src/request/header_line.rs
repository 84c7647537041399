//! Header lines exactly as nginx's `ngx_http_parse_header_line` reads them.
//!
//! This scanner is the reference: `fast_path.rs` reads the common lines in fewer steps
//! and hands every other line here; `tests_fast_path.rs` and the `http1_request_head`
//! fuzz target check that both give the same [`Line`]s, and `tests_httparse.rs` checks this
//! scanner against httparse on the lines httparse accepts.
//!
//! nginx accepts lines httparse rejects (`Name` without a colon, a tab or `\x01` in a value,
//! `\r\r\n`, `x.foo:` names), strips only spaces around a value where httparse also strips
//! tabs, and rejects at a precise byte, which the buffer emulation needs.

use std::ops::Range;

use crate::error::RequestError;
use crate::request::request_line::Scan;

/// One header line as nginx parses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Line {
    Field(FieldLine),
    /// The empty line ending the head: starts at `start`, its LF is at `lf`.
    End {
        start: usize,
        lf: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FieldLine {
    pub start: usize,
    pub name: Range<usize>,
    /// nginx's value: leading and trailing spaces (not tabs) removed.
    pub value: Range<usize>,
    pub lf: usize,
    /// The name has a byte other than letters, digits and `-` (and `_` when allowed).
    pub invalid_name: bool,
}

impl Line {
    pub fn start(&self) -> usize {
        match self {
            Line::Field(field) => field.start,
            Line::End { start, .. } => *start,
        }
    }

    pub fn lf(&self) -> usize {
        match self {
            Line::Field(field) => field.lf,
            Line::End { lf, .. } => *lf,
        }
    }
}

/// Scans the header line starting at `start` exactly as nginx's
/// `ngx_http_parse_header_line` accepts it.
pub(super) fn scan_header_line(buf: &[u8], start: usize, underscores: bool) -> Scan<Line> {
    let reject = |offset| Scan::Rejected {
        offset,
        error: RequestError::InvalidHeaderLine {
            line_start: start,
            offset,
        },
    };
    match buf.get(start) {
        None => return Scan::Incomplete,
        Some(b'\n') => return Scan::Complete(Line::End { start, lf: start }),
        Some(b'\r') => {
            return match buf.get(start + 1) {
                None => Scan::Incomplete,
                Some(b'\n') => Scan::Complete(Line::End {
                    start,
                    lf: start + 1,
                }),
                Some(_) => reject(start),
            };
        }
        Some(_) => {}
    }

    let name_len = buf[start..]
        .iter()
        .position(|&b| b <= b' ' || b == 0x7f || b == b':');
    let Some(name_len) = name_len else {
        return Scan::Incomplete;
    };
    let name = start..start + name_len;
    let stop = name.end;
    let value = match buf[stop] {
        // A name must have at least one byte; a control byte or space in it is fatal.
        _ if name_len == 0 => return reject(stop),
        b':' => match field_value(buf, stop) {
            None => return Scan::Incomplete,
            Some(Err(nul)) => return reject(nul),
            Some(Ok(value)) => value,
        },
        // nginx takes a line without a colon as a field with an empty value.
        b'\r' | b'\n' => stop..stop,
        _ => return reject(stop),
    };

    // The value ends at CR or LF; nginx allows several CRs before the LF.
    let terminator = value.end
        + buf[value.end..]
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(0);
    let line_feed = buf[terminator..].iter().position(|&b| b != b'\r');
    let Some(line_feed) = line_feed else {
        return Scan::Incomplete;
    };
    let lf = terminator + line_feed;
    if buf[lf] != b'\n' {
        return reject(value.end);
    }
    let invalid_name = is_invalid_name(&buf[name.clone()], underscores);
    Scan::Complete(Line::Field(FieldLine {
        start,
        name,
        value,
        lf,
        invalid_name,
    }))
}

/// The value after the colon at `colon`: from the first byte that is not a space to the
/// last one before the line end that is not a space. `None` if the line end has not
/// arrived; `Err` with the offset of a NUL, which nginx rejects.
fn field_value(buf: &[u8], colon: usize) -> Option<Result<Range<usize>, usize>> {
    let start = buf[colon + 1..]
        .iter()
        .position(|&b| b != b' ')
        .map_or(buf.len(), |spaces| colon + 1 + spaces);
    let terminator = start + memchr::memchr3(b'\0', b'\r', b'\n', &buf[start..])?;
    if buf[terminator] == b'\0' {
        return Some(Err(terminator));
    }
    let trimmed = buf[start..terminator].iter().rposition(|&b| b != b' ');
    Some(Ok(start..trimmed.map_or(start, |last| start + last + 1)))
}

/// nginx keeps names of letters, digits and `-` (and `_` with `underscores_in_headers`);
/// other bytes make the line "invalid", ignored under `ignore_invalid_headers`.
pub(super) fn is_invalid_name(name: &[u8], underscores: bool) -> bool {
    name.iter()
        .any(|&b| !(b.is_ascii_alphanumeric() || b == b'-' || (underscores && b == b'_')))
}
