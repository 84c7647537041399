//! The upstream side of one gRPC stream once it is open: the connection's state machine,
//! the response head when it comes, the DATA not yet passed on (its window is given back
//! as the client takes it, so a slow client slows the server down), the trailers, and how
//! the stream ended.

use std::collections::VecDeque;

use http2::client::{ClientConnection, ClientEvent, HeadKind};
use http2::hpack::FieldList;

/// Relayed body bytes queued on the stream beyond which no more are taken until the
/// server's window takes them.
const RELAY_QUEUED_MAX: usize = 64 * 1024;

/// A response head: its status and fields (a head that ends the stream, a
/// "trailers-only" answer such as most gRPC errors, sets `GrpcBody::ended`).
pub(crate) struct GrpcHead {
    pub status: u16,
    pub fields: FieldList,
}

/// One gRPC stream of an upstream connection.
pub struct GrpcBody {
    pub(crate) h2: ClientConnection,
    pub(crate) stream_id: u32,
    /// Server bytes not yet whole frames.
    pub(crate) input: Vec<u8>,
    pub(crate) head: Option<GrpcHead>,
    /// DATA that arrived and is not passed on yet.
    pub(crate) pending: VecDeque<Vec<u8>>,
    /// The trailer fields, pseudo-fields left out.
    pub(crate) trailers: Vec<(Vec<u8>, Vec<u8>)>,
    /// The server ended the stream (END_STREAM on its DATA, head or trailers).
    pub(crate) ended: bool,
    /// The stream was reset or the connection failed: nginx's words for the log.
    pub(crate) broken: Option<String>,
    /// The trailers go on to the client (gRPC, `proxy_pass_trailers on`); else they
    /// are dropped.
    pub(crate) pass_trailers: bool,
    /// The rest of the client's body, while it goes on beside the response (the
    /// connection pumps it in; it is sent as DATA as the stream's window allows).
    pub(crate) relay: Option<std::rc::Rc<crate::kernel::body::relay::BodyRelay>>,
    /// A RST_STREAM came after the stream's end.
    late_reset: bool,
    /// `103 Early Hints` heads that came before the response head, not passed on yet.
    pub(crate) hints: Vec<FieldList>,
    /// DATA that came with a failure still goes out before it (gRPC's); else it is
    /// dropped (`proxy_http_version 2`).
    pub(crate) pass_partial: bool,
    /// The body bytes the head's `content-length` still promises.
    length_left: Option<u64>,
    /// DATA is counted against `length_left` as it arrives (the head has been read).
    counting: bool,
}

