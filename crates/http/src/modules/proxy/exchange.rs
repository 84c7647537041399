//! One try of one upstream server: a connection (from the keep-alive cache or new, with
//! `proxy_connect_timeout` and `proxy_bind`), the request sent under
//! `proxy_send_timeout`, the response head read under `proxy_read_timeout`, and each
//! failure described as a [`Failure`].

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use runtime::Stream;

use crate::kernel::request::Request;
use crate::kernel::upstream::{Peer, PeerAddr, Selected};
use crate::modules::proxy::Proxy;
use crate::modules::proxy::failure::{Action, Failure, Fault};
use crate::modules::proxy::gateway::settings::Protocol;
use crate::modules::proxy::handler::GroupRef;
pub(crate) use crate::modules::proxy::outgoing::{Client, OutBody, Outgoing};
use crate::modules::proxy::outgoing::{body_read_failure, read_client, take_client_payload};
use crate::modules::proxy::response::{self, UpstreamHead};
pub(crate) use crate::modules::proxy::ssl::upstream::UpstreamTls;

/// Added to a connection's purpose when it carries gRPC (HTTP/2), so that the keep-alive
/// cache hands it to gRPC requests only.
const GRPC_PURPOSE: u64 = 0x6772_7063_0000_0001;

/// The server one try goes to.
pub(super) struct PeerChoice<'g> {
    pub group: &'g GroupRef<'g>,
    pub selected: Selected,
    pub peer: &'g Peer,
}

/// A response head read from the upstream.
pub(crate) struct ReceivedHead {
    pub head: UpstreamHead,
    /// The head's bytes, and the body bytes that arrived with it.
    pub buffer: Vec<u8>,
    /// A FastCGI answer's record reader, which the body goes on with.
    pub gateway: Option<Box<crate::modules::proxy::gateway::response::FastcgiBody>>,
    /// A gRPC answer's stream, which the body goes on with.
    pub grpc: Option<Box<crate::modules::proxy::grpc::body::GrpcBody>>,
}

/// A try that got a response head.
pub(super) struct Answer {
    pub stream: Stream,
    pub received: ReceivedHead,
    /// When the connection was opened, and the requests it carried before this one.
    pub opened: Instant,
    pub requests: u64,
    /// What the connection was opened for (`keepalive::Idle::purpose`).
    pub purpose: u64,
}

/// One try: a connection (cached or new), the request, the response head.
pub(super) async fn try_peer(
    outgoing: &Outgoing<'_>,
    choice: &PeerChoice<'_>,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
    attempt: usize,
) -> Result<Answer, Failure> {
    // A cached connection first; one that turns out stale is replaced by a new one.
    let mut purpose = outgoing.tls.as_ref().map_or(0, UpstreamTls::purpose);
    if outgoing.proxy.over_h2() {
        // An HTTP/2 connection serves HTTP/2 streams only, never HTTP/1 requests.
        purpose = purpose.wrapping_add(GRPC_PURPOSE);
    }
    if let GroupRef::Conf(group) = choice.group
        && let Some(idle) = group.take_idle(choice.selected, purpose, runtime::clock::monotonic())
    {
        request.upstream.attempts[attempt].connect_time = Some(Duration::ZERO);
        let h2 = idle.state.and_then(kept_h2);
        match exchange(&idle.stream, outgoing, choice, client, request, attempt, h2).await {
            Ok(received) => {
                return Ok(Answer {
                    stream: idle.stream,
                    received,
                    opened: idle.opened,
                    requests: idle.requests,
                    purpose,
                });
            }
            Err(mut failure) => {
                failure.reused = true;
                // A connection the server closed while idle: a new one, when repeating
                // the request is safe (a gRPC stream that could not even open sent
                // nothing).
                let unsent = outgoing.proxy.over_h2() && !failure.sent;
                if !(failure.is_stale() && (outgoing.idempotent || unsent)) {
                    return Err(failure);
                }
            }
        }
    }
    let proxy = outgoing.proxy;
    let options = SocketOptions::of(proxy);
    let mut stream = connect(
        &choice.peer.address,
        outgoing.bind,
        options,
        proxy.connect_timeout,
    )
    .await
    .map_err(|error| Failure::io(error, Action::Connecting, false))?;
    if let Some(upstream_tls) = &outgoing.tls {
        // Boxed: a handshake's state (and a certificate's load) is large, and only a new
        // TLS connection makes it.
        let client = Box::pin(upstream_tls.configuration(outgoing.worker))
            .await
            .map_err(|error| Failure::internal(error, Action::Connecting))?;
        stream = Box::pin(secure(
            stream,
            client,
            &upstream_tls.name,
            proxy.connect_timeout,
        ))
        .await
        .map_err(|error| Failure::io(error, Action::SslHandshaking, false))?;
    }
    let opened = runtime::clock::monotonic();
    let entry = &mut request.upstream.attempts[attempt];
    entry.connect_time = Some(opened.saturating_duration_since(entry.started));
    let received = exchange(&stream, outgoing, choice, client, request, attempt, None).await?;
    Ok(Answer {
        stream,
        received,
        opened,
        requests: 0,
        purpose,
    })
}

