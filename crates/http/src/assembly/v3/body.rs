//! A request stream's body on its way from HTTP/3 DATA frames to the body reader: the
//! socket's task appends to the stream's [`Inbox`], the request's [`StreamFeed`] moves it
//! into the read-ahead the body reader consumes. A stream whose inbox holds
//! [`INBOX_MAX`] bytes is not read until the reader has taken them, so QUIC's flow control
//! holds the client back.

use std::time::Duration;

use quic::ConnectionId;

use crate::assembly::v3::socket::{INBOX_MAX, SocketState};
use crate::kernel::client::{BodyFeed, BodyRead, ReadAhead};

/// The body reader's side of one stream's inbox.
pub(crate) struct StreamFeed<'a> {
    pub(crate) state: &'a SocketState,
    pub(crate) connection: ConnectionId,
    pub(crate) stream_id: u64,
}

/// What one look at the inbox found.
enum Look {
    Moved,
    Closed,
    Refused(String),
    Wait,
}

impl StreamFeed<'_> {
    fn key(&self) -> (ConnectionId, u64) {
        (self.connection, self.stream_id)
    }

    fn take(&self, into: &mut ReadAhead) -> Look {
        let mut inboxes = self.state.inboxes.borrow_mut();
        let Some(inbox) = inboxes.get_mut(&self.key()) else {
            return Look::Closed;
        };
        if let Some(message) = &inbox.failed {
            return Look::Refused(message.clone());
        }
        if inbox.data.is_empty() {
            return if inbox.ended {
                Look::Closed
            } else {
                Look::Wait
            };
        }
        let was_full = inbox.data.len() >= INBOX_MAX;
        into.append(&inbox.data);
        inbox.data.clear();
        drop(inboxes);
        if was_full {
            // The stream was paused with a full inbox: it is read again.
            let mut endpoint = self.state.driver.endpoint();
            endpoint.resume_reading(self.connection, self.stream_id);
            drop(endpoint);
            self.state.driver.wake();
        }
        Look::Moved
    }

    /// Waits, at most until `deadline`, for the socket's task to take a turn.
    async fn turn(
        &self,
        progress: tokio::sync::futures::Notified<'_>,
        deadline: tokio::time::Instant,
    ) -> bool {
        tokio::time::timeout_at(deadline, progress).await.is_ok()
    }
}

impl BodyFeed for StreamFeed<'_> {
    fn whole_body_wanted(&self) {}

    fn interim(&self, status: u16, fields: &[(&[u8], &[u8])]) {
        use crate::assembly::v3::stream::field;
        let status = status.to_string();
        let head: Vec<http3::HeaderField> = std::iter::once(field(b":status", status.as_bytes()))
            .chain(
                fields
                    .iter()
                    .map(|(name, value)| field(&name.to_ascii_lowercase(), value)),
            )
            .collect();
        let _ = self.state.driver.endpoint().send_headers(
            self.connection,
            self.stream_id,
            &head,
            false,
        );
        self.state.driver.wake();
    }

    fn refused(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + '_>> {
        Box::pin(async move {
            loop {
                let progress = self.state.driver.progress();
                let failed = self
                    .state
                    .inboxes
                    .borrow()
                    .get(&self.key())
                    .and_then(|inbox| inbox.failed.clone());
                if let Some(message) = failed {
                    return message;
                }
                progress.await;
            }
        })
    }

    fn stream_ended(&self) -> bool {
        self.state
            .inboxes
            .borrow()
            .get(&self.key())
            .is_none_or(|inbox| inbox.ended)
    }

    fn end_of_stream(
        &self,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), BodyRead>> + '_>> {
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let progress = self.state.driver.progress();
                {
                    let inboxes = self.state.inboxes.borrow();
                    let Some(inbox) = inboxes.get(&self.key()) else {
                        return Err(BodyRead::Closed);
                    };
                    if let Some(message) = &inbox.failed {
                        return Err(BodyRead::Refused(message.clone()));
                    }
                    if inbox.ended {
                        return Ok(());
                    }
                }
                if !self.turn(progress, deadline).await {
                    return Err(BodyRead::TimedOut);
                }
            }
        })
    }

    fn next<'s>(
        &'s self,
        into: &'s mut ReadAhead,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = BodyRead> + 's>> {
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let progress = self.state.driver.progress();
                match self.take(into) {
                    Look::Moved => return BodyRead::More,
                    Look::Closed => return BodyRead::Closed,
                    Look::Refused(message) => return BodyRead::Refused(message),
                    Look::Wait => {}
                }
                if !self.turn(progress, deadline).await {
                    return BodyRead::TimedOut;
                }
            }
        })
    }
}
