//! An HTTP status line at the start of a uwsgi or SCGI answer, read as nginx's status-line
//! parser reads it: `HTTP/`, a major version not starting with 0, `.`, a minor version,
//! spaces, three digits, then a space, `.` (IIS's `403.1`), CR or LF, and any text to the
//! line end (one CR at most before the LF). A version takes no digit more once it is
//! above 99. Anything else is not a status line,
//! and nginx reads the answer as a CGI head instead.

use std::ops::Range;

/// What the bytes so far are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum StatusLineScan {
    /// A status line so far; more bytes are needed.
    Incomplete,
    NotStatusLine,
    /// `text` is nginx's status line: from the code to the line end, CR excluded.
    Found {
        status: u16,
        text: Range<usize>,
        end: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// `matched` bytes of `HTTP/` seen.
    Protocol {
        matched: usize,
    },
    FirstMajorDigit,
    Major {
        value: u16,
    },
    FirstMinorDigit,
    Minor {
        value: u16,
    },
    BeforeStatus,
    Status {
        digits: usize,
    },
    AfterStatus,
    Text,
    /// After the CR that ends the line.
    LineCr,
}

/// The status line scan, resumable at any byte.
#[derive(Clone, Debug)]
pub(super) struct StatusLineScanner {
    state: State,
    position: usize,
    status: u16,
    text_start: usize,
    text_end: usize,
}

const PROTOCOL: &[u8] = b"HTTP/";

/// A version number above this takes no further digit.
const VERSION_GROWS_UP_TO: u16 = 99;

impl StatusLineScanner {
    pub(super) fn new() -> StatusLineScanner {
        StatusLineScanner {
            state: State::Protocol { matched: 0 },
            position: 0,
            status: 0,
            text_start: 0,
            text_end: 0,
        }
    }

    /// Scans `buf` (which starts with the answer) from where the last call stopped.
    pub(super) fn scan(&mut self, buf: &[u8]) -> StatusLineScan {
        while let Some(&byte) = buf.get(self.position) {
            let at = self.position;
            self.position += 1;
            match self.step(at, byte) {
                Step::Continue => {}
                Step::Refused => return StatusLineScan::NotStatusLine,
                Step::Done => {
                    return StatusLineScan::Found {
                        status: self.status,
                        text: self.text_start..self.text_end,
                        end: at + 1,
                    };
                }
            }
        }
        StatusLineScan::Incomplete
    }

    fn step(&mut self, at: usize, byte: u8) -> Step {
        let digit = byte.is_ascii_digit();
        self.state = match (self.state, byte) {
            (State::Protocol { matched }, _) if byte == PROTOCOL[matched] => {
                if matched + 1 == PROTOCOL.len() {
                    State::FirstMajorDigit
                } else {
                    State::Protocol {
                        matched: matched + 1,
                    }
                }
            }
            (State::FirstMajorDigit, b'1'..=b'9') => State::Major {
                value: u16::from(byte - b'0'),
            },
            (State::Major { .. }, b'.') => State::FirstMinorDigit,
            (State::Major { value }, _) if digit && value <= VERSION_GROWS_UP_TO => State::Major {
                value: value * 10 + u16::from(byte - b'0'),
            },
            (State::FirstMinorDigit, _) if digit => State::Minor {
                value: u16::from(byte - b'0'),
            },
            (State::Minor { .. }, b' ') => State::BeforeStatus,
            (State::Minor { value }, _) if digit && value <= VERSION_GROWS_UP_TO => State::Minor {
                value: value * 10 + u16::from(byte - b'0'),
            },
            (State::BeforeStatus, b' ') => State::BeforeStatus,
            (State::BeforeStatus, _) if digit => {
                self.text_start = at;
                self.status = u16::from(byte - b'0');
                State::Status { digits: 1 }
            }
            (State::Status { digits }, _) if digit => {
                self.status = self.status * 10 + u16::from(byte - b'0');
                if digits + 1 == 3 {
                    State::AfterStatus
                } else {
                    State::Status { digits: digits + 1 }
                }
            }
            (State::AfterStatus, b' ' | b'.') => State::Text,
            (State::AfterStatus | State::Text, b'\r') => {
                self.text_end = at;
                State::LineCr
            }
            (State::AfterStatus | State::Text | State::LineCr, b'\n') => {
                if self.state != State::LineCr {
                    self.text_end = at;
                }
                return Step::Done;
            }
            (State::Text, _) => State::Text,
            _ => return Step::Refused,
        };
        Step::Continue
    }
}

enum Step {
    Continue,
    Refused,
    Done,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(input: &[u8]) -> StatusLineScan {
        let whole = StatusLineScanner::new().scan(input);
        let mut scanner = StatusLineScanner::new();
        let mut last = StatusLineScan::Incomplete;
        for end in 1..=input.len() {
            last = scanner.scan(&input[..end]);
            if last != StatusLineScan::Incomplete {
                break;
            }
        }
        if !input.is_empty() {
            assert_eq!(last, whole, "one byte at a time");
        }
        whole
    }

    fn found(status: u16, text: Range<usize>, end: usize) -> StatusLineScan {
        StatusLineScan::Found { status, text, end }
    }

    #[test]
    fn status_lines_nginx_accepts() {
        assert_eq!(scan(b"HTTP/1.1 200 OK\r\nA: b"), found(200, 9..15, 17));
        assert_eq!(scan(b"HTTP/1.0 404\n"), found(404, 9..12, 13));
        assert_eq!(scan(b"HTTP/2.0   302 Found  \r\n"), found(302, 11..22, 24));
        assert_eq!(scan(b"HTTP/1.1 403.1 Forbidden\r\n"), found(403, 9..24, 26));
        assert_eq!(scan(b"HTTP/123.999 099\r\n"), found(99, 13..16, 18));
        assert_eq!(scan(b"HTTP/1.0000000 200\n"), found(200, 15..18, 19));
        assert_eq!(scan(b"HTTP/1.1 200 \x01text\n"), found(200, 9..18, 19));
    }

    #[test]
    fn anything_else_is_not_a_status_line() {
        let refused: [&[u8]; 14] = [
            b"Status: 200 OK\r\n",
            b"http/1.1 200 OK\r\n",
            b"HTTP/0.9 200 OK\r\n",
            b"HTTP/1234.1 200\r\n",
            b"HTTP/1.1234 200\r\n",
            b"HTTP/1. 200\r\n",
            b"HTTP/1.1\r\n",
            b"HTTP/1.1 20\r\n",
            b"HTTP/1.1 2000\r\n",
            b"HTTP/1.1 200x\r\n",
            b"HTTP/1.1 200\rX",
            b"HTTP/1.1 OK 200\r\n",
            b"HTTP/ 1.1 200\r\n",
            b"HTTP/1.1 200 OK\r\r\n",
        ];
        for input in refused {
            assert_eq!(
                scan(input),
                StatusLineScan::NotStatusLine,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn a_prefix_of_a_status_line_waits() {
        let line = b"HTTP/1.1 200 OK\r\n";
        for end in 0..line.len() {
            assert_eq!(
                StatusLineScanner::new().scan(&line[..end]),
                StatusLineScan::Incomplete
            );
        }
    }
}
