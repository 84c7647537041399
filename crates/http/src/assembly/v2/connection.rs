//! An HTTP/2 connection (h2c with prior knowledge): the client preface detected on a
//! cleartext address where `http2` is on, then one loop that reads frames into the
//! `http2` state machine, starts a stream's request when its head (and body) are in, and
//! writes what the streams queued, under both flow-control windows.
//!
//! The streams' requests run as futures polled by this connection's task (no task per
//! stream): they borrow the worker, the connection and its state, and a request waiting
//! for the pool or for window wakes this task like any other.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use http2::connection::{Connection as H2, Event, PREFACE};
use http2::request::FieldPolicy;
use http2::{ErrorCode, Reason};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::assembly::connection::Connection;
use crate::assembly::stream_body::Inbox;
use crate::assembly::v2::stream::{Opened, Started, run_stream};
use crate::kernel::conf::AddressConf;
use crate::kernel::worker::HttpWorker;

/// How often a connection looks whether its worker is draining (nginx sends GOAWAY at
/// once; Portico within this).
const DRAIN_CHECK: Duration = Duration::from_millis(250);

/// How long one poll of a connection's streams may run before the worker's other tasks
/// get a turn.
const POLL_SLICE: Duration = Duration::from_millis(2);

/// Streams polled between two looks at the clock within one poll of the streams.
const SLICE_CHECK_EVERY: usize = 4;

/// How long an idle connection keeps its finished streams' requests and field lists for
/// the next streams (the loop looks at least every `DRAIN_CHECK`).
const SPARES_KEPT_IDLE: Duration = Duration::from_millis(100);

/// Bytes a connection writes before it lets the worker's other tasks run.
const YIELD_AFTER: usize = 256 * 1024;

/// Pieces of output (frame headers, payloads, runs of control frames) in one `writev`.
const WRITE_SLICES_MAX: usize = 128;

/// Body bytes the streams may queue in one poll before the connection writes: a file piece
/// then goes to the socket while it is still in the CPU's cache, rather than after every
/// other stream has read its own (100 streams reading 64 KiB each made the copies to and
/// from the kernel a quarter slower, `bench/h2.sh` h2c-static).
const QUEUED_PER_POLL_MAX: usize = 256 * 1024;

/// The protocol state and the wake-ups shared by the connection's loop and its streams.
pub(crate) struct Shared {
    pub(crate) h2: RefCell<H2>,
    /// A stream queued output: the loop flushes and writes.
    pub(crate) wake: Notify,
    /// Output was written, window or body bytes arrived: streams waiting look again.
    pub(crate) progress: Notify,
    /// The request bodies arriving, by stream, until their request ends (foldhash: every
    /// DATA frame looks its stream up).
    pub(crate) inboxes: RefCell<HashMap<u32, Inbox, foldhash::fast::RandomState>>,
    /// Body bytes the streams queued since the connection last wrote.
    pub(crate) queued_since_write: Cell<usize>,
    /// Streams whose response is out and whose request still runs what comes after it
    /// (mirrors, `post_action`, a background cache refresh): they finish even when the
    /// connection closes first.
    pub(crate) after_response: RefCell<Vec<u32>>,
    /// Field lists of heads already encoded, kept with their memory for the next ones.
    pub(crate) spare_fields: RefCell<Vec<crate::kernel::response::FieldList>>,
    /// `worker_shutdown_timeout` passed: the streams' requests stop where they are. The
    /// connection waits for the worker's word once for all of its streams.
    pub(crate) cut: Cell<bool>,
}

impl Shared {
    /// Resets one stream and wakes the loop to send the RST_STREAM.
    pub(crate) fn reset_stream(&self, stream_id: u32, code: ErrorCode) {
        self.h2.borrow_mut().reset(stream_id, code);
        self.wake.notify_one();
    }
}

type StreamFuture<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// The default server's rules for the connection's streams.
struct Rules {
    policy: FieldPolicy,
    /// `keepalive_requests`: the stream that reaches it is the last (GOAWAY follows).
    keepalive_requests: u64,
    /// `keepalive_time`: a stream started after it is the last.
    keepalive_time: Duration,
}

