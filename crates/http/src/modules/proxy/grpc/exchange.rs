//! One try of a gRPC request: a stream opened on a new HTTP/2 connection, the request's
//! body sent as DATA as it arrives from the client (unbuffered, as nginx's grpc module
//! sends it) while the server's frames are read, until the response head has come and the
//! request has ended. The DATA that arrives meanwhile waits in the stream for the body.
//!
//! A client on a framed stream (HTTP/2) gets the head before its body has ended: the rest
//! of the body goes on through a [`BodyRelay`] that the connection pumps while the
//! response is sent, so that a bidirectional call whose client waits for each answer
//! before it sends more goes on.

use std::io;

use http2::client::{ClientConfig, ClientConnection};
use http2::hpack::FieldList;
use runtime::Stream;

use crate::kernel::body::relay::BodyRelay;
use crate::kernel::request::Request;
use crate::modules::proxy::failure::{Action, Failure, Fault};
use crate::modules::proxy::gateway::settings::Protocol;
use crate::modules::proxy::grpc::body::{GrpcBody, GrpcHead};
use crate::modules::proxy::grpc::request::{head_fields, takes_trailers};
use crate::modules::proxy::outgoing::{
    Client, OutBody, Outgoing, body_read_failure, read_client, take_client_payload,
};
use crate::modules::proxy::response::{self, InvalidHead, UpstreamHead};

/// Request body bytes queued on the stream beyond which the client is not read until the
/// server's window takes them.
const QUEUED_MAX: usize = 64 * 1024;

/// How much of the server's bytes one read takes.
const READ_SIZE: usize = 16 * 1024;

/// The response head (parsed, and as HTTP/1 text) and the stream it came on.
pub(crate) type Answered = (UpstreamHead, Vec<u8>, Box<GrpcBody>);

/// Sends the request on a new stream and reads until the response head is in and the
/// request has ended; returns the bytes written and the head, with the stream.
pub(crate) async fn exchange(
    stream: &Stream,
    outgoing: &Outgoing<'_>,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
    attempt: usize,
    kept: Option<Box<ClientConnection>>,
) -> (u64, Result<Answered, Failure>) {
    let mut written = 0;
    let result = run(
        stream,
        outgoing,
        client,
        request,
        attempt,
        kept,
        &mut written,
    )
    .await;
    (written, result)
}

