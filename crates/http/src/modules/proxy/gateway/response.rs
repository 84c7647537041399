//! A gateway's answer: the CGI head read (from FastCGI's STDOUT records, or from the
//! start of a uwsgi or SCGI stream) and written into the response buffer as an HTTP/1
//! head, which the proxy then reads as it reads any upstream's (and the cache stores and
//! reads back); then, for FastCGI, the body decoded from its records.

use cgi::fastcgi::{ResponseEvent, ResponseReader};
use cgi::head::{CgiHead, HeadParser, HeadProgress, HeadStyle};
use logging::Level;

use crate::kernel::request::Request;
use crate::modules::proxy::exchange::{
    Client, Outgoing, ReceivedHead, read_head_bytes, take_buffer,
};
use crate::modules::proxy::failure::{Action, Failure, Fault};
use crate::modules::proxy::gateway::Protocol;
use crate::modules::proxy::gateway::request::FASTCGI_REQUEST_ID;
use crate::modules::proxy::response::{self, InvalidHead};
use runtime::Stream;

/// What is left of a FastCGI answer after its head: the record reader, and the body
/// bytes that came in the head's last record.
#[derive(Debug)]
pub(crate) struct FastcgiBody {
    pub reader: ResponseReader,
    pub pending: Vec<u8>,
    /// What is left of the body's `Content-Length` (0 for a body the status or the
    /// method rules out): bytes past it are dropped, and an answer that ends short of it
    /// is cut.
    pub remaining: Option<u64>,
    /// END_REQUEST came short of `remaining`: the next read fails.
    pub ended_short: bool,
    /// Stderr that came with the body, not logged yet.
    pub stderr: Vec<Vec<u8>>,
}

impl FastcgiBody {
    /// The body's reader once the head is passed on: `said` is the framing the head says
    /// (its `Content-Length`, or none for a HEAD, 204 or 304).
    pub(crate) fn into_body(
        mut self: Box<Self>,
        said: crate::modules::proxy::response::UpstreamFraming,
    ) -> Box<Self> {
        use crate::modules::proxy::response::UpstreamFraming;
        self.remaining = match said {
            UpstreamFraming::Length(length) => Some(length),
            UpstreamFraming::None => Some(0),
            UpstreamFraming::Chunked | UpstreamFraming::Close => None,
        };
        self
    }

    /// Appends a piece of the body, up to what `Content-Length` leaves.
    pub(crate) fn take_body(&mut self, out: &mut Vec<u8>, piece: &[u8]) {
        let take = match &mut self.remaining {
            Some(left) => {
                let take = usize::try_from(*left)
                    .unwrap_or(usize::MAX)
                    .min(piece.len());
                *left -= take as u64;
                take
            }
            None => piece.len(),
        };
        out.extend_from_slice(&piece[..take]);
    }
}

/// Where a FastCGI body's stderr is logged: the request's location's error log, with the
/// request's context (`while reading upstream, client: ...`), made only when stderr comes.
pub(crate) struct StderrLog<'a> {
    pub worker: &'a crate::kernel::worker::HttpWorker,
    pub connection: crate::kernel::request::ConnectionInfo,
}

impl StderrLog<'_> {
    /// Logs a message about the body at `error` (memcached's invalid trailer).
    pub(crate) fn write_message(&self, request: &Request<'_>, message: std::fmt::Arguments<'_>) {
        crate::kernel::request_log::log_during(
            self.worker,
            &self.connection,
            request,
            Level::Error,
            Some("reading upstream"),
            message,
        );
    }

    /// Logs the pieces of stderr that came with the body.
    pub(crate) fn write(&self, request: &Request<'_>, pieces: Vec<Vec<u8>>) {
        for piece in pieces {
            crate::kernel::request_log::log_during(
                self.worker,
                &self.connection,
                request,
                Level::Error,
                Some("reading upstream"),
                format_args!(
                    "FastCGI sent in stderr: \"{}\"",
                    String::from_utf8_lossy(cgi::fastcgi::stderr_message(&piece))
                ),
            );
        }
    }
}

