//! A raw HTTP/1.x client: exact bytes out, parsed responses in, every read under a deadline.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::wait::PATIENCE;

/// One connection to the server, over TCP, a Unix socket, or TLS over TCP.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<super::tls::TlsStream>),
}

impl Stream {
    fn set_read_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.set_read_timeout(Some(timeout)),
            Stream::Unix(stream) => stream.set_read_timeout(Some(timeout)),
            Stream::Tls(stream) => stream.sock.set_read_timeout(Some(timeout)),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.read(buf),
            Stream::Unix(stream) => stream.read(buf),
            Stream::Tls(stream) => match stream.read(buf) {
                // A close without close_notify is an end of stream here too.
                Err(error) if error.kind() == ErrorKind::UnexpectedEof => Ok(0),
                result => result,
            },
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.write_all(bytes),
            Stream::Unix(stream) => stream.write_all(bytes),
            Stream::Tls(stream) => stream.write_all(bytes).and_then(|()| stream.flush()),
        }
    }

    fn shutdown_write(&self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.shutdown(Shutdown::Write),
            Stream::Unix(stream) => stream.shutdown(Shutdown::Write),
            Stream::Tls(stream) => stream.sock.shutdown(Shutdown::Write),
        }
    }
}

/// Why a response could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The server closed the connection before sending a byte of this response.
    Closed,
    /// The connection was reset before a byte of this response arrived.
    Reset,
    /// Nothing complete arrived before the deadline; holds the bytes received so far.
    Timeout(Vec<u8>),
    /// The bytes are not an HTTP response (or it was cut short); holds them.
    Malformed(String, Vec<u8>),
}

/// How the end of the connection looked once the server stopped sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// An orderly close (FIN).
    Closed,
    /// A reset (RST).
    Reset,
}

/// What the response to a request has, given the request's method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyExpected {
    /// Framed by the headers (or by the close), as for GET.
    Framed,
    /// No body whatever the headers say, as for HEAD.
    None,
}

/// A raw client connection.
#[derive(Debug)]
pub struct Client {
    stream: Stream,
    /// Bytes received and not yet consumed by a parsed response.
    received: Vec<u8>,
    /// The deadline for one read operation.
    pub timeout: Duration,
    eof: Option<Ending>,
}

