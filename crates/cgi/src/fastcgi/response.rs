//! A responder's answer read as nginx's FastCGI module reads it: the CGI head from stdout,
//! then the body, with stderr passed on whenever it comes.

use super::decoder::{Decoder, EndRequest, Event};
use crate::error::FastcgiError;
use crate::head::{CgiHead, HeadParser, HeadProgress, HeadStyle};

/// What a piece of the answer said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResponseEvent<'a> {
    /// The head has ended; `body` is what came of the body in the same piece of stdout
    /// (possibly empty), borrowed from the input.
    Head { head: CgiHead, body: &'a [u8] },
    /// Body bytes (stdout after the head), borrowed from the input; never empty.
    Body(&'a [u8]),
    /// Stderr bytes, borrowed from the input; never empty. nginx logs each piece at
    /// `error` as `FastCGI sent in stderr: "..."` ([`super::stderr_message`]) and, while
    /// the head is read, answers 502 when one holds a `fastcgi_catch_stderr` string.
    Stderr(&'a [u8]),
    /// END_REQUEST: the response is complete.
    End(EndRequest),
}

/// Reads one FastCGI response: records, then the head in their stdout, then the body.
///
/// While the head is read, an end of stdout is refused ("upstream prematurely closed
/// FastCGI stdout"), and so is END_REQUEST ("upstream sent unexpected FastCGI record: 3").
/// After the head, the end of stdout is passed over and END_REQUEST ends the response.
#[derive(Clone, Debug)]
pub struct ResponseReader {
    decoder: Decoder,
    /// Set until the head has been read.
    head: Option<HeadParser>,
    /// Set by an error: nothing more is read.
    failed: bool,
}

impl ResponseReader {
    /// A reader for the answer to `request_id`, whose head must fit `buffer_size` bytes
    /// (`fastcgi_buffer_size`).
    pub fn new(request_id: u16, buffer_size: usize) -> ResponseReader {
        ResponseReader {
            decoder: Decoder::new(request_id),
            head: Some(HeadParser::new(HeadStyle::Cgi, buffer_size)),
            failed: false,
        }
    }

    /// Reads from the start of `input`: returns how many bytes were used and the event
    /// they completed. `None` means the input was used up (call again with more), or the
    /// response has ended ([`ResponseReader::is_ended`]); bytes after the end are never
    /// used. After an error the connection must be closed.
    pub fn read<'a>(
        &mut self,
        input: &'a [u8],
    ) -> Result<(usize, Option<ResponseEvent<'a>>), FastcgiError> {
        if self.failed {
            return Ok((0, None));
        }
        let read = self.read_records(input);
        self.failed = read.is_err();
        read
    }

    fn read_records<'a>(
        &mut self,
        input: &'a [u8],
    ) -> Result<(usize, Option<ResponseEvent<'a>>), FastcgiError> {
        let mut used = 0;
        loop {
            let (taken, event) = self.decoder.decode(&input[used..])?;
            used += taken;
            let Some(event) = event else {
                return Ok((used, None));
            };
            let event = match (event, self.head.as_mut()) {
                (Event::Stderr(piece), _) => ResponseEvent::Stderr(piece),
                (Event::Stdout(piece), Some(parser)) => match parser.push(piece)? {
                    HeadProgress::Partial => continue,
                    HeadProgress::Complete { head, body_offset } => {
                        self.head = None;
                        ResponseEvent::Head {
                            head,
                            body: &piece[body_offset..],
                        }
                    }
                },
                (Event::Stdout(piece), None) => ResponseEvent::Body(piece),
                (Event::StdoutEnd, Some(_)) => return Err(FastcgiError::StdoutClosedBeforeHead),
                (Event::StdoutEnd, None) => continue,
                (Event::EndRequest(_), Some(_)) => {
                    return Err(FastcgiError::UnexpectedRecord {
                        record_type: super::RecordType::EndRequest as u8,
                    });
                }
                (Event::EndRequest(end), None) => ResponseEvent::End(end),
            };
            return Ok((used, Some(event)));
        }
    }

    /// True once END_REQUEST has been read: a kept-alive connection can take the next
    /// request if no byte came after it.
    pub fn is_ended(&self) -> bool {
        self.decoder.is_ended()
    }

    /// Says what it means that the application closed the connection now: nothing when the
    /// response had ended, else the error nginx logs.
    pub fn finish(&self) -> Result<(), FastcgiError> {
        if self.is_ended() {
            Ok(())
        } else if self.head.is_some() {
            Err(FastcgiError::ClosedBeforeHead)
        } else {
            Err(FastcgiError::ClosedBeforeEndRequest)
        }
    }
}

#[cfg(test)]
mod tests;
