//! A stream's request body on its way from DATA frames to the body reader: the connection's
//! loop appends to the stream's [`Inbox`], the request's [`StreamFeed`] moves it into the
//! read-ahead the body reader consumes, and only then gives the window back, so a client
//! never has more than the stream's window (`http2_body_preread_size`, or
//! [`WHOLE_BODY_WINDOW`] for a body read whole) waiting.

use std::time::Duration;

use crate::assembly::v2::connection::Shared;
use crate::kernel::client::{BodyFeed, ReadAhead};

/// The stream window of a body read whole before its request goes on (its bytes go to
/// memory or a temporary file as they come), when `http2_body_preread_size` is smaller.
/// nginx opens such a window to 2^31-1; a bounded one keeps what a stream may hold unread
/// at this size, and still lets a client send 192 KiB past the default 64 KiB without
/// waiting for a WINDOW_UPDATE.
const WHOLE_BODY_WINDOW: u32 = 256 * 1024;

/// The body reader's side of one stream's [`Inbox`].
pub(crate) struct StreamFeed<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) stream_id: u32,
}

/// What one look at the inbox found.
enum Look {
    Moved,
    Closed,
    Refused(String),
    Wait,
}

impl StreamFeed<'_> {
    fn take(&self, into: &mut ReadAhead) -> Look {
        let mut inboxes = self.shared.inboxes.borrow_mut();
        let Some(inbox) = inboxes.get_mut(&self.stream_id) else {
            return Look::Closed;
        };
        if let Some(message) = &inbox.failed {
            return Look::Refused(message.clone());
        }
        // A body read whole ends at END_STREAM, not where its `content-length` says, as
        // nginx's does: its last byte waits for it, so that the request does not go on
        // (upstream) before trailers that may refuse the stream (RFC 9113 §8.1).
        let held = usize::from(inbox.whole && !inbox.chunked && !inbox.ended);
        if inbox.data.len() <= held {
            return if inbox.ended {
                Look::Closed
            } else {
                Look::Wait
            };
        }
        let moved = inbox.data.len() - held;
        into.append(&inbox.data[..moved]);
        inbox.data.drain(..moved);
        let held = u32::try_from(held).unwrap_or(0);
        let released = inbox.unreleased.saturating_sub(held);
        inbox.unreleased -= released;
        drop(inboxes);
        self.shared
            .h2
            .borrow_mut()
            .release(self.stream_id, released);
        self.shared.wake.notify_one();
        Look::Moved
    }
}

