//! Why a try of an upstream server, or the body of its response, failed: which side
//! failed, what failed and in which action, how far the request had got. The status, the
//! log level, the `proxy_next_upstream` condition and nginx's error-log message all follow
//! from these facts, so a failure is described once, where it happens.

use std::fmt;
use std::io;

use logging::Level;

use crate::kernel::file::io::FileError;
use crate::modules::proxy::NextUpstream;
use crate::modules::proxy::response::InvalidHead;

/// The side of the proxy that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client: it closed, timed out or sent an invalid body.
    Client,
    /// The upstream server.
    Upstream,
    /// Portico itself: it could not do its part of the try.
    Internal,
}

/// What the proxy was doing, in nginx's words for the log line's `while ...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Connecting,
    /// The TLS handshake of a new connection to an `https` upstream.
    SslHandshaking,
    /// Sending the head and a body read before the first try.
    SendingRequest,
    /// Passing the client's body on as it arrives (`proxy_request_buffering off`); such a
    /// body cannot be sent again.
    StreamingBody,
    ReadingHead,
    ReadingBody,
}

impl Action {
    fn text(self) -> &'static str {
        match self {
            Action::Connecting => "connecting to upstream",
            Action::SslHandshaking => "SSL handshaking to upstream",
            Action::SendingRequest | Action::StreamingBody => "sending request to upstream",
            Action::ReadingHead => "reading response header from upstream",
            Action::ReadingBody => "reading upstream",
        }
    }

    /// The system call nginx names when an I/O call fails in this action.
    fn call(self) -> &'static str {
        match self {
            Action::Connecting => "connect()",
            Action::SslHandshaking => "SSL_do_handshake()",
            Action::SendingRequest | Action::StreamingBody => "writev()",
            Action::ReadingHead | Action::ReadingBody => "recv()",
        }
    }
}

/// What went wrong.
#[derive(Debug)]
pub enum Fault {
    /// An I/O call on the upstream connection failed (not a timeout).
    Io(io::Error),
    /// The action's timer ran out (`proxy_connect_timeout`, `proxy_send_timeout`,
    /// `proxy_read_timeout`).
    TimedOut,
    /// The upstream closed the connection before the head or the body was complete.
    Closed,
    /// The head did not fit in `proxy_buffer_size`.
    HeadTooBig,
    InvalidHead(InvalidHead),
    InvalidChunkedBody,
    /// The client closed its connection while the proxy waited for the upstream.
    ClientAborted,
    /// The client closed its connection while its body was being passed on.
    ClientClosed,
    /// `client_body_timeout` ran out while the client's body was being passed on.
    ClientTimedOut,
    ClientInvalidBody,
    /// The client's framed body broke its own rules (HTTP/2: not its `content-length`);
    /// the words are nginx's.
    ClientRefusedBody(String),
    /// Portico could not do its part: a client certificate named by variables did not
    /// load. The request ends with the error's status; no other server is tried.
    Internal(FileError),
}

/// A failed try, or a failure while the response's body was read.
#[derive(Debug)]
pub struct Failure {
    pub fault: Fault,
    pub action: Action,
    /// Part of the request had reached the upstream (a non-idempotent request is then not
    /// repeated on another server).
    pub sent: bool,
    /// The connection came from the keep-alive cache.
    pub reused: bool,
    /// Bytes of the final response head had arrived.
    pub head_started: bool,
}

impl Failure {
    /// A failure of the upstream in `action`, before any byte of the response head.
    pub fn upstream(fault: Fault, action: Action, sent: bool) -> Failure {
        Failure {
            fault,
            action,
            sent,
            reused: false,
            head_started: false,
        }
    }

    /// A failed I/O call on the upstream connection: a timeout, or another error.
    pub fn io(error: io::Error, action: Action, sent: bool) -> Failure {
        let fault = if error.kind() == io::ErrorKind::TimedOut {
            Fault::TimedOut
        } else {
            Fault::Io(error)
        };
        Failure::upstream(fault, action, sent)
    }

    /// A failure of Portico's own in `action`, before anything was sent.
    pub fn internal(error: FileError, action: Action) -> Failure {
        Failure {
            fault: Fault::Internal(error),
            action,
            sent: false,
            reused: false,
            head_started: false,
        }
    }

    /// A failure of the client while the request was with the upstream.
    pub fn client(fault: Fault, action: Action) -> Failure {
        debug_assert_eq!(fault_side(&fault), Side::Client);
        Failure {
            fault,
            action,
            sent: true,
            reused: false,
            head_started: false,
        }
    }

    pub fn side(&self) -> Side {
        fault_side(&self.fault)
    }

    /// The status the request ends with when no other server is tried.
    pub fn status(&self) -> u16 {
        match self.fault {
            Fault::TimedOut => 504,
            Fault::Io(_)
            | Fault::Closed
            | Fault::HeadTooBig
            | Fault::InvalidHead(_)
            | Fault::InvalidChunkedBody => 502,
            Fault::ClientAborted | Fault::ClientClosed => 499,
            Fault::ClientTimedOut => 408,
            Fault::ClientInvalidBody | Fault::ClientRefusedBody(_) => 400,
            Fault::Internal(ref error) => error.status,
        }
    }

