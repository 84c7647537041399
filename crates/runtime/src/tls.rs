//! TLS over a worker's sockets: the `tls` crate's sans-I/O session driven with the same
//! raw `recv`/`send` and single-slot readiness waits as plain connections.
//!
//! Plaintext written is encrypted at once and sent as far as the socket takes it; what is
//! left is sent before the next write, while waiting to read, or by [`Stream::flush`].
//! There is no `sendfile` on a TLS connection: callers check [`Stream::is_tls`].

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::task::Poll;

use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::stream::Stream;

/// Plaintext taken per write: nginx's default `ssl_buffer_size`.
const WRITE_CHUNK_BYTES: usize = 16 * 1024;

/// A TCP connection carrying TLS.
pub struct TlsStream {
    pub(crate) tcp: TcpStream,
    session: RefCell<tls::Session>,
    write_chunk: usize,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream").field("tcp", &self.tcp).finish()
    }
}

/// The socket as `io::Read`/`io::Write` for the session: one raw `recv` or `send`.
struct SocketIo<'a>(BorrowedFd<'a>);

impl Read for SocketIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        rustix::net::recv(self.0, buf, rustix::net::RecvFlags::empty())
            .map(|(received, _)| received)
            .map_err(io::Error::from)
    }
}

/// A reader that also tells whether its last `recv` was short (the queue was emptied).
struct Receiver<'a> {
    socket: SocketIo<'a>,
    short: bool,
}

impl Read for Receiver<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let received = self.socket.read(buf)?;
        self.short = received > 0 && received < buf.len();
        Ok(received)
    }
}