async fn run(
    stream: &Stream,
    outgoing: &Outgoing<'_>,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
    attempt: usize,
    kept: Option<Box<ClientConnection>>,
    written: &mut u64,
) -> Result<Answered, Failure> {
    let proxy = outgoing.proxy;
    let head_max = usize::try_from(proxy.buffer_size)
        .unwrap_or(usize::MAX)
        .max(1024);
    // A kept connection goes on with its state (HPACK tables, windows, stream ids).
    let mut h2 = match kept {
        Some(h2) => *h2,
        None => ClientConnection::new(ClientConfig {
            field_max: head_max,
            header_list_max: head_max,
            // The encoded block of a head that fits `grpc_buffer_size`, with room for
            // HPACK's length prefixes.
            header_block_max: (head_max + 4096).max(ClientConfig::default().header_block_max),
            // `proxy_http_version 2` keeps no dynamic table for the server's heads.
            header_table_size: if proxy.protocol == Protocol::Grpc {
                ClientConfig::default().header_table_size
            } else {
                0
            },
            ..ClientConfig::default()
        }),
    };
    let te = request.header(b"te").is_some_and(takes_trailers);
    // `grpc_set_header Host` sends `host` as it is, and no `:authority`, as nginx does.
    let host_set = proxy
        .set_header
        .iter()
        .any(|header| header.name.eq_ignore_ascii_case(b"host"));
    let fields = head_fields(outgoing.head, outgoing.tls.is_some(), te, host_set);
    let streaming = matches!(outgoing.body, OutBody::Stream { .. });
    let no_body = match outgoing.body {
        OutBody::None => true,
        OutBody::Memory(bytes) => bytes.is_empty(),
        OutBody::File(file) => file.len == 0,
        OutBody::Stream { .. } => false,
    };
    let stream_id = h2
        .open_stream(&fields, no_body)
        // (Nothing was sent: a kept connection that cannot take a stream is replaced.)
        .map_err(|_| Failure::upstream(Fault::Closed, Action::SendingRequest, false))?;
    let mut grpc = Box::new(GrpcBody::new(h2, stream_id));
    grpc.pass_trailers = proxy.pass_trailers;
    grpc.pass_partial = proxy.protocol == Protocol::Grpc;
    match outgoing.body {
        OutBody::Memory(bytes) if !bytes.is_empty() => {
            let _ = grpc.h2.send_data(stream_id, bytes, true);
        }
        OutBody::File(file) if file.len > 0 => {
            let bytes = read_file(outgoing, file).await?;
            let _ = grpc.h2.send_data(stream_id, &bytes, true);
        }
        _ => {}
    }
    let mut body_done = !streaming;
    // The head may go before the body's end when the connection can pump the rest.
    let relayed = streaming && client.source.is_framed();
    let mut payload = Vec::new();
    let mut kept = Some(Vec::new());
    let mut input = Vec::with_capacity(READ_SIZE);
    loop {
        if !body_done {
            take_client_payload(client, &mut payload)?;
            if !payload.is_empty() {
                request.length += payload.len() as u64;
                keep(&mut kept, &payload, client.keep);
                let _ = grpc.h2.send_data(stream_id, &payload, false);
            }
            if client.body.is_done() {
                if client.source.stream_open() {
                    client
                        .source
                        .end_of_stream(client.timeout)
                        .await
                        .map_err(body_read_failure)?;
                }
                let _ = grpc.h2.send_data(stream_id, &[], true);
                body_done = true;
                if let Some(bytes) = kept.take() {
                    request.body = Some(crate::kernel::body::temp::RequestBody::Memory(bytes));
                }
            }
        }
        grpc.h2.flush();
        write_output(stream, &mut grpc.h2, proxy.send_timeout, written).await?;
        if let Some(message) = &grpc.broken {
            let action = if grpc.head.is_some() {
                Action::ReadingBody
            } else {
                Action::ReadingHead
            };
            return Err(Failure::upstream(
                Fault::InvalidHead(InvalidHead(message.clone())),
                action,
                true,
            ));
        }
        if grpc.head.is_some() && (body_done || grpc.ended || relayed) {
            break;
        }
        let reading_client = !body_done && grpc.h2.queued(stream_id) < QUEUED_MAX;
        let read = if reading_client {
            tokio::select! {
                biased;
                read = read_upstream(stream, &mut input, proxy.read_timeout) => read,
                read = read_client(client) => {
                    read?;
                    continue;
                }
            }
        } else {
            tokio::select! {
                biased;
                read = read_upstream(stream, &mut input, proxy.read_timeout) => read,
                () = client_closed(client.source.socket()), if client.watch_abort => {
                    grpc.cancel(stream);
                    return Err(Failure::client(Fault::ClientAborted, Action::ReadingHead));
                }
            }
        };
        let action = if body_done {
            Action::ReadingHead
        } else {
            Action::StreamingBody
        };
        let count = read.map_err(|error| Failure::io(error, action, true))?;
        if count == 0 {
            return Err(Failure::upstream(Fault::Closed, action, true));
        }
        request.upstream.attempts[attempt].bytes_received += count as u64;
        let had_head = grpc.head.is_some();
        grpc.receive(&input);
        input.clear();
        if !grpc.hints.is_empty() {
            pass_hints(client, &mut grpc.hints).await?;
        }
        if !had_head && grpc.head.is_some() {
            let started = request.upstream.attempts[attempt].started;
            request.upstream.attempts[attempt].header_time = Some(runtime::clock::since(started));
        }
    }
    // The stream goes on with the body; the rest of the client's body, if the server ended
    // the stream before it, is left unread.
    let Some(head) = grpc.head.take() else {
        return Err(Failure::upstream(Fault::Closed, Action::ReadingHead, true));
    };
    if let Some(message) = invalid_field(&head.fields) {
        return Err(Failure::upstream(
            Fault::InvalidHead(InvalidHead(message)),
            Action::ReadingHead,
            true,
        ));
    }
    // A HEAD's answer, a 204 and a 304 have no body whatever `content-length` says.
    if !(outgoing.head.starts_with(b"HEAD ") || matches!(head.status, 204 | 304)) {
        grpc.expect_length(&head.fields);
    }
    let buffer = text_head(&head);
    let parsed = match response::parse(&buffer) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            return Err(Failure::upstream(
                Fault::HeadTooBig,
                Action::ReadingHead,
                true,
            ));
        }
        Err(invalid) => {
            return Err(Failure::upstream(
                Fault::InvalidHead(invalid),
                Action::ReadingHead,
                true,
            ));
        }
    };
    if !body_done && !grpc.ended {
        // The rest of the body goes on beside the response.
        let relay = std::rc::Rc::new(BodyRelay::new(client.timeout));
        grpc.relay = Some(std::rc::Rc::clone(&relay));
        request.body_relay = Some(relay);
    }
    Ok((parsed, buffer, grpc))
}

