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
    mut body: UpstreamBody<'_>,
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

fn end_attempt(request: &mut Request<'_>, attempt: usize, received: u64) {
    if let Some(entry) = request.upstream.attempts.get_mut(attempt) {
        entry.response_length = received;
        entry.response_time = Some(entry.started.elapsed());
    }
}