impl BodyFeed for StreamFeed<'_> {
    fn interim(&self, status: u16, fields: &[(&[u8], &[u8])]) {
        let status = status.to_string();
        // HTTP/2 field names are in lower case.
        let names: Vec<Vec<u8>> = fields
            .iter()
            .map(|(name, _)| name.to_ascii_lowercase())
            .collect();
        let pairs = std::iter::once((b":status".as_slice(), status.as_bytes())).chain(
            names
                .iter()
                .zip(fields)
                .map(|(name, (_, value))| (name.as_slice(), *value)),
        );
        let _ = self
            .shared
            .h2
            .borrow_mut()
            .send_header_pairs(self.stream_id, pairs, false);
        self.shared.wake.notify_one();
    }

    fn whole_body_wanted(&self) {
        if let Some(inbox) = self.shared.inboxes.borrow_mut().get_mut(&self.stream_id) {
            inbox.whole = true;
        }
        self.shared
            .h2
            .borrow_mut()
            .widen_window(self.stream_id, WHOLE_BODY_WINDOW);
        self.shared.wake.notify_one();
    }

    fn refused(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + '_>> {
        Box::pin(async move {
            loop {
                let arrived = self.shared.progress.notified();
                let failed = self
                    .shared
                    .inboxes
                    .borrow()
                    .get(&self.stream_id)
                    .and_then(|inbox| inbox.failed.clone());
                if let Some(message) = failed {
                    return message;
                }
                arrived.await;
            }
        })
    }

    fn stream_ended(&self) -> bool {
        self.shared
            .inboxes
            .borrow()
            .get(&self.stream_id)
            .is_none_or(|inbox| inbox.ended)
    }

    fn end_of_stream(
        &self,
        timeout: Duration,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), crate::kernel::client::BodyRead>> + '_>,
    > {
        use crate::kernel::client::BodyRead;
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let arrived = self.shared.progress.notified();
                {
                    let inboxes = self.shared.inboxes.borrow();
                    let Some(inbox) = inboxes.get(&self.stream_id) else {
                        return Err(BodyRead::Closed);
                    };
                    if let Some(message) = &inbox.failed {
                        return Err(BodyRead::Refused(message.clone()));
                    }
                    if inbox.ended {
                        return Ok(());
                    }
                }
                if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                    return Err(BodyRead::TimedOut);
                }
            }
        })
    }

    fn next<'s>(
        &'s self,
        into: &'s mut ReadAhead,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = crate::kernel::client::BodyRead> + 's>>
    {
        use crate::kernel::client::BodyRead;
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let arrived = self.shared.progress.notified();
                match self.take(into) {
                    Look::Moved => return BodyRead::More,
                    Look::Closed => return BodyRead::Closed,
                    Look::Refused(message) => return BodyRead::Refused(message),
                    Look::Wait => {}
                }
                if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                    return BodyRead::TimedOut;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use crate::assembly::stream_body::Inbox;

    use tokio::sync::Notify;

    use super::*;

    fn shared_with(stream_id: u32, inbox: Inbox) -> Shared {
        let shared = Shared {
            h2: RefCell::new(http2::connection::Connection::new(Default::default())),
            wake: Notify::new(),
            progress: Notify::new(),
            inboxes: RefCell::default(),
            queued_since_write: Cell::new(0),
            after_response: RefCell::default(),
            spare_fields: RefCell::default(),
            cut: std::cell::Cell::new(false),
        };
        shared.inboxes.borrow_mut().insert(stream_id, inbox);
        shared
    }

    /// A body read whole (a buffered proxy's) is complete at END_STREAM, not at its
    /// `content-length`: its last byte waits, so trailers can still refuse the stream
    /// before the request goes on. A body read as it comes gets every byte at once.
    #[test]
    fn a_body_read_whole_ends_at_end_stream() {
        let shared = shared_with(1, Inbox::new(Some(5)));
        let feed = StreamFeed {
            shared: &shared,
            stream_id: 1,
        };
        feed.whole_body_wanted();
        let mut into = ReadAhead::new(64);
        let push = |payload: &[u8], end_stream| {
            let mut inboxes = shared.inboxes.borrow_mut();
            let inbox = inboxes.get_mut(&1).expect("the inbox");
            inbox.push(payload, end_stream);
        };
        push(b"hel", false);
        assert!(matches!(feed.take(&mut into), Look::Moved));
        assert_eq!(into.bytes(), b"he");
        push(b"lo", false);
        assert!(matches!(feed.take(&mut into), Look::Moved));
        assert_eq!(
            into.bytes(),
            b"hell",
            "all of content-length but its last byte"
        );
        assert!(matches!(feed.take(&mut into), Look::Wait));
        shared
            .inboxes
            .borrow_mut()
            .get_mut(&1)
            .expect("inbox")
            .end();
        assert!(matches!(feed.take(&mut into), Look::Moved));
        assert_eq!(into.bytes(), b"hello");
        assert!(matches!(feed.take(&mut into), Look::Closed));

        let shared = shared_with(3, Inbox::new(Some(5)));
        let feed = StreamFeed {
            shared: &shared,
            stream_id: 3,
        };
        let mut into = ReadAhead::new(64);
        shared
            .inboxes
            .borrow_mut()
            .get_mut(&3)
            .expect("inbox")
            .push(b"hello", false);
        assert!(matches!(feed.take(&mut into), Look::Moved));
        assert_eq!(into.bytes(), b"hello");
    }
}