/// The connection's running requests.
#[derive(Default)]
struct Streams<'a> {
    running: Vec<(u32, StreamFuture<'a>)>,
    /// Where `poll_streams` goes on from.
    cursor: usize,
    /// Requests started (`$connection_requests` of the latest).
    started: u64,
    /// Streams reset because their head did not come in time: their late head is dropped.
    timed_out: Vec<u32>,
}

/// What woke the loop.
enum Woken {
    Readable,
    Writable,
    StreamDone,
    Queued,
    TimedOut,
}

/// Reads the first bytes of a connection on an address where HTTP/2 may be spoken: a
/// client preface makes it an HTTP/2 connection, served here to its end (`None`); HTTP/1's
/// start ([`FirstLine::Http1`]) is given back with the bytes read in its read-ahead. A
/// method followed by a line that is not HTTP/1 is a broken preface: GOAWAY
/// (PROTOCOL_ERROR), as RFC 9113 §3.4 wants and as nginx 1.22's `listen ... http2` answers
/// (nginx 1.25 and later answer it as HTTP/1, with 400).
pub(crate) async fn detect(
    worker: &HttpWorker,
    address: &AddressConf,
    mut connection: Connection,
) -> Option<Connection> {
    let conf = worker.conf();
    let default_server = conf.server(address.default_server);
    if let Some(handshake) = &connection.info.tls {
        // Over TLS, ALPN decided (the server SNI chose offered `h2` when it has `http2 on`).
        if handshake.alpn() != Some(b"h2") {
            return Some(connection);
        }
        serve(worker, address, connection).await;
        return None;
    }
    // Plain text on a TLS address is HTTP/1's to refuse (nginx's 400), never h2c.
    if address.ssl || !(address.http2 || default_server.v2.enable) {
        return Some(connection);
    }
    let timeout = default_server.core.client_header_timeout;
    let deadline = Instant::from_std(connection.info.accepted) + timeout;
    loop {
        let ahead = &mut connection.read_ahead;
        let filled = ahead.filled;
        let seen = filled.min(PREFACE.len());
        if ahead.buf[..seen] != PREFACE[..seen] {
            match first_line(&ahead.buf[..filled]) {
                FirstLine::Http1 => return Some(connection),
                FirstLine::Other => {
                    serve(worker, address, connection).await;
                    return None;
                }
                // A line longer than the buffer is HTTP/1's to refuse or to read on.
                FirstLine::Incomplete if filled == ahead.buf.len() => return Some(connection),
                FirstLine::Incomplete => {}
            }
        } else if seen == PREFACE.len() {
            serve(worker, address, connection).await;
            return None;
        } else if filled == ahead.buf.len() {
            ahead.buf.resize(filled + PREFACE.len(), 0);
        }
        match connection.stream.try_read(&mut ahead.buf[filled..]) {
            Ok(0) => return Some(connection),
            Ok(count) => ahead.filled += count,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                let ready = tokio::time::timeout_at(deadline, connection.stream.readable()).await;
                if !matches!(ready, Ok(Ok(()))) {
                    // HTTP/1's reading reports the timeout or the failure as it does.
                    return Some(connection);
                }
            }
            Err(_) => return Some(connection),
        }
    }
}

/// What the first line of a connection that is not the HTTP/2 preface looks like.
#[derive(Debug, PartialEq, Eq)]
enum FirstLine {
    /// HTTP/1 reads it, and answers it with 400 if its details are wrong: a line that
    /// does not start with a method (upper-case letters, `_`, `-`; refused at once, as
    /// nginx refuses it), or `METHOD TARGET` (HTTP/0.9), or ending with an `HTTP/` version.
    Http1,
    /// Neither HTTP/1 nor HTTP/2: a method alone, or words after it that end without a
    /// version.
    Other,
    /// A method so far, and no line feed yet.
    Incomplete,
}

