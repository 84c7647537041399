//! The request line, scanned byte by byte with the acceptance rules of nginx's
//! `ngx_http_parse_request_line`. This is the reference scanner: `fast_path.rs` reads the
//! common shape of line in fewer steps and leaves every other line to it.
//!
//! httparse is not used here: it rejects what nginx accepts (HTTP/0.9 `GET /`, `HTTP/1.2`
//! and `HTTP/1.01`, several spaces), accepts what nginx rejects (lower-case and punctuation
//! methods, `OPTIONS *`), and cannot say at which byte nginx would have stopped, which the
//! buffer emulation needs to order a limit against an error.

use std::ops::Range;

use crate::error::RequestError;
use crate::method::Method;
use crate::request::Version;

/// A complete, syntactically valid request line. Offsets index the head buffer.
#[derive(Clone, Debug)]
pub(super) struct RequestLine {
    /// First byte of the method (after any leading empty lines).
    pub start: usize,
    /// End of `$request`: the CR or LF, so trailing spaces are kept as nginx keeps them.
    pub line_end: usize,
    /// Just after the LF.
    pub end: usize,
    pub method: Method,
    pub method_bytes: Range<usize>,
    /// nginx's unparsed URI (`$request_uri`): from the path's first byte to its end.
    pub target: Range<usize>,
    pub version: Version,
    pub protocol: Range<usize>,
    pub scheme: Option<Range<usize>>,
    /// `host[:port]` of an absolute-form target or a CONNECT request.
    pub authority: Option<Range<usize>>,
    /// Offset of the `:` before the port within `authority`.
    pub port_colon: Option<usize>,
    /// The path has `%`, `#`, `//`, `/.` or is empty: `$uri` needs normalising.
    pub complex: bool,
}

/// What nginx's parser would do with the bytes so far.
pub(super) enum Scan<T> {
    Complete(T),
    /// nginx stops at the byte at `offset` with `error`.
    Rejected {
        offset: usize,
        error: RequestError,
    },
    /// Every byte so far is acceptable and more are needed.
    Incomplete,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Method,
    SpacesBeforeTarget,
    Scheme,
    SchemeSlash,
    SchemeSlashSlash,
    SpacesBeforeHost,
    HostStart,
    Host,
    HostEnd,
    IpLiteral,
    PortStart,
    Port,
    AfterSlash,
    CheckPath,
    Path,
    AfterTarget,
    ProtocolH,
    ProtocolT1,
    ProtocolT2,
    ProtocolP,
    FirstMajor,
    Major,
    FirstMinor,
    Minor,
    SpacesAfterVersion,
    AlmostDone,
}

/// Bytes nginx copies through a path without a second look: everything but controls,
/// space, `#`, `%`, `+`, `.`, `/`, `?` and DEL.
fn is_plain_path_byte(byte: u8) -> bool {
    !matches!(
        byte,
        0..=0x20 | b'#' | b'%' | b'+' | b'.' | b'/' | b'?' | 0x7f
    )
}

fn is_method_byte(byte: u8) -> bool {
    byte.is_ascii_uppercase() || byte == b'_' || byte == b'-'
}

/// Scans the request line at the start of `buf`. Returns the offset where the line starts
/// (after leading CR and LF bytes, which nginx skips) and the outcome.
pub(super) fn scan_request_line(buf: &[u8]) -> (usize, Scan<RequestLine>) {
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    let mut scanner = Scanner::new(start);
    let mut i = start;
    while i < buf.len() {
        if matches!(scanner.state, State::CheckPath | State::Path) {
            // The bulk of a request line; skip it without the state machine.
            i += buf[i..]
                .iter()
                .take_while(|&&b| is_plain_path_byte(b))
                .count();
            if i == buf.len() {
                break;
            }
        }
        match scanner.step(buf, i) {
            Step::Next => i += 1,
            Step::Again => {}
            Step::Done => return (start, scanner.finish(i)),
            Step::Fail(error) => return (start, Scan::Rejected { offset: i, error }),
        }
    }
    (start, Scan::Incomplete)
}

enum Step {
    /// Byte consumed.
    Next,
    /// State changed; look at the same byte again.
    Again,
    /// The byte was the LF ending the line.
    Done,
    Fail(RequestError),
}

struct Scanner {
    state: State,
    line: RequestLine,
    uri_start: Option<usize>,
    uri_end: Option<usize>,
    scheme_end: usize,
    host_start: usize,
    protocol_start: Option<usize>,
    line_end: Option<usize>,
    major: u32,
    minor: u32,
    http09: bool,
}

impl Scanner {
    fn new(start: usize) -> Scanner {
        Scanner {
            state: State::Method,
            line: RequestLine {
                start,
                line_end: start,
                end: start,
                method: Method::Other,
                method_bytes: start..start,
                target: start..start,
                version: Version::Http11,
                protocol: start..start,
                scheme: None,
                authority: None,
                port_colon: None,
                complex: false,
            },
            uri_start: None,
            uri_end: None,
            scheme_end: 0,
            host_start: 0,
            protocol_start: None,
            line_end: None,
            major: 0,
            minor: 0,
            http09: false,
        }
    }

