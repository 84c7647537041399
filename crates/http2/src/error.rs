//! Error codes (RFC 9113 §7) and the errors this crate reports: a connection error ends the
//! connection with GOAWAY, a stream error ends one stream with RST_STREAM (§5.4).

use std::fmt;

/// An HTTP/2 error code as carried by RST_STREAM and GOAWAY. Codes this crate does not know
/// are kept as they arrived (§7: "unknown or unsupported error codes ... MUST NOT trigger any
/// special behavior").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// Graceful shutdown, or a stream no longer needed.
    pub const NO_ERROR: Self = Self(0x0);
    /// A protocol error that no more specific code describes.
    pub const PROTOCOL_ERROR: Self = Self(0x1);
    /// An unexpected internal error.
    pub const INTERNAL_ERROR: Self = Self(0x2);
    /// The peer broke the flow-control protocol.
    pub const FLOW_CONTROL_ERROR: Self = Self(0x3);
    /// SETTINGS were not acknowledged in time.
    pub const SETTINGS_TIMEOUT: Self = Self(0x4);
    /// A frame arrived on a half-closed stream.
    pub const STREAM_CLOSED: Self = Self(0x5);
    /// A frame had an invalid size.
    pub const FRAME_SIZE_ERROR: Self = Self(0x6);
    /// The stream was refused before any application processing.
    pub const REFUSED_STREAM: Self = Self(0x7);
    /// The stream is no longer needed.
    pub const CANCEL: Self = Self(0x8);
    /// The HPACK context cannot be kept.
    pub const COMPRESSION_ERROR: Self = Self(0x9);
    /// A CONNECT tunnel's connection failed.
    pub const CONNECT_ERROR: Self = Self(0xa);
    /// The peer generates excessive load.
    pub const ENHANCE_YOUR_CALM: Self = Self(0xb);
    /// The transport does not meet the security requirements.
    pub const INADEQUATE_SECURITY: Self = Self(0xc);
    /// HTTP/1.1 must be used for this request.
    pub const HTTP_1_1_REQUIRED: Self = Self(0xd);

    /// The RFC's name of the code, or `None` for a code it does not define.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES.get(usize::try_from(self.0).ok()?).copied()
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => formatter.write_str(name),
            None => write!(formatter, "unknown error code {:#x}", self.0),
        }
    }
}

/// What exactly the peer did wrong; the words follow nginx's `info` lines where nginx has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The first 24 bytes were not the connection preface.
    BadPreface,
    /// A frame longer than the SETTINGS_MAX_FRAME_SIZE we announced.
    FrameTooLarge { length: u32 },
    /// A frame whose length is wrong for its type.
    BadFrameLength { kind: u8, length: u32 },
    /// A frame that must name a stream named stream 0.
    StreamIdZero { kind: u8 },
    /// A frame that must be on stream 0 named a stream.
    StreamIdNonZero { kind: u8 },
    /// The padding length was not less than the payload.
    PaddingTooLong,
    /// A SETTINGS parameter with a value outside its range.
    BadSetting { id: u16, value: u32 },
    /// A WINDOW_UPDATE with an increment of 0.
    ZeroWindowIncrement,
    /// A window grew past 2^31-1.
    WindowOverflow,
    /// DATA beyond what the receive window allowed.
    WindowExceeded,
    /// A stream that depends on itself.
    SelfDependency,
    /// A frame other than CONTINUATION while a header block was open.
    ContinuationExpected,
    /// A CONTINUATION with no header block open on its stream.
    UnexpectedContinuation,
    /// A new stream with an even id or an id not above the last one.
    BadStreamId { stream_id: u32 },
    /// A frame on a stream that was never opened.
    IdleStream { kind: u8 },
    /// A frame on a stream already closed, or half-closed by the peer.
    ClosedStream { kind: u8 },
    /// A client sent PUSH_PROMISE, or a server that was told not to push.
    PushPromise,
    /// A server's first frame was not SETTINGS (§3.4).
    SettingsExpected { kind: u8 },
    /// A response head without a valid `:status`, or with request pseudo-headers.
    BadStatus,
    /// DATA on a stream before its response head.
    UnexpectedData,
    /// HEADERS after the request head without END_STREAM (trailers must end the stream).
    TrailersWithoutEndStream,
    /// A request with a body before the client acknowledged our smaller stream window.
    SettingsNotAcknowledged,
    /// More streams than SETTINGS_MAX_CONCURRENT_STREAMS allows.
    TooManyStreams,
    /// The HPACK decoder failed; the connection cannot go on.
    Compression(crate::hpack::HpackError),
    /// A header block larger than the connection accepts before decoding.
    HeaderBlockTooLarge,
    /// A decoded field, or the list, past `large_client_header_buffers`.
    HeaderTooLarge(crate::hpack::Limit),
    /// The peer exceeded one of the flood limits.
    Flood(crate::limits::Flood),
}

impl fmt::Display for Reason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_as("client", formatter)
    }
}

/// A [`Reason`] worded for the peer that gave it (see [`Reason::by`]).
#[derive(Clone, Copy, Debug)]
pub struct Worded {
    reason: Reason,
    peer: &'static str,
}

impl fmt::Display for Worded {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reason.write_as(self.peer, formatter)
    }
}