/// The options of a new upstream TCP socket (`proxy_socket_keepalive`,
/// `tunnel_socket_rcvbuf`, `tunnel_socket_sndbuf`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SocketOptions {
    pub keepalive: bool,
    /// `SO_RCVBUF` and `SO_SNDBUF`; 0 leaves the system's.
    pub rcvbuf: u32,
    pub sndbuf: u32,
}

impl SocketOptions {
    pub(crate) fn of(proxy: &Proxy) -> SocketOptions {
        SocketOptions {
            keepalive: proxy.socket_keepalive,
            rcvbuf: u32::try_from(proxy.socket_rcvbuf).unwrap_or(u32::MAX),
            sndbuf: u32::try_from(proxy.socket_sndbuf).unwrap_or(u32::MAX),
        }
    }

    fn apply(self, socket: &tokio::net::TcpSocket) -> io::Result<()> {
        if self.keepalive {
            socket.set_keepalive(true)?;
        }
        if self.rcvbuf > 0 {
            socket.set_recv_buffer_size(self.rcvbuf)?;
        }
        if self.sndbuf > 0 {
            socket.set_send_buffer_size(self.sndbuf)?;
        }
        Ok(())
    }
}

/// Opens a connection to `address` within `timeout`.
pub async fn connect(
    address: &PeerAddr,
    bind: Option<SocketAddr>,
    options: SocketOptions,
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
                options.apply(&socket)?;
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

/// Runs the TLS handshake of a new upstream connection within `timeout`.
async fn secure(
    stream: Stream,
    client: &tls::ClientTls,
    name: &str,
    timeout: Duration,
) -> io::Result<Stream> {
    let Stream::Tcp(tcp) = stream else {
        return Ok(stream);
    };
    let session = client
        .connect(name)
        .map_err(|error| io::Error::other(error.0))?;
    match tokio::time::timeout(timeout, runtime::tls::connect(tcp, session)).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// Sends the request and reads the response head; the bytes, sent and received, are
/// counted for the peer (an `upstream` block's) whatever the outcome.
async fn exchange(
    stream: &Stream,
    outgoing: &Outgoing<'_>,
    choice: &PeerChoice<'_>,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
    attempt: usize,
    h2: Option<Box<http2::client::ClientConnection>>,
) -> Result<ReceivedHead, Failure> {
    let before = request.upstream.attempts[attempt].bytes_received;
    let mut sent = 0;
    let result = if outgoing.proxy.over_h2() {
        let (written, result) = grpc_exchange(stream, outgoing, client, request, attempt, h2).await;
        sent = written;
        request.upstream.attempts[attempt].bytes_sent = written;
        result
    } else if outgoing.proxy.protocol == Protocol::Tunnel {
        // Nothing goes before the relay: the tunnel is open once the connection is.
        let entry = &mut request.upstream.attempts[attempt];
        entry.header_time = Some(runtime::clock::since(entry.started));
        tunnel_connected()
    } else {
        match send_request(stream, outgoing, client, request).await {
            Ok(bytes) => {
                sent = bytes;
                request.upstream.attempts[attempt].bytes_sent = bytes;
                match outgoing.proxy.protocol {
                    Protocol::Http => {
                        read_head(stream, outgoing.proxy, client, request, attempt).await
                    }
                    Protocol::Memcached => {
                        crate::modules::proxy::memcached::response::read_head(
                            stream, outgoing, client, request, attempt,
                        )
                        .await
                    }
                    Protocol::Tunnel => tunnel_connected(),
                    Protocol::Fastcgi | Protocol::Uwsgi | Protocol::Scgi | Protocol::Grpc => {
                        crate::modules::proxy::gateway::response::read_head(
                            stream, outgoing, client, request, attempt,
                        )
                        .await
                    }
                }
            }
            Err(failure) => Err(failure),
        }
    };
    if let GroupRef::Conf(group) = choice.group {
        let received = request.upstream.attempts[attempt]
            .bytes_received
            .saturating_sub(before);
        group.note_bytes(choice.selected, sent, received);
    }
    result
}

/// A tunnel's peer accepted the connection: the head the client is answered with.
fn tunnel_connected() -> Result<ReceivedHead, Failure> {
    let mut buffer = take_buffer(0);
    buffer.extend_from_slice(crate::modules::proxy::tunnel::CONNECTED_HEAD);
    match response::parse(&buffer) {
        Ok(Some(head)) => Ok(ReceivedHead {
            head,
            buffer,
            gateway: None,
            grpc: None,
        }),
        // The head is a constant the parser accepts (a unit test says so).
        Ok(None) | Err(_) => {
            give_buffer(buffer);
            let message = "invalid tunnel head".to_owned();
            Err(Failure::upstream(
                Fault::InvalidHead(response::InvalidHead(message)),
                Action::ReadingHead,
                false,
            ))
        }
    }
}

/// A gRPC try as `grpc_exchange` starts it: the bytes written, and the head or why not.
type GrpcTry<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = (u64, Result<ReceivedHead, Failure>)> + 'a>>;

/// A gRPC try, boxed where it starts and out of line: its state (an HTTP/2
/// connection's) and its code would otherwise enlarge every proxied request's future and
/// the try loop that polls it.
#[cold]
#[inline(never)]
fn grpc_exchange<'a>(
    stream: &'a Stream,
    outgoing: &'a Outgoing<'_>,
    client: &'a mut Client<'_, '_>,
    request: &'a mut Request<'_>,
    attempt: usize,
    h2: Option<Box<http2::client::ClientConnection>>,
) -> GrpcTry<'a> {
    Box::pin(async move {
        let (written, result) = crate::modules::proxy::grpc::exchange::exchange(
            stream, outgoing, client, request, attempt, h2,
        )
        .await;
        let received = result.map(|(head, buffer, grpc)| ReceivedHead {
            head,
            buffer,
            gateway: None,
            grpc: Some(grpc),
        });
        (written, received)
    })
}

