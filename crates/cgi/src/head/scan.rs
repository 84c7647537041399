//! Header lines of an upstream's head, scanned as nginx's header-line parser reads them for
//! an upstream (`_` allowed in names), resumable at any byte.
//!
//! What nginx accepts that a strict reader would not: a line of only a name (a field with
//! an empty value), LF alone as a line end, several CRs before the LF, tabs and other
//! control bytes inside a value, any byte above space but `:` and DEL in a name. What it
//! refuses, at the byte: a control byte, space or DEL in a name, a name that starts with
//! `:`, a NUL in a value, and a CR followed by anything but CR or LF. A line that starts
//! `HTTP/` is skipped whole (IIS sends a status line twice).

use std::ops::Range;

use crate::error::HeadError;

/// One scanning step's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Scanned {
    /// A header line: the name's and the value's ranges (leading and trailing spaces, not
    /// tabs, trimmed from the value).
    Field {
        name: Range<usize>,
        value: Range<usize>,
    },
    /// The empty line that ends the head; the head ends before `end`.
    End { end: usize },
    /// The bytes ran out inside a line.
    Incomplete,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    LineStart,
    Name,
    BeforeValue,
    Value,
    AfterValue,
    /// After a CR that ends a field line: LF (or more CRs) must follow.
    FieldCr,
    /// After a CR at the start of a line: the LF that ends the head must follow.
    EndCr,
    /// A line that starts `HTTP/`, skipped to its LF.
    Skipped,
}

/// Where the scan is and what it has seen of the current line.
#[derive(Clone, Debug)]
pub(super) struct LineScanner {
    state: State,
    /// The next byte to look at.
    position: usize,
    line_start: usize,
    name_end: usize,
    value_start: usize,
    /// The end of the value so far; also where nginx's message stops quoting a line that
    /// is refused after its value.
    value_end: usize,
}

impl LineScanner {
    pub(super) fn new(start: usize) -> LineScanner {
        LineScanner {
            state: State::LineStart,
            position: start,
            line_start: start,
            name_end: start,
            value_start: start,
            value_end: start,
        }
    }

    /// Scans `buf` from where the last call stopped to the end of the next line.
    pub(super) fn scan(&mut self, buf: &[u8]) -> Result<Scanned, HeadError> {
        while let Some(&byte) = buf.get(self.position) {
            let at = self.position;
            self.position += 1;
            if let Some(scanned) = self.step(buf, at, byte)? {
                return Ok(scanned);
            }
        }
        Ok(Scanned::Incomplete)
    }

    fn step(&mut self, buf: &[u8], at: usize, byte: u8) -> Result<Option<Scanned>, HeadError> {
        match self.state {
            State::LineStart => {
                self.line_start = at;
                match byte {
                    b'\r' => self.state = State::EndCr,
                    b'\n' => return Ok(Some(Scanned::End { end: at + 1 })),
                    b':' => return Err(self.refuse(buf, at)),
                    _ if is_name_stop(byte) => return Err(self.refuse(buf, at)),
                    _ => self.state = State::Name,
                }
            }
            State::Name => match byte {
                b':' => {
                    self.name_end = at;
                    self.state = State::BeforeValue;
                }
                b'\r' | b'\n' => {
                    self.name_end = at;
                    self.value_start = at;
                    return Ok(self.value_ends(at, byte));
                }
                b'/' if &buf[self.line_start..at] == b"HTTP" => self.state = State::Skipped,
                _ if is_name_stop(byte) => return Err(self.refuse(buf, at)),
                _ => {}
            },
            State::BeforeValue => match byte {
                b' ' => {}
                b'\r' | b'\n' => {
                    self.value_start = at;
                    return Ok(self.value_ends(at, byte));
                }
                0 => return Err(self.refuse(buf, at)),
                _ => {
                    self.value_start = at;
                    self.state = State::Value;
                }
            },
            State::Value => {
                // The common case: plain value bytes, skipped without a step each.
                let run = buf[at..]
                    .iter()
                    .position(|&next| matches!(next, b' ' | b'\r' | b'\n' | 0))
                    .unwrap_or(buf.len() - at);
                if run > 0 {
                    self.position = at + run;
                    return Ok(None);
                }
                match byte {
                    b' ' => {
                        self.value_end = at;
                        self.state = State::AfterValue;
                    }
                    0 => return Err(self.refuse(buf, at)),
                    _ => return Ok(self.value_ends(at, byte)),
                }
            }
            State::AfterValue => match byte {
                b' ' => {}
                b'\r' => self.state = State::FieldCr,
                b'\n' => return Ok(Some(self.field())),
                0 => return Err(self.refuse(buf, at)),
                _ => self.state = State::Value,
            },
            State::FieldCr => match byte {
                b'\n' => return Ok(Some(self.field())),
                b'\r' => {}
                _ => return Err(self.refuse(buf, self.value_end)),
            },
            State::EndCr => match byte {
                b'\n' => return Ok(Some(Scanned::End { end: at + 1 })),
                _ => return Err(self.refuse(buf, at - 1)),
            },
            State::Skipped => {
                if byte == b'\n' {
                    self.state = State::LineStart;
                }
            }
        }
        Ok(None)
    }