fn first_line(bytes: &[u8]) -> FirstLine {
    let method_end = bytes
        .iter()
        .position(|&byte| byte == b' ')
        .unwrap_or(bytes.len());
    let method = &bytes[..method_end];
    let valid_method = |method: &[u8]| {
        !method.is_empty()
            && method
                .iter()
                .all(|&byte| byte.is_ascii_uppercase() || byte == b'_' || byte == b'-')
    };
    let line_end = bytes.iter().position(|&byte| byte == b'\n');
    let method = match line_end {
        Some(end) if end < method_end => bytes[..end].strip_suffix(b"\r").unwrap_or(method),
        _ => method,
    };
    if !bytes.is_empty() && !valid_method(method) {
        return FirstLine::Http1;
    }
    let Some(end) = line_end else {
        return FirstLine::Incomplete;
    };
    let line = bytes[..end].strip_suffix(b"\r").unwrap_or(&bytes[..end]);
    let words: Vec<&[u8]> = line
        .split(|&byte| byte == b' ')
        .filter(|word| !word.is_empty())
        .collect();
    let versioned = words.len() >= 3
        && words.last().is_some_and(|version| {
            version
                .get(..5)
                .is_some_and(|start| start.eq_ignore_ascii_case(b"HTTP/"))
        });
    if words.len() == 2 || versioned {
        FirstLine::Http1
    } else {
        FirstLine::Other
    }
}

