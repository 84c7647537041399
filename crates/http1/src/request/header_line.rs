//! Header lines: a fast path through httparse and an exact line scanner for everything else.
//!
//! Both produce the same [`Line`]s (nginx's view of each line); `tests.rs` and the
//! `http1_request_head` fuzz target check that they agree.
//!
//! httparse accepts a subset of what nginx accepts (token names directly followed by `:`,
//! values without control bytes, CRLF or LF line ends), and for that subset nginx sees the
//! same lines, except that nginx strips only spaces around a value where httparse also strips
//! tabs. The fast path therefore takes httparse's line boundaries and recomputes each value
//! range from the raw bytes. Whenever httparse reports anything but a complete head
//! (partial data, an error, more than [`FAST_PATH_FIELDS_MAX`] fields), the exact scanner
//! decides, since nginx accepts lines httparse rejects (`Name` without a colon, a tab or
//! `\x01` in a value, `\r\r\n`, `x.foo:` names) and rejects at a precise byte.
//!
//! Measured (`benches/head_parse.rs`, 650-byte browser head, 11 fields, several runs on a
//! shared 2-core machine): httparse path 385–420 ns, exact scanner alone 360–405 ns, never
//! the other way round. httparse validates every value byte against RFC 9110, while nginx
//! only needs the first NUL, CR or LF (one `memchr3`), so the exact scanner does less work.
//! httparse stays first because the project chose it for head parsing; `parse_head_exact`
//! is the one-line switch if that choice is revisited.

use std::ops::Range;

use crate::error::RequestError;
use crate::request::request_line::Scan;

/// Field lines handed to httparse at once; heads with more go through the exact scanner.
/// The slots are initialised on every call, so more of them cost time on every head.
pub(super) const FAST_PATH_FIELDS_MAX: usize = 16;

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

/// Runs httparse over the header block at `start`. If httparse finds a complete head, hands
/// every line to `on_line` in order (stopping at its first error) and returns the offset
/// after the head. `None` means httparse could not decide and nothing was handed over.
pub(super) fn parse_fast(
    buf: &[u8],
    start: usize,
    underscores: bool,
    on_line: &mut dyn FnMut(Line) -> Result<(), RequestError>,
) -> Option<Result<usize, RequestError>> {
    let mut slots = [httparse::EMPTY_HEADER; FAST_PATH_FIELDS_MAX];
    let block = &buf[start..];
    let Ok(httparse::Status::Complete((block_len, fields))) =
        httparse::parse_headers(block, &mut slots)
    else {
        return None;
    };
    let head_end = start + block_len;
    // The final empty line is "\r\n" or "\n"; the line before it ends in "\n".
    let end_start = if block_len >= 2 && buf[head_end - 2] == b'\r' {
        head_end - 2
    } else {
        head_end - 1
    };
    let base = buf.as_ptr() as usize;
    let mut lines = fields.iter().enumerate().map(|(index, field)| {
        // httparse returns sub-slices of `buf`, so the address difference is an offset.
        let name_start = field.name.as_ptr() as usize - base;
        let next_start = fields
            .get(index + 1)
            .map_or(end_start, |next| next.name.as_ptr() as usize - base);
        fast_field(buf, name_start, field.name.len(), next_start, underscores)
    });
    let result = lines.try_for_each(&mut *on_line).and_then(|()| {
        on_line(Line::End {
            start: end_start,
            lf: head_end - 1,
        })
    });
    Some(result.map(|()| head_end))
}

/// nginx's view of a line httparse accepted: `name:` then the value, ending right before
/// `next_start` in CRLF or LF.
fn fast_field(
    buf: &[u8],
    start: usize,
    name_len: usize,
    next_start: usize,
    underscores: bool,
) -> Line {
    let name = start..start + name_len;
    debug_assert_eq!(buf[name.end], b':');
    let lf = next_start - 1;
    debug_assert_eq!(buf[lf], b'\n');
    let terminator = if buf[lf - 1] == b'\r' && lf - 1 > name.end {
        lf - 1
    } else {
        lf
    };
    let value_start = name.end
        + 1
        + buf[name.end + 1..terminator]
            .iter()
            .take_while(|&&b| b == b' ')
            .count();
    let trailing = buf[value_start..terminator]
        .iter()
        .rev()
        .take_while(|&&b| b == b' ')
        .count();
    let value = value_start..terminator - trailing;
    let invalid_name = is_invalid_name(&buf[name.clone()], underscores);
    Line::Field(FieldLine {
        start,
        name,
        value,
        lf,
        invalid_name,
    })
}
