//! What every try of one proxied request sends: the request (`Outgoing`), its body as it
//! goes upstream (`OutBody`), and the client whose body an unbuffered request streams, with
//! the reads that take that body in. Apart from the try loop (`exchange.rs`), so that the
//! protocols' own exchanges (gRPC's) use them without importing the loop that calls them.

use std::net::SocketAddr;
use std::time::Duration;

use crate::kernel::client::{BodyRead, BodySource};
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::Proxy;
use crate::modules::proxy::failure::{Action, Failure, Fault};
use crate::modules::proxy::ssl::upstream::UpstreamTls;

/// The client whose body an unbuffered request streams upstream.
pub(crate) struct Client<'c, 's> {
    pub source: &'c mut BodySource<'s>,
    pub body: &'c mut crate::kernel::body::BodyState,
    /// `client_body_timeout`.
    pub timeout: Duration,
    /// `client_body_buffer_size`: a body passed on unbuffered is still kept for
    /// `$request_body` when it fits, as nginx keeps it.
    pub keep: usize,
    /// A client that closes while the head is awaited ends the try (nginx's check for a
    /// broken connection); off with `proxy_ignore_client_abort on` and for a background
    /// refresh, whose client has its answer already.
    pub watch_abort: bool,
    /// `early_hints` holds for this request: an upstream's `103 Early Hints` goes on.
    pub early_hints: bool,
}

/// The request's body as it goes upstream.
pub(crate) enum OutBody {
    None,
    Memory(Vec<u8>),
    File(crate::kernel::body::temp::TempBody),
    /// `proxy_request_buffering off`: the body is passed on as it arrives, chunked when
    /// the client sent it chunked; `length` is its `Content-Length`, if it has one.
    Stream {
        chunked: bool,
        length: Option<u64>,
    },
}

impl OutBody {
    pub(crate) fn len(&self) -> Option<u64> {
        match self {
            OutBody::None => None,
            OutBody::Memory(bytes) => Some(bytes.len() as u64),
            OutBody::File(file) => Some(file.len),
            OutBody::Stream { length, .. } => *length,
        }
    }
}

/// The request as every try sends it.
pub(crate) struct Outgoing<'r> {
    pub worker: &'r HttpWorker,
    pub connection: &'r crate::kernel::request::ConnectionInfo,
    pub proxy: &'r Proxy,
    /// The gateway module's own settings, for a gateway's request.
    pub gateway: &'r crate::modules::proxy::gateway::settings::Gateway,
    pub head: &'r [u8],
    pub body: &'r OutBody,
    /// `proxy_bind`.
    pub bind: Option<SocketAddr>,
    /// The method may be repeated (on a new connection after a stale cached one).
    pub idempotent: bool,
    /// `https://`: each new connection starts with a TLS handshake.
    pub tls: Option<UpstreamTls<'r>>,
}

/// Decodes the body bytes in the client's buffer into `payload`.
pub(crate) fn take_client_payload(
    client: &mut Client<'_, '_>,
    payload: &mut Vec<u8>,
) -> Result<(), Failure> {
    payload.clear();
    while !client.source.buffered().is_empty() && !client.body.is_done() {
        let piece = client
            .body
            .next(client.source.buffered())
            .map_err(|_| Failure::client(Fault::ClientInvalidBody, Action::StreamingBody))?;
        payload.extend_from_slice(&client.source.buffered()[piece.payload.clone()]);
        client.source.consume(piece.consumed);
        if piece.consumed == 0 {
            break;
        }
    }
    Ok(())
}

/// Reads more of the client's body into its connection's buffer, within
/// `client_body_timeout`.
pub(crate) async fn read_client(client: &mut Client<'_, '_>) -> Result<(), Failure> {
    match client.source.read_more(client.timeout).await {
        BodyRead::More => Ok(()),
        other => Err(body_read_failure(other)),
    }
}

/// The failure a wait for the client's body ended in.
pub(crate) fn body_read_failure(read: BodyRead) -> Failure {
    match read {
        // (Not a failure where it is asked for; the client's stream counts as gone.)
        BodyRead::More | BodyRead::Closed => {
            Failure::client(Fault::ClientClosed, Action::StreamingBody)
        }
        BodyRead::TimedOut => Failure::client(Fault::ClientTimedOut, Action::StreamingBody),
        BodyRead::Refused(message) => {
            Failure::client(Fault::ClientRefusedBody(message), Action::StreamingBody)
        }
    }
}

/// Whether `early_hints` lets an upstream's `103 Early Hints` go on to this client (an
/// HTTP/1.1 or later one, not a subrequest): one of `conditions` is neither empty nor `0`.
pub(crate) fn early_hints(
    worker: &HttpWorker,
    info: &crate::kernel::request::ConnectionInfo,
    request: &crate::kernel::request::Request<'_>,
    conditions: &[crate::kernel::variables::HttpTemplate],
) -> bool {
    !conditions.is_empty() && early_hints_hold(worker, info, request, conditions)
}

/// [`early_hints`]'s conditions, out of line: few locations have any.
#[cold]
#[inline(never)]
fn early_hints_hold(
    worker: &HttpWorker,
    info: &crate::kernel::request::ConnectionInfo,
    request: &crate::kernel::request::Request<'_>,
    conditions: &[crate::kernel::variables::HttpTemplate],
) -> bool {
    request.head.version >= http1::Version::Http11
        && !request.is_subrequest()
        && conditions.iter().any(|condition| {
            let value =
                crate::kernel::variables::evaluate::render(worker, info, request, condition);
            !value.is_empty() && value != b"0"
        })
}