/// Serves an HTTP/2 connection whose preface is in `connection.read_ahead`.
async fn serve(worker: &HttpWorker, address: &AddressConf, connection: Connection) {
    let conf = worker.conf();
    let server = conf.server(address.default_server);
    let location = &conf.location(server.location).settings;
    let config = server
        .v2
        .connection_config(&server.core, location.v2.chunk_size);
    let idle_timeout = location.core.keepalive_timeout.timeout;
    let send_timeout = location.core.send_timeout;
    let header_timeout = server.core.client_header_timeout;
    let rules = Rules {
        policy: FieldPolicy {
            underscores: server.core.underscores_in_headers,
            ignore_invalid: server.core.ignore_invalid_headers,
        },
        keepalive_requests: location.core.keepalive_requests,
        keepalive_time: location.core.keepalive_time,
    };
    let socket = connection.stream;
    let info = connection.info;
    let mut input = connection.read_ahead.bytes().to_vec();
    let shared = Shared {
        h2: RefCell::new(H2::new(config)),
        wake: Notify::new(),
        progress: Notify::new(),
        inboxes: RefCell::default(),
        queued_since_write: Cell::new(0),
        after_response: RefCell::default(),
        spare_fields: RefCell::default(),
        cut: Cell::new(false),
    };
    let read_size = usize::try_from(conf.v2.recv_buffer_size).unwrap_or(usize::MAX);
    let mut buffer = vec![0; read_size.clamp(PREFACE.len() * 2, 64 * 1024)];
    // Declared before the streams, which borrow it.
    let spare_requests = RefCell::new(Vec::new());
    let mut streams = Streams::default();
    let mut idle_since = Instant::now();
    let mut stalled_since: Option<Instant> = None;
    let mut going_away = false;
    // A new stream's HEADERS frame that has arrived in part, and since when: past
    // `client_header_timeout` the stream is reset, as nginx resets it.
    let mut partial_head: Option<(Instant, u32)> = None;
    let mut since_yield = 0;
    // A connection error was sent: nothing more is read.
    let mut failed = false;
    let cut_requested = worker.requests_cut();
    tokio::pin!(cut_requested);
    let closing = loop {
        if !input.is_empty() && !failed {
            let started = Started {
                worker,
                address,
                info: &info,
                socket: &socket,
                shared: &shared,
                spare_requests: &spare_requests,
            };
            let used = shared.h2.borrow_mut().receive(&input);
            match used {
                Ok(used) => drop(input.drain(..used)),
                Err(error) => {
                    input.clear();
                    failed = true;
                    // nginx logs a client's protocol errors and floods at `info`.
                    started.log_malformed(&error.to_string());
                    if matches!(error.reason(), Reason::Flood(_)) {
                        // A flooding client is cut off at once: its GOAWAY goes if the
                        // socket takes it now, and neither `send_timeout` nor a lingering
                        // close waits for a client that does not read.
                        let _ = write_output(&socket, &shared, &mut since_yield);
                        break Closing::Cut;
                    }
                }
            }
            dispatch(&started, &mut streams, &rules);
            shared.progress.notify_waiters();
            partial_head = partial_head_of(&input, &shared).map(|stream_id| match partial_head {
                Some((since, same)) if same == stream_id => (since, stream_id),
                _ => (Instant::now(), stream_id),
            });
        }
        if !going_away && !worker.is_running() {
            going_away = true;
            shared.h2.borrow_mut().go_away(ErrorCode::NO_ERROR);
        }
        let blocked = match write_output(&socket, &shared, &mut since_yield) {
            Ok(blocked) => blocked,
            Err(()) => break Closing::Now,
        };
        // A client that reads as fast as the streams produce, or sends as fast as the loop
        // reads, would keep this task busy for ever (a socket that stays readable never
        // makes it wait): other connections of the worker get their turn every
        // YIELD_AFTER bytes written or read.
        if since_yield >= YIELD_AFTER {
            since_yield = 0;
            tokio::task::yield_now().await;
        }
        if blocked {
            stalled_since.get_or_insert_with(Instant::now);
        } else {
            stalled_since = None;
        }
        // A stream whose request is done may still have DATA waiting for window.
        let idle = streams.running.is_empty() && shared.h2.borrow().active_streams() == 0;
        if shared.h2.borrow().is_done() && !blocked {
            break Closing::Linger;
        }
        if idle && going_away && !blocked {
            break Closing::Linger;
        }
        if !idle {
            idle_since = Instant::now();
        } else if idle_since.elapsed() >= SPARES_KEPT_IDLE {
            // An idle connection holds no request, as an HTTP/1 one lets its go.
            spare_requests.borrow_mut().clear();
            shared.spare_fields.borrow_mut().clear();
        }
        // `client_header_timeout` until the first request, then `keepalive_timeout`.
        let wait_max = if streams.started == 0 {
            header_timeout
        } else {
            idle_timeout
        };
        let deadline = match stalled_since {
            Some(since) => since + send_timeout,
            None if idle => idle_since + wait_max,
            None => Instant::now() + Duration::from_secs(3600),
        };
        // A head arriving is not idleness: its own timeout applies.
        let deadline = match partial_head {
            Some((since, _)) if stalled_since.is_none() => since + header_timeout,
            Some((since, _)) => deadline.min(since + header_timeout),
            None => deadline,
        };
        // While the worker runs, the loop also wakes every `DRAIN_CHECK` to see whether a
        // reload or a stop asks for GOAWAY.
        let wake_at = if going_away {
            deadline
        } else {
            deadline.min(Instant::now() + DRAIN_CHECK)
        };
        let woken = tokio::select! {
            biased;
            () = poll_streams(&mut streams.running, &mut streams.cursor, &shared) => Woken::StreamDone,
            () = shared.wake.notified() => Woken::Queued,
            () = &mut cut_requested, if !shared.cut.get() => {
                // The streams see it when they are polled next, at once.
                shared.cut.set(true);
                Woken::StreamDone
            }
            ready = socket.writable(), if blocked => match ready {
                Ok(()) => Woken::Writable,
                Err(_) => break Closing::Now,
            },
            ready = socket.readable(), if !failed => match ready {
                Ok(()) => Woken::Readable,
                Err(_) => break Closing::Now,
            },
            () = tokio::time::sleep_until(wake_at) => Woken::TimedOut,
        };
        match woken {
            Woken::Readable => match socket.try_read(&mut buffer) {
                Ok(0) => break Closing::Now,
                Ok(count) => {
                    // Idleness is silence: any frame starts it over.
                    idle_since = Instant::now();
                    since_yield += count;
                    input.extend_from_slice(&buffer[..count]);
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break Closing::Now,
            },
            Woken::TimedOut if Instant::now() < deadline => {}
            Woken::TimedOut
                if partial_head
                    .is_some_and(|(since, _)| since + header_timeout <= Instant::now()) =>
            {
                if let Some((_, stream_id)) = partial_head.take() {
                    shared
                        .h2
                        .borrow_mut()
                        .reset(stream_id, ErrorCode::PROTOCOL_ERROR);
                    streams.timed_out.push(stream_id);
                }
            }
            Woken::TimedOut if stalled_since.is_some() => break Closing::Now,
            Woken::TimedOut => {
                // nginx closes an idle HTTP/2 connection with GOAWAY after keepalive_timeout.
                shared.h2.borrow_mut().go_away(ErrorCode::NO_ERROR);
                let _ = write_output(&socket, &shared, &mut since_yield);
                break Closing::Linger;
            }
            Woken::Writable | Woken::StreamDone | Woken::Queued => {}
        }
    };
    // The work after a response goes on without the client, as over HTTP/1; the rest of
    // the requests end with the connection.
    let after_response = shared.after_response.borrow().clone();
    streams
        .running
        .retain(|(id, _)| after_response.contains(id));
    while !streams.running.is_empty() {
        tokio::select! {
            biased;
            () = poll_streams(&mut streams.running, &mut streams.cursor, &shared) => {}
            () = &mut cut_requested, if !shared.cut.get() => shared.cut.set(true),
        }
    }
    drop(streams);
    // nginx has written a request's log line before it closes the connection.
    crate::kernel::log_buffers::log_lines_written(worker).await;
    if closing == Closing::Cut {
        return;
    }
    // A TLS session may hold encrypted output the socket has not taken yet.
    if socket.flush_timed(send_timeout).await.is_err() {
        return;
    }
    if closing == Closing::Linger {
        linger(
            &socket,
            location.core.lingering_time,
            location.core.lingering_timeout,
        )
        .await;
    }
}

/// How the connection ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Closing {
    /// The socket failed or the client closed: nothing more to say.
    Now,
    /// After GOAWAY: our side is shut and what the client still sends is read and dropped
    /// (within `lingering_time`, each wait `lingering_timeout`), so a close with unread
    /// input does not reset the connection and lose the answers in flight, as nginx's
    /// lingering close for HTTP/2 avoids.
    Linger,
    /// A flood: closed at once, whatever output is left.
    Cut,
}