/// The HTTP/2 state a kept gRPC connection carries (`keepalive::Idle::state`).
#[cold]
#[inline(never)]
fn kept_h2(state: Box<dyn std::any::Any + Send>) -> Option<Box<http2::client::ClientConnection>> {
    state.downcast().ok()
}

/// How the body is framed on the wire besides the client's own framing.
#[derive(Clone, Copy)]
enum Framing {
    /// As it is: with `Content-Length`, or chunked when `chunked` (HTTP), or raw (uwsgi,
    /// SCGI).
    Plain { chunked: bool },
    /// In FastCGI STDIN records, ended by an empty one.
    Fastcgi(cgi::fastcgi::RequestEncoder),
}

impl Framing {
    fn of(outgoing: &Outgoing<'_>) -> Framing {
        match outgoing.proxy.protocol {
            Protocol::Fastcgi => Framing::Fastcgi(
                crate::modules::proxy::gateway::request::fastcgi_encoder(outgoing.gateway),
            ),
            Protocol::Http => Framing::Plain {
                chunked: matches!(outgoing.body, OutBody::Stream { chunked: true, .. }),
            },
            _ => Framing::Plain { chunked: false },
        }
    }

    /// Appends one piece of the body, framed.
    fn piece(self, out: &mut Vec<u8>, piece: &[u8]) {
        match self {
            Framing::Plain { chunked: true } => {
                http1::response::write_chunk_header(out, piece.len());
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            Framing::Plain { chunked: false } => out.extend_from_slice(piece),
            Framing::Fastcgi(encoder) => encoder.stdin(out, piece),
        }
    }

    /// Whether the body's end is written as something of its own (FastCGI's empty STDIN
    /// record, the last chunk), not only implied by its length.
    fn marks_end(self) -> bool {
        !matches!(self, Framing::Plain { chunked: false })
    }

    /// Appends the body's end.
    fn end(self, out: &mut Vec<u8>) {
        match self {
            Framing::Plain { chunked: true } => out.extend_from_slice(b"0\r\n\r\n"),
            Framing::Plain { chunked: false } => {}
            Framing::Fastcgi(encoder) => encoder.stdin_end(out),
        }
    }
}

/// Sends the head and the body; returns the bytes written.
async fn send_request(
    stream: &Stream,
    outgoing: &Outgoing<'_>,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
) -> Result<u64, Failure> {
    let (head, timeout) = (outgoing.head, outgoing.proxy.send_timeout);
    let failed = |error| Failure::io(error, Action::SendingRequest, false);
    let framing = Framing::of(outgoing);
    match (outgoing.body, framing) {
        (OutBody::None, Framing::Plain { .. }) => {
            stream
                .write_all_timed(head, timeout)
                .await
                .map_err(failed)?;
            Ok(head.len() as u64)
        }
        // Head and body in one write, as one `writev` would send them.
        (OutBody::None, Framing::Fastcgi(_)) | (OutBody::Memory(_), _) => {
            let bytes: &[u8] = match outgoing.body {
                OutBody::Memory(bytes) => bytes,
                _ => &[],
            };
            let mut request_bytes = Vec::with_capacity(head.len() + bytes.len() + 64);
            request_bytes.extend_from_slice(head);
            if !bytes.is_empty() {
                framing.piece(&mut request_bytes, bytes);
            }
            framing.end(&mut request_bytes);
            stream
                .write_all_timed(&request_bytes, timeout)
                .await
                .map_err(failed)?;
            Ok(request_bytes.len() as u64)
        }
        (OutBody::File(file), _) => {
            stream
                .write_all_timed(head, timeout)
                .await
                .map_err(failed)?;
            let body = send_file_body(stream, outgoing, file, framing).await?;
            Ok(head.len() as u64 + body)
        }
        (OutBody::Stream { .. }, _) => {
            stream_body(stream, outgoing, client, framing, request).await
        }
    }
}

/// Sends a body kept in a temporary file, read on the thread pool in 64 KiB pieces;
/// returns the bytes written.
async fn send_file_body(
    stream: &Stream,
    outgoing: &Outgoing<'_>,
    file: &crate::kernel::body::temp::TempBody,
    framing: Framing,
) -> Result<u64, Failure> {
    let failed = |error| Failure::io(error, Action::SendingRequest, true);
    let mut offset = 0;
    let mut written = 0;
    let mut framed = Vec::new();
    while offset < file.len {
        let len = (file.len - offset).min(64 * 1024) as usize;
        let handle = std::sync::Arc::clone(&file.file);
        let read = outgoing
            .worker
            .offload(threadpool::TaskKind::Read, move || {
                let mut buffer = vec![0; len];
                std::os::unix::fs::FileExt::read_exact_at(&*handle, &mut buffer, offset)
                    .map(|()| buffer)
            })
            .await;
        let chunk = match read {
            Ok(Ok(chunk)) => chunk,
            Ok(Err(error)) => return Err(failed(error)),
            Err(error) => return Err(failed(io::Error::other(error.message))),
        };
        offset += len as u64;
        let bytes = match framing {
            Framing::Plain { .. } => &chunk,
            Framing::Fastcgi(_) => {
                framed.clear();
                framing.piece(&mut framed, &chunk);
                if offset == file.len {
                    framing.end(&mut framed);
                }
                &framed
            }
        };
        stream
            .write_all_timed(bytes, outgoing.proxy.send_timeout)
            .await
            .map_err(failed)?;
        written += bytes.len() as u64;
    }
    Ok(written)
}

/// Reads the response head, skipping interim 1xx answers (other than 101).
async fn read_head(
    stream: &Stream,
    proxy: &Proxy,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
    attempt: usize,
) -> Result<ReceivedHead, Failure> {
    let started = request.upstream.attempts[attempt].started;
    let limit = usize::try_from(proxy.buffer_size)
        .unwrap_or(usize::MAX)
        .max(1024);
    // Read into the buffer's spare room: no byte of it is zeroed first.
    let mut buffer = take_buffer(0);
    buffer.reserve(limit);
    // Bytes that followed an interim head are parsed before the next read.
    let mut parse_first = false;
    loop {
        let count = if parse_first {
            parse_first = false;
            usize::MAX
        } else {
            read_head_bytes(stream, proxy, client, &mut buffer, limit).await?
        };
        if count != usize::MAX {
            request.upstream.attempts[attempt].bytes_received += count as u64;
        }
        if count == 0 {
            if !buffer.is_empty() && !buffer.starts_with(b"HTTP/") {
                // An HTTP/0.9 answer ends with the connection.
                let head = UpstreamHead {
                    status: 200,
                    http_09: true,
                    connection_close: true,
                    ..UpstreamHead::default()
                };
                return Ok(ReceivedHead {
                    head,
                    buffer,
                    gateway: None,
                    grpc: None,
                });
            }
            return Err(Failure {
                head_started: !buffer.is_empty(),
                ..Failure::upstream(Fault::Closed, Action::ReadingHead, true)
            });
        }
        let invalid = |fault| Failure::upstream(fault, Action::ReadingHead, true);
        match response::parse(&buffer) {
            Ok(Some(head)) => {
                if (100..200).contains(&head.status) && head.status != 101 && !head.http_09 {
                    if head.status == 103 && client.early_hints {
                        pass_early_hints(client, &head, &buffer).await?;
                    }
                    buffer.drain(..head.len);
                    parse_first = !buffer.is_empty();
                    continue;
                }
                request.upstream.attempts[attempt].header_time =
                    Some(runtime::clock::since(started));
                // The buffer goes on with the response: the body bytes read with the head
                // are decoded from it in place.
                return Ok(ReceivedHead {
                    head,
                    buffer,
                    gateway: None,
                    grpc: None,
                });
            }
            Ok(None) if buffer.len() >= limit => return Err(invalid(Fault::HeadTooBig)),
            Ok(None) => {}
            Err(head) => return Err(invalid(Fault::InvalidHead(head))),
        }
    }
}

/// Passes an upstream's `103 Early Hints` on to the client, without the fields that
/// belong to the upstream connection. Out of line: only `early_hints` gets here.
#[cold]
#[inline(never)]
fn pass_early_hints<'f>(
    client: &'f Client<'_, '_>,
    head: &'f UpstreamHead,
    buffer: &'f [u8],
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>> + 'f>> {
    Box::pin(async move {
        let fields: Vec<(&[u8], &[u8])> = head
            .fields
            .iter()
            .map(|(name, value)| (&buffer[name.clone()], &buffer[value.clone()]))
            .filter(|(name, _)| !crate::modules::proxy::grpc::request::is_connection_field(name))
            .collect();
        client
            .source
            .send_interim(103, &fields, client.timeout)
            .await
            .map_err(|_| Failure::client(Fault::ClientClosed, Action::ReadingHead))
    })
}