impl std::fmt::Debug for GrpcBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcBody")
            .field("stream_id", &self.stream_id)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl GrpcBody {
    pub(crate) fn new(h2: ClientConnection, stream_id: u32) -> GrpcBody {
        GrpcBody {
            h2,
            stream_id,
            input: Vec::new(),
            head: None,
            pending: VecDeque::new(),
            trailers: Vec::new(),
            ended: false,
            broken: None,
            relay: None,
            pass_trailers: true,
            late_reset: false,
            hints: Vec::new(),
            pass_partial: true,
            length_left: None,
            counting: false,
        }
    }

    /// Takes the server's bytes: whole frames are read (events taken), the rest kept.
    pub(crate) fn receive(&mut self, bytes: &[u8]) {
        if self.broken.is_some() {
            return;
        }
        self.input.extend_from_slice(bytes);
        match self.h2.receive(&self.input) {
            Ok(used) => {
                self.input.drain(..used);
            }
            Err(error) => {
                self.input.clear();
                // Worded for the upstream: the codec's own words name the client.
                self.broken = Some(format!(
                    "upstream sent invalid HTTP/2: {} (connection error {})",
                    error.reason().by("upstream"),
                    error.code()
                ));
            }
        }
        self.take_events();
    }

    /// The events of our stream, in order; a reset before the end breaks it.
    fn take_events(&mut self) {
        while let Some(event) = self.h2.poll_event() {
            match event {
                ClientEvent::Headers {
                    stream_id,
                    kind,
                    status,
                    fields,
                    end_stream,
                } if stream_id == self.stream_id => match kind {
                    HeadKind::Interim => {
                        if status == 103 && self.head.is_none() {
                            self.hints.push(fields);
                        }
                    }
                    HeadKind::Response => {
                        self.ended |= end_stream;
                        self.head = Some(GrpcHead { status, fields });
                    }
                    HeadKind::Trailers => {
                        self.ended = true;
                        self.check_length(0);
                        self.trailers = fields
                            .iter()
                            .filter(|field| !field.name.starts_with(b":"))
                            .map(|field| (field.name.to_vec(), field.value.to_vec()))
                            .collect();
                    }
                },
                ClientEvent::Data {
                    stream_id,
                    data,
                    end_stream,
                } if stream_id == self.stream_id => {
                    self.ended |= end_stream;
                    if self.counting {
                        self.check_length(data.len() as u64);
                    }
                    // DATA past the head's `content-length` is not passed on.
                    if !data.is_empty() && self.broken.is_none() {
                        self.pending.push_back(data);
                    }
                }
                ClientEvent::Reset {
                    stream_id,
                    code,
                    by_peer: true,
                    ..
                } if stream_id == self.stream_id && self.ended => {
                    // After the stream's end, one RST_STREAM saying NO_ERROR is allowed.
                    if code != http2::ErrorCode::NO_ERROR {
                        self.broken =
                            Some(format!("upstream rejected request with error {}", code.0));
                    } else if self.late_reset {
                        self.broken = Some("upstream sent frame for closed stream".to_owned());
                    }
                    self.late_reset = true;
                }
                ClientEvent::Reset {
                    stream_id,
                    code,
                    by_peer,
                    reason,
                } if stream_id == self.stream_id && !self.ended => {
                    self.broken = Some(match (by_peer, reason) {
                        (true, _) => format!("upstream rejected request with error {}", code.0),
                        (false, Some(reason)) => {
                            format!("upstream sent invalid HTTP/2: {}", reason.by("upstream"))
                        }
                        (false, None) => format!("upstream stream reset with error {}", code.0),
                    });
                }
                _ => {}
            }
        }
        if self.h2.is_failed() && !self.ended && self.broken.is_none() {
            self.broken = Some("upstream sent invalid HTTP/2".to_owned());
        }
    }

    /// Holds the body to the head's `content-length`, as nginx does.
    pub(crate) fn expect_length(&mut self, fields: &FieldList) {
        self.length_left = fields
            .iter()
            .find(|field| field.name == b"content-length")
            .and_then(|field| std::str::from_utf8(field.value).ok()?.parse().ok());
        // DATA that came with the head is counted now, the rest as it comes.
        let arrived = self.pending.iter().map(|piece| piece.len() as u64).sum();
        self.counting = true;
        self.check_length(arrived);
    }

    /// Counts `received` body bytes against `content-length`: more than it says, or the
    /// stream's end short of it, breaks the stream.
    fn check_length(&mut self, received: u64) {
        let Some(left) = self.length_left else {
            return;
        };
        if received > left {
            self.broken =
                Some("upstream sent response body larger than indicated content length".to_owned());
            return;
        }
        self.length_left = Some(left - received);
        if self.ended && left - received > 0 && self.broken.is_none() {
            self.broken = Some("upstream prematurely closed stream".to_owned());
        }
    }

    /// Sends on what the relay holds of the client's body while the stream takes more
    /// (its end as END_STREAM), and frames what the windows now allow of a body still
    /// queued; how the client's body failed, if it did.
    pub(crate) fn relay_body(&mut self) -> Result<(), crate::kernel::body::relay::RelayFailure> {
        use crate::kernel::body::relay::{RelayFailure, Relayed};
        let Some(relay) = &self.relay else {
            // A body sent whole may still wait for the server's windows (they open with
            // its WINDOW_UPDATE or SETTINGS, read with the response).
            if self.h2.queued(self.stream_id) > 0 {
                self.h2.flush();
            }
            return Ok(());
        };
        if self.ended || self.broken.is_some() {
            // The answer is over: the rest of the body is not wanted.
            self.relay = None;
            return Ok(());
        }
        if self.h2.queued(self.stream_id) >= RELAY_QUEUED_MAX {
            self.h2.flush();
            return Ok(());
        }
        match relay.take() {
            Relayed::Bytes(bytes) => {
                if !bytes.is_empty() {
                    let _ = self.h2.send_data(self.stream_id, &bytes, false);
                }
            }
            Relayed::Ended => {
                let _ = self.h2.send_data(self.stream_id, &[], true);
                self.relay = None;
            }
            Relayed::Failed => {
                let failure = relay
                    .failure()
                    .unwrap_or(RelayFailure::Read(crate::kernel::client::BodyRead::Closed));
                self.relay = None;
                return Err(failure);
            }
        }
        self.h2.flush();
        Ok(())
    }

    /// Whether the client's body is still relayed and the stream would take more of it.
    pub(crate) fn takes_relayed(&self) -> bool {
        self.relay.is_some() && self.h2.queued(self.stream_id) < RELAY_QUEUED_MAX
    }

    /// Moves the DATA that arrived into `out`, giving its window back to the server.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<u8>) {
        while let Some(piece) = self.pending.pop_front() {
            out.extend_from_slice(&piece);
            let len = u32::try_from(piece.len()).unwrap_or(u32::MAX);
            self.h2.release(self.stream_id, len);
        }
    }

    /// Whether the whole response has been passed on.
    pub(crate) fn is_finished(&self) -> bool {
        self.ended && self.pending.is_empty()
    }

    /// The trailers, once (for the response's trailer section).
    pub(crate) fn take_trailers(&mut self) -> Vec<(Vec<u8>, Vec<u8>)> {
        std::mem::take(&mut self.trailers)
    }

    /// The connection's state for the keep-alive cache, when the stream is over cleanly
    /// and the connection has nothing half-read, unwritten or refused.
    pub(crate) fn into_idle_state(self) -> Option<Box<dyn std::any::Any + Send>> {
        let whole = self.is_finished()
            && self.broken.is_none()
            && self.input.is_empty()
            && !self.h2.wants_write()
            && !self.h2.is_failed()
            && self.h2.open_streams() == 0
            && self.h2.can_open_stream();
        whole.then(|| Box::new(self.h2) as Box<dyn std::any::Any + Send>)
    }

    /// Resets the stream with CANCEL when it has not ended, and writes that now if the
    /// socket takes it (the connection is about to close).
    pub(crate) fn cancel(&mut self, stream: &runtime::Stream) {
        if self.ended || self.broken.is_some() {
            return;
        }
        self.h2.reset(self.stream_id, http2::ErrorCode::CANCEL);
        self.ended = true;
        let _ = self.write_now(stream);
    }

    /// Writes what the connection has to say (WINDOW_UPDATE, SETTINGS and PING answers)
    /// as far as the socket takes it now; the rest waits for the next call.
    pub(crate) fn write_now(&mut self, stream: &runtime::Stream) -> std::io::Result<()> {
        while self.h2.wants_write() {
            match stream.try_write(self.h2.output()) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(written) => self.h2.advance_output(written),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http2::client::ClientConfig;
    use http2::frame::Frame;
    use http2::hpack::{Encoder, HeaderField};

    /// A stream opened on a new connection, and the server's encoder.
    fn opened() -> (GrpcBody, Encoder) {
        let mut h2 = ClientConnection::new(ClientConfig::default());
        let head = [
            (b":method".as_slice(), b"POST".as_slice()),
            (b":scheme", b"http"),
            (b":path", b"/test.Svc/Call"),
            (b":authority", b"localhost"),
        ]
        .map(|(name, value)| HeaderField {
            name: name.to_vec(),
            value: value.to_vec(),
            sensitive: false,
        });
        let stream_id = h2.open_stream(&head, true).expect("a stream opens");
        (GrpcBody::new(h2, stream_id), Encoder::new())
    }

    fn settings() -> Vec<u8> {
        let mut out = Vec::new();
        Frame::Settings {
            ack: false,
            params: &[],
        }
        .write(&mut out);
        out
    }

    fn headers(encoder: &mut Encoder, fields: &[(&[u8], &[u8])], end_stream: bool) -> Vec<u8> {
        let mut block = Vec::new();
        for (name, value) in fields {
            encoder.field(name, value, false, &mut block);
        }
        let mut out = Vec::new();
        Frame::Headers {
            stream_id: 1,
            priority: None,
            fragment: &block,
            padding: None,
            end_stream,
            end_headers: true,
        }
        .write(&mut out);
        out
    }

    fn data(bytes: &[u8], end_stream: bool) -> Vec<u8> {
        let mut out = Vec::new();
        Frame::Data {
            stream_id: 1,
            data: bytes,
            padding: None,
            end_stream,
        }
        .write(&mut out);
        out
    }

    #[test]
    fn head_data_and_trailers_arrive_in_any_pieces() {
        let (mut body, mut encoder) = opened();
        let mut wire = settings();
        wire.extend(headers(&mut encoder, &[(b":status", b"200")], false));
        wire.extend(data(b"hello", false));
        wire.extend(headers(
            &mut encoder,
            &[(b"grpc-status", b"0"), (b"x-trailer", b"t1")],
            true,
        ));
        // One byte at a time: frames are read only once whole.
        for byte in &wire {
            body.receive(std::slice::from_ref(byte));
        }
        assert!(body.broken.is_none(), "{:?}", body.broken);
        assert_eq!(body.head.as_ref().map(|head| head.status), Some(200));
        let mut out = Vec::new();
        body.drain_into(&mut out);
        assert_eq!(out, b"hello");
        assert!(body.is_finished());
        assert_eq!(
            body.take_trailers(),
            vec![
                (b"grpc-status".to_vec(), b"0".to_vec()),
                (b"x-trailer".to_vec(), b"t1".to_vec())
            ]
        );
        // Once what the connection had to say is written, it may be kept.
        assert!(body.h2.wants_write());
        let written = body.h2.output().len();
        body.h2.advance_output(written);
        assert!(
            body.into_idle_state().is_some(),
            "a clean end keeps the connection"
        );
    }

    #[test]
    fn a_body_short_of_its_content_length_breaks_the_stream() {
        let (mut body, mut encoder) = opened();
        let mut wire = settings();
        wire.extend(headers(
            &mut encoder,
            &[(b":status", b"200"), (b"content-length", b"42")],
            false,
        ));
        body.receive(&wire);
        let head = body.head.take().expect("the head");
        body.expect_length(&head.fields);
        body.receive(&data(b"short", true));
        assert_eq!(
            body.broken.as_deref(),
            Some("upstream prematurely closed stream")
        );
        assert!(body.into_idle_state().is_none());
    }

    #[test]
    fn a_body_past_its_content_length_breaks_the_stream() {
        let (mut body, mut encoder) = opened();
        let mut wire = settings();
        wire.extend(headers(
            &mut encoder,
            &[(b":status", b"200"), (b"content-length", b"2")],
            false,
        ));
        wire.extend(data(b"more than two", false));
        body.receive(&wire);
        let head = body.head.take().expect("the head");
        body.expect_length(&head.fields);
        assert!(
            body.broken
                .as_deref()
                .is_some_and(|message| message.contains("larger than indicated")),
            "{:?}",
            body.broken
        );
    }

    #[test]
    fn a_broken_frame_is_told_as_the_upstreams() {
        let (mut body, _) = opened();
        let mut wire = settings();
        // A frame header announcing 4 MiB of a DATA frame, past the default frame size.
        wire.extend_from_slice(&[0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]);
        body.receive(&wire);
        let broken = body.broken.clone().expect("the stream breaks");
        assert!(
            broken.starts_with("upstream sent invalid HTTP/2: upstream sent frame with too long"),
            "{broken}"
        );
        assert!(!broken.contains("client"), "{broken}");
    }

    #[test]
    fn a_reset_before_the_end_is_nginxs_rejection() {
        let (mut body, _) = opened();
        let mut wire = settings();
        Frame::RstStream {
            stream_id: 1,
            code: http2::ErrorCode(2),
        }
        .write(&mut wire);
        body.receive(&wire);
        assert_eq!(
            body.broken.as_deref(),
            Some("upstream rejected request with error 2")
        );
    }
}
