//! The error codes of RFC 9114 §8.1 and RFC 9204 §6, and why the connection used one.

use std::fmt;

use crate::qpack::QpackError;

/// An HTTP/3 application error code, as sent in CONNECTION_CLOSE, RESET_STREAM and
/// STOP_SENDING.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    NoError,
    GeneralProtocolError,
    InternalError,
    StreamCreationError,
    ClosedCriticalStream,
    FrameUnexpected,
    FrameError,
    ExcessiveLoad,
    IdError,
    SettingsError,
    MissingSettings,
    RequestRejected,
    RequestCancelled,
    RequestIncomplete,
    MessageError,
    ConnectError,
    VersionFallback,
    QpackDecompressionFailed,
    QpackEncoderStreamError,
    QpackDecoderStreamError,
}

const CODES: [(Code, u64, &str); 20] = [
    (Code::NoError, 0x100, "H3_NO_ERROR"),
    (
        Code::GeneralProtocolError,
        0x101,
        "H3_GENERAL_PROTOCOL_ERROR",
    ),
    (Code::InternalError, 0x102, "H3_INTERNAL_ERROR"),
    (Code::StreamCreationError, 0x103, "H3_STREAM_CREATION_ERROR"),
    (
        Code::ClosedCriticalStream,
        0x104,
        "H3_CLOSED_CRITICAL_STREAM",
    ),
    (Code::FrameUnexpected, 0x105, "H3_FRAME_UNEXPECTED"),
    (Code::FrameError, 0x106, "H3_FRAME_ERROR"),
    (Code::ExcessiveLoad, 0x107, "H3_EXCESSIVE_LOAD"),
    (Code::IdError, 0x108, "H3_ID_ERROR"),
    (Code::SettingsError, 0x109, "H3_SETTINGS_ERROR"),
    (Code::MissingSettings, 0x10a, "H3_MISSING_SETTINGS"),
    (Code::RequestRejected, 0x10b, "H3_REQUEST_REJECTED"),
    (Code::RequestCancelled, 0x10c, "H3_REQUEST_CANCELLED"),
    (Code::RequestIncomplete, 0x10d, "H3_REQUEST_INCOMPLETE"),
    (Code::MessageError, 0x10e, "H3_MESSAGE_ERROR"),
    (Code::ConnectError, 0x10f, "H3_CONNECT_ERROR"),
    (Code::VersionFallback, 0x110, "H3_VERSION_FALLBACK"),
    (
        Code::QpackDecompressionFailed,
        0x200,
        "QPACK_DECOMPRESSION_FAILED",
    ),
    (
        Code::QpackEncoderStreamError,
        0x201,
        "QPACK_ENCODER_STREAM_ERROR",
    ),
    (
        Code::QpackDecoderStreamError,
        0x202,
        "QPACK_DECODER_STREAM_ERROR",
    ),
];

impl Code {
    /// The code's value on the wire.
    pub fn value(self) -> u64 {
        CODES
            .iter()
            .find(|(code, _, _)| *code == self)
            .map_or(0x102, |(_, value, _)| *value)
    }

    /// The code for a value; unknown codes (and the reserved `0x1f * N + 0x21` ones) are
    /// none of ours, and RFC 9114 §9 says to treat them as H3_NO_ERROR.
    pub fn from_value(value: u64) -> Self {
        CODES
            .iter()
            .find(|(_, known, _)| *known == value)
            .map_or(Self::NoError, |(code, _, _)| *code)
    }

    /// The name the RFC gives the code.
    pub fn name(self) -> &'static str {
        CODES
            .iter()
            .find(|(code, _, _)| *code == self)
            .map_or("H3_INTERNAL_ERROR", |(_, _, name)| name)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// What went wrong, for the log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A frame of this type where the RFC forbids it.
    UnexpectedFrame { frame_type: u64 },
    /// A frame whose payload does not match its type's layout.
    MalformedFrame { frame_type: u64 },
    /// A frame longer than the connection accepts for its type.
    FrameTooLarge { frame_type: u64, length: u64 },
    /// A stream ended inside a frame.
    TruncatedFrame,
    /// The control stream's first frame was not SETTINGS.
    MissingSettings,
    /// A setting sent twice, or an HTTP/2 setting.
    BadSetting { identifier: u64 },
    /// A second control, QPACK encoder or QPACK decoder stream.
    DuplicateStream { stream_type: u64 },
    /// A client opened a push stream, or a stream of a server-initiated id.
    BadStream { stream_id: u64 },
    /// A control or QPACK stream ended or was reset.
    CriticalStreamClosed { stream_id: u64 },
    /// A GOAWAY, MAX_PUSH_ID or CANCEL_PUSH with an id out of order or of range.
    BadId { id: u64 },
    /// QPACK refused a field section, an encoder or a decoder instruction.
    Qpack(QpackError),
    /// A request stream ended before its HEADERS.
    IncompleteRequest,
    /// More blocked or buffered data, or more open request streams, than the limits allow.
    Limit,
    /// The caller ended or reset the stream.
    Cancelled,
}

impl fmt::Display for Reason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::UnexpectedFrame { frame_type } => {
                write!(formatter, "unexpected frame type 0x{frame_type:x}")
            }
            Self::MalformedFrame { frame_type } => {
                write!(formatter, "malformed frame type 0x{frame_type:x}")
            }
            Self::FrameTooLarge { frame_type, length } => {
                write!(
                    formatter,
                    "frame type 0x{frame_type:x} of {length} bytes too large"
                )
            }
            Self::TruncatedFrame => formatter.write_str("stream ended inside a frame"),
            Self::MissingSettings => formatter.write_str("control stream without SETTINGS"),
            Self::BadSetting { identifier } => write!(formatter, "bad setting 0x{identifier:x}"),
            Self::DuplicateStream { stream_type } => {
                write!(formatter, "second stream of type 0x{stream_type:x}")
            }
            Self::BadStream { stream_id } => write!(formatter, "stream {stream_id} not allowed"),
            Self::CriticalStreamClosed { stream_id } => {
                write!(formatter, "critical stream {stream_id} closed")
            }
            Self::BadId { id } => write!(formatter, "invalid id {id}"),
            Self::Qpack(error) => write!(formatter, "QPACK: {error}"),
            Self::IncompleteRequest => formatter.write_str("request stream ended before HEADERS"),
            Self::Limit => formatter.write_str("limit exceeded"),
            Self::Cancelled => formatter.write_str("cancelled"),
        }
    }
}

/// A connection error: the caller closes the QUIC connection with `code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub reason: Reason,
}

impl Error {
    pub fn new(code: Code, reason: Reason) -> Self {
        Self { code, reason }
    }
}

impl From<QpackError> for Error {
    fn from(error: QpackError) -> Self {
        Self::new(error.code(), Reason::Qpack(error))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} ({})", self.reason, self.code)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_is_no_error() {
        for (code, value, name) in CODES {
            assert_eq!(code.value(), value);
            assert_eq!(Code::from_value(value), code);
            assert_eq!(code.name(), name);
        }
        assert_eq!(Code::from_value(0x21), Code::NoError);
        assert_eq!(Code::from_value(0x1f * 7 + 0x21), Code::NoError);
    }
}
