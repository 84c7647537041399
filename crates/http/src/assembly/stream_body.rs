//! A stream's request body as it arrives on a framed connection (HTTP/2 DATA frames,
//! HTTP/3 DATA frames), kept until the body reader takes it. A body without
//! `content-length` is read as HTTP/1.1 chunked (the request's head says so): each
//! payload becomes one chunk, the stream's end the last chunk.

/// What has arrived of one stream's body and is not read yet.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    pub(crate) data: Vec<u8>,
    /// Payload bytes in `data` whose window is not given back yet.
    pub(crate) unreleased: u32,
    /// The body is chunked here (no `content-length`).
    pub(crate) chunked: bool,
    /// `content-length`, when the client sent one.
    declared: Option<u64>,
    received: u64,
    /// END_STREAM came (or trailers).
    pub(crate) ended: bool,
    /// A DATA frame came, even an empty one (HTTP/3 tells a request without a body from
    /// one with an empty body by it).
    pub(crate) data_seen: bool,
    /// The body is read whole before its request goes on (see `StreamFeed::take`).
    pub(crate) whole: bool,
    /// More than `content-length`, or less at the end: the body is refused, with nginx's
    /// words.
    pub(crate) failed: Option<String>,
}

impl Inbox {
    pub(crate) fn new(declared: Option<u64>) -> Inbox {
        Inbox {
            chunked: declared.is_none(),
            declared,
            ..Inbox::default()
        }
    }

    /// A DATA payload (and whether it ends the body).
    pub(crate) fn push(&mut self, payload: &[u8], end_stream: bool) {
        let len = payload.len();
        self.data_seen = true;
        self.received += len as u64;
        self.unreleased = self
            .unreleased
            .saturating_add(u32::try_from(len).unwrap_or(u32::MAX));
        if self
            .declared
            .is_some_and(|declared| self.received > declared)
        {
            self.failed = Some("client intended to send body data larger than declared".to_owned());
        }
        if self.chunked && len > 0 {
            self.data
                .extend_from_slice(format!("{len:x}\r\n").as_bytes());
            self.data.extend_from_slice(payload);
            self.data.extend_from_slice(b"\r\n");
        } else if !self.chunked {
            self.data.extend_from_slice(payload);
        }
        if end_stream {
            self.end();
        }
    }

    /// The body ended (END_STREAM, or trailers, which Portico does not pass on).
    pub(crate) fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        if self.chunked {
            self.data.extend_from_slice(b"0\r\n\r\n");
        }
        if let Some(declared) = self.declared.filter(|&declared| self.received < declared) {
            let received = self.received;
            self.failed = Some(format!(
                "client prematurely closed stream: only {received} out of {declared} bytes of \
                 request body received"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_without_length_becomes_chunks() {
        let mut inbox = Inbox::new(None);
        inbox.push(b"abc", false);
        inbox.push(b"", false);
        inbox.push(b"0123456789abcdef", true);
        assert_eq!(
            inbox.data,
            b"3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n"
        );
        assert_eq!(inbox.unreleased, 19);
        assert!(inbox.failed.is_none());
    }

    #[test]
    fn a_body_that_is_not_its_length_fails() {
        let mut short = Inbox::new(Some(5));
        short.push(b"TEST", true);
        assert_eq!(
            short.failed.as_deref(),
            Some(
                "client prematurely closed stream: only 4 out of 5 bytes of request body received"
            )
        );
        let mut long = Inbox::new(Some(3));
        long.push(b"TEST", false);
        assert_eq!(
            long.failed.as_deref(),
            Some("client intended to send body data larger than declared")
        );
        let mut exact = Inbox::new(Some(4));
        exact.push(b"TE", false);
        exact.push(b"ST", true);
        assert!(exact.failed.is_none());
        assert_eq!(exact.data, b"TEST");
    }
}
