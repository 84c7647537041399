//! One try of one upstream server: a connection (from the keep-alive cache or new, with
//! `proxy_connect_timeout` and `proxy_bind`), the request sent under
//! `proxy_send_timeout`, the response head read under `proxy_read_timeout`, and each
//! failure described as nginx logs it and as `proxy_next_upstream` classifies it.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use runtime::Stream;

use crate::proxy::handler::GroupRef;
use crate::proxy::response::{self, InvalidHead, UpstreamHead};
use crate::proxy::{NextUpstream, Proxy};
use crate::request::Request;
use crate::upstream::{Peer, PeerAddr, Selected};
use crate::worker::HttpWorker;

/// Why a try failed.
#[derive(Debug)]
pub(super) struct TryError {
    /// Which `proxy_next_upstream` condition it is.
    pub(super) kind: u16,
    pub(super) status: u16,
    pub(super) message: String,
    /// The request reached the server (non-idempotent requests are then not retried).
    pub(super) sent: bool,
    /// The client failed (closed, timed out, sent a bad body), not the upstream.
    pub(super) client: bool,
    /// The connection came from the keep-alive cache and failed before any answer.
    pub(super) stale: bool,
}

impl TryError {
    /// A failed I/O call on the upstream connection, in nginx's words: a timeout is
    /// `upstream timed out (110: ...) while ACTION` (504, `timeout`), anything else
    /// `CALL failed (N: text) while ACTION` (502, `error`). A timed-out connection is never
    /// taken for a stale one.
    fn io(error: &io::Error, call: &str, action: &str, sent: bool, stale: bool) -> TryError {
        let timed_out = error.kind() == io::ErrorKind::TimedOut;
        TryError {
            kind: if timed_out {
                NextUpstream::TIMEOUT
            } else {
                NextUpstream::ERROR
            },
            status: if timed_out { 504 } else { 502 },
            message: if timed_out {
                format!("upstream timed out (110: Connection timed out) while {action}")
            } else {
                format!("{call} failed ({}) while {action}", errno_text(error))
            },
            sent,
            stale: stale && !timed_out,
            client: false,
        }
    }
}

/// The request's body as it goes upstream.
/// The client whose body an unbuffered request streams upstream.
pub(super) struct Client<'c> {
    pub connection: &'c mut crate::connection::Connection,
    pub body: &'c mut crate::body::BodyState,
    /// `client_body_timeout`.
    pub timeout: Duration,
    /// `client_body_buffer_size`: a body passed on unbuffered is still kept for
    /// `$request_body` when it fits, as nginx keeps it.
    pub keep: usize,
}

pub(super) enum OutBody {
    None,
    Memory(Vec<u8>),
    File(crate::body::reader::TempBody),
    /// `proxy_request_buffering off`: the body is passed on as it arrives, chunked when
    /// the client sent it chunked; `length` is its `Content-Length`, if it has one.
    Stream {
        chunked: bool,
        length: Option<u64>,
    },
}

impl OutBody {
    pub(super) fn len(&self) -> Option<u64> {
        match self {
            OutBody::None => None,
            OutBody::Memory(bytes) => Some(bytes.len() as u64),
            OutBody::File(file) => Some(file.len),
            OutBody::Stream { length, .. } => *length,
        }
    }
}

/// `(111: Connection refused)` from an I/O error, as nginx writes errno.
pub fn errno_text(error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(code) => {
            let text = io::Error::from_raw_os_error(code).to_string();
            let text = text
                .rsplit_once(" (os error")
                .map_or(text.as_str(), |(text, _)| text)
                .to_owned();
            format!("{code}: {text}")
        }
        None => match error.kind() {
            io::ErrorKind::TimedOut => "110: Connection timed out".to_owned(),
            io::ErrorKind::UnexpectedEof => "104: Connection reset by peer".to_owned(),
            _ => error.to_string(),
        },
    }
}

pub(super) type TryOk = (Stream, UpstreamHead, Vec<u8>, Instant, u64);

