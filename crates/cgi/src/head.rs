//! The response head a CGI-family application sends before the body (RFC 3875 §6): header
//! lines ending with an empty line, the status in a `Status:` field, or `302` with a
//! `Location:` and no `Status:`, or `200`. uwsgi and SCGI applications may instead start
//! with an HTTP status line (`HTTP/1.1 200 OK`); [`HeadStyle::StatusLineOrCgi`] accepts
//! both, as nginx's uwsgi and SCGI modules do.
//!
//! [`HeadParser`] takes the bytes as they arrive and keeps at most the buffer size it was
//! given (`fastcgi_buffer_size` and its siblings): a head that does not end within it is
//! refused as nginx refuses it. For FastCGI those bytes are the STDOUT stream's, so record
//! headers and stderr do not count against the buffer as they do in nginx's, where stderr
//! before the head is dropped from the buffer and the rest is a few bytes per record.

mod scan;
mod status_line;

use std::ops::Range;

use crate::error::HeadError;
use scan::{LineScanner, Scanned};
use status_line::{StatusLineScan, StatusLineScanner};

/// Which heads are accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadStyle {
    /// Header lines only (FastCGI). A line that starts `HTTP/` is skipped, as nginx skips it.
    Cgi,
    /// An HTTP status line then header lines, or, when the answer does not start with a
    /// status line, header lines only (uwsgi, SCGI).
    StatusLineOrCgi,
}

/// How far a [`HeadParser`] has come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadProgress {
    /// The head has not ended yet: push more bytes.
    Partial,
    /// The head ended within the last piece pushed; its body starts at `body_offset` in
    /// that piece (the piece's length when nothing of the body came with it).
    Complete { head: CgiHead, body_offset: usize },
}

/// Reads one response head from bytes as they arrive.
#[derive(Clone, Debug)]
pub struct HeadParser {
    buffer_size: usize,
    buf: Vec<u8>,
    /// Set while a uwsgi or SCGI answer may still turn out to start with a status line.
    status_line: Option<StatusLineScanner>,
    found_status_line: Option<(u16, Range<usize>)>,
    lines: LineScanner,
    fields: Vec<(Range<usize>, Range<usize>)>,
    completed: bool,
}

impl HeadParser {
    /// A parser that keeps at most `buffer_size` bytes: the head, its final empty line
    /// included, must fit in them.
    pub fn new(style: HeadStyle, buffer_size: usize) -> HeadParser {
        HeadParser {
            buffer_size,
            buf: Vec::new(),
            status_line: match style {
                HeadStyle::Cgi => None,
                HeadStyle::StatusLineOrCgi => Some(StatusLineScanner::new()),
            },
            found_status_line: None,
            lines: LineScanner::new(0),
            fields: Vec::new(),
            completed: false,
        }
    }

    /// Takes the next piece of the answer. Of a piece that completes the head, only the
    /// head is kept: the rest is the body's start, at `body_offset` in the piece. A parser
    /// that has returned a head or an error takes no more pieces.
    pub fn push(&mut self, piece: &[u8]) -> Result<HeadProgress, HeadError> {
        assert!(!self.completed, "a head parser reads one head");
        let kept_before = self.buf.len();
        let room = self.buffer_size - kept_before;
        self.buf.extend_from_slice(&piece[..piece.len().min(room)]);
        let scanned = self.scan();
        if let Ok(Some(end)) = scanned {
            debug_assert!(
                end > kept_before,
                "a head ends in the piece that completes it"
            );
            self.buf.truncate(end);
            let head = self.finish()?;
            return Ok(HeadProgress::Complete {
                head,
                body_offset: end - kept_before,
            });
        }
        scanned?;
        if self.buf.len() == self.buffer_size {
            self.completed = true;
            return Err(HeadError::TooBig);
        }
        Ok(HeadProgress::Partial)
    }

    /// Scans what has arrived; the offset after the head once it has ended.
    fn scan(&mut self) -> Result<Option<usize>, HeadError> {
        if let Some(scanner) = &mut self.status_line {
            match scanner.scan(&self.buf) {
                StatusLineScan::Incomplete => return Ok(None),
                StatusLineScan::NotStatusLine => {}
                StatusLineScan::Found { status, text, end } => {
                    self.found_status_line = Some((status, text));
                    self.lines = LineScanner::new(end);
                }
            }
            self.status_line = None;
        }
        loop {
            match self.lines.scan(&self.buf) {
                Ok(Scanned::Incomplete) => return Ok(None),
                Ok(Scanned::Field { name, value }) => self.fields.push((name, value)),
                Ok(Scanned::End { end }) => return Ok(Some(end)),
                Err(error) => {
                    self.completed = true;
                    return Err(error);
                }
            }
        }
    }