impl Reason {
    /// The reason worded for `peer` (`"upstream sent frame ..."`); `Display` words it for
    /// the client, the server role's peer.
    pub fn by(self, peer: &'static str) -> Worded {
        Worded { reason: self, peer }
    }

    fn write_as(&self, peer: &'static str, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::BadPreface => formatter.write_str("invalid connection preface"),
            Self::FrameTooLarge { length } => write!(
                formatter,
                "{peer} sent frame with too long length: {length}"
            ),
            Self::BadFrameLength { kind, length } => {
                write!(
                    formatter,
                    "{peer} sent frame of type {kind} with incorrect length: {length}"
                )
            }
            Self::StreamIdZero { kind } => write!(
                formatter,
                "{peer} sent frame of type {kind} with stream id 0"
            ),
            Self::StreamIdNonZero { kind } => {
                write!(
                    formatter,
                    "{peer} sent frame of type {kind} with non-zero stream id"
                )
            }
            Self::PaddingTooLong => {
                write!(formatter, "{peer} sent padded frame with incorrect length")
            }
            Self::BadSetting { id, value } => {
                write!(
                    formatter,
                    "{peer} sent SETTINGS frame with incorrect value {value} of parameter {id:#x}"
                )
            }
            Self::ZeroWindowIncrement => {
                write!(
                    formatter,
                    "{peer} sent WINDOW_UPDATE frame with incorrect increment 0"
                )
            }
            Self::WindowOverflow => {
                write!(formatter, "{peer} violated flow control: window too large")
            }
            Self::WindowExceeded => {
                write!(
                    formatter,
                    "{peer} violated flow control: DATA beyond window"
                )
            }
            Self::SelfDependency => {
                write!(formatter, "{peer} sent stream with dependency on itself")
            }
            Self::ContinuationExpected => {
                write!(formatter, "{peer} sent frame while expecting CONTINUATION")
            }
            Self::UnexpectedContinuation => {
                write!(formatter, "{peer} sent unexpected CONTINUATION frame")
            }
            Self::BadStreamId { stream_id } => write!(
                formatter,
                "{peer} sent HEADERS frame with incorrect id {stream_id}"
            ),
            Self::IdleStream { kind } => write!(
                formatter,
                "{peer} sent frame of type {kind} for idle stream"
            ),
            Self::ClosedStream { kind } => write!(
                formatter,
                "{peer} sent frame of type {kind} for closed stream"
            ),
            Self::PushPromise => write!(formatter, "{peer} sent PUSH_PROMISE frame"),
            Self::SettingsExpected { kind } => write!(
                formatter,
                "{peer} sent frame of type {kind} instead of SETTINGS"
            ),
            Self::BadStatus => write!(formatter, "{peer} sent invalid :status header"),
            Self::UnexpectedData => write!(formatter, "{peer} sent DATA frame before HEADERS"),
            Self::TrailersWithoutEndStream => {
                write!(
                    formatter,
                    "{peer} sent trailer HEADERS without END_STREAM flag"
                )
            }
            Self::SettingsNotAcknowledged => {
                write!(
                    formatter,
                    "{peer} sent a request body before acknowledging SETTINGS"
                )
            }
            Self::TooManyStreams => formatter.write_str("concurrent streams exceeded"),
            Self::Compression(error) => {
                write!(formatter, "{peer} sent invalid header block: {error}")
            }
            Self::HeaderBlockTooLarge => {
                write!(formatter, "{peer} sent header block exceeding the limit")
            }
            Self::HeaderTooLarge(crate::hpack::Limit::Field) => {
                write!(formatter, "{peer} sent too large header field")
            }
            Self::HeaderTooLarge(crate::hpack::Limit::List) => {
                write!(formatter, "{peer} sent too large header")
            }
            Self::Flood(flood) => write!(formatter, "{peer} flood detected: {flood}"),
        }
    }
}

/// A protocol error and its scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The whole connection fails: GOAWAY with `code`, then close.
    Connection { code: ErrorCode, reason: Reason },
    /// One stream fails: RST_STREAM with `code`; the connection goes on.
    Stream {
        stream_id: u32,
        code: ErrorCode,
        reason: Reason,
    },
}

impl Error {
    /// A connection error.
    pub fn connection(code: ErrorCode, reason: Reason) -> Self {
        Self::Connection { code, reason }
    }

    /// A stream error.
    pub fn stream(stream_id: u32, code: ErrorCode, reason: Reason) -> Self {
        Self::Stream {
            stream_id,
            code,
            reason,
        }
    }

    /// The error code sent to the peer.
    pub fn code(&self) -> ErrorCode {
        match *self {
            Self::Connection { code, .. } | Self::Stream { code, .. } => code,
        }
    }

    /// What the peer did.
    pub fn reason(&self) -> Reason {
        match *self {
            Self::Connection { reason, .. } | Self::Stream { reason, .. } => reason,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connection { code, reason } => {
                write!(formatter, "{reason} (connection error {code})")
            }
            Self::Stream {
                stream_id,
                code,
                reason,
            } => {
                write!(formatter, "{reason} (stream {stream_id} error {code})")
            }
        }
    }
}

impl std::error::Error for Error {}