    /// The value ends at the CR or LF at `at`: a LF ends the line, a CR waits for one.
    fn value_ends(&mut self, at: usize, byte: u8) -> Option<Scanned> {
        self.value_end = at;
        if byte == b'\n' {
            return Some(self.field());
        }
        self.state = State::FieldCr;
        None
    }

    fn field(&mut self) -> Scanned {
        self.state = State::LineStart;
        Scanned::Field {
            name: self.line_start..self.name_end,
            value: self.value_start..self.value_end,
        }
    }

    /// nginx's refusal: the line quoted up to the byte at `at`, and that byte.
    fn refuse(&self, buf: &[u8], at: usize) -> HeadError {
        HeadError::InvalidHeader {
            line: buf[self.line_start.min(at)..at].to_vec(),
            byte: buf[at],
        }
    }
}

/// Bytes that may not be in a name (nor start one): controls, space and DEL. CR and LF are
/// matched before this is asked.
fn is_name_stop(byte: u8) -> bool {
    byte <= b' ' || byte == 0x7f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of `head` (scanned whole, then one byte at a time, which must agree).
    fn scan_all(head: &[u8]) -> Result<Vec<Scanned>, HeadError> {
        let whole = scan_pieces(head, head.len());
        assert_eq!(scan_pieces(head, 1), whole, "one byte at a time");
        whole
    }

    fn scan_pieces(head: &[u8], piece: usize) -> Result<Vec<Scanned>, HeadError> {
        let mut scanner = LineScanner::new(0);
        let mut lines = Vec::new();
        let mut available = 0;
        loop {
            match scanner.scan(&head[..available])? {
                Scanned::Incomplete if available == head.len() => return Ok(lines),
                Scanned::Incomplete => available = (available + piece).min(head.len()),
                end @ Scanned::End { .. } => {
                    lines.push(end);
                    return Ok(lines);
                }
                field => lines.push(field),
            }
        }
    }

    fn field(name: Range<usize>, value: Range<usize>) -> Scanned {
        Scanned::Field { name, value }
    }

    #[test]
    fn lines_as_nginx_reads_them() {
        let head = b"A: b\r\nName-Only\nC:  spaced  \r\r\nD:\ttab\x01\r\n\nbody";
        assert_eq!(
            scan_all(head),
            Ok(vec![
                field(0..1, 3..4),
                field(6..15, 15..15),
                field(16..17, 20..26),
                field(31..32, 33..38),
                Scanned::End { end: 41 },
            ])
        );
    }

    #[test]
    fn an_empty_value_and_odd_name_bytes_are_kept() {
        let head = b"X.Foo@bar_baz:\r\nY:   \r\n\r\n";
        assert_eq!(
            scan_all(head),
            Ok(vec![
                field(0..13, 14..14),
                field(16..17, 21..21),
                Scanned::End { end: 25 }
            ])
        );
    }

    #[test]
    fn a_repeated_status_line_is_skipped() {
        let head = b"HTTP/1.1 200 OK\r\nA: b\n\n";
        assert_eq!(
            scan_all(head),
            Ok(vec![field(17..18, 20..21), Scanned::End { end: 23 }])
        );
        // Only "HTTP" exactly, in capitals, before the slash.
        let refused = scan_all(b"http/1.1 200\r\n\r\n");
        assert_eq!(
            refused,
            Err(HeadError::InvalidHeader {
                line: b"http/1.1".to_vec(),
                byte: b' '
            })
        );
    }

    #[test]
    fn refused_bytes_are_quoted_as_nginx_quotes_them() {
        let cases: [(&[u8], &[u8], u8); 9] = [
            (b"Bad Name: x\r\n", b"Bad", b' '),
            (b"Tab\tName: x\r\n", b"Tab", b'\t'),
            (b": no name\r\n", b"", b':'),
            (b" leading\r\n", b"", b' '),
            (b"A: nul\x00here\r\n", b"A: nul", 0),
            (b"A:\x00\r\n", b"A:", 0),
            (b"A: value\rX\n", b"A: value", b'\r'),
            (b"A: value  \rX\n", b"A: value", b' '),
            (b"A: b\r\n\rX", b"", b'\r'),
        ];
        for (head, line, byte) in cases {
            let expected = HeadError::InvalidHeader {
                line: line.to_vec(),
                byte,
            };
            assert_eq!(
                scan_all(head),
                Err(expected),
                "{}",
                String::from_utf8_lossy(head)
            );
        }
        let error = scan_all(b"A: nul\x00").expect_err("refused");
        assert_eq!(
            error.to_string(),
            "upstream sent invalid header: \"A: nul\\x00...\""
        );
    }

    #[test]
    fn a_refusal_comes_with_the_byte_before_the_line_ends() {
        let mut scanner = LineScanner::new(0);
        assert!(scanner.scan(b"Good: yes\r\nBad\x01").is_ok());
        assert!(scanner.scan(b"Good: yes\r\nBad\x01").is_err());
    }
}