/// The next bytes of the head, appended to `buffer` up to `limit` bytes in all (read into
/// its spare room, nothing zeroed); 0 when the upstream closed.
pub(crate) async fn read_head_bytes(
    stream: &Stream,
    proxy: &Proxy,
    client: &mut Client<'_, '_>,
    buffer: &mut Vec<u8>,
    limit: usize,
) -> Result<usize, Failure> {
    let filled = buffer.len();
    let room = limit.saturating_sub(filled);
    // While waiting, a client that goes away ends the request (nginx's check for a
    // broken connection), unless `proxy_ignore_client_abort` or a refresh says not to.
    let read = tokio::select! {
        biased;
        read = read_after_wait_appending(stream, buffer, room, proxy.read_timeout) => read,
        () = client_gone(client.source.socket()), if client.watch_abort => {
            // nginx's words; its action is still "sending" until the upstream answers.
            let action = if filled == 0 {
                Action::SendingRequest
            } else {
                Action::ReadingHead
            };
            return Err(Failure::client(Fault::ClientAborted, action));
        }
        // An HTTP/2 body passed on unbuffered whose client sends more than its
        // `content-length` after it: the request ends with 400, as nginx ends it, even
        // though the upstream had all it was to get.
        message = client.source.body_refused() => {
            let action = if filled == 0 {
                Action::SendingRequest
            } else {
                Action::ReadingHead
            };
            return Err(Failure::client(Fault::ClientRefusedBody(message), action));
        }
    };
    read.map_err(|error| Failure {
        head_started: filled > 0,
        ..Failure::io(error, Action::ReadingHead, true)
    })
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
    outgoing: &Outgoing<'_>,
    client: &mut Client<'_, '_>,
    framing: Framing,
    request: &mut Request<'_>,
) -> Result<u64, Failure> {
    let mut written = 0u64;
    let mut framed = Vec::new();
    let mut kept = Some(Vec::new());
    let mut payload = Vec::new();
    loop {
        // Everything one read brought is passed on as one piece (one chunk), as nginx does.
        take_client_payload(client, &mut payload)?;
        framed.clear();
        if written == 0 {
            framed.extend_from_slice(outgoing.head);
        }
        if !payload.is_empty() {
            framing.piece(&mut framed, &payload);
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
        if done && framing.marks_end() && client.source.stream_open() {
            // An HTTP/2 body ends at END_STREAM, not where its `content-length` says, as
            // nginx's does: what arrived goes on at once, the end once the stream says so
            // (and a client that sends more gets 400 with nothing more passed on). An end
            // that came with the last bytes goes with them, in one write.
            if !framed.is_empty() {
                stream
                    .write_all_timed(&framed, outgoing.proxy.send_timeout)
                    .await
                    .map_err(|error| Failure::io(error, Action::StreamingBody, true))?;
                written += framed.len() as u64;
                framed.clear();
            }
            client
                .source
                .end_of_stream(client.timeout)
                .await
                .map_err(body_read_failure)?;
        }
        if done {
            framing.end(&mut framed);
        }
        if !framed.is_empty() {
            stream
                .write_all_timed(&framed, outgoing.proxy.send_timeout)
                .await
                .map_err(|error| Failure::io(error, Action::StreamingBody, true))?;
            written += framed.len() as u64;
        }
        if done {
            if let Some(bytes) = kept {
                request.body = Some(crate::kernel::body::temp::RequestBody::Memory(bytes));
            }
            return Ok(written);
        }
        read_client(client).await?;
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
pub(crate) fn take_buffer(len: usize) -> Vec<u8> {
    let mut buffer = BUFFERS
        .with(|buffers| buffers.borrow_mut().pop())
        .unwrap_or_default();
    buffer.resize(len, 0);
    buffer.truncate(len);
    buffer
}

/// A buffer that goes back to the pool when dropped.
pub(crate) struct PooledBuffer(pub Vec<u8>);

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        give_buffer(std::mem::take(&mut self.0));
    }
}

/// Gives a buffer back for another request.
pub(crate) fn give_buffer(buffer: Vec<u8>) {
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

/// [`read_timed`] into the room `buffer` has beyond its length (`Stream::try_read_spare`).
pub async fn read_timed_spare(
    stream: &Stream,
    buffer: &mut Vec<u8>,
    timeout: Duration,
) -> io::Result<usize> {
    let room = buffer.capacity() - buffer.len();
    read_timed_appending(stream, buffer, room, timeout).await
}

/// [`read_timed_spare`] of at most `max` bytes (the buffer grows to take them).
pub async fn read_timed_appending(
    stream: &Stream,
    buffer: &mut Vec<u8>,
    max: usize,
    timeout: Duration,
) -> io::Result<usize> {
    match stream.try_read_appending(buffer, max) {
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
            read_after_wait_appending(stream, buffer, max, timeout).await
        }
        result => result,
    }
}

/// [`read_after_wait`] into the room `buffer` has (at most `max` bytes; it grows to take
/// them), none of it zeroed first.
async fn read_after_wait_appending(
    stream: &Stream,
    buffer: &mut Vec<u8>,
    max: usize,
    timeout: Duration,
) -> io::Result<usize> {
    let deadline = tokio::time::Instant::from_std(runtime::clock::monotonic()) + timeout;
    loop {
        match tokio::time::timeout_at(deadline, stream.readable()).await {
            Ok(result) => result?,
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        }
        match stream.try_read_appending(buffer, max) {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            result => return result,
        }
    }
}

/// Waits (with a timer) until the socket is readable, then reads: for an answer that
/// cannot have arrived yet, so that no read is made only to learn that.
pub(crate) async fn read_after_wait(
    stream: &Stream,
    buffer: &mut [u8],
    timeout: Duration,
) -> io::Result<usize> {
    let deadline = tokio::time::Instant::from_std(runtime::clock::monotonic()) + timeout;
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