impl Client {
    /// Connects to 127.0.0.1:`port`.
    pub fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|error| panic!("connect to 127.0.0.1:{port}: {error}"));
        Client::from_tcp(stream)
    }

    /// Connects to any address (`[::1]:PORT`).
    pub fn connect_addr(address: std::net::SocketAddr) -> Client {
        let stream = TcpStream::connect(address)
            .unwrap_or_else(|error| panic!("connect to {address}: {error}"));
        Client::from_tcp(stream)
    }

    /// Connects to 127.0.0.1:`port`, or says why not.
    pub fn try_connect(port: u16) -> std::io::Result<Client> {
        TcpStream::connect(("127.0.0.1", port)).map(Client::from_tcp)
    }

    /// Connects to 127.0.0.1:`port` within `timeout` (a full backlog makes connect() wait).
    pub fn try_connect_timeout(port: u16, timeout: Duration) -> std::io::Result<Client> {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        TcpStream::connect_timeout(&address, timeout).map(Client::from_tcp)
    }

    /// A client over an established TLS connection.
    pub(crate) fn from_tls(stream: super::tls::TlsStream) -> Client {
        Client {
            stream: Stream::Tls(Box::new(stream)),
            received: Vec::new(),
            timeout: PATIENCE,
            eof: None,
        }
    }

    /// The TLS connection, for a client made by [`super::tls::connect`].
    pub(crate) fn tls(&self) -> Option<&super::tls::TlsStream> {
        match &self.stream {
            Stream::Tls(stream) => Some(stream),
            _ => None,
        }
    }

    pub fn from_tcp(stream: TcpStream) -> Client {
        stream.set_nodelay(true).expect("set TCP_NODELAY");
        Client {
            stream: Stream::Tcp(stream),
            received: Vec::new(),
            timeout: PATIENCE,
            eof: None,
        }
    }

    /// Connects to a Unix socket.
    pub fn connect_unix(path: &Path) -> Client {
        let stream = UnixStream::connect(path)
            .unwrap_or_else(|error| panic!("connect to unix:{}: {error}", path.display()));
        Client {
            stream: Stream::Unix(stream),
            received: Vec::new(),
            timeout: PATIENCE,
            eof: None,
        }
    }

    /// The client's own TCP port.
    pub fn local_port(&self) -> u16 {
        match &self.stream {
            Stream::Tcp(stream) => stream
                .local_addr()
                .expect("a connected socket has an address")
                .port(),
            Stream::Unix(_) => panic!("a Unix socket has no port"),
            Stream::Tls(_) => panic!("ask the TLS connection's socket"),
        }
    }

    /// The server's TCP port.
    pub fn peer_port(&self) -> u16 {
        match &self.stream {
            Stream::Tcp(stream) => stream
                .peer_addr()
                .expect("a connected socket has a peer")
                .port(),
            Stream::Unix(_) => panic!("a Unix socket has no port"),
            Stream::Tls(_) => panic!("ask the TLS connection's socket"),
        }
    }

    /// Sets the deadline of each later read operation.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// Writes exactly `bytes`.
    pub fn write(&mut self, bytes: impl AsRef<[u8]>) {
        self.stream
            .write_all(bytes.as_ref())
            .expect("write to the server");
    }

    /// Writes, or says why not (the server may have closed already).
    pub fn try_write(&mut self, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
        self.stream.write_all(bytes.as_ref())
    }

    /// Writes `pieces` one by one with `pause` between them, so that the server reads them
    /// separately: the pause is the behaviour under test, not a synchronisation.
    pub fn write_pieces(&mut self, pieces: &[&[u8]], pause: Duration) {
        for (index, piece) in pieces.iter().enumerate() {
            if index > 0 {
                std::thread::sleep(pause);
            }
            self.write(piece);
        }
    }

    /// Half-closes the connection: the server reads an end of file.
    pub fn shutdown_write(&mut self) {
        self.stream.shutdown_write().expect("shutdown(SHUT_WR)");
    }

    /// Writes `request` and reads one response.
    pub fn request(&mut self, request: impl AsRef<[u8]>) -> Response {
        self.write(request);
        self.read_response()
    }

    /// Reads one response whose body is framed as for a GET.
    pub fn read_response(&mut self) -> Response {
        self.try_read_response()
            .unwrap_or_else(|error| panic!("reading a response: {error:?}"))
    }

    /// Reads one response to a HEAD request: headers only.
    pub fn read_head_response(&mut self) -> Response {
        self.try_read_response_to(BodyExpected::None)
            .unwrap_or_else(|error| panic!("reading a response to HEAD: {error:?}"))
    }

    pub fn try_read_response(&mut self) -> Result<Response, ReadError> {
        self.try_read_response_to(BodyExpected::Framed)
    }

    /// Reads one response; 1xx, 204 and 304 responses and `BodyExpected::None` have no body.
    pub fn try_read_response_to(&mut self, body: BodyExpected) -> Result<Response, ReadError> {
        let deadline = Instant::now() + self.timeout;
        let head_length = loop {
            if let Some(position) = find(&self.received, b"\r\n\r\n") {
                break position + 4;
            }
            if self.fill(deadline)? == 0 {
                return Err(self.ended_early());
            }
        };
        let mut response = parse_head(&self.received[..head_length])
            .map_err(|message| ReadError::Malformed(message, self.received.clone()))?;
        let no_body = body == BodyExpected::None
            || (100..200).contains(&response.status)
            || response.status == 204
            || response.status == 304;
        let total = if no_body {
            head_length
        } else if response.is_chunked() {
            loop {
                match decode_chunked(&self.received[head_length..]) {
                    Ok(Some(chunked)) => {
                        response.body = chunked.body;
                        response.trailers = chunked.trailers;
                        break head_length + chunked.consumed;
                    }
                    Ok(None) => {}
                    Err(message) => {
                        return Err(ReadError::Malformed(message, self.received.clone()));
                    }
                }
                if self.fill(deadline)? == 0 {
                    return Err(self.cut_short("chunked body"));
                }
            }
        } else if let Some(length) = response.content_length() {
            while self.received.len() < head_length + length {
                if self.fill(deadline)? == 0 {
                    return Err(self.cut_short("Content-Length body"));
                }
            }
            response.body = self.received[head_length..head_length + length].to_vec();
            head_length + length
        } else {
            while self.fill(deadline)? != 0 {}
            response.body = self.received[head_length..].to_vec();
            self.received.len()
        };
        response.raw = self.received[..total].to_vec();
        self.received.drain(..total);
        Ok(response)
    }

    /// Reads everything until the server closes; panics on a timeout.
    pub fn read_to_end(&mut self) -> Vec<u8> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.fill(deadline) {
                Ok(0) => return std::mem::take(&mut self.received),
                Ok(_) => {}
                Err(ReadError::Reset) => return std::mem::take(&mut self.received),
                Err(error) => panic!("reading until close: {error:?}"),
            }
        }
    }

    /// Waits for the server to close the connection and returns how it ended and the bytes
    /// that came first; panics if it stays open past the deadline.
    pub fn wait_closed(&mut self) -> (Ending, Vec<u8>) {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.fill(deadline) {
                Ok(0) => return (Ending::Closed, std::mem::take(&mut self.received)),
                Ok(_) => {}
                Err(ReadError::Reset) => {
                    return (Ending::Reset, std::mem::take(&mut self.received));
                }
                Err(error) => panic!("the server did not close the connection: {error:?}"),
            }
        }
    }

    /// Asserts that the server closes the connection without sending anything.
    pub fn expect_closed_without_response(&mut self) {
        let (_, bytes) = self.wait_closed();
        assert!(
            bytes.is_empty(),
            "expected a close without a response, got {:?}",
            String::from_utf8_lossy(&bytes)
        );
    }

    /// True when the server sends nothing and keeps the connection open for `quiet`.
    pub fn stays_open_and_silent(&mut self, quiet: Duration) -> bool {
        let deadline = Instant::now() + quiet;
        matches!(self.fill(deadline), Err(ReadError::Timeout(ref bytes)) if bytes.is_empty())
    }

    /// Bytes received and not yet parsed.
    pub fn pending(&self) -> &[u8] {
        &self.received
    }

    /// Reads once into the buffer; `Ok(0)` at end of file.
    fn fill(&mut self, deadline: Instant) -> Result<usize, ReadError> {
        if let Some(ending) = self.eof {
            return match ending {
                Ending::Closed => Ok(0),
                Ending::Reset => Err(ReadError::Reset),
            };
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(ReadError::Timeout(self.received.clone()));
        }
        let remaining = (deadline - now).max(Duration::from_millis(1));
        self.stream
            .set_read_timeout(remaining)
            .expect("set the read timeout");
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => {
                self.eof = Some(Ending::Closed);
                Ok(0)
            }
            Ok(count) => {
                self.received.extend_from_slice(&chunk[..count]);
                Ok(count)
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Err(ReadError::Timeout(self.received.clone()))
            }
            Err(error) if error.kind() == ErrorKind::Interrupted => Ok(self.fill(deadline)?),
            Err(error)
                if matches!(
                    error.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ) =>
            {
                self.eof = Some(Ending::Reset);
                Err(ReadError::Reset)
            }
            Err(error) => panic!("read from the server: {error}"),
        }
    }

    fn ended_early(&self) -> ReadError {
        if self.received.is_empty() {
            ReadError::Closed
        } else {
            self.cut_short("head")
        }
    }

    fn cut_short(&self, what: &str) -> ReadError {
        ReadError::Malformed(
            format!("connection closed inside the {what}"),
            self.received.clone(),
        )
    }
}