async fn linger(socket: &runtime::Stream, time: Duration, timeout: Duration) {
    let _ = socket.shutdown_write();
    let end = Instant::now() + time;
    let mut buffer = [0; 4096];
    let mut since_yield = 0;
    loop {
        // A read that finds bytes waiting returns before its timeout is looked at.
        let now = Instant::now();
        if now >= end {
            return;
        }
        match tokio::time::timeout_at(end.min(now + timeout), socket.read(&mut buffer)).await {
            Ok(Ok(count)) if count > 0 => since_yield += count,
            _ => return,
        }
        // Nor does it let the worker's other tasks run: a client that keeps sending would
        // hold the worker for all of `lingering_time`.
        if since_yield >= YIELD_AFTER {
            since_yield = 0;
            tokio::task::yield_now().await;
        }
    }
}

/// Turns the events the last input produced into streams: a head starts a request at
/// once (its body, if any, arrives in its inbox); a reset stream's request is dropped.
fn dispatch<'a>(started: &Started<'a>, streams: &mut Streams<'a>, rules: &Rules) {
    let mut old = None;
    loop {
        let event = started.shared.h2.borrow_mut().poll_event();
        let Some(event) = event else {
            return;
        };
        match event {
            Event::Headers {
                stream_id,
                fields,
                trailers: true,
                ..
            } => {
                // Trailers are not passed on, but malformed ones end the request before it
                // goes anywhere (RFC 9113 §8.1; nginx closes the connection for any).
                if let Err(malformed) = http2::request::check_trailers(&fields) {
                    started.log_malformed(malformed.message());
                    refuse_stream(started, streams, stream_id);
                    continue;
                }
                if let Some(inbox) = started.shared.inboxes.borrow_mut().get_mut(&stream_id) {
                    inbox.end();
                }
            }
            Event::Headers {
                stream_id,
                fields,
                end_stream,
                block_len,
                ..
            } => {
                if let Some(at) = streams.timed_out.iter().position(|&id| id == stream_id) {
                    streams.timed_out.swap_remove(at);
                    let mut h2 = started.shared.h2.borrow_mut();
                    h2.reset(stream_id, ErrorCode::PROTOCOL_ERROR);
                    continue;
                }
                count_request(started, streams, rules, &mut old);
                let connect = fields
                    .iter()
                    .any(|field| field.name == b":method" && field.value == b"CONNECT");
                let head = if connect {
                    // nginx serves no CONNECT: 405, whatever the other fields.
                    Err(405)
                } else {
                    match http2::request::parse(fields, rules.policy) {
                        Ok(head) => Ok(head),
                        Err(malformed) => {
                            started.log_malformed(malformed.message());
                            if malformed.resets_stream() {
                                refuse_stream(started, streams, stream_id);
                                continue;
                            }
                            Err(400)
                        }
                    }
                };
                let body = !end_stream && head.is_ok();
                if let (true, Ok(head)) = (body, &head) {
                    let declared = head
                        .content_length()
                        .and_then(|value| std::str::from_utf8(value).ok()?.parse().ok());
                    let inbox = Inbox::new(declared);
                    started.shared.inboxes.borrow_mut().insert(stream_id, inbox);
                }
                let opened = Opened {
                    stream_id,
                    requests: streams.started,
                    head,
                    block_len,
                    body,
                };
                let future = run_stream(started.clone(), opened);
                streams.running.push((stream_id, Box::pin(future)));
            }
            Event::Data {
                stream_id,
                data,
                end_stream,
            } => {
                let mut inboxes = started.shared.inboxes.borrow_mut();
                match inboxes.get_mut(&stream_id) {
                    Some(inbox) => inbox.push(&data, end_stream),
                    None => {
                        // Nobody reads this body any more: its window goes back at once.
                        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
                        started.shared.h2.borrow_mut().release(stream_id, len);
                    }
                }
            }
            Event::Reset { stream_id, .. } => {
                remove_inbox(started.shared, stream_id);
                streams.running.retain(|(id, _)| *id != stream_id);
            }
            Event::GoAway { .. } => {}
        }
    }
}

