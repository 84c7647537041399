//! The exact header scanner against httparse, on every generated header block httparse
//! accepts whole. httparse reads a subset of what nginx reads (token names directly
//! followed by `:`, values without control bytes but tab, CRLF or LF line ends), and on
//! that subset both must see the same lines, except that httparse also strips tabs around
//! a value where nginx strips only spaces, so values are taken from httparse's line
//! boundaries. httparse was the fast path before `fast_path.rs`; it stays as this oracle.

use super::header_line::{self, FieldLine, Line, is_invalid_name};
use super::request_line::{self, Scan};
use super::tests_fast_path::generate_head;
use crate::test_rng::TestRng;

/// httparse reads at most this many fields; larger blocks are not compared.
const FIELDS_MAX: usize = 64;

#[test]
fn exact_header_scanner_agrees_with_httparse() {
    let mut rng = TestRng::new(0x4770);
    let mut compared = 0;
    for round in 0..60_000 {
        let input = generate_head(&mut rng);
        let underscores = round % 2 == 0;
        let (_, Scan::Complete(line)) = request_line::scan_request_line(&input) else {
            continue;
        };
        let Some(expected) = httparse_lines(&input, line.end, underscores) else {
            continue;
        };
        let exact = exact_lines(&input, line.end, underscores);
        let shown = String::from_utf8_lossy(&input);
        assert_eq!(exact.as_ref(), Some(&expected), "{shown:?}");
        compared += 1;
    }
    // The generator must keep producing blocks httparse accepts, or this test checks nothing.
    assert!(compared > 5_000, "only {compared} blocks compared");
}

/// The lines of the header block at `start` as the exact scanner reads them, through the
/// empty line; `None` if the block is rejected or incomplete.
fn exact_lines(buf: &[u8], start: usize, underscores: bool) -> Option<Vec<Line>> {
    let mut lines = Vec::new();
    let mut next = start;
    loop {
        let Scan::Complete(line) = header_line::scan_header_line(buf, next, underscores) else {
            return None;
        };
        next = line.lf() + 1;
        let end = matches!(line, Line::End { .. });
        lines.push(line);
        if end {
            return Some(lines);
        }
    }
}

/// The lines of the header block at `start` as httparse finds them, in nginx's terms;
/// `None` unless httparse accepts the whole block.
fn httparse_lines(buf: &[u8], start: usize, underscores: bool) -> Option<Vec<Line>> {
    let mut slots = [httparse::EMPTY_HEADER; FIELDS_MAX];
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
    let mut lines: Vec<Line> = fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            // httparse returns sub-slices of `buf`, so the address difference is an offset.
            let name_start = field.name.as_ptr() as usize - base;
            let next_start = fields
                .get(index + 1)
                .map_or(end_start, |next| next.name.as_ptr() as usize - base);
            httparse_field(buf, name_start, field.name.len(), next_start, underscores)
        })
        .collect();
    lines.push(Line::End {
        start: end_start,
        lf: head_end - 1,
    });
    Some(lines)
}

/// nginx's view of a line httparse accepted: `name:` then the value, ending right before
/// `next_start` in CRLF or LF.
fn httparse_field(
    buf: &[u8],
    start: usize,
    name_len: usize,
    next_start: usize,
    underscores: bool,
) -> Line {
    let name = start..start + name_len;
    assert_eq!(buf[name.end], b':');
    let lf = next_start - 1;
    assert_eq!(buf[lf], b'\n');
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
    Line::Field(FieldLine {
        start,
        name: name.clone(),
        value: value_start..terminator - trailing,
        lf,
        invalid_name: is_invalid_name(&buf[name], underscores),
    })
}