    fn is_connect(&self) -> bool {
        self.line.method == Method::Connect
    }

    fn step(&mut self, buf: &[u8], i: usize) -> Step {
        let byte = buf[i];
        match self.state {
            State::Method => self.method(buf, i),
            State::SpacesBeforeTarget => match byte {
                b'/' => self.path_starts(i),
                b' ' => Step::Next,
                _ if byte.is_ascii_alphabetic() => {
                    self.line.scheme = Some(i..i);
                    self.state = State::Scheme;
                    Step::Next
                }
                _ => Step::Fail(RequestError::InvalidRequest),
            },
            State::Scheme => match byte {
                b':' => {
                    if let Some(scheme) = &mut self.line.scheme {
                        scheme.end = i;
                    }
                    self.scheme_end = i;
                    self.state = State::SchemeSlash;
                    Step::Next
                }
                b'+' | b'-' | b'.' => Step::Next,
                _ if byte.is_ascii_alphanumeric() => Step::Next,
                _ => Step::Fail(RequestError::InvalidRequest),
            },
            State::SchemeSlash => self.expect(byte, b'/', State::SchemeSlashSlash),
            State::SchemeSlashSlash => self.expect(byte, b'/', State::HostStart),
            State::SpacesBeforeHost
            | State::HostStart
            | State::Host
            | State::IpLiteral
            | State::HostEnd
            | State::PortStart
            | State::Port => self.authority(byte, i),
            State::AfterSlash | State::CheckPath | State::Path => self.path(byte, i),
            _ => self.protocol(byte, i),
        }
    }