/// Drops a stream's body inbox, if it has one (most streams have none: the map is not
/// looked into then).
pub(crate) fn remove_inbox(shared: &Shared, stream_id: u32) -> Option<Inbox> {
    let mut inboxes = shared.inboxes.borrow_mut();
    if inboxes.is_empty() {
        return None;
    }
    inboxes.remove(&stream_id)
}

/// Resets a stream whose head or trailers are malformed (PROTOCOL_ERROR) and drops its
/// request and body, if they started.
fn refuse_stream(started: &Started<'_>, streams: &mut Streams<'_>, stream_id: u32) {
    started
        .shared
        .h2
        .borrow_mut()
        .reset(stream_id, ErrorCode::PROTOCOL_ERROR);
    started.shared.inboxes.borrow_mut().remove(&stream_id);
    streams.running.retain(|(id, _)| *id != stream_id);
}

/// The stream a HEADERS frame at the front of `input` opens, when the frame has arrived
/// only in part.
fn partial_head_of(input: &[u8], shared: &Shared) -> Option<u32> {
    let header = input.first_chunk::<9>()?;
    let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
    let stream_id = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
    let new = stream_id > shared.h2.borrow().last_stream_id();
    (header[3] == http2::frame::kind::HEADERS && input.len() < 9 + length && new)
        .then_some(stream_id)
}

/// Counts a new request; the one that reaches `keepalive_requests`, or comes after
/// `keepalive_time`, is the connection's last: GOAWAY names it, as nginx's does.
///
/// `old` is whether the connection is past `keepalive_time`, read from the clock once for
/// all the heads of one input.
fn count_request(
    started: &Started<'_>,
    streams: &mut Streams<'_>,
    rules: &Rules,
    old: &mut Option<bool>,
) {
    streams.started += 1;
    let old = *old.get_or_insert_with(|| started.info.accepted.elapsed() > rules.keepalive_time);
    if streams.started >= rules.keepalive_requests || old {
        started.shared.h2.borrow_mut().go_away(ErrorCode::NO_ERROR);
    }
}