/// Passes the server's `103 Early Hints` on to the client when `early_hints` says so (else
/// drops them).
#[cold]
#[inline(never)]
async fn pass_hints(client: &Client<'_, '_>, hints: &mut Vec<FieldList>) -> Result<(), Failure> {
    for fields in std::mem::take(hints) {
        if !client.early_hints {
            continue;
        }
        let pairs: Vec<(&[u8], &[u8])> = fields
            .iter()
            .filter(|field| !field.name.starts_with(b":"))
            .map(|field| (field.name, field.value))
            .collect();
        client
            .source
            .send_interim(103, &pairs, client.timeout)
            .await
            .map_err(|_| Failure::client(Fault::ClientClosed, Action::ReadingHead))?;
    }
    Ok(())
}

/// Waits (within `grpc_read_timeout`) for the server's next bytes and reads them. The
/// proxy has its own such waits; gRPC's are apart so that those stay inlined where the
/// proxy's every request polls them.
async fn read_upstream(
    stream: &Stream,
    input: &mut Vec<u8>,
    timeout: std::time::Duration,
) -> io::Result<usize> {
    let deadline = tokio::time::Instant::from_std(runtime::clock::monotonic()) + timeout;
    loop {
        match stream.try_read_appending(input, READ_SIZE) {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            result => return result,
        }
        match tokio::time::timeout_at(deadline, stream.readable()).await {
            Ok(result) => result?,
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        }
    }
}

/// Resolves when the client closes its connection (or it fails); never when it only
/// sends more (a pipelined request).
async fn client_closed(client: &Stream) {
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

/// Writes what the connection queued, within `grpc_send_timeout`.
async fn write_output(
    stream: &Stream,
    h2: &mut ClientConnection,
    timeout: std::time::Duration,
    written: &mut u64,
) -> Result<(), Failure> {
    if !h2.wants_write() {
        return Ok(());
    }
    let bytes = h2.output().to_vec();
    stream
        .write_all_timed(&bytes, timeout)
        .await
        .map_err(|error| Failure::io(error, Action::SendingRequest, true))?;
    h2.advance_output(bytes.len());
    *written += bytes.len() as u64;
    Ok(())
}

/// Keeps the body for `$request_body` while it fits `client_body_buffer_size`.
fn keep(kept: &mut Option<Vec<u8>>, payload: &[u8], limit: usize) {
    if let Some(bytes) = kept {
        if bytes.len() + payload.len() <= limit {
            bytes.extend_from_slice(payload);
        } else {
            *kept = None;
        }
    }
}

/// A body kept in a temporary file (read before the try, for a mirror), read on the pool.
async fn read_file(
    outgoing: &Outgoing<'_>,
    file: &crate::kernel::body::temp::TempBody,
) -> Result<Vec<u8>, Failure> {
    let failed = |error| Failure::io(error, Action::SendingRequest, false);
    let len = usize::try_from(file.len).map_err(|_| failed(io::ErrorKind::OutOfMemory.into()))?;
    let handle = std::sync::Arc::clone(&file.file);
    let read = outgoing
        .worker
        .offload(threadpool::TaskKind::Read, move || {
            let mut buffer = vec![0; len];
            std::os::unix::fs::FileExt::read_exact_at(&*handle, &mut buffer, 0).map(|()| buffer)
        })
        .await;
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(error)) => Err(failed(error)),
        Err(error) => Err(failed(io::Error::other(error.message))),
    }
}

/// The response head as an HTTP/1 head, so that the proxy's header handling (hidden
/// fields, `X-Accel-*`, `$upstream_http_*`) reads it as any upstream's.
fn text_head(head: &GrpcHead) -> Vec<u8> {
    let mut buffer = Vec::with_capacity(256);
    buffer.extend_from_slice(b"HTTP/1.1 ");
    let status = head.status;
    buffer.extend_from_slice(status.to_string().as_bytes());
    buffer.push(b' ');
    if let Some(reason) = http1::status::reason_phrase(status) {
        buffer.extend_from_slice(reason.as_bytes());
    }
    buffer.extend_from_slice(b"\r\n");
    write_fields(&head.fields, &mut buffer);
    buffer.extend_from_slice(b"\r\n");
    buffer
}

/// nginx's words for a response field HTTP/2 does not allow: a name with upper case or a
/// colon past its start, or a pseudo-field other than `:status`.
fn invalid_field(fields: &FieldList) -> Option<String> {
    for field in fields.iter() {
        let name = field.name;
        let pseudo = name.first() == Some(&b':');
        let bad = if pseudo {
            name != b":status"
        } else {
            name.is_empty()
                || name
                    .iter()
                    .any(|&byte| byte.is_ascii_uppercase() || byte == b':' || byte <= b' ')
        };
        if bad {
            return Some(format!(
                "upstream sent invalid header: \"{}\"",
                String::from_utf8_lossy(name)
            ));
        }
    }
    None
}

fn write_fields(fields: &FieldList, out: &mut Vec<u8>) {
    for field in fields.iter() {
        if field.name.starts_with(b":") {
            continue;
        }
        out.extend_from_slice(field.name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(field.value);
        out.extend_from_slice(b"\r\n");
    }
}
