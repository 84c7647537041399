//! Emulation of nginx's request header buffers (`client_header_buffer_size`,
//! `large_client_header_buffers`), deterministic from the bytes of the head.
//!
//! nginx reads the head into one buffer of `client_header_buffer_size` bytes and parses every
//! byte it has before reading more. Only when the parser has used the whole buffer and still
//! needs bytes does it take a large buffer (`count` at most per request, `size` bytes each)
//! and copy the unfinished line to its start. Because the parser consumes everything before
//! asking, where a buffer fills depends only on the bytes, not on how they arrived:
//!
//! - While only CR and LF have been seen, nginx empties the first buffer and reuses it.
//! - Request line: when the buffer fills mid-line, the part already read must be shorter
//!   than `size` and a large buffer must be free, else 414 "client sent too long URI".
//! - Header line: the same, else 494 "client sent too long header line". If the buffer fills
//!   exactly at the end of a line, the next line starts in a fresh large buffer (nothing is
//!   copied); when none is free this is also 494, or "client sent too large request" when
//!   the line that ended was the request line.
//! - An error or the end of a line is acted on only if its byte lies inside the current
//!   buffer; otherwise the buffer limit is checked first, exactly as nginx orders them.
//!
//! Not emulated: buffers a previous request on the same connection left allocated (nginx
//! reuses them for pipelined and keepalive requests), and the switch to the limits of the
//! server a `Host` header selects. Each head is treated as starting a fresh first buffer.

use std::ops::Range;

use crate::error::RequestError;
use crate::request::HeadLimits;

/// Where the current buffer ends and how many large buffers are left.
#[derive(Clone, Debug)]
pub(super) struct BufferScheme {
    /// Offset in the head just past the current buffer.
    end: usize,
    first_size: usize,
    large_size: usize,
    large_left: usize,
}

impl BufferScheme {
    pub fn new(limits: &HeadLimits) -> BufferScheme {
        // Zero sizes are refused by nginx's configuration; treating them as one byte keeps
        // every loop below bounded.
        let first_size = limits.client_header_buffer_size.max(1);
        let (count, size) = limits.large_client_header_buffers;
        BufferScheme {
            end: first_size,
            first_size,
            large_size: size.max(1),
            large_left: count,
        }
    }

    /// Checks the request line starting at `start` up to the byte at `event` (its LF, the
    /// byte nginx rejects, or the end of the data).
    pub fn request_line(&mut self, start: usize, event: usize) -> Result<(), RequestError> {
        if start >= self.end {
            // Buffers holding only empty lines were emptied and reused.
            let reuses = start / self.first_size + 1;
            self.end = reuses.saturating_mul(self.first_size);
        }
        while event >= self.end {
            if self.end - start >= self.large_size || self.large_left == 0 {
                return Err(RequestError::UriTooLong);
            }
            self.take_large_buffer(start);
        }
        Ok(())
    }

    /// Checks the header line starting at `start` up to the byte at `event`. `previous` is
    /// the start of the line before it, or `None` if that was the request line.
    pub fn header_line(
        &mut self,
        start: usize,
        event: usize,
        previous: Option<usize>,
    ) -> Result<(), RequestError> {
        debug_assert!(
            start <= self.end,
            "lines are contiguous and the last one ended inside"
        );
        while event >= self.end {
            let too_long = |line: Range<usize>| Err(RequestError::HeaderLineTooLong { line });
            if start < self.end && self.end - start >= self.large_size {
                return too_long(start..self.end);
            }
            if self.large_left == 0 {
                return match (start < self.end, previous) {
                    (true, _) => too_long(start..self.end),
                    (false, Some(previous)) => too_long(previous..self.end),
                    (false, None) => Err(RequestError::RequestTooLarge),
                };
            }
            self.take_large_buffer(start);
        }
        Ok(())
    }

    /// Moves the line starting at `start` to the beginning of a new large buffer.
    fn take_large_buffer(&mut self, start: usize) {
        self.large_left -= 1;
        self.end = start.saturating_add(self.large_size);
    }
}