/// A parsed response.
#[derive(Debug, Clone, Default)]
pub struct Response {
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub version: String,
    pub status: u16,
    pub reason: String,
    /// Header fields in the order received, duplicates kept.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// The trailer fields of a chunked body, in order.
    pub trailers: Vec<(String, String)>,
    /// The response exactly as received.
    pub raw: Vec<u8>,
}

impl Response {
    /// The first value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Every value of the header `name`, in order.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
            .collect()
    }

    pub fn has_header(&self, name: &str) -> bool {
        self.header(name).is_some()
    }

    /// The first trailer field `name` (case-insensitive).
    pub fn trailer(&self, name: &str) -> Option<&str> {
        self.trailers
            .iter()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The head (status line and header lines) as text.
    pub fn head_text(&self) -> String {
        let end = find(&self.raw, b"\r\n\r\n").map_or(self.raw.len(), |position| position + 4);
        String::from_utf8_lossy(&self.raw[..end]).into_owned()
    }

    pub fn content_length(&self) -> Option<usize> {
        self.header("Content-Length")
            .and_then(|value| value.trim().parse().ok())
    }

    pub fn is_chunked(&self) -> bool {
        self.header("Transfer-Encoding")
            .is_some_and(|value| value.eq_ignore_ascii_case("chunked"))
    }

    /// Whether the server announced it keeps the connection open.
    pub fn keeps_alive(&self) -> bool {
        self.header("Connection")
            .is_some_and(|value| value.eq_ignore_ascii_case("keep-alive"))
    }
}

