//! A request body that goes on arriving while its response is sent: a bidirectional gRPC
//! call whose client waits for each answer before it sends the next message. The handler
//! that passes the body on returns its response head before the body has ended and
//! leaves a [`BodyRelay`] in the request; the connection then runs [`pump`] beside the
//! response's sending, moving the client's body bytes into the relay, and the response
//! body's reader (the upstream side) takes them from it and sends them on.
//!
//! Only a framed client stream (HTTP/2) pumps: its body and its response are apart, so the
//! stream's body may be read while its response is written.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use tokio::sync::Notify;

use crate::kernel::body::BodyState;
use crate::kernel::client::{BodyRead, BodySource};

/// Body bytes the relay holds before [`pump`] waits for them to be taken.
const QUEUED_MAX: usize = 64 * 1024;

/// The client's body between the connection's [`pump`] and the response's reader.
#[derive(Debug)]
pub(crate) struct BodyRelay {
    queued: RefCell<Vec<u8>>,
    /// The body ended (and a framed stream's end arrived).
    ended: Cell<bool>,
    /// How reading the body failed, once it did.
    failed: RefCell<Option<RelayFailure>>,
    /// `client_body_timeout`: the longest wait for the client's next bytes.
    timeout: Duration,
    /// Payload bytes pumped, for `$request_length`.
    received: Cell<u64>,
    /// The pump put bytes in, or the body ended or failed.
    arrived: Notify,
    /// The reader took bytes out.
    taken: Notify,
}

/// How the client's body failed while it was pumped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RelayFailure {
    /// Waiting for more ended so (closed, timed out, refused by the stream's rules).
    Read(BodyRead),
    /// The body broke its framing (HTTP/1 chunks).
    Invalid,
}

/// What the reader finds in the relay.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Relayed {
    /// Body bytes (possibly none yet).
    Bytes(Vec<u8>),
    /// The body has ended; the bytes before its end were taken.
    Ended,
    /// Reading the body failed (the client went away, timed out or broke its framing).
    Failed,
}

impl BodyRelay {
    pub(crate) fn new(timeout: Duration) -> BodyRelay {
        BodyRelay {
            queued: RefCell::new(Vec::new()),
            ended: Cell::new(false),
            failed: RefCell::new(None),
            timeout,
            received: Cell::new(0),
            arrived: Notify::new(),
            taken: Notify::new(),
        }
    }

    /// Takes what the pump has put in: the bytes first, then the end or the failure.
    pub(crate) fn take(&self) -> Relayed {
        let bytes = std::mem::take(&mut *self.queued.borrow_mut());
        if !bytes.is_empty() {
            self.taken.notify_one();
            return Relayed::Bytes(bytes);
        }
        if self.failed.borrow().is_some() {
            Relayed::Failed
        } else if self.ended.get() {
            Relayed::Ended
        } else {
            Relayed::Bytes(bytes)
        }
    }

    /// Resolves once the pump has put something in (at once if something is there).
    pub(crate) async fn arrived(&self) {
        loop {
            if !self.queued.borrow().is_empty()
                || self.ended.get()
                || self.failed.borrow().is_some()
            {
                return;
            }
            self.arrived.notified().await;
        }
    }

    /// Payload bytes of the body pumped so far.
    pub(crate) fn received(&self) -> u64 {
        self.received.get()
    }

    /// How the body's reading failed, if it did.
    pub(crate) fn failure(&self) -> Option<RelayFailure> {
        self.failed.borrow_mut().take()
    }

    fn put(&self, payload: &[u8]) {
        if payload.is_empty() {
            return;
        }
        self.queued.borrow_mut().extend_from_slice(payload);
        self.received
            .set(self.received.get() + payload.len() as u64);
        self.arrived.notify_one();
    }

    fn end(&self) {
        self.ended.set(true);
        self.arrived.notify_one();
    }

    fn fail(&self, failure: RelayFailure) {
        *self.failed.borrow_mut() = Some(failure);
        self.arrived.notify_one();
    }