    /// The client's own failures are logged at `info`, as nginx logs them.
    pub fn level(&self) -> Level {
        match (&self.fault, self.side()) {
            (Fault::Internal(error), _) => error.level,
            (_, Side::Client) => Level::Info,
            (_, Side::Upstream | Side::Internal) => Level::Error,
        }
    }

    /// The `proxy_next_upstream` condition this failure is; `None` for the client's.
    pub fn condition(&self) -> Option<u16> {
        match self.fault {
            Fault::TimedOut => Some(NextUpstream::TIMEOUT),
            Fault::HeadTooBig | Fault::InvalidHead(_) => Some(NextUpstream::INVALID_HEADER),
            Fault::Io(_) | Fault::Closed | Fault::InvalidChunkedBody => Some(NextUpstream::ERROR),
            Fault::ClientAborted
            | Fault::ClientClosed
            | Fault::ClientTimedOut
            | Fault::ClientInvalidBody
            | Fault::ClientRefusedBody(_)
            | Fault::Internal(_) => None,
        }
    }

    /// Whether the peer is blamed for it (its `max_fails` count).
    pub(crate) fn counts_against_peer(&self) -> bool {
        self.side() == Side::Upstream
    }

    /// A cached connection the server closed while it was idle: it failed on the first
    /// write or before any answer, and the request may go again on a new connection. A
    /// timeout is never taken for one, nor is a failure while a body was streamed.
    pub(crate) fn is_stale(&self) -> bool {
        let before_answer = match self.action {
            Action::SendingRequest => true,
            Action::ReadingHead => !self.head_started,
            Action::Connecting
            | Action::SslHandshaking
            | Action::StreamingBody
            | Action::ReadingBody => false,
        };
        self.reused && before_answer && matches!(self.fault, Fault::Io(_) | Fault::Closed)
    }
}

fn fault_side(fault: &Fault) -> Side {
    match fault {
        Fault::Io(_)
        | Fault::TimedOut
        | Fault::Closed
        | Fault::HeadTooBig
        | Fault::InvalidHead(_)
        | Fault::InvalidChunkedBody => Side::Upstream,
        Fault::ClientAborted
        | Fault::ClientClosed
        | Fault::ClientTimedOut
        | Fault::ClientInvalidBody
        | Fault::ClientRefusedBody(_) => Side::Client,
        Fault::Internal(_) => Side::Internal,
    }
}

/// The error-log message, in nginx's words.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.fault {
            Fault::Io(error) => write!(f, "{} failed ({})", self.action.call(), errno_text(error))?,
            Fault::TimedOut => f.write_str("upstream timed out (110: Connection timed out)")?,
            Fault::Closed => f.write_str("upstream prematurely closed connection")?,
            Fault::HeadTooBig => f.write_str("upstream sent too big header")?,
            Fault::InvalidHead(InvalidHead(message)) => f.write_str(message)?,
            Fault::InvalidChunkedBody => f.write_str("upstream sent invalid chunked response")?,
            Fault::ClientAborted => f.write_str(
                "epoll_wait() reported that client prematurely closed connection, \
                 so upstream connection is closed too",
            )?,
            Fault::ClientClosed => f.write_str("client prematurely closed connection")?,
            Fault::ClientTimedOut => f.write_str("client timed out (110: Connection timed out)")?,
            // nginx logs it where the body is parsed, without the action.
            Fault::ClientInvalidBody => return f.write_str("client sent invalid chunked body"),
            Fault::ClientRefusedBody(message) => return f.write_str(message),
            Fault::Internal(error) => f.write_str(&error.message)?,
        }
        write!(f, " while {}", self.action.text())
    }
}

impl std::error::Error for Failure {}