/// One try: a connection (cached or new), the request, the response head.
#[allow(clippy::too_many_arguments)]
pub(super) async fn try_peer(
    worker: &HttpWorker,
    group: &GroupRef<'_>,
    selected: Selected,
    peer: &Peer,
    proxy: &Proxy,
    bind: Option<SocketAddr>,
    head: &[u8],
    body: &OutBody,
    client: &mut Client<'_>,
    idempotent: bool,
    request: &mut Request<'_>,
    attempt: usize,
) -> Result<TryOk, TryError> {
    let started = request.upstream.attempts[attempt].started;
    // A cached connection first; one that turns out stale is replaced by a new one.
    if let GroupRef::Conf(group) = group
        && let Some(idle) = group.take_idle(selected, Instant::now())
    {
        request.upstream.attempts[attempt].connect_time = Some(Duration::ZERO);
        match exchange(
            &idle.stream,
            proxy,
            head,
            body,
            client,
            worker,
            request,
            attempt,
            started,
        )
        .await
        {
            Ok((response, buffer)) => {
                return Ok((idle.stream, response, buffer, idle.opened, idle.requests));
            }
            // A connection the server closed while idle: a new one, when repeating
            // the request is safe.
            Err(error) if error.stale && idempotent => {}
            Err(error) => return Err(error),
        }
    }
    let stream = connect(&peer.address, bind, proxy.connect_timeout)
        .await
        .map_err(|error| {
            TryError::io(&error, "connect()", "connecting to upstream", false, false)
        })?;
    let opened = Instant::now();
    request.upstream.attempts[attempt].connect_time =
        Some(opened.saturating_duration_since(started));
    let (response, buffer) = exchange(
        &stream, proxy, head, body, client, worker, request, attempt, started,
    )
    .await
    .map_err(|mut error| {
        error.stale = false;
        error
    })?;
    Ok((stream, response, buffer, opened, 0))
}

/// Opens a connection to `address` within `timeout`.
pub async fn connect(
    address: &PeerAddr,
    bind: Option<SocketAddr>,
    timeout: Duration,
) -> io::Result<Stream> {
    let connecting = async {
        match address {
            PeerAddr::Inet(address) => {
                let socket = if address.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()?
                } else {
                    tokio::net::TcpSocket::new_v6()?
                };
                if let Some(local) = bind {
                    socket.bind(local)?;
                }
                let stream = socket.connect(*address).await?;
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }
            PeerAddr::Unix(path) => Ok(Stream::Unix(tokio::net::UnixStream::connect(path).await?)),
        }
    };
    match tokio::time::timeout(timeout, connecting).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// Sends the request and reads the response head.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    stream: &Stream,
    proxy: &Proxy,
    head: &[u8],
    body: &OutBody,
    client: &mut Client<'_>,
    worker: &HttpWorker,
    request: &mut Request<'_>,
    attempt: usize,
    started: Instant,
) -> Result<(UpstreamHead, Vec<u8>), TryError> {
    let send_error = |error: io::Error, sent: bool| {
        TryError::io(
            &error,
            "writev()",
            "sending request to upstream",
            sent,
            true,
        )
    };
    let mut sent = head.len() as u64;
    match body {
        OutBody::None => write_timed(stream, head, proxy.send_timeout)
            .await
            .map_err(|error| send_error(error, false))?,
        // Head and body in one write, as one `writev` would send them.
        OutBody::Memory(bytes) => {
            let mut request_bytes = Vec::with_capacity(head.len() + bytes.len());
            request_bytes.extend_from_slice(head);
            request_bytes.extend_from_slice(bytes);
            write_timed(stream, &request_bytes, proxy.send_timeout)
                .await
                .map_err(|error| send_error(error, false))?;
            sent += bytes.len() as u64;
        }
        OutBody::File(file) => {
            write_timed(stream, head, proxy.send_timeout)
                .await
                .map_err(|error| send_error(error, false))?;
            let mut offset = 0;
            while offset < file.len {
                let len = (file.len - offset).min(64 * 1024) as usize;
                let handle = std::sync::Arc::clone(&file.file);
                let read = worker
                    .offload(move || {
                        let mut buffer = vec![0; len];
                        std::os::unix::fs::FileExt::read_exact_at(&*handle, &mut buffer, offset)
                            .map(|()| buffer)
                    })
                    .await;
                let chunk = match read {
                    Ok(Ok(chunk)) => chunk,
                    Ok(Err(error)) => return Err(send_error(error, true)),
                    Err(error) => return Err(send_error(io::Error::other(error.message), true)),
                };
                write_timed(stream, &chunk, proxy.send_timeout)
                    .await
                    .map_err(|error| send_error(error, true))?;
                offset += len as u64;
                sent += len as u64;
            }
        }
        OutBody::Stream { chunked, .. } => {
            sent = stream_body(stream, proxy, client, *chunked, head, request)
                .await
                .map_err(|mut error| {
                    error.stale = false;
                    error
                })?;
        }
    }
    request.upstream.attempts[attempt].bytes_sent = sent;
    let read_error = |error: io::Error, stale: bool| {
        TryError::io(
            &error,
            "recv()",
            "reading response header from upstream",
            true,
            stale,
        )
    };
    let limit = usize::try_from(proxy.buffer_size)
        .unwrap_or(usize::MAX)
        .max(1024);
    let mut buffer = take_buffer(limit);
    let mut filled = 0;
    loop {
        // While waiting, a client that goes away ends the request (nginx's check for a
        // broken connection; `proxy_ignore_client_abort` is not supported).
        let read = tokio::select! {
            biased;
            read = read_after_wait(stream, &mut buffer[filled..], proxy.read_timeout) => read,
            () = client_gone(&client.connection.stream) => {
                // nginx's words; its action is still "sending" until the upstream answers.
                let action = if filled == 0 {
                    "sending request to upstream"
                } else {
                    "reading response header from upstream"
                };
                return Err(TryError {
                    kind: 0,
                    status: 499,
                    message: format!(
                        "epoll_wait() reported that client prematurely closed connection, \
                         so upstream connection is closed too while {action}"
                    ),
                    sent: true,
                    stale: false,
                    client: true,
                });
            }
        };
        let count = read.map_err(|error| read_error(error, filled == 0))?;
        request.upstream.attempts[attempt].bytes_received += count as u64;
        if count == 0 {
            if filled > 0 && !buffer.starts_with(b"HTTP/") {
                // An HTTP/0.9 answer ends with the connection.
                let response = UpstreamHead {
                    status: 200,
                    http_09: true,
                    connection_close: true,
                    ..UpstreamHead::default()
                };
                buffer.truncate(filled);
                return Ok((response, buffer));
            }
            return Err(TryError {
                kind: NextUpstream::ERROR,
                status: 502,
                message: "upstream prematurely closed connection while reading response header from upstream"
                    .to_owned(),
                sent: true,
                stale: filled == 0,
                client: false,
            });
        }
        filled += count;
        match response::parse(&buffer[..filled]) {
            Ok(Some(response)) => {
                // Interim 1xx answers (other than 101) are skipped.
                if (100..200).contains(&response.status)
                    && response.status != 101
                    && !response.http_09
                {
                    buffer.copy_within(response.len..filled, 0);
                    filled -= response.len;
                    continue;
                }
                request.upstream.attempts[attempt].header_time = Some(started.elapsed());
                // The buffer goes on with the response: the body bytes read with the head
                // are decoded from it in place.
                buffer.truncate(filled);
                return Ok((response, buffer));
            }
            Ok(None) if filled == buffer.len() => {
                return Err(TryError {
                    kind: NextUpstream::INVALID_HEADER,
                    status: 502,
                    message:
                        "upstream sent too big header while reading response header from upstream"
                            .to_owned(),
                    sent: true,
                    stale: false,
                    client: false,
                });
            }
            Ok(None) => {}
            Err(InvalidHead(message)) => {
                return Err(TryError {
                    kind: NextUpstream::INVALID_HEADER,
                    status: 502,
                    message: format!("{message} while reading response header from upstream"),
                    sent: true,
                    stale: false,
                    client: false,
                });
            }
        }
    }
}