    /// The head's status, as nginx decides it once the head has ended.
    fn finish(&mut self) -> Result<CgiHead, HeadError> {
        self.completed = true;
        let bytes = std::mem::take(&mut self.buf);
        let fields = std::mem::take(&mut self.fields);
        let named = |name: &[u8]| {
            fields
                .iter()
                .find(|(field, _)| bytes[field.clone()].eq_ignore_ascii_case(name))
                .map(|(_, value)| value.clone())
        };
        let (status, status_line) = if let Some((status, text)) = self.found_status_line.take() {
            (status, StatusLine::InHead(text))
        } else if let Some(value) = named(b"status") {
            let status =
                status_code(&bytes[value.clone()]).ok_or_else(|| HeadError::InvalidStatus {
                    value: bytes[value.clone()].to_vec(),
                })?;
            // nginx keeps a value of only the code out of the status line, which it then
            // makes from the code.
            let line = if value.len() > 3 {
                StatusLine::InHead(value)
            } else {
                StatusLine::Standard
            };
            (status, line)
        } else if named(b"location").is_some() {
            (302, StatusLine::Fixed(b"302 Moved Temporarily"))
        } else {
            (200, StatusLine::Fixed(b"200 OK"))
        };
        let location = named(b"location");
        Ok(CgiHead {
            bytes,
            fields,
            status,
            status_line,
            location,
        })
    }
}

/// The status a `Status` value names: its first three bytes, which must be digits.
fn status_code(value: &[u8]) -> Option<u16> {
    let digits = value.get(..3)?;
    digits.iter().try_fold(0u16, |code, &byte| {
        byte.is_ascii_digit()
            .then(|| code * 10 + u16::from(byte - b'0'))
    })
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum StatusLine {
    /// Bytes of the head: a status line's text or a `Status` value.
    InHead(Range<usize>),
    /// What nginx writes when the head names no status.
    Fixed(&'static [u8]),
    /// The standard line for the code.
    Standard,
}

/// A response head as an application sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgiHead {
    /// The head's bytes, its final empty line included.
    bytes: Vec<u8>,
    fields: Vec<(Range<usize>, Range<usize>)>,
    status: u16,
    status_line: StatusLine,
    location: Option<Range<usize>>,
}

/// What a `Location` field asks for (RFC 3875 §6.2.2, §6.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// A path on this server (`/next?x=1`). A CGI server would serve it as an internal
    /// redirect; nginx does not, and answers it as a redirect to the client, made
    /// absolute by its header filter.
    Local,
    /// An absolute URI (or anything else that is not a local path).
    Client,
}

impl CgiHead {
    /// The status code: the status line's, else the `Status` field's, else 302 with a
    /// `Location` field, else 200. Any three digits are taken, as nginx takes them.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// What nginx writes after `HTTP/1.1 ` when it answers with this status: the status
    /// line's text, a `Status` value longer than its code (`404 Not Found`), `302 Moved
    /// Temporarily` or `200 OK`. `None` when only a code was given: the standard line for
    /// [`status`](Self::status) is used.
    pub fn status_line(&self) -> Option<&[u8]> {
        match &self.status_line {
            StatusLine::InHead(range) => Some(&self.bytes[range.clone()]),
            StatusLine::Fixed(line) => Some(line),
            StatusLine::Standard => None,
        }
    }

    /// The header fields in order, `Status` included (nginx hides it from the client by
    /// default, with the `*_hide_header` list).
    pub fn fields(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        self.fields
            .iter()
            .map(|(name, value)| (&self.bytes[name.clone()], &self.bytes[value.clone()]))
    }

    /// The first field of this name, in any case.
    pub fn field(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    }

    /// What the first `Location` field asks for, if there is one.
    pub fn redirect(&self) -> Option<Redirect> {
        let location = &self.bytes[self.location.clone()?];
        let local = location.starts_with(b"/") && !location.starts_with(b"//");
        Some(if local {
            Redirect::Local
        } else {
            Redirect::Client
        })
    }

    /// Bytes the head took, its final empty line included.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests;
