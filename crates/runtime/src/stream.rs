//! An accepted client connection: TCP or Unix, with readiness-based non-blocking I/O.

use std::io::{self, IoSlice};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

/// The client's address: `$remote_addr` is the IP for TCP and `unix:` for a Unix socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerAddress {
    Inet(SocketAddr),
    Unix,
}

/// A connected stream registered with the current worker's runtime.
///
/// The methods mirror tokio's readiness API (`readable` then `try_read`): the caller tries
/// the system call first and waits only when it would block, which saves a trip through
/// the poller on the common path where data is already there.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TLS over TCP: reads and writes go through the session (`crate::tls`).
    Tls(Box<crate::tls::TlsStream>),
}

impl Stream {
    /// Waits until the socket is readable.
    ///
    /// Built on `poll_read_ready`, which keeps one waker slot per direction, rather than
    /// tokio's `readable()` future, which links a waiter node into a list under a lock on
    /// every wait and unlinks it on drop (that pair measured 10% of a worker's user time).
    /// A connection has one reader, so the single slot is enough.
    pub async fn readable(&self) -> io::Result<()> {
        std::future::poll_fn(|context| match self {
            Stream::Tcp(stream) => stream.poll_read_ready(context),
            Stream::Unix(stream) => stream.poll_read_ready(context),
            Stream::Tls(stream) => stream.poll_readable(context),
        })
        .await
    }

    /// Waits until the socket is writable (one writer per connection, as above).
    pub async fn writable(&self) -> io::Result<()> {
        std::future::poll_fn(|context| match self {
            Stream::Tcp(stream) => stream.poll_write_ready(context),
            Stream::Unix(stream) => stream.poll_write_ready(context),
            Stream::Tls(stream) => stream.tcp.poll_write_ready(context),
        })
        .await
    }