/// Resolves when the client closes its connection (or it fails); never when it sends more
/// (a pipelined request), which is left for later.
async fn client_gone(client: &Stream) {
    loop {
        if client.readable().await.is_err() {
            return;
        }
        match client.peek_closed() {
            Ok(true) => return,
            Ok(false) => std::future::pending::<()>().await,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// Sends the head with what of the body has arrived, then the rest of the body as it
/// arrives; returns the bytes written upstream.
async fn stream_body(
    stream: &Stream,
    proxy: &Proxy,
    client: &mut Client<'_>,
    chunked: bool,
    head: &[u8],
    request: &mut Request<'_>,
) -> Result<u64, TryError> {
    let client_error = |status: u16, message: &str| TryError {
        kind: 0,
        status,
        message: message.to_owned(),
        sent: true,
        stale: false,
        client: true,
    };
    let upstream_error = |error: io::Error| {
        TryError::io(
            &error,
            "writev()",
            "sending request to upstream",
            true,
            false,
        )
    };
    let mut written = 0u64;
    let mut framed = Vec::new();
    let mut kept = Some(Vec::new());
    let mut payload = Vec::new();
    loop {
        // Everything one read brought is passed on as one piece (one chunk), as nginx does.
        payload.clear();
        while !client.connection.read_ahead.is_empty() && !client.body.is_done() {
            let piece = client
                .body
                .next(client.connection.read_ahead.bytes())
                .map_err(|_| client_error(400, "client sent invalid chunked body"))?;
            payload.extend_from_slice(&client.connection.read_ahead.bytes()[piece.payload.clone()]);
            client.connection.consume(piece.consumed);
            if piece.consumed == 0 {
                break;
            }
        }
        framed.clear();
        if written == 0 {
            framed.extend_from_slice(head);
        }
        if !payload.is_empty() {
            if chunked {
                http1::response::write_chunk_header(&mut framed, payload.len());
            }
            framed.extend_from_slice(&payload);
            if chunked {
                framed.extend_from_slice(b"\r\n");
            }
            request.length += payload.len() as u64;
            if let Some(bytes) = &mut kept {
                if bytes.len() + payload.len() <= client.keep {
                    bytes.extend_from_slice(&payload);
                } else {
                    kept = None;
                }
            }
        }
        let done = client.body.is_done();
        if done && chunked {
            framed.extend_from_slice(b"0\r\n\r\n");
        }
        if !framed.is_empty() {
            write_timed(stream, &framed, proxy.send_timeout)
                .await
                .map_err(upstream_error)?;
            written += framed.len() as u64;
        }
        if done {
            if let Some(bytes) = kept {
                request.body = Some(crate::body::reader::RequestBody::Memory(bytes));
            }
            return Ok(written);
        }
        let connection = &mut *client.connection;
        match tokio::time::timeout(
            client.timeout,
            connection.stream.read(&mut connection.read_ahead.buf),
        )
        .await
        {
            Err(_) => {
                return Err(client_error(
                    408,
                    "client timed out (110: Connection timed out) while sending request to upstream",
                ));
            }
            Ok(Ok(0)) | Ok(Err(_)) => {
                return Err(client_error(
                    499,
                    "client prematurely closed connection while sending request to upstream",
                ));
            }
            Ok(Ok(count)) => connection.read_ahead.filled = count,
        }
    }
}

thread_local! {
    /// Response buffers of finished requests, for the next ones: no allocation, and no
    /// zeroing, per request.
    static BUFFERS: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Buffers kept per worker, and the largest one kept.
const BUFFERS_KEPT: usize = 64;
const BUFFER_KEPT_BYTES_MAX: usize = 1 << 20;

/// A buffer of exactly `len` bytes (their values are whatever they were).
pub(super) fn take_buffer(len: usize) -> Vec<u8> {
    let mut buffer = BUFFERS
        .with(|buffers| buffers.borrow_mut().pop())
        .unwrap_or_default();
    buffer.resize(len, 0);
    buffer.truncate(len);
    buffer
}

/// A buffer that goes back to the pool when dropped.
pub(super) struct PooledBuffer(pub Vec<u8>);

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        give_buffer(std::mem::take(&mut self.0));
    }
}

/// Gives a buffer back for another request.
pub(super) fn give_buffer(buffer: Vec<u8>) {
    if buffer.capacity() == 0 || buffer.capacity() > BUFFER_KEPT_BYTES_MAX {
        return;
    }
    BUFFERS.with(|buffers| {
        let mut buffers = buffers.borrow_mut();
        if buffers.len() < BUFFERS_KEPT {
            buffers.push(buffer);
        }
    });
}

/// Writes all of `bytes`; a timer runs only while the socket is full, and each wait may
/// last `timeout` (nginx's send timeout is between two writes).
pub async fn write_timed(stream: &Stream, mut bytes: &[u8], timeout: Duration) -> io::Result<()> {
    while !bytes.is_empty() {
        match stream.try_write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => bytes = &bytes[written..],
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                match tokio::time::timeout(timeout, stream.writable()).await {
                    Ok(result) => result?,
                    Err(_) => return Err(io::ErrorKind::TimedOut.into()),
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Reads what is there, or waits (with a timer) for something to read.
pub async fn read_timed(
    stream: &Stream,
    buffer: &mut [u8],
    timeout: Duration,
) -> io::Result<usize> {
    match stream.try_read(buffer) {
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
            read_after_wait(stream, buffer, timeout).await
        }
        result => result,
    }
}

/// Waits (with a timer) until the socket is readable, then reads: for an answer that
/// cannot have arrived yet, so that no read is made only to learn that.
pub async fn read_after_wait(
    stream: &Stream,
    buffer: &mut [u8],
    timeout: Duration,
) -> io::Result<usize> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, stream.readable()).await {
            Ok(result) => result?,
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        }
        match stream.try_read(buffer) {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            result => return result,
        }
    }
}