/// Reads a gateway's response head within `*_read_timeout`: the head as HTTP/1 text at
/// the start of the buffer the body continues from.
pub(crate) async fn read_head(
    stream: &Stream,
    outgoing: &Outgoing<'_>,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
    attempt: usize,
) -> Result<ReceivedHead, Failure> {
    let proxy = outgoing.proxy;
    let started = request.upstream.attempts[attempt].started;
    let buffer_size = usize::try_from(proxy.buffer_size)
        .unwrap_or(usize::MAX)
        .max(1024);
    // Records are read into the window's spare room (nothing zeroed); what the reader used
    // is dropped from its front when the window is full.
    let window = buffer_size.max(16 * 1024);
    let mut input = take_buffer(0);
    input.reserve(window);
    let mut used = 0;
    let invalid = |message: String| {
        Failure::upstream(
            Fault::InvalidHead(InvalidHead(message)),
            Action::ReadingHead,
            true,
        )
    };
    let mut fastcgi = (proxy.protocol == Protocol::Fastcgi)
        .then(|| ResponseReader::new(FASTCGI_REQUEST_ID, buffer_size));
    let mut parser = HeadParser::new(HeadStyle::StatusLineOrCgi, buffer_size);
    loop {
        if used == input.len() {
            input.clear();
            used = 0;
        } else if input.len() >= window {
            input.drain(..used);
            used = 0;
        }
        let count = read_head_bytes(stream, proxy, client, &mut input, window).await?;
        request.upstream.attempts[attempt].bytes_received += count as u64;
        if count == 0 {
            let started =
                !input.is_empty() || request.upstream.attempts[attempt].bytes_received > 0;
            return Err(Failure {
                head_started: started,
                ..Failure::upstream(Fault::Closed, Action::ReadingHead, true)
            });
        }
        let found = match &mut fastcgi {
            Some(reader) => loop {
                let (taken, event) = reader
                    .read(&input[used..])
                    .map_err(|error| invalid(error.to_string()))?;
                used += taken;
                match event {
                    None => break None,
                    Some(ResponseEvent::Stderr(piece)) => {
                        log_stderr(outgoing, request, piece, "reading response header");
                        let catch = &outgoing.gateway.catch_stderr;
                        if catch.iter().any(|text| contains(piece, text)) {
                            return Err(invalid("upstream sent invalid header".to_owned()));
                        }
                    }
                    Some(ResponseEvent::Head { head, body }) => {
                        break Some((head, body.to_vec()));
                    }
                    // The reader refuses these before a head.
                    Some(ResponseEvent::Body(_) | ResponseEvent::End(_)) => {
                        return Err(invalid(
                            "upstream sent unexpected FastCGI record".to_owned(),
                        ));
                    }
                }
            },
            None => {
                let progress = parser
                    .push(&input[used..])
                    .map_err(|error| invalid(error.to_string()))?;
                match progress {
                    HeadProgress::Partial => {
                        used = input.len();
                        None
                    }
                    HeadProgress::Complete { head, body_offset } => {
                        used += body_offset;
                        Some((head, Vec::new()))
                    }
                }
            }
        };
        let Some((head, pending)) = found else {
            continue;
        };
        request.upstream.attempts[attempt].header_time = Some(started.elapsed());
        // The head as HTTP/1 text, then the bytes read past it (records, or the body).
        let mut buffer = take_buffer(0);
        write_head_text(&head, &mut buffer);
        let text_len = buffer.len();
        buffer.extend_from_slice(&input[used..]);
        crate::modules::proxy::exchange::give_buffer(input);
        let mut parsed = match response::parse(&buffer[..text_len]) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => return Err(invalid("upstream sent invalid header".to_owned())),
            Err(error) => return Err(invalid(error.0)),
        };
        parsed.connection_close =
            proxy.protocol != Protocol::Fastcgi || !outgoing.gateway.keep_conn;
        let gateway = fastcgi.map(|reader| {
            Box::new(FastcgiBody {
                reader,
                pending,
                remaining: None,
                ended_short: false,
                stderr: Vec::new(),
            })
        });
        return Ok(ReceivedHead {
            head: parsed,
            buffer,
            gateway,
            grpc: None,
        });
    }
}

/// `Status: 404 Not Found` or the status line becomes `HTTP/1.1 404 Not Found`; the other
/// fields follow as they came.
fn write_head_text(head: &CgiHead, out: &mut Vec<u8>) {
    out.extend_from_slice(b"HTTP/1.1 ");
    match head.status_line() {
        Some(line) => out.extend_from_slice(line),
        None => {
            let status = head.status();
            out.extend_from_slice(status.to_string().as_bytes());
            out.push(b' ');
            if let Some(reason) = http1::status::reason_phrase(status) {
                out.extend_from_slice(reason.as_bytes());
            }
        }
    }
    out.extend_from_slice(b"\r\n");
    for (name, value) in head.fields() {
        if name.eq_ignore_ascii_case(b"status") {
            continue;
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || memchr::memmem::find(haystack, needle).is_some()
}

/// `FastCGI sent in stderr: "..." while ACTION`, at `error`, as nginx logs each piece.
pub(crate) fn log_stderr(
    outgoing: &Outgoing<'_>,
    request: &Request<'_>,
    piece: &[u8],
    action: &str,
) {
    let message = cgi::fastcgi::stderr_message(piece);
    crate::kernel::request_log::log(
        outgoing.worker,
        outgoing.connection,
        request,
        Level::Error,
        format_args!(
            "FastCGI sent in stderr: \"{}\" while {action} from upstream",
            String::from_utf8_lossy(message)
        ),
    );
}