    /// One `recv(2)`; `WouldBlock` when nothing is there yet.
    ///
    /// The system call is made directly (rustix's raw Linux backend) rather than through
    /// the C library: in a multi-threaded process glibc wraps every `read` and `write` in
    /// thread-cancellation bookkeeping, which measured 4.5% of a worker's time under a
    /// `return 200` load. `recv`/`send` rather than `read`/`write` skip the kernel's file
    /// position lookup (`fdget_pos`, 1.4% of the same profile).
    ///
    /// A read shorter than `buf` means the socket's receive queue is empty, so readiness is
    /// cleared at once, as nginx does: the next wait goes straight to the poller instead of
    /// first making a `recv` that can only say `EAGAIN` (one system call of the three per
    /// request under `bench/return200.sh`). Data arriving later raises a new edge event,
    /// which the poller delivers on its next turn; it cannot be lost in between, because
    /// readiness only changes when this worker's poller runs, never during this call.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.as_fd();
        let wanted = buf.len();
        let read = || {
            rustix::net::recv(fd, &mut *buf, rustix::net::RecvFlags::empty())
                .map(|(received, _)| received)
                .map_err(io::Error::from)
        };
        let result = match self {
            Stream::Tcp(stream) => stream.try_io(Interest::READABLE, read),
            Stream::Unix(stream) => stream.try_io(Interest::READABLE, read),
            Stream::Tls(stream) => return stream.try_read(buf),
        };
        if let Ok(received) = result
            && received > 0
            && received < wanted
        {
            self.clear_read_readiness();
        }
        result
    }

    /// [`Stream::try_read`] into the room `buf` has beyond its length (`buf` grows by the
    /// bytes read), so that a buffer used again is not zeroed first. Reads at most that
    /// room; a buffer without any reads nothing.
    pub fn try_read_spare(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let room = buf.capacity() - buf.len();
        self.try_read_appending(buf, room)
    }

    /// [`Stream::try_read`] of at most `max` bytes, appended to `buf` (which grows to take
    /// them, without zeroing). Reads nothing when `max` is 0.
    pub fn try_read_appending(&self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        let wanted = max;
        if wanted == 0 {
            return Ok(0);
        }
        let fd = self.as_fd();
        let read = || crate::sys::read_into::recv_appending(fd, &mut *buf, wanted);
        let result = match self {
            Stream::Tcp(stream) => stream.try_io(Interest::READABLE, read),
            Stream::Unix(stream) => stream.try_io(Interest::READABLE, read),
            Stream::Tls(_) => {
                let start = buf.len();
                buf.resize(start + wanted, 0);
                let result = self.try_read(&mut buf[start..]);
                buf.truncate(start + *result.as_ref().unwrap_or(&0));
                return result;
            }
        };
        if let Ok(received) = result
            && received > 0
            && received < wanted
        {
            self.clear_read_readiness();
        }
        result
    }

    /// Whether the poller has reported the socket readable since it was last drained,
    /// known without a system call. An idle connection that is not readable has had
    /// nothing arrive, not even a close.
    pub fn read_ready_hint(&self) -> bool {
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let ready = match self {
            Stream::Tcp(stream) => stream.poll_read_ready(&mut context),
            Stream::Unix(stream) => stream.poll_read_ready(&mut context),
            Stream::Tls(stream) => {
                if stream.plaintext_ready() {
                    return true;
                }
                stream.tcp.poll_read_ready(&mut context)
            }
        };
        ready.is_ready()
    }

    /// Whether the peer has closed its side, looked at without consuming anything: `Ok(true)`
    /// at end of stream, `Ok(false)` when data is waiting, `WouldBlock` (readiness cleared)
    /// when there is nothing to read yet.
    pub fn peek_closed(&self) -> io::Result<bool> {
        let fd = self.as_fd();
        let mut byte = [0u8; 1];
        let peek = || {
            rustix::net::recv(fd, &mut byte, rustix::net::RecvFlags::PEEK)
                .map(|(received, _)| received == 0)
                .map_err(io::Error::from)
        };
        match self {
            Stream::Tcp(stream) => stream.try_io(Interest::READABLE, peek),
            Stream::Unix(stream) => stream.try_io(Interest::READABLE, peek),
            Stream::Tls(stream) if stream.plaintext_ready() => Ok(false),
            Stream::Tls(stream) => stream.tcp.try_io(Interest::READABLE, peek),
        }
    }

    /// Copies what the socket has received into `buf` without consuming it (`MSG_PEEK`):
    /// a PROXY protocol header is looked at before it is known how long it is, so that
    /// exactly its bytes can then be read and nothing of the TLS handshake or the request
    /// behind it. `WouldBlock` (readiness cleared) when nothing has arrived; a TLS stream
    /// has no raw bytes to show and answers `Unsupported`.
    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.as_fd();
        let peek = || {
            rustix::net::recv(fd, &mut *buf, rustix::net::RecvFlags::PEEK)
                .map(|(received, _)| received)
                .map_err(io::Error::from)
        };
        match self {
            Stream::Tcp(stream) => stream.try_io(Interest::READABLE, peek),
            Stream::Unix(stream) => stream.try_io(Interest::READABLE, peek),
            Stream::Tls(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    /// Waits until the socket is readable and says whether the peer has also closed its
    /// side (`EPOLLRDHUP`): a peek shows the bytes queued before the end of the stream but
    /// never the end itself. For the rare waits that need it; `readable` is cheaper.
    pub async fn readable_or_closed(&self) -> io::Result<bool> {
        let ready = match self {
            Stream::Tcp(stream) => stream.ready(Interest::READABLE).await?,
            Stream::Unix(stream) => stream.ready(Interest::READABLE).await?,
            Stream::Tls(stream) => stream.tcp.ready(Interest::READABLE).await?,
        };
        Ok(ready.is_read_closed())
    }

    /// Marks the socket not readable, as a read that found nothing more would: after a
    /// peek that showed only part of what is awaited, the next wait goes to the poller.
    pub fn clear_readable(&self) {
        self.clear_read_readiness();
    }

    /// Marks the socket not readable without a system call: tokio clears readiness when
    /// an I/O closure reports `WouldBlock`.
    fn clear_read_readiness(&self) {
        let drained = || -> io::Result<()> { Err(io::ErrorKind::WouldBlock.into()) };
        let _ = match self {
            Stream::Tcp(stream) => stream.try_io(Interest::READABLE, drained),
            Stream::Unix(stream) => stream.try_io(Interest::READABLE, drained),
            Stream::Tls(stream) => stream.tcp.try_io(Interest::READABLE, drained),
        };
    }

    /// One `send(2)`; `WouldBlock` when the socket buffer is full.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let fd = self.as_fd();
        let write = || {
            rustix::net::send(fd, buf, rustix::net::SendFlags::NOSIGNAL).map_err(io::Error::from)
        };
        match self {
            Stream::Tcp(stream) => stream.try_io(Interest::WRITABLE, write),
            Stream::Unix(stream) => stream.try_io(Interest::WRITABLE, write),
            Stream::Tls(stream) => stream.try_write(buf),
        }
    }

    /// One `send(2)` with `MSG_MORE`: the bytes wait in the socket for the data that must
    /// follow at once (a `sendfile` on this thread), and leave in its first packet. A plain
    /// TCP connection only; elsewhere `WouldBlock`, and the caller writes as usual.
    pub fn try_write_more(&self, buf: &[u8]) -> io::Result<usize> {
        let Stream::Tcp(stream) = self else {
            return Err(io::ErrorKind::WouldBlock.into());
        };
        let flags = rustix::net::SendFlags::NOSIGNAL | rustix::net::SendFlags::MORE;
        stream.try_io(Interest::WRITABLE, || {
            rustix::net::send(self.as_fd(), buf, flags).map_err(io::Error::from)
        })
    }

    /// One `writev(2)`.
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.try_write_vectored(bufs),
            Stream::Unix(stream) => stream.try_write_vectored(bufs),
            Stream::Tls(stream) => stream.try_write_vectored(bufs),
        }
    }

    /// Runs a raw non-blocking I/O operation (e.g. `sendfile(2)`) when the socket is
    /// writable, retrying after `WouldBlock` clears the readiness. Refused on a TLS
    /// connection, whose bytes must go through its session.
    pub fn try_io_write<R>(&self, operation: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        match self {
            Stream::Tcp(stream) => stream.try_io(Interest::WRITABLE, operation),
            Stream::Unix(stream) => stream.try_io(Interest::WRITABLE, operation),
            Stream::Tls(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    /// Whether the connection carries TLS (no `sendfile`, no raw writes from a pool).
    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// Sends what a TLS session still holds, waiting for the socket as needed; nothing to
    /// do on a plain connection.
    pub async fn flush(&self) -> io::Result<()> {
        match self {
            Stream::Tls(stream) => stream.flush().await,
            _ => Ok(()),
        }
    }

    /// Sends what a TLS session holds, waiting at most `timeout` for the socket.
    ///
    /// The timer is made only when the socket is full: a keep-alive response has usually
    /// left already, and flushing is then one check, without reading the clock for a
    /// deadline (twice per HTTPS request otherwise).
    pub async fn flush_timed(&self, timeout: std::time::Duration) -> io::Result<()> {
        let Stream::Tls(stream) = self else {
            return Ok(());
        };
        match stream.try_flush() {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            result => return result,
        }
        match tokio::time::timeout(timeout, stream.flush()).await {
            Ok(result) => result,
            Err(_) => Err(io::ErrorKind::TimedOut.into()),
        }
    }

    /// Whether the socket can take more bytes now, asked of the kernel (`poll(2)` with a
    /// zero timeout) rather than of the poller's readiness flag. For use after another
    /// thread wrote to the socket (a `sendfile` on a pool thread): the flag may still say
    /// writable from before that write filled the buffer. `WouldBlock` clears the flag,
    /// and tokio only clears it if no new readiness arrived since the check began, so a
    /// wakeup that raced the check is never lost.
    pub fn probe_writable(&self) -> io::Result<()> {
        let fd = self.as_fd();
        let probe = || -> io::Result<()> {
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::OUT,
            )];
            let zero = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            rustix::event::poll(&mut fds, Some(&zero))?;
            let revents = fds[0].revents();
            if revents.contains(rustix::event::PollFlags::ERR) {
                // The pending error is reported by the next write; let it be made.
                return Ok(());
            }
            if revents.intersects(rustix::event::PollFlags::OUT | rustix::event::PollFlags::HUP) {
                Ok(())
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            }
        };
        self.try_io_write(probe)
    }

    /// A second descriptor for the same socket (`F_DUPFD_CLOEXEC`), for work that writes
    /// to it from another thread: that thread owns and closes its copy, so the socket
    /// stays open for it even if the connection is dropped meanwhile, and its number is
    /// never reused under it.
    pub fn duplicate(&self) -> io::Result<std::os::fd::OwnedFd> {
        if self.is_tls() {
            return Err(io::ErrorKind::Unsupported.into());
        }
        Ok(rustix::io::fcntl_dupfd_cloexec(self.as_fd(), 0)?)
    }

    /// Reads at least one byte, waiting as needed. `Ok(0)` is end of stream.
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.try_read(buf) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => self.readable().await?,
                result => return result,
            }
        }
    }

    /// Writes all of `buf`, waiting as needed.
    pub async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.try_write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(written) => buf = &buf[written..],
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => self.writable().await?,
                Err(error) => return Err(error),
            }
        }
        self.flush().await
    }

    /// Writes all of `buf`; a timer runs only while the socket is full, and each wait may
    /// last `timeout` (nginx's `send_timeout` is between two successive writes).
    pub async fn write_all_timed(
        &self,
        mut buf: &[u8],
        timeout: std::time::Duration,
    ) -> io::Result<()> {
        while !buf.is_empty() {
            match self.try_write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(written) => buf = &buf[written..],
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    match tokio::time::timeout(timeout, self.writable()).await {
                        Ok(result) => result?,
                        Err(_) => return Err(io::ErrorKind::TimedOut.into()),
                    }
                }
                Err(error) => return Err(error),
            }
        }
        self.flush_timed(timeout).await
    }

    /// `shutdown(SHUT_WR)`: tells the client we are done sending (lingering close).
    pub fn shutdown_write(&self) -> io::Result<()> {
        if let Stream::Tls(stream) = self {
            stream.close_notify();
        }
        socket2::SockRef::from(self).shutdown(Shutdown::Write)
    }

    /// Makes `close` send a reset instead of a FIN (`reset_timedout_connection`), so the
    /// kernel frees the socket's buffers at once.
    pub fn set_reset_on_close(&self) -> io::Result<()> {
        socket2::SockRef::from(self).set_linger(Some(std::time::Duration::ZERO))
    }

    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.set_nodelay(on),
            Stream::Unix(_) => Ok(()),
            Stream::Tls(stream) => stream.tcp.set_nodelay(on),
        }
    }

    /// The local address the client connected to (`$server_addr`, `$server_port`).
    pub fn local_address(&self) -> Option<SocketAddr> {
        match self {
            Stream::Tcp(stream) => stream.local_addr().ok(),
            Stream::Unix(_) => None,
            Stream::Tls(stream) => stream.tcp.local_addr().ok(),
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(stream) => stream.as_fd(),
            Stream::Unix(stream) => stream.as_fd(),
            Stream::Tls(stream) => stream.tcp.as_fd(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::Stream;

    /// Runs `test` on a current-thread runtime with a loopback connection: the accepted
    /// side as a [`Stream`], the connecting side as a plain blocking socket.
    fn with_connection<F: std::future::Future<Output = ()>>(
        test: impl FnOnce(Stream, std::net::TcpStream) -> F,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("a runtime for the test");
        runtime.block_on(async {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let peer = std::net::TcpStream::connect(listener.local_addr().expect("address"))
                .expect("connect");
            let (accepted, _) = listener.accept().expect("accept");
            accepted.set_nonblocking(true).expect("non-blocking");
            let stream = Stream::Tcp(tokio::net::TcpStream::from_std(accepted).expect("register"));
            test(stream, peer).await;
        });
    }

    /// A spare-room read keeps the bytes already in the buffer, fills at most the room
    /// beyond them, and leaves the rest in the socket for the next read.
    #[test]
    fn try_read_spare_fills_the_room_past_the_length() {
        with_connection(|stream, mut peer| async move {
            peer.write_all(b"abcdefghij").expect("write");
            stream.readable().await.expect("readable");

            let mut buf = Vec::with_capacity(5);
            buf.push(b'_');
            let room = buf.capacity() - 1;
            assert_eq!(stream.try_read_spare(&mut buf).expect("read"), room);
            assert_eq!(buf.len(), 1 + room);
            assert_eq!(&buf[..], &b"_abcdefghij"[..1 + room]);

            let mut full = Vec::new();
            assert_eq!(stream.try_read_spare(&mut full).expect("no room"), 0);

            let mut rest = Vec::with_capacity(64);
            let left = 10 - room;
            assert_eq!(
                stream.try_read_spare(&mut rest).expect("read the rest"),
                left
            );
            assert_eq!(rest, b"abcdefghij"[room..]);
        });
    }

    /// Bytes sent with `MSG_MORE` wait in the socket (the kernel holds them for up to
    /// 200 ms) and leave with the next plain send, which the peer reads in one piece.
    #[test]
    fn a_send_with_more_waits_for_the_next_send() {
        with_connection(|stream, peer| async move {
            stream.writable().await.expect("writable");
            let sent = std::time::Instant::now();
            assert_eq!(stream.try_write_more(b"head ").expect("send"), 5);

            peer.set_nonblocking(true).expect("non-blocking peer");
            std::thread::sleep(std::time::Duration::from_millis(20));
            let mut got = [0u8; 64];
            let mut all = Vec::new();
            match (&peer).read(&mut got) {
                Err(error) => assert_eq!(error.kind(), std::io::ErrorKind::WouldBlock),
                // Only on a machine so loaded that the sleep outlasted the kernel's hold.
                Ok(read) => {
                    assert!(sent.elapsed() >= std::time::Duration::from_millis(150));
                    all.extend_from_slice(&got[..read]);
                }
            }

            assert_eq!(stream.try_write(b"body").expect("send"), 4);
            peer.set_nonblocking(false).expect("blocking peer");
            while all.len() < 9 {
                let read = (&peer).read(&mut got).expect("read");
                assert_ne!(read, 0, "the connection stays open");
                all.extend_from_slice(&got[..read]);
            }
            assert_eq!(all, b"head body");
        });
    }
}