/// Parses the status line and header lines of `head` (ending with the empty line).
fn parse_head(head: &[u8]) -> Result<Response, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the head is not UTF-8".to_owned())?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("bad status line {status_line:?}"));
    }
    let status = parts
        .next()
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("bad status code in {status_line:?}"))?;
    let reason = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    for line in lines.take_while(|line| !line.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line {line:?}"))?;
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    Ok(Response {
        version: version.to_owned(),
        status,
        reason,
        headers,
        ..Response::default()
    })
}

/// A chunked body taken apart.
#[derive(Debug, PartialEq, Eq)]
struct Chunked {
    body: Vec<u8>,
    trailers: Vec<(String, String)>,
    /// Bytes of the input the body used, framing and trailer section included.
    consumed: usize,
}

/// Decodes a complete chunked body at the start of `bytes`, `None` while incomplete.
fn decode_chunked(bytes: &[u8]) -> Result<Option<Chunked>, String> {
    let mut body = Vec::new();
    let mut position = 0;
    loop {
        let Some(line_end) = find(&bytes[position..], b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&bytes[position..position + line_end])
            .map_err(|_| "chunk size is not text".to_owned())?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size line {line:?}"))?;
        position += line_end + 2;
        if size == 0 {
            return decode_trailers(bytes, position, body);
        }
        if bytes.len() < position + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&bytes[position..position + size]);
        if &bytes[position + size..position + size + 2] != b"\r\n" {
            return Err("chunk data not followed by CRLF".to_owned());
        }
        position += size + 2;
    }
}

/// The trailer fields after the last chunk, up to the empty line.
fn decode_trailers(
    bytes: &[u8],
    mut position: usize,
    body: Vec<u8>,
) -> Result<Option<Chunked>, String> {
    let mut trailers = Vec::new();
    loop {
        let Some(end) = find(&bytes[position..], b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&bytes[position..position + end])
            .map_err(|_| "a trailer field is not text".to_owned())?;
        position += end + 2;
        if line.is_empty() {
            return Ok(Some(Chunked {
                body,
                trailers,
                consumed: position,
            }));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("bad trailer line {line:?}"))?;
        trailers.push((name.to_owned(), value.trim().to_owned()));
    }
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// `GET PATH HTTP/1.1` with `Host: localhost` and `Connection: close`.
pub fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
}

/// `GET PATH HTTP/1.1` with `Host: HOST` and `Connection: close`.
pub fn get_host(path: &str, host: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
}

/// `GET PATH HTTP/1.1` with `Host: localhost`, keeping the connection open.
pub fn get_keepalive(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_decoding() {
        let body = b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nTrailer: 1\r\n\r\nNEXT";
        let chunked = decode_chunked(body).unwrap().unwrap();
        assert_eq!(chunked.body, b"abcde");
        assert_eq!(
            chunked.trailers,
            vec![("Trailer".to_owned(), "1".to_owned())]
        );
        assert_eq!(&body[chunked.consumed..], b"NEXT");
        assert_eq!(decode_chunked(b"0\r\nX: 1\r\n").unwrap(), None);
        assert_eq!(decode_chunked(b"3\r\nab").unwrap(), None);
        assert!(decode_chunked(b"zz\r\n").is_err());
    }

    #[test]
    fn head_parsing_keeps_order_and_duplicates() {
        let response =
            parse_head(b"HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.reason, "OK");
        assert_eq!(response.header("X-a"), Some("1"));
        assert_eq!(response.header_all("X-A"), vec!["1", "2"]);
        assert_eq!(response.content_length(), Some(0));
    }
}