/// Polls the streams' requests, from where the last call stopped; ready when one of them
/// has finished (and is removed), or when they queued [`QUEUED_PER_POLL_MAX`] bytes since
/// the last write (the connection writes them, then polls the rest). A call also stops
/// after `POLL_SLICE` and wakes the task again, so a connection with many busy streams
/// lets the worker's other tasks run in between; streams that only wait cost a look each
/// and never a busy loop.
async fn poll_streams(
    streams: &mut Vec<(u32, StreamFuture<'_>)>,
    cursor: &mut usize,
    shared: &Shared,
) {
    std::future::poll_fn(|context| {
        let started = std::time::Instant::now();
        let mut finished = false;
        let mut looked = 0;
        while looked < streams.len() {
            if *cursor >= streams.len() {
                *cursor = 0;
            }
            looked += 1;
            if streams[*cursor].1.as_mut().poll(context).is_ready() {
                drop(streams.swap_remove(*cursor));
                finished = true;
            } else {
                *cursor += 1;
            }
            if looked < streams.len() && shared.queued_since_write.get() >= QUEUED_PER_POLL_MAX {
                // The streams not looked at yet are polled after the write.
                context.waker().wake_by_ref();
                return Poll::Ready(());
            }
            // The clock is read every few streams: a read costs more than most polls.
            if looked < streams.len()
                && looked % SLICE_CHECK_EVERY == 0
                && started.elapsed() >= POLL_SLICE
            {
                context.waker().wake_by_ref();
                break;
            }
        }
        if finished {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Frames what the streams queued and writes as much output as the socket takes.
/// `Ok(true)` when output is left (the socket is full); `Err` when the socket failed.
/// Also adds the bytes written to `written`.
fn write_output(
    socket: &runtime::Stream,
    shared: &Shared,
    written: &mut usize,
) -> Result<bool, ()> {
    let mut h2 = shared.h2.borrow_mut();
    let before = *written;
    let mut blocked = false;
    loop {
        h2.flush();
        if !h2.wants_write() {
            break;
        }
        let mut slices = [IoSlice::new(&[]); WRITE_SLICES_MAX];
        let filled = h2.output_slices(&mut slices);
        match socket.try_write_vectored(&slices[..filled]) {
            Ok(count) => {
                h2.advance_output(count);
                *written += count;
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                blocked = true;
                break;
            }
            Err(_) => return Err(()),
        }
    }
    drop(h2);
    shared.queued_since_write.set(0);
    if *written > before {
        shared.progress.notify_waiters();
    }
    Ok(blocked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_line_is_http1_or_not() {
        for line in [
            "GET / HTTP/1.1\r\n",
            "GET /index.html HTTP/1.0\n",
            "GET  /a%20b  http/1.1\r\n",
            "GET /a b HTTP/1.1\r\n",
            "PRI * HTTP/1.1\r\n",
            "PRI * HTTP/2.0\r\n\r\nxxxxxxxx",
            "GET /\r\n",
            "GET / HTTP/2.0\r\nHost: x\r\n\r\n",
            // Not a method: HTTP/1 refuses it at once, line or not (h2.t "invalid preface").
            "xxxxxxxxxxxxxxxx",
            "get / HTTP/1.1\r\n",
            " GET / HTTP/1.1\r\n",
            "\r\n",
            "\x16\x03\x01\x02\x00",
        ] {
            assert_eq!(first_line(line.as_bytes()), FirstLine::Http1, "{line:?}");
        }
        for line in [
            "INVALID CONNECTION PREFACE\r\n\r\n",
            "GET\r\n",
            "GET / HTTP\r\n",
            "FOO BAR BAZ QUX\n",
        ] {
            assert_eq!(first_line(line.as_bytes()), FirstLine::Other, "{line:?}");
        }
        for partial in [
            "",
            "G",
            "GET",
            "GET / HTTP/1.1",
            "INVALID CONNECTION PREFACE\r",
        ] {
            assert_eq!(
                first_line(partial.as_bytes()),
                FirstLine::Incomplete,
                "{partial:?}"
            );
        }
    }
}
