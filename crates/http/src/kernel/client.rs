//! The client as phases, handlers and filters see it, whatever the protocol: a source of
//! the request body and a sink for the response. HTTP/1 makes both from its connection (the
//! socket, and the bytes read past a request head); an HTTP/2 stream will make them from its
//! frames, and the handlers, the body reader and the send path stay as they are.

use std::io;
use std::time::Duration;

use bytes::{Buf, Bytes};
use runtime::Stream;
use tokio::time::timeout_at;

use crate::kernel::body::BodyState;
use crate::kernel::request::ConnectionInfo;
use crate::kernel::response::FieldList;

/// The client of one request as its phases and handlers see it: who it is, where its body
/// comes from, and how much of that body has been read.
pub struct Client<'c> {
    pub info: &'c ConnectionInfo,
    pub source: BodySource<'c>,
    pub body: &'c mut BodyState,
}

/// Bytes read from the client and not consumed yet: the start of the next request, or body
/// bytes that came with the head.
#[derive(Debug)]
pub struct ReadAhead {
    pub(crate) buf: Vec<u8>,
    pub(crate) filled: usize,
    /// The size `buf` starts with, and gets again after [`ReadAhead::release`].
    size: usize,
}

impl ReadAhead {
    pub fn new(size: usize) -> ReadAhead {
        let size = size.max(1);
        ReadAhead {
            buf: vec![0; size],
            filled: 0,
            size,
        }
    }

    /// A buffer that takes its memory only when bytes are appended (an HTTP/2 stream's,
    /// whose body bytes arrive through its feed, and which most requests never need).
    pub(crate) fn unallocated() -> ReadAhead {
        ReadAhead {
            buf: Vec::new(),
            filled: 0,
            size: 1,
        }
    }

    /// Frees the buffer while it holds nothing, so that a connection waiting for a request
    /// holds no buffer (nginx frees its header buffer then too). [`ReadAhead::restore`]
    /// gives it back before the next read.
    pub(crate) fn release(&mut self) {
        if self.filled == 0 {
            self.buf = Vec::new();
        }
    }

    /// Gives a released buffer its first size again.
    pub(crate) fn restore(&mut self) {
        if self.buf.is_empty() {
            self.buf = vec![0; self.size];
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.filled]
    }

    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// Drops the first `len` bytes.
    pub(crate) fn consume(&mut self, len: usize) {
        self.buf.copy_within(len..self.filled, 0);
        self.filled -= len;
    }

    /// Appends bytes (for tests and for bytes handed back by a parser).
    pub fn append(&mut self, bytes: &[u8]) {
        if self.buf.len() < self.filled + bytes.len() {
            self.buf.resize(self.filled + bytes.len(), 0);
        }
        self.buf[self.filled..self.filled + bytes.len()].copy_from_slice(bytes);
        self.filled += bytes.len();
    }
}

/// Where a request body comes from: the bytes read ahead, then the client.
pub struct BodySource<'c> {
    socket: &'c Stream,
    read_ahead: &'c mut ReadAhead,
    /// A framed stream's body (HTTP/2 DATA frames), instead of the socket.
    feed: Option<&'c dyn BodyFeed>,
}

/// The request body of a stream of a connection that frames it (HTTP/2): its bytes come
/// from the connection's loop, not from the socket.
pub(crate) trait BodyFeed {
    /// Moves the body bytes that have arrived into `into`, waiting at most `timeout` for
    /// some; `Closed` when the stream ended short or was reset.
    fn next<'s>(
        &'s self,
        into: &'s mut ReadAhead,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = BodyRead> + 's>>;
    /// The body is to be read whole before the request goes on: the client may send more
    /// of it ahead (HTTP/2: a wider stream window).
    fn whole_body_wanted(&self);
    /// Resolves, with nginx's words, once the body breaks its own rules (HTTP/2: more than
    /// its `content-length`), also after the reader took all of it it wanted.
    fn refused(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + '_>>;
    /// Waits, at most `timeout`, for the stream's end (HTTP/2: END_STREAM) once the reader
    /// has all of the body its `content-length` promised: `Ok` at the end, else how the
    /// wait failed (more than promised is `Refused`).
    fn end_of_stream(
        &self,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), BodyRead>> + '_>>;
    /// Whether the stream's end has arrived (or the stream is gone).
    fn stream_ended(&self) -> bool;
    /// Sends an interim head (`103 Early Hints`) on the stream before its response.
    fn interim(&self, status: u16, fields: &[(&[u8], &[u8])]);
}

/// How waiting for more of the body ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyRead {
    /// More bytes are buffered.
    More,
    /// The client closed the connection (or it failed).
    Closed,
    TimedOut,
    /// The stream's body broke its own rules (HTTP/2: not its `content-length`); the
    /// words are nginx's `info` line.
    Refused(String),
}