impl Write for SocketIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        rustix::net::send(self.0, buf, rustix::net::SendFlags::NOSIGNAL).map_err(io::Error::from)
    }

    /// Every pending record in one `sendmsg`: rustls hands over a flight (ServerHello,
    /// ChangeCipherSpec, the encrypted rest) as separate buffers, and the default
    /// `write_vectored` would send each with its own system call and packet. A single
    /// record (a keep-alive response) goes with `send`, which the kernel takes without
    /// copying in a message header and an iovec array.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        if let [only] = bufs {
            return self.write(only);
        }
        let mut control = rustix::net::SendAncillaryBuffer::default();
        rustix::net::sendmsg(self.0, bufs, &mut control, rustix::net::SendFlags::NOSIGNAL)
            .map_err(io::Error::from)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TlsStream {
    fn new(tcp: TcpStream, session: tls::Session, write_chunk: usize) -> TlsStream {
        TlsStream {
            tcp,
            session: RefCell::new(session),
            write_chunk: write_chunk.clamp(512, WRITE_CHUNK_BYTES * 4),
        }
    }

    /// Moves the socket to the calling worker's poller (an idle upstream connection taken
    /// by another worker).
    pub fn adopt(self: Box<Self>) -> io::Result<Box<TlsStream>> {
        let TlsStream {
            tcp,
            session,
            write_chunk,
        } = *self;
        Ok(Box::new(TlsStream {
            tcp: TcpStream::from_std(tcp.into_std()?)?,
            session,
            write_chunk,
        }))
    }

    /// Whether an idle connection can carry another request: records that came meanwhile
    /// are processed, and none of them may be data, an alert or the end of the stream.
    pub fn idle_usable(&self) -> bool {
        let mut session = self.session.borrow_mut();
        loop {
            match self.receive(&mut session) {
                Ok(0) => return false,
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    return !session.plaintext_ready();
                }
                Err(_) => return false,
            }
        }
    }

    /// Sends pending records until done or the socket is full (`WouldBlock`).
    fn flush_pending(&self, session: &mut tls::Session) -> io::Result<()> {
        let fd = self.tcp.as_fd();
        while session.wants_write() {
            self.tcp
                .try_io(Interest::WRITABLE, || session.write_tls(&mut SocketIo(fd)))?;
        }
        Ok(())
    }

    /// Reads one batch of records and processes them; `Ok(0)` at end of stream. A protocol
    /// error sends its alert before returning.
    ///
    /// A short read clears the socket's readiness, as for plain connections
    /// (`Stream::try_read`): the next wait goes to the poller, so a client that keeps
    /// sending cannot keep the worker from its other connections.
    fn receive(&self, session: &mut tls::Session) -> io::Result<usize> {
        let mut receiver = Receiver {
            socket: SocketIo(self.tcp.as_fd()),
            short: false,
        };
        let received = self
            .tcp
            .try_io(Interest::READABLE, || session.read_tls(&mut receiver))?;
        if received == 0 {
            return Ok(0);
        }
        if receiver.short {
            let drained = || -> io::Result<()> { Err(io::ErrorKind::WouldBlock.into()) };
            let _ = self.tcp.try_io(Interest::READABLE, drained);
        }
        let processed = session.process();
        let _ = self.flush_pending(session);
        processed.map(|()| received)
    }

    pub(crate) fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut session = self.session.borrow_mut();
        loop {
            if session.plaintext_ready() {
                match session.read_plaintext(buf) {
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                    result => return result,
                }
            }
            if self.receive(&mut session)? == 0 {
                return Ok(0);
            }
        }
    }

    pub(crate) fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let mut session = self.session.borrow_mut();
        self.flush_pending(&mut session)?;
        let taken = session.write_plaintext(&buf[..buf.len().min(self.write_chunk)])?;
        match self.flush_pending(&mut session) {
            Err(error) if error.kind() != io::ErrorKind::WouldBlock => Err(error),
            _ => Ok(taken),
        }
    }

    /// Takes plaintext from the front of `bufs`, at most one write's worth. Short pieces
    /// (HTTP/2 frame headers beside their payloads) are joined first: the session makes a
    /// record of every write it is given.
    pub(crate) fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let mut pieces = bufs.iter().filter(|buf| !buf.is_empty());
        let Some(first) = pieces.next() else {
            return Ok(0);
        };
        if first.len() >= self.write_chunk {
            return self.try_write(first);
        }
        let mut joined = Vec::with_capacity(self.write_chunk);
        for piece in std::iter::once(first).chain(pieces) {
            let room = self.write_chunk - joined.len();
            joined.extend_from_slice(&piece[..piece.len().min(room)]);
            if joined.len() == self.write_chunk {
                break;
            }
        }
        self.try_write(&joined)
    }

    pub(crate) fn poll_readable(
        &self,
        context: &mut std::task::Context<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut session = self.session.borrow_mut();
            if session.plaintext_ready() {
                return Poll::Ready(Ok(()));
            }
            if session.wants_write() {
                match self.flush_pending(&mut session) {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        match self.tcp.poll_write_ready(context) {
                            Poll::Ready(Ok(())) => continue,
                            Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                            Poll::Pending => {}
                        }
                    }
                    Err(error) => return Poll::Ready(Err(error)),
                }
            }
            return self.tcp.poll_read_ready(context);
        }
    }

    pub(crate) fn plaintext_ready(&self) -> bool {
        self.session.borrow().plaintext_ready()
    }

    /// Sends what the socket takes now; `WouldBlock` when records are left.
    pub(crate) fn try_flush(&self) -> io::Result<()> {
        self.flush_pending(&mut self.session.borrow_mut())
    }

    /// Sends every pending record, waiting for the socket as needed.
    pub(crate) async fn flush(&self) -> io::Result<()> {
        loop {
            let flushed = {
                let mut session = self.session.borrow_mut();
                self.flush_pending(&mut session)
            };
            match flushed {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    std::future::poll_fn(|context| self.tcp.poll_write_ready(context)).await?
                }
                result => return result,
            }
        }
    }

    /// Queues a `close_notify` and sends what the socket takes now.
    pub(crate) fn close_notify(&self) {
        let mut session = self.session.borrow_mut();
        session.send_close_notify();
        let _ = self.flush_pending(&mut session);
    }

    /// Runs the handshake to its end.
    async fn handshake(&self) -> io::Result<()> {
        loop {
            self.flush().await?;
            let received = {
                let mut session = self.session.borrow_mut();
                if !session.is_handshaking() {
                    return Ok(());
                }
                self.receive(&mut session)
            };
            match received {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    std::future::poll_fn(|context| self.tcp.poll_read_ready(context)).await?;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// What the start of a connection on a TLS address turned out to be.
pub enum Accepted {
    /// A finished handshake, and what it agreed on.
    Tls(Stream, tls::HandshakeInfo),
    /// Bytes that are no TLS record: plain HTTP sent to an HTTPS port.
    Plain(Stream),
    /// The client closed before a byte.
    Closed,
    /// The handshake failed (alert sent where there was one), with the reason.
    Failed(String),
    /// The virtual server refuses handshakes (`ssl_reject_handshake`).
    Rejected,
}

/// What the caller's choice of server gives for a hello: a configuration and the write
/// size (`ssl_buffer_size`), or a refusal.
pub enum Choice {
    Serve(Arc<tls::ServerTls>, usize),
    /// `ssl_reject_handshake`: an `unrecognized_name` alert.
    Reject,
    /// The configuration could not be made (a certificate that failed to load): an
    /// `internal_error` alert, and the handshake fails with this reason.
    Fail(String),
}

/// A client's hello, read in full, waiting for the caller's choice of configuration
/// (which may take a trip to a thread pool, to load a certificate).
pub struct PendingHello {
    tcp: TcpStream,
    hello: tls::Hello,
}

impl std::fmt::Debug for PendingHello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingHello")
            .field("hello", &self.hello)
            .finish()
    }
}

/// Reads a client's hello. `Err` is how the connection ended instead: plain HTTP, closed,
/// or a hello that failed (its alert sent). The caller bounds it in time.
pub async fn read_hello(tcp: TcpStream) -> Result<PendingHello, Accepted> {
    let fd = tcp.as_fd();
    let mut first = [0u8; 1];
    loop {
        let peeked = tcp.try_io(Interest::READABLE, || {
            rustix::net::recv(fd, &mut first, rustix::net::RecvFlags::PEEK)
                .map(|(received, _)| received)
                .map_err(io::Error::from)
        });
        match peeked {
            Ok(0) => return Err(Accepted::Closed),
            Ok(_) => break,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                if let Err(error) =
                    std::future::poll_fn(|context| tcp.poll_read_ready(context)).await
                {
                    return Err(Accepted::Failed(error.to_string()));
                }
            }
            Err(error) => return Err(Accepted::Failed(error.to_string())),
        }
    }
    if first[0] != 0x16 && first[0] != 0x80 {
        return Err(Accepted::Plain(Stream::Tcp(tcp)));
    }
    let mut acceptor = tls::Acceptor::default();
    loop {
        let read = tcp.try_io(Interest::READABLE, || acceptor.read_tls(&mut SocketIo(fd)));
        match read {
            Ok(0) => return Err(Accepted::Closed),
            Ok(_) => match acceptor.accept() {
                Ok(Some(hello)) => return Ok(PendingHello { tcp, hello }),
                Ok(None) => {}
                Err(error) => {
                    let _ = rustix::net::send(fd, &error.alert, rustix::net::SendFlags::NOSIGNAL);
                    return Err(Accepted::Failed(error.message));
                }
            },
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                if let Err(error) =
                    std::future::poll_fn(|context| tcp.poll_read_ready(context)).await
                {
                    return Err(Accepted::Failed(error.to_string()));
                }
            }
            Err(error) => return Err(Accepted::Failed(error.to_string())),
        }
    }
}

