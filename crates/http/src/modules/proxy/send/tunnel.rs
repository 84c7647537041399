//! A proxied connection upgraded by the upstream's `101 Switching Protocols` (WebSocket),
//! or a CONNECT request's tunnel (`tunnel_pass`): once the head is out, bytes go both
//! ways between the client and the upstream as they come, through one buffer per
//! direction, until either side closes or nothing moves for `proxy_read_timeout`
//! (`tunnel_read_timeout`); a write that waits longer than `send_timeout` (to the client)
//! or `proxy_send_timeout` (`tunnel_send_timeout`, to the upstream) ends it too.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::Duration;

use runtime::Stream;

use crate::kernel::request::Request;
use crate::kernel::send::body::{BodyContext, Output, StreamedBody};

/// Bytes moved at once in each direction by an upgraded proxied connection (a tunnel's
/// are `tunnel_buffer_size`).
pub(crate) const BUFFER_BYTES: usize = 16 * 1024;

/// The upgraded upstream connection.
pub struct Tunnel {
    pub upstream: Stream,
    /// What the upstream sent after its head, for the client.
    pub upstream_early: Vec<u8>,
    /// What the client sent after its request, for the upstream.
    pub client_early: Vec<u8>,
    pub read_timeout: Duration,
    pub upstream_send_timeout: Duration,
    /// Bytes moved at once in each direction.
    pub buffer_bytes: usize,
}

impl std::fmt::Debug for Tunnel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tunnel").finish_non_exhaustive()
    }
}

impl<'a> StreamedBody<'a> for Tunnel {
    fn send<'s, 'o>(
        self: Box<Self>,
        context: &'s BodyContext<'s>,
        output: &'s mut Output<'o>,
        request: &'s mut Request<'a>,
        head: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<()>> + 's>>
    where
        'a: 's,
        'o: 's,
    {
        let _ = (context, &request);
        Box::pin(run(output, *self, head))
    }
}

async fn run(output: &mut Output<'_>, tunnel: Tunnel, head: &mut Vec<u8>) -> io::Result<()> {
    head.extend_from_slice(&tunnel.upstream_early);
    output.write(head).await?;
    head.clear();
    let upstream = &tunnel.upstream;
    if !tunnel.client_early.is_empty() {
        upstream
            .write_all_timed(&tunnel.client_early, tunnel.upstream_send_timeout)
            .await?;
    }
    let client = output.sink.socket();
    let buffer_bytes = tunnel.buffer_bytes.max(1);
    let mut from_client = vec![0u8; buffer_bytes];
    let mut from_upstream = vec![0u8; buffer_bytes];
    loop {
        let moved = tokio::time::timeout(tunnel.read_timeout, async {
            tokio::select! {
                read = client.read(&mut from_client) => {
                    let count = read?;
                    if count > 0 {
                        upstream
                            .write_all_timed(&from_client[..count], tunnel.upstream_send_timeout)
                            .await?;
                    }
                    Ok::<usize, io::Error>(count)
                }
                read = upstream.read(&mut from_upstream) => {
                    let count = read?;
                    if count > 0 {
                        output.write(&from_upstream[..count]).await?;
                    }
                    Ok(count)
                }
            }
        })
        .await;
        match moved {
            Ok(Ok(0)) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        }
    }
}
