//! What the codecs refuse: one variant per distinct nginx outcome, whose `Display` is the
//! text nginx writes to its error log (the caller adds the action, "while reading response
//! header from upstream").

use std::fmt;

/// A FastCGI record header nginx refuses. nginx checks the header's bytes in order as they
/// arrive (version, type, request id), so the first bad byte decides which error it is,
/// however the input was split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// A version byte other than 1 (FastCGI 1.0 §3.3: `FCGI_VERSION_1`).
    UnsupportedVersion { version: u8 },
    /// A type an application may not send to a web server, or no type at all: anything but
    /// STDOUT, STDERR and END_REQUEST. nginx never sends GET_VALUES, so GET_VALUES_RESULT
    /// and UNKNOWN_TYPE land here too.
    InvalidRecordType { record_type: u8 },
    /// The request id's high byte is not ours.
    RequestIdHighByte { byte: u8 },
    /// The request id's low byte is not ours.
    RequestIdLowByte { byte: u8 },
    /// An END_REQUEST whose content is not the 8 bytes of `FCGI_EndRequestBody` (§5.5).
    /// nginx skips an END_REQUEST's content unread; Portico reads the statuses and refuses
    /// a record it would have to guess them from. nginx has no message for it.
    EndRequestLength { content_len: u16 },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::UnsupportedVersion { version } => {
                write!(
                    f,
                    "upstream sent unsupported FastCGI protocol version: {version}"
                )
            }
            RecordError::InvalidRecordType { record_type } => {
                write!(
                    f,
                    "upstream sent invalid FastCGI record type: {record_type}"
                )
            }
            RecordError::RequestIdHighByte { byte } => {
                write!(
                    f,
                    "upstream sent unexpected FastCGI request id high byte: {byte}"
                )
            }
            RecordError::RequestIdLowByte { byte } => {
                write!(
                    f,
                    "upstream sent unexpected FastCGI request id low byte: {byte}"
                )
            }
            RecordError::EndRequestLength { content_len } => write!(
                f,
                "upstream sent invalid FastCGI END_REQUEST record length: {content_len}"
            ),
        }
    }
}

impl std::error::Error for RecordError {}

/// A response head nginx refuses (`NGX_HTTP_UPSTREAM_INVALID_HEADER`: 502, and a reason
/// for `*_next_upstream invalid_header`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// The head did not end within the buffer (`fastcgi_buffer_size`,
    /// `uwsgi_buffer_size`, `scgi_buffer_size`).
    TooBig,
    /// A byte nginx's header-line parser refuses. `line` is what nginx quotes: the line
    /// from its start up to the refused byte, `byte`.
    InvalidHeader { line: Vec<u8>, byte: u8 },
    /// A `Status` value whose first three bytes are not digits.
    InvalidStatus { value: Vec<u8> },
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadError::TooBig => f.write_str("upstream sent too big header"),
            HeadError::InvalidHeader { line, byte } => write!(
                f,
                "upstream sent invalid header: \"{}\\x{byte:02x}...\"",
                String::from_utf8_lossy(line)
            ),
            HeadError::InvalidStatus { value } => write!(
                f,
                "upstream sent invalid status \"{}\"",
                String::from_utf8_lossy(value)
            ),
        }
    }
}

impl std::error::Error for HeadError {}

/// A FastCGI response nginx refuses: a bad record, a bad head, or records in an order nginx
/// does not accept. Every one is 502 while the head is read; after it, the response is cut
/// short and the connection closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FastcgiError {
    Record(RecordError),
    Head(HeadError),
    /// The application ended its stdout (an empty STDOUT record) before the head ended.
    StdoutClosedBeforeHead,
    /// A record other than STDOUT or STDERR while the head is read: END_REQUEST (type 3)
    /// before any head.
    UnexpectedRecord {
        record_type: u8,
    },
    /// The connection closed before the head ended. nginx words this in its upstream
    /// module, and counts it as an `error`, not an `invalid_header`, for `*_next_upstream`.
    ClosedBeforeHead,
    /// The connection closed after the head, before END_REQUEST.
    ClosedBeforeEndRequest,
}

impl fmt::Display for FastcgiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FastcgiError::Record(error) => error.fmt(f),
            FastcgiError::Head(error) => error.fmt(f),
            FastcgiError::StdoutClosedBeforeHead => {
                f.write_str("upstream prematurely closed FastCGI stdout")
            }
            FastcgiError::UnexpectedRecord { record_type } => {
                write!(f, "upstream sent unexpected FastCGI record: {record_type}")
            }
            FastcgiError::ClosedBeforeHead => f.write_str("upstream prematurely closed connection"),
            FastcgiError::ClosedBeforeEndRequest => {
                f.write_str("upstream prematurely closed FastCGI request")
            }
        }
    }
}

impl std::error::Error for FastcgiError {}

impl From<RecordError> for FastcgiError {
    fn from(error: RecordError) -> Self {
        FastcgiError::Record(error)
    }
}

impl From<HeadError> for FastcgiError {
    fn from(error: HeadError) -> Self {
        FastcgiError::Head(error)
    }
}

/// A request an encoder refuses to write: a length field cannot hold it, or (SCGI) a byte
/// would change its framing. nginx logs the first two at `alert` and fails the request
/// with 500.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// One FastCGI name-value pair (its lengths included) longer than a record's content
    /// can be (65535 bytes). nginx puts every pair in one record and refuses a total over
    /// 65535; Portico splits the pairs over several records, so only a single pair that
    /// does not fit one is refused. `len` is that pair's encoded length.
    FastcgiRecordTooBig { len: usize },
    /// uwsgi vars longer than the packet's 16-bit size can say. `len` is their total up to
    /// the var that went past the limit.
    UwsgiTooBig { len: usize },
    /// An SCGI header name or value with a NUL byte, which would end it early and start
    /// another header the configuration never set. nginx writes it unchanged; Portico
    /// refuses it. `name` is the header's name.
    ScgiNul { name: Vec<u8> },
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::FastcgiRecordTooBig { len } => {
                write!(f, "fastcgi request record is too big: {len}")
            }
            RequestError::UwsgiTooBig { len } => write!(f, "uwsgi request is too big: {len}"),
            RequestError::ScgiNul { name } => write!(
                f,
                "scgi header \"{}\" has a NUL byte",
                String::from_utf8_lossy(name)
            ),
        }
    }
}

impl std::error::Error for RequestError {}

/// Bytes that cannot start an SCGI request's netstring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidNetstring;

impl fmt::Display for InvalidNetstring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid SCGI netstring")
    }
}

impl std::error::Error for InvalidNetstring {}