impl PendingHello {
    /// The SNI name, as the client sent it.
    pub fn server_name(&self) -> Option<String> {
        self.hello.server_name()
    }

    /// Goes on with the chosen configuration and runs the handshake to its end.
    pub async fn finish(self, choice: Choice) -> Accepted {
        let PendingHello { tcp, hello } = self;
        let fd = tcp.as_fd();
        let (server, write_chunk) = match choice {
            Choice::Serve(server, write_chunk) => (server, write_chunk),
            Choice::Reject => {
                let _ = rustix::net::send(fd, tls::REJECT_ALERT, rustix::net::SendFlags::NOSIGNAL);
                return Accepted::Rejected;
            }
            Choice::Fail(reason) => {
                let alert = tls::INTERNAL_ERROR_ALERT;
                let _ = rustix::net::send(fd, alert, rustix::net::SendFlags::NOSIGNAL);
                return Accepted::Failed(reason);
            }
        };
        let session = match hello.into_session(&server) {
            Ok(session) => session,
            Err(error) => {
                let _ = rustix::net::send(fd, &error.alert, rustix::net::SendFlags::NOSIGNAL);
                return Accepted::Failed(error.message);
            }
        };
        let stream = TlsStream::new(tcp, session, write_chunk);
        match stream.handshake().await {
            Ok(()) => {
                let info = stream.session.borrow_mut().info();
                Accepted::Tls(Stream::Tls(Box::new(stream)), info)
            }
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Accepted::Closed,
            Err(error) => Accepted::Failed(error.to_string()),
        }
    }
}

/// Runs a client handshake over a connected socket (TLS to an upstream).
pub async fn connect(tcp: TcpStream, session: tls::Session) -> io::Result<Stream> {
    let stream = TlsStream::new(tcp, session, WRITE_CHUNK_BYTES);
    stream.handshake().await?;
    Ok(Stream::Tls(Box::new(stream)))
}

#[cfg(test)]
mod tests {
    use std::io::{IoSlice, Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    use super::SocketIo;

    #[test]
    fn a_vectored_write_sends_every_buffer_at_once() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let records = [
            IoSlice::new(b"hello"),
            IoSlice::new(b""),
            IoSlice::new(b" world"),
        ];
        let written = SocketIo(ours.as_fd()).write_vectored(&records).unwrap();
        assert_eq!(written, 11);
        drop(ours);
        let mut received = Vec::new();
        theirs.read_to_end(&mut received).unwrap();
        assert_eq!(received, b"hello world");
    }

    #[test]
    fn a_single_record_is_sent_whole() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let record = [IoSlice::new(b"one record")];
        let written = SocketIo(ours.as_fd()).write_vectored(&record).unwrap();
        assert_eq!(written, 10);
        drop(ours);
        let mut received = Vec::new();
        theirs.read_to_end(&mut received).unwrap();
        assert_eq!(received, b"one record");
    }
}