impl<'c> BodySource<'c> {
    /// HTTP/1: the connection's socket and its read-ahead bytes.
    pub fn http1(socket: &'c Stream, read_ahead: &'c mut ReadAhead) -> BodySource<'c> {
        BodySource {
            socket,
            read_ahead,
            feed: None,
        }
    }

    /// A framed stream: its body comes through `feed`; `socket` is the connection's, for
    /// waits that watch the client, and is never read here.
    pub(crate) fn framed(
        socket: &'c Stream,
        read_ahead: &'c mut ReadAhead,
        feed: &'c dyn BodyFeed,
    ) -> BodySource<'c> {
        BodySource {
            socket,
            read_ahead,
            feed: Some(feed),
        }
    }

    /// The same source for a shorter while (a step after the response that needs one).
    pub(crate) fn reborrow(&mut self) -> BodySource<'_> {
        BodySource {
            socket: self.socket,
            read_ahead: self.read_ahead,
            feed: self.feed,
        }
    }

    /// Whether the body comes through a framed stream's feed (HTTP/2), apart from the
    /// connection's socket.
    pub(crate) fn is_framed(&self) -> bool {
        self.feed.is_some()
    }

    /// The body bytes received and not consumed yet.
    pub fn buffered(&self) -> &[u8] {
        self.read_ahead.bytes()
    }

    pub(crate) fn consume(&mut self, len: usize) {
        self.read_ahead.consume(len);
    }

    /// Waits (at most `timeout`) for more bytes once the buffered ones are consumed.
    pub(crate) async fn read_more(&mut self, timeout: Duration) -> BodyRead {
        if let Some(feed) = self.feed {
            return feed.next(self.read_ahead, timeout).await;
        }
        let deadline = tokio::time::Instant::from_std(runtime::clock::monotonic()) + timeout;
        let ahead = &mut *self.read_ahead;
        if ahead.filled == ahead.buf.len() {
            let grown = ahead.buf.len() * 2;
            ahead.buf.resize(grown, 0);
        }
        match timeout_at(deadline, self.socket.read(&mut ahead.buf[ahead.filled..])).await {
            Err(_) => BodyRead::TimedOut,
            Ok(Ok(0)) | Ok(Err(_)) => BodyRead::Closed,
            Ok(Ok(count)) => {
                ahead.filled += count;
                BodyRead::More
            }
        }
    }

    /// Says the body is to be read whole before the request goes on (see
    /// [`BodyFeed::whole_body_wanted`]).
    pub(crate) fn whole_body_wanted(&self) {
        if let Some(feed) = self.feed {
            feed.whole_body_wanted();
        }
    }

    /// Whether the body comes framed by a connection (HTTP/2) whose stream has not ended
    /// yet: its end is then to be awaited ([`Self::end_of_stream`]).
    pub(crate) fn stream_open(&self) -> bool {
        self.feed.is_some_and(|feed| !feed.stream_ended())
    }

    /// Waits for a framed body's end of stream (see [`BodyFeed::end_of_stream`]); at once
    /// for HTTP/1, whose body ends where its framing says.
    pub(crate) async fn end_of_stream(&self, timeout: Duration) -> Result<(), BodyRead> {
        match self.feed {
            Some(feed) => feed.end_of_stream(timeout).await,
            None => Ok(()),
        }
    }

    /// Resolves when a framed body breaks its own rules (see [`BodyFeed::refused`]); never
    /// for HTTP/1, whose bytes past the body are the next request's.
    pub(crate) async fn body_refused(&self) -> String {
        match self.feed {
            Some(feed) => feed.refused().await,
            None => std::future::pending().await,
        }
    }

    /// Tells the client to send its body (`Expect: 100-continue`).
    pub(crate) async fn send_continue(&self, timeout: Duration) -> io::Result<()> {
        // HTTP/2 has no interim 100 here: the stream's window invites the body.
        if self.feed.is_some() {
            return Ok(());
        }
        ResponseSink::http1(self.socket)
            .write_all_timed(b"HTTP/1.1 100 Continue\r\n\r\n", timeout)
            .await
    }

    /// Sends an interim head (`103 Early Hints`) with `fields` before the response: a
    /// HEADERS frame on a framed stream, an HTTP/1.1 head on the socket.
    pub(crate) async fn send_interim(
        &self,
        status: u16,
        fields: &[(&[u8], &[u8])],
        timeout: Duration,
    ) -> io::Result<()> {
        if let Some(feed) = self.feed {
            feed.interim(status, fields);
            return Ok(());
        }
        let mut head = Vec::with_capacity(128);
        head.extend_from_slice(b"HTTP/1.1 ");
        head.extend_from_slice(status.to_string().as_bytes());
        head.push(b' ');
        // (The status lines of final answers have no 1xx.)
        let reason = match status {
            103 => Some("Early Hints"),
            _ => http1::status::reason_phrase(status),
        };
        if let Some(reason) = reason {
            head.extend_from_slice(reason.as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        for (name, value) in fields {
            head.extend_from_slice(name);
            head.extend_from_slice(b": ");
            head.extend_from_slice(value);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        ResponseSink::http1(self.socket)
            .write_all_timed(&head, timeout)
            .await
    }

    /// The client's socket, to notice the client going away while the body waits.
    pub fn socket(&self) -> &Stream {
        self.socket
    }
}

/// A response sink that frames what it is given itself (an HTTP/2 stream): it takes the
/// head as fields, then body bytes, then trailers as fields, and never a file descriptor.
pub trait FramedSink {
    /// An empty field list to write the head into (one kept from an earlier response).
    fn spare_fields(&self) -> FieldList {
        FieldList::default()
    }
    /// Takes the response head; it goes out with the first body bytes or the end.
    /// Returns the bytes it counts for the head (`$bytes_sent`).
    fn head(&self, fields: FieldList) -> usize;
    /// Takes what it can of `bytes` now; `WouldBlock` when its queue is full.
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize>;
    /// As [`try_write`](Self::try_write), but the sink may keep a reference to `bytes`
    /// instead of a copy (a file piece read into a buffer of its own).
    fn try_write_shared(&self, bytes: &Bytes) -> io::Result<usize> {
        self.try_write(bytes)
    }
    /// An empty buffer to read the next piece into, whose earlier bytes are all written
    /// (see [`try_write_shared`](Self::try_write_shared)).
    fn spare_buffer(&self) -> Option<Vec<u8>> {
        None
    }
    /// Waits until [`try_write`](Self::try_write) may take bytes again.
    fn writable(&self)
    -> std::pin::Pin<Box<dyn std::future::Future<Output = io::Result<()>> + '_>>;
    /// Ends the response with trailers; without fields it just ends.
    fn trailers(&self, fields: FieldList);
    /// Trailers may follow the body (an upstream's): the body's last bytes do not end
    /// the stream even when the head gave its length, as nginx's last DATA frame does
    /// not when trailers come after it.
    fn trailers_may_follow(&self) {}
}

/// Waits until `framed` may take bytes again, at most `send_timeout`.
async fn writable_within(framed: &dyn FramedSink, send_timeout: Duration) -> io::Result<()> {
    let deadline = tokio::time::Instant::from_std(runtime::clock::monotonic()) + send_timeout;
    timeout_at(deadline, framed.writable())
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
}

/// Where a response goes.
#[derive(Clone, Copy)]
pub struct ResponseSink<'c> {
    socket: &'c Stream,
    framed: Option<&'c dyn FramedSink>,
}

impl<'c> ResponseSink<'c> {
    /// HTTP/1: the connection's socket.
    pub fn http1(socket: &'c Stream) -> ResponseSink<'c> {
        ResponseSink {
            socket,
            framed: None,
        }
    }

    /// A stream of a connection that frames its responses (HTTP/2); `socket` is the
    /// connection's, for waits that watch the client, and is never written.
    pub fn framed(socket: &'c Stream, framed: &'c dyn FramedSink) -> ResponseSink<'c> {
        ResponseSink {
            socket,
            framed: Some(framed),
        }
    }

    /// Whether the sink frames what it is given: no `sendfile`, no writes to the socket.
    pub fn is_framed(&self) -> bool {
        self.framed.is_some()
    }

    /// The framing sink, when there is one.
    pub fn framed_sink(&self) -> Option<&'c dyn FramedSink> {
        self.framed
    }

    /// The socket the response is written to, for `sendfile`, `TCP_CORK` and writability.
    pub fn socket(&self) -> &'c Stream {
        self.socket
    }

    pub fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        match self.framed {
            Some(framed) => framed.try_write(bytes),
            None => self.socket.try_write(bytes),
        }
    }

    pub(crate) async fn writable(&self) -> io::Result<()> {
        match self.framed {
            Some(framed) => framed.writable().await,
            None => self.socket.writable().await,
        }
    }

    /// Writes all of `bytes` as [`write_all_timed`](Self::write_all_timed) does; a framing
    /// sink keeps references to the buffer rather than copies.
    pub async fn write_all_shared_timed(
        &self,
        mut bytes: Bytes,
        send_timeout: Duration,
    ) -> io::Result<()> {
        let Some(framed) = self.framed else {
            return self.socket.write_all_timed(&bytes, send_timeout).await;
        };
        while !bytes.is_empty() {
            match framed.try_write_shared(&bytes) {
                Ok(written) => bytes.advance(written),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    writable_within(framed, send_timeout).await?;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Writes all of `bytes`, each wait for the client bounded by `send_timeout`.
    pub async fn write_all_timed(
        &self,
        mut bytes: &[u8],
        send_timeout: Duration,
    ) -> io::Result<()> {
        let Some(framed) = self.framed else {
            return self.socket.write_all_timed(bytes, send_timeout).await;
        };
        while !bytes.is_empty() {
            match framed.try_write(bytes) {
                Ok(written) => bytes = &bytes[written..],
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    writable_within(framed, send_timeout).await?;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}