pub use crate::kernel::request_log::errno_text;

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> io::Error {
        io::Error::from_raw_os_error(111)
    }

    fn certificate_not_loaded() -> FileError {
        FileError {
            status: 500,
            level: Level::Error,
            message: "cannot load certificate \"/x.crt\"".to_owned(),
        }
    }

    #[test]
    fn messages_are_nginx_words() {
        let cases = [
            (
                Failure::io(
                    io::ErrorKind::TimedOut.into(),
                    Action::SslHandshaking,
                    false,
                ),
                "upstream timed out (110: Connection timed out) while SSL handshaking to upstream",
            ),
            (
                Failure::io(refused(), Action::Connecting, false),
                "connect() failed (111: Connection refused) while connecting to upstream",
            ),
            (
                Failure::io(io::ErrorKind::TimedOut.into(), Action::Connecting, false),
                "upstream timed out (110: Connection timed out) while connecting to upstream",
            ),
            (
                Failure::io(
                    io::Error::from_raw_os_error(32),
                    Action::StreamingBody,
                    true,
                ),
                "writev() failed (32: Broken pipe) while sending request to upstream",
            ),
            (
                Failure::io(io::Error::from_raw_os_error(104), Action::ReadingHead, true),
                "recv() failed (104: Connection reset by peer) \
                 while reading response header from upstream",
            ),
            (
                Failure::upstream(Fault::Closed, Action::ReadingHead, true),
                "upstream prematurely closed connection while reading response header from upstream",
            ),
            (
                Failure::upstream(Fault::HeadTooBig, Action::ReadingHead, true),
                "upstream sent too big header while reading response header from upstream",
            ),
            (
                Failure::upstream(
                    Fault::InvalidHead(InvalidHead("upstream sent invalid header".to_owned())),
                    Action::ReadingHead,
                    true,
                ),
                "upstream sent invalid header while reading response header from upstream",
            ),
            (
                Failure::io(io::ErrorKind::TimedOut.into(), Action::ReadingBody, true),
                "upstream timed out (110: Connection timed out) while reading upstream",
            ),
            (
                Failure::upstream(Fault::InvalidChunkedBody, Action::ReadingBody, true),
                "upstream sent invalid chunked response while reading upstream",
            ),
            (
                Failure::client(Fault::ClientAborted, Action::SendingRequest),
                "epoll_wait() reported that client prematurely closed connection, \
                 so upstream connection is closed too while sending request to upstream",
            ),
            (
                Failure::client(Fault::ClientClosed, Action::StreamingBody),
                "client prematurely closed connection while sending request to upstream",
            ),
            (
                Failure::client(Fault::ClientTimedOut, Action::StreamingBody),
                "client timed out (110: Connection timed out) while sending request to upstream",
            ),
            (
                Failure::client(Fault::ClientInvalidBody, Action::StreamingBody),
                "client sent invalid chunked body",
            ),
            (
                Failure::internal(certificate_not_loaded(), Action::Connecting),
                "cannot load certificate \"/x.crt\" while connecting to upstream",
            ),
        ];
        for (failure, message) in cases {
            assert_eq!(failure.to_string(), message);
        }
    }

    #[test]
    fn status_level_and_condition_follow_the_fault() {
        let cases = [
            (
                Fault::Io(refused()),
                502,
                Level::Error,
                Some(NextUpstream::ERROR),
            ),
            (
                Fault::TimedOut,
                504,
                Level::Error,
                Some(NextUpstream::TIMEOUT),
            ),
            (Fault::Closed, 502, Level::Error, Some(NextUpstream::ERROR)),
            (
                Fault::HeadTooBig,
                502,
                Level::Error,
                Some(NextUpstream::INVALID_HEADER),
            ),
            (
                Fault::InvalidHead(InvalidHead(String::new())),
                502,
                Level::Error,
                Some(NextUpstream::INVALID_HEADER),
            ),
            (Fault::ClientAborted, 499, Level::Info, None),
            (Fault::ClientClosed, 499, Level::Info, None),
            (Fault::ClientTimedOut, 408, Level::Info, None),
            (Fault::ClientInvalidBody, 400, Level::Info, None),
            (
                Fault::ClientRefusedBody("client intended to send too much".to_owned()),
                400,
                Level::Info,
                None,
            ),
            (
                Fault::Internal(certificate_not_loaded()),
                500,
                Level::Error,
                None,
            ),
        ];
        for (fault, status, level, condition) in cases {
            let failure = Failure {
                fault,
                action: Action::ReadingHead,
                sent: true,
                reused: false,
                head_started: false,
            };
            assert_eq!(failure.status(), status, "{failure:?}");
            assert_eq!(failure.level(), level, "{failure:?}");
            assert_eq!(failure.condition(), condition, "{failure:?}");
            assert_eq!(
                failure.counts_against_peer(),
                condition.is_some(),
                "{failure:?}"
            );
            assert_eq!(
                failure.side() == Side::Internal,
                matches!(failure.fault, Fault::Internal(_)),
                "{failure:?}"
            );
        }
    }

    #[test]
    fn only_a_reused_connection_failing_before_an_answer_is_stale() {
        // (fault, action, reused, head started, stale)
        let cases = [
            (
                Fault::Io(refused()),
                Action::SendingRequest,
                true,
                false,
                true,
            ),
            (
                Fault::Io(refused()),
                Action::SendingRequest,
                false,
                false,
                false,
            ),
            (Fault::TimedOut, Action::SendingRequest, true, false, false),
            (
                Fault::Io(refused()),
                Action::StreamingBody,
                true,
                false,
                false,
            ),
            (Fault::Io(refused()), Action::ReadingHead, true, false, true),
            (Fault::Io(refused()), Action::ReadingHead, true, true, false),
            (Fault::Closed, Action::ReadingHead, true, false, true),
            (Fault::Closed, Action::ReadingHead, true, true, false),
            (Fault::TimedOut, Action::ReadingHead, true, false, false),
            (Fault::HeadTooBig, Action::ReadingHead, true, false, false),
            (Fault::Closed, Action::ReadingBody, true, false, false),
            (
                Fault::ClientAborted,
                Action::ReadingHead,
                true,
                false,
                false,
            ),
        ];
        for (fault, action, reused, head_started, stale) in cases {
            let failure = Failure {
                fault,
                action,
                sent: true,
                reused,
                head_started,
            };
            assert_eq!(failure.is_stale(), stale, "{failure:?}");
        }
    }
}