    /// The `host[:port]` of an absolute-form target or a CONNECT request.
    fn authority(&mut self, byte: u8, i: usize) -> Step {
        match self.state {
            State::SpacesBeforeHost if byte == b' ' => Step::Next,
            State::SpacesBeforeHost | State::HostStart => {
                self.host_start = i;
                if byte == b'[' {
                    self.state = State::IpLiteral;
                    Step::Next
                } else {
                    self.state = State::Host;
                    Step::Again
                }
            }
            State::Host => {
                if byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-' {
                    Step::Next
                } else {
                    self.state = State::HostEnd;
                    Step::Again
                }
            }
            State::IpLiteral => match byte {
                b']' => {
                    self.state = State::HostEnd;
                    Step::Next
                }
                b':' | b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')'
                | b'*' | b'+' | b',' | b';' | b'=' => Step::Next,
                _ if byte.is_ascii_alphanumeric() => Step::Next,
                _ => Step::Fail(RequestError::InvalidRequest),
            },
            State::HostEnd => {
                if byte == b':' {
                    self.line.port_colon = Some(i);
                    self.state = State::PortStart;
                    return Step::Next;
                }
                self.authority_ends(byte, i)
            }
            State::PortStart => {
                self.state = State::Port;
                if byte.is_ascii_digit() {
                    Step::Next
                } else if self.is_connect() {
                    Step::Fail(RequestError::InvalidRequest)
                } else {
                    Step::Again
                }
            }
            State::Port if byte.is_ascii_digit() => Step::Next,
            State::Port => self.authority_ends(byte, i),
            // `step` sends only the states above here.
            _ => Step::Fail(RequestError::InvalidRequest),
        }
    }

    fn method(&mut self, buf: &[u8], i: usize) -> Step {
        let byte = buf[i];
        if byte == b' ' && i > self.line.start {
            self.line.method_bytes = self.line.start..i;
            self.line.method = Method::from_bytes(&buf[self.line.start..i]);
            self.state = if self.is_connect() {
                State::SpacesBeforeHost
            } else {
                State::SpacesBeforeTarget
            };
            return Step::Next;
        }
        if is_method_byte(byte) {
            Step::Next
        } else {
            Step::Fail(RequestError::InvalidMethod)
        }
    }

    fn expect(&mut self, byte: u8, wanted: u8, next: State) -> Step {
        if byte != wanted {
            return Step::Fail(RequestError::InvalidRequest);
        }
        self.state = next;
        Step::Next
    }

    fn path_starts(&mut self, i: usize) -> Step {
        self.uri_start = Some(i);
        self.state = State::AfterSlash;
        Step::Next
    }

    /// The byte after an absolute-form or CONNECT authority.
    fn authority_ends(&mut self, byte: u8, i: usize) -> Step {
        self.line.authority = Some(self.host_start..i);
        if self.is_connect() {
            if self.state == State::Port && byte == b' ' {
                self.state = State::AfterTarget;
                return Step::Next;
            }
            return Step::Fail(RequestError::InvalidRequest);
        }
        match byte {
            b'/' => self.path_starts(i),
            b'?' => {
                // `http://host?args`: the path is empty and `$uri` becomes "/".
                self.uri_start = Some(i);
                self.line.complex = true;
                self.state = State::Path;
                Step::Next
            }
            b' ' => {
                // No path: nginx points `$request_uri` at the "/" of "scheme:/".
                self.uri_start = Some(self.scheme_end + 1);
                self.uri_end = Some(self.scheme_end + 2);
                self.state = State::AfterTarget;
                Step::Next
            }
            _ => Step::Fail(RequestError::InvalidRequest),
        }
    }

    fn path(&mut self, byte: u8, i: usize) -> Step {
        if is_plain_path_byte(byte) {
            if self.state == State::AfterSlash {
                self.state = State::CheckPath;
            }
            return Step::Next;
        }
        match (byte, self.state) {
            (b' ', _) => {
                self.uri_end = Some(i);
                self.state = State::AfterTarget;
                Step::Next
            }
            (b'\r' | b'\n', _) => {
                self.uri_end = Some(i);
                self.protocol(byte, i)
            }
            (b'#', _) => {
                self.line.complex = true;
                self.state = State::Path;
                Step::Next
            }
            (_, State::Path) | (b'+', _) => {
                if byte < 0x20 || byte == 0x7f {
                    return Step::Fail(RequestError::InvalidRequest);
                }
                Step::Next
            }
            (b'.' | b'/', State::AfterSlash) | (b'%', _) => {
                self.line.complex = true;
                self.state = State::Path;
                Step::Next
            }
            (b'?', _) => {
                self.state = State::Path;
                Step::Next
            }
            (b'/', _) => {
                self.state = State::AfterSlash;
                Step::Next
            }
            (b'.', _) => Step::Next,
            _ => Step::Fail(RequestError::InvalidRequest),
        }
    }

    /// From the space after the target to the LF.
    fn protocol(&mut self, byte: u8, i: usize) -> Step {
        match (self.state, byte) {
            (State::AfterTarget, b' ') => return Step::Next,
            (State::AfterTarget, b'H') => {
                self.protocol_start = Some(i);
                self.state = State::ProtocolH;
                return Step::Next;
            }
            (State::ProtocolH, b'T') => self.state = State::ProtocolT1,
            (State::ProtocolT1, b'T') => self.state = State::ProtocolT2,
            (State::ProtocolT2, b'P') => self.state = State::ProtocolP,
            (State::ProtocolP, b'/') => {
                if self.is_connect() {
                    // nginx gives CONNECT the "/" of "HTTP/" as its URI.
                    self.uri_start = Some(i);
                    self.uri_end = Some(i + 1);
                }
                self.state = State::FirstMajor;
            }
            (State::FirstMajor, b'1'..=b'9') | (State::Major, b'0'..=b'9') => {
                self.major = self.major * 10 + u32::from(byte - b'0');
                if self.major > 1 {
                    return Step::Fail(RequestError::InvalidVersion);
                }
                self.state = State::Major;
            }
            (State::Major, b'.') => self.state = State::FirstMinor,
            (State::FirstMinor, b'0'..=b'9') => {
                self.minor = u32::from(byte - b'0');
                self.state = State::Minor;
            }
            (State::Minor, b'0'..=b'9') => {
                // nginx refuses a fourth significant digit.
                if self.minor > 99 {
                    return Step::Fail(RequestError::InvalidRequest);
                }
                self.minor = self.minor * 10 + u32::from(byte - b'0');
            }
            (State::Minor | State::SpacesAfterVersion, b' ') => {
                self.state = State::SpacesAfterVersion;
            }
            (
                State::AfterSlash
                | State::CheckPath
                | State::Path
                | State::AfterTarget
                | State::Minor
                | State::SpacesAfterVersion,
                b'\r' | b'\n',
            ) => {
                // No protocol before the line ends: an HTTP/0.9 simple request.
                self.http09 = !matches!(self.state, State::Minor | State::SpacesAfterVersion);
                self.line_end = Some(i);
                if byte == b'\n' {
                    return Step::Done;
                }
                self.state = State::AlmostDone;
            }
            (State::AlmostDone, b'\n') => return Step::Done,
            _ => return Step::Fail(RequestError::InvalidRequest),
        }
        Step::Next
    }

    /// Called at the LF ending the line.
    fn finish(mut self, lf: usize) -> Scan<RequestLine> {
        let line = &mut self.line;
        line.end = lf + 1;
        line.line_end = self.line_end.unwrap_or(lf);
        line.version = if self.http09 {
            Version::Http09
        } else if self.minor == 0 {
            Version::Http10
        } else {
            Version::Http11
        };
        if let Some(protocol_start) = self.protocol_start {
            line.protocol = protocol_start..line.line_end;
        }
        if line.version == Version::Http09 && line.method != Method::Get {
            return Scan::Rejected {
                offset: lf,
                error: RequestError::InvalidMethodHttp09,
            };
        }
        // Every path to the LF passes a state that sets both ends of the target.
        let uri_start = self.uri_start.unwrap_or(lf);
        line.target = uri_start..self.uri_end.unwrap_or(uri_start).max(uri_start);
        Scan::Complete(self.line)
    }
}
