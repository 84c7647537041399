//! Passing a proxied body to the client: what the upstream sent is re-framed for the
//! client (chunked or as is), coalesced with the head while the upstream's bytes are
//! already there, and written as soon as the next read from the upstream would wait.

use std::io;

use crate::proxy::body::{UpstreamBody, log_failure};
use crate::request::Request;
use crate::send::body::{BodyContext, Output, finish};
use crate::send::framing::{CHUNK_END, Framing};

/// Writes are gathered up to this size while the upstream's bytes keep coming without a
/// wait.
const GATHER_BYTES_MAX: usize = 64 * 1024;

pub(super) async fn send_upstream(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    body: UpstreamBody<'_>,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let attempt = body.attempt();
    if context.header_only {
        output.write(head).await?;
        end_attempt(request, attempt, 0);
        if body.is_done() {
            body.finish();
        }
        return Ok(());
    }
    let proxy = &context.location.settings.proxy;
    if proxy.buffering {
        let limit = proxy.buffers.count.saturating_mul(proxy.buffers.size);
        let limit = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .max(GATHER_BYTES_MAX);
        return send_buffered(context, output, request, body, head, limit).await;
    }
    send_streamed(context, output, request, body, head).await
}

/// `proxy_buffering off`: each piece the upstream sends is written before the next is read.
async fn send_streamed(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    mut body: UpstreamBody<'_>,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let attempt = body.attempt();
    let chunked = context.framing == Framing::Chunked;
    // The head's buffer (the connection's, kept for its next response) gathers the body.
    let pending = head;
    let mut data = Vec::new();
    let mut received = 0u64;
    loop {
        data.clear();
        let mut result = body.next(&mut data, false, request).await;
        if matches!(result, Ok(true)) && data.is_empty() {
            // Nothing more without waiting for the upstream: send what is gathered first.
            if !pending.is_empty() {
                output.write(pending).await?;
                pending.clear();
            }
            result = body.next(&mut data, true, request).await;
        }
        let more = match result {
            Ok(more) => more,
            Err(message) => {
                end_attempt(request, attempt, received);
                // What arrived is passed on; the client sees the body cut short.
                let _ = output.write(pending).await;
                log_failure(context.worker, context.connection, request, &message);
                return Err(io::Error::other(message));
            }
        };
        if !data.is_empty() {
            received += data.len() as u64;
            if chunked {
                http1::response::write_chunk_header(pending, data.len());
                pending.extend_from_slice(&data);
                pending.extend_from_slice(CHUNK_END);
            } else {
                pending.extend_from_slice(&data);
            }
        }
        if !more {
            break;
        }
        if pending.len() >= GATHER_BYTES_MAX {
            output.write(pending).await?;
            pending.clear();
        }
    }
    end_attempt(request, attempt, received);
    finish(context, request, pending);
    if !pending.is_empty() {
        output.write(pending).await?;
    }
    body.finish();
    Ok(())
}

/// `proxy_buffering on`: the upstream is read ahead of the client, up to `limit` bytes held
/// in memory, so that a slow client does not hold the upstream connection: once the body
/// has been read whole the connection goes back to the keep-alive cache (and the server's
/// connection count down) while the client is still being written to.
async fn send_buffered(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    body: UpstreamBody<'_>,
    head: &mut Vec<u8>,
    limit: usize,
) -> io::Result<()> {
    let attempt = body.attempt();
    let chunked = context.framing == Framing::Chunked;
    let mut body = Some(body);
    // What is to be written: `head[sent..]`, the head first, then the body as it comes.
    let pending = head;
    let mut sent = 0;
    let mut data = Vec::new();
    let mut received = 0u64;
    loop {
        // Read what is already there without waiting, while there is room.
        while let Some(upstream) = body.as_mut()
            && pending.len() - sent < limit
        {
            data.clear();
            match upstream.next(&mut data, false, request).await {
                Ok(more) => {
                    received += data.len() as u64;
                    push(pending, &data, chunked);
                    if !more {
                        end_attempt(request, attempt, received);
                        if let Some(done) = body.take() {
                            done.finish();
                        }
                        finish(context, request, pending);
                    } else if data.is_empty() {
                        break;
                    }
                }
                Err(message) => {
                    end_attempt(request, attempt, received);
                    let _ = output.write(&pending[sent..]).await;
                    log_failure(context.worker, context.connection, request, &message);
                    return Err(io::Error::other(message));
                }
            }
        }
        // Write what the client takes now.
        while sent < pending.len() {
            let written = output.try_write_now(&pending[sent..])?;
            if written == 0 {
                break;
            }
            sent += written;
        }
        if sent == pending.len() {
            pending.clear();
            sent = 0;
            if body.is_none() {
                return Ok(());
            }
        } else if sent >= GATHER_BYTES_MAX {
            pending.drain(..sent);
            sent = 0;
        }
        // Wait for the client or for the upstream, whichever comes first.
        let writing = sent < pending.len();
        let reading = body.is_some() && pending.len() - sent < limit;
        tokio::select! {
            ready = output.ready(), if writing => ready?,
            read = next_waiting(body.as_mut(), &mut data), if reading => {
                let (more, bytes) = match read {
                    Ok(read) => read,
                    Err(message) => {
                        end_attempt(request, attempt, received);
                        let _ = output.write(&pending[sent..]).await;
                        log_failure(context.worker, context.connection, request, &message);
                        return Err(io::Error::other(message));
                    }
                };
                received += data.len() as u64;
                if let Some(entry) = request.upstream.attempts.get_mut(attempt) {
                    entry.bytes_received += bytes;
                }
                push(pending, &data, chunked);
                if !more {
                    end_attempt(request, attempt, received);
                    if let Some(done) = body.take() {
                        done.finish();
                    }
                    finish(context, request, pending);
                }
            }
        }
    }
}

/// The next piece of the body, waiting for the upstream as needed; whether more follows
/// and the bytes received from the connection.
async fn next_waiting(
    body: Option<&mut UpstreamBody<'_>>,
    data: &mut Vec<u8>,
) -> Result<(bool, u64), String> {
    let Some(body) = body else {
        return std::future::pending().await;
    };
    data.clear();
    body.next_detached(data).await
}

/// Appends body bytes, framed as a chunk when the client's response is chunked.
fn push(pending: &mut Vec<u8>, data: &[u8], chunked: bool) {
    if data.is_empty() {
        return;
    }
    if chunked {
        http1::response::write_chunk_header(pending, data.len());
        pending.extend_from_slice(data);
        pending.extend_from_slice(CHUNK_END);
    } else {
        pending.extend_from_slice(data);
    }
}

fn end_attempt(request: &mut Request<'_>, attempt: usize, received: u64) {
    if let Some(entry) = request.upstream.attempts.get_mut(attempt) {
        entry.response_length = received;
        entry.response_time = Some(entry.started.elapsed());
    }
}