    /// Waits while the reader has not taken enough of what is queued.
    async fn room(&self) {
        while self.queued.borrow().len() >= QUEUED_MAX {
            self.taken.notified().await;
        }
    }
}

/// Moves the rest of the client's body into `relay` until it ends or fails; run beside the
/// response's sending, and dropped with it when the response ends first.
pub(crate) async fn pump(source: &mut BodySource<'_>, body: &mut BodyState, relay: &BodyRelay) {
    let mut payload = Vec::new();
    loop {
        payload.clear();
        while !source.buffered().is_empty() && !body.is_done() {
            let Ok(piece) = body.next(source.buffered()) else {
                relay.fail(RelayFailure::Invalid);
                return;
            };
            payload.extend_from_slice(&source.buffered()[piece.payload.clone()]);
            source.consume(piece.consumed);
            if piece.consumed == 0 {
                break;
            }
        }
        relay.put(&payload);
        if body.is_done() {
            if source.stream_open()
                && let Err(read) = source.end_of_stream(relay.timeout).await
            {
                relay.fail(RelayFailure::Read(read));
                return;
            }
            relay.end();
            return;
        }
        relay.room().await;
        match source.read_more(relay.timeout).await {
            BodyRead::More => {}
            failed => {
                relay.fail(RelayFailure::Read(failed));
                return;
            }
        }
    }
}

/// Runs `send` (the response's sending) with [`pump`] beside it until `send` ends; the
/// pump stops there if the body has not ended (what still comes is not read).
pub(crate) async fn send_beside<T>(
    send: impl std::future::Future<Output = T>,
    source: &mut BodySource<'_>,
    body: &mut BodyState,
    relay: &BodyRelay,
) -> T {
    let send = std::pin::pin!(send);
    let mut send = send;
    let pumped = pump(source, body, relay);
    tokio::select! {
        biased;
        sent = &mut send => sent,
        () = pumped => send.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_out_before_the_end() {
        let relay = BodyRelay::new(Duration::from_secs(1));
        assert_eq!(relay.take(), Relayed::Bytes(Vec::new()));
        relay.put(b"one");
        relay.put(b"two");
        relay.end();
        assert_eq!(relay.take(), Relayed::Bytes(b"onetwo".to_vec()));
        assert_eq!(relay.take(), Relayed::Ended);
        assert_eq!(relay.received(), 6);
    }

    #[test]
    fn a_failure_is_told_after_the_bytes() {
        let relay = BodyRelay::new(Duration::from_secs(1));
        relay.put(b"part");
        relay.fail(RelayFailure::Read(BodyRead::TimedOut));
        assert_eq!(relay.take(), Relayed::Bytes(b"part".to_vec()));
        assert_eq!(relay.take(), Relayed::Failed);
        assert_eq!(
            relay.failure(),
            Some(RelayFailure::Read(BodyRead::TimedOut))
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_pump_waits_for_room_and_the_reader_for_bytes() {
        let relay = BodyRelay::new(Duration::from_secs(1));
        relay.put(&vec![b'x'; QUEUED_MAX]);
        // Full: the room wait holds until the reader takes.
        let room = tokio::time::timeout(Duration::from_millis(20), relay.room()).await;
        assert!(room.is_err(), "a full relay makes the pump wait");
        assert!(matches!(relay.take(), Relayed::Bytes(bytes) if bytes.len() == QUEUED_MAX));
        tokio::time::timeout(Duration::from_millis(20), relay.room())
            .await
            .expect("room once taken");
        // Empty: the reader's wait holds until the pump puts something in.
        let arrived = tokio::time::timeout(Duration::from_millis(20), relay.arrived()).await;
        assert!(arrived.is_err(), "an empty relay makes the reader wait");
        relay.end();
        tokio::time::timeout(Duration::from_millis(20), relay.arrived())
            .await
            .expect("the end wakes the reader");
    }
}
