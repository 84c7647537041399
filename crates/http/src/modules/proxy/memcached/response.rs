//! memcached's answer: the `VALUE KEY FLAGS LENGTH` line (or `END` for a key it does not
//! have) turned into an HTTP/1 head at the start of the response buffer, as the gateways'
//! heads are, so that the proxy reads it as any upstream's; then the `\r\nEND\r\n` that
//! follows the value, matched by [`Trailer`] as the body's reader meets it.

use logging::Level;
use runtime::Stream;

use crate::kernel::request::Request;
use crate::modules::proxy::exchange::{
    Client, Outgoing, ReceivedHead, give_buffer, read_head_bytes, take_buffer,
};
use crate::modules::proxy::failure::{Action, Failure, Fault};
use crate::modules::proxy::memcached::request::sent_key;
use crate::modules::proxy::response::{self, InvalidHead};

/// What ends a value: the line break after its bytes and `END`.
const END: &[u8] = b"\r\nEND\r\n";

/// The first line of an answer, as nginx reads it.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// `VALUE KEY FLAGS LENGTH`: the value's length, and whether its flags ask for
    /// `Content-Encoding: gzip` (`memcached_gzip_flag`).
    Value { length: u64, gzip: bool },
    /// `END`: the key is not there.
    NotFound,
}

/// Reads the answer's first line within `memcached_buffer_size` and read timeout, and
/// returns it as an HTTP/1 head (200 with the value's `Content-Length`, or 404), followed
/// by the bytes read past the line.
pub(crate) async fn read_head(
    stream: &Stream,
    outgoing: &Outgoing<'_>,
    client: &mut Client<'_, '_>,
    request: &mut Request<'_>,
    attempt: usize,
) -> Result<ReceivedHead, Failure> {
    let proxy = outgoing.proxy;
    let limit = usize::try_from(proxy.buffer_size)
        .unwrap_or(usize::MAX)
        .max(64);
    let mut input = take_buffer(0);
    input.reserve(limit);
    let line_end = loop {
        let count = read_head_bytes(stream, proxy, client, &mut input, limit).await?;
        request.upstream.attempts[attempt].bytes_received += count as u64;
        if let Some(end) = memchr::memchr(b'\n', &input) {
            break end;
        }
        if count == 0 {
            return Err(Failure {
                head_started: !input.is_empty(),
                ..Failure::upstream(Fault::Closed, Action::ReadingHead, true)
            });
        }
        if input.len() >= limit {
            return Err(Failure::upstream(
                Fault::HeadTooBig,
                Action::ReadingHead,
                true,
            ));
        }
    };
    let started = request.upstream.attempts[attempt].started;
    request.upstream.attempts[attempt].header_time = Some(runtime::clock::since(started));
    let line = &input[..line_end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let key = sent_key(outgoing.head);
    let parsed = parse_line(line, key, outgoing.gateway.gzip_flag).map_err(|message| {
        Failure::upstream(
            Fault::InvalidHead(InvalidHead(message)),
            Action::ReadingHead,
            true,
        )
    })?;
    let mut buffer = take_buffer(0);
    match parsed {
        Line::Value { length, gzip } => {
            let mime = request
                .location
                .map(|id| &outgoing.worker.conf().location(id).settings.core)
                .map(|core| crate::kernel::core::types::mime_type(core, &request.uri));
            buffer.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
            if let Some(mime) = mime {
                buffer.extend_from_slice(b"Content-Type: ");
                buffer.extend_from_slice(mime);
                buffer.extend_from_slice(b"\r\n");
            }
            buffer.extend_from_slice(format!("Content-Length: {length}\r\n").as_bytes());
            if gzip {
                buffer.extend_from_slice(b"Content-Encoding: gzip\r\n");
            }
        }
        Line::NotFound => {
            crate::kernel::request_log::log(
                outgoing.worker,
                outgoing.connection,
                request,
                Level::Info,
                format_args!(
                    "key: \"{}\" was not found by memcached",
                    String::from_utf8_lossy(key)
                ),
            );
            buffer.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n");
        }
    }
    buffer.extend_from_slice(b"\r\n");
    let text_len = buffer.len();
    buffer.extend_from_slice(&input[line_end + 1..]);
    give_buffer(input);
    let head = match response::parse(&buffer[..text_len]) {
        Ok(Some(head)) => head,
        Ok(None) | Err(_) => {
            let message = "upstream sent invalid header".to_owned();
            return Err(Failure::upstream(
                Fault::InvalidHead(InvalidHead(message)),
                Action::ReadingHead,
                true,
            ));
        }
    };
    Ok(ReceivedHead {
        head,
        buffer,
        gateway: None,
        grpc: None,
    })
}

/// Reads `VALUE KEY FLAGS LENGTH` or `END`; anything else is the error-log message nginx
/// writes for it.
fn parse_line(line: &[u8], key: &[u8], gzip_flag: u32) -> Result<Line, String> {
    let shown = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let Some(rest) = line.strip_prefix(b"VALUE ") else {
        if line == b"END" {
            return Ok(Line::NotFound);
        }
        return Err(format!(
            "memcached sent invalid response: \"{}\"",
            shown(line)
        ));
    };
    let Some(rest) = rest.strip_prefix(key) else {
        return Err(format!(
            "memcached sent invalid key in response \"{}\" for key \"{}\"",
            shown(line),
            shown(key)
        ));
    };
    let invalid = || format!("memcached sent invalid response: \"{}\"", shown(line));
    let rest = rest.strip_prefix(b" ").ok_or_else(invalid)?;
    let space = memchr::memchr(b' ', rest).ok_or_else(invalid)?;
    let (flags, length) = (&rest[..space], &rest[space + 1..]);
    let mut gzip = false;
    if gzip_flag != 0 {
        let flags = number(flags).ok_or_else(|| {
            format!(
                "memcached sent invalid flags in response \"{}\" for key \"{}\"",
                shown(line),
                shown(key)
            )
        })?;
        gzip = flags & u64::from(gzip_flag) != 0;
    }
    let length = number(length).ok_or_else(|| {
        format!(
            "memcached sent invalid length in response \"{}\" for key \"{}\"",
            shown(line),
            shown(key)
        )
    })?;
    Ok(Line::Value { length, gzip })
}

/// A decimal number of digits only.
fn number(text: &[u8]) -> Option<u64> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// The `\r\nEND\r\n` after a value, matched as its bytes arrive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Trailer {
    matched: usize,
    /// A byte differed: nginx logs `memcached sent invalid trailer`, ends the response
    /// there and does not keep the connection.
    pub invalid: bool,
    /// The invalid trailer was logged.
    pub logged: bool,
}

impl Trailer {
    /// Takes the trailer's bytes from the start of `input`; returns how many it took.
    pub(crate) fn take(&mut self, input: &[u8]) -> usize {
        let mut taken = 0;
        while !self.is_done() && taken < input.len() {
            if input[taken] != END[self.matched] {
                self.invalid = true;
                break;
            }
            self.matched += 1;
            taken += 1;
        }
        taken
    }

    /// Whether the body's reader is done with it: matched whole, or found invalid.
    pub(crate) fn is_done(&self) -> bool {
        self.invalid || self.matched == END.len()
    }

    /// Matched whole: the connection may serve another request.
    pub(crate) fn is_whole(&self) -> bool {
        !self.invalid && self.matched == END.len()
    }
}

#[cfg(test)]
mod tests {
    use super::{Line, Trailer, parse_line};

    #[test]
    fn value_lines_give_the_length() {
        assert_eq!(
            parse_line(b"VALUE /a 0 8", b"/a", 0),
            Ok(Line::Value {
                length: 8,
                gzip: false
            })
        );
        assert_eq!(
            parse_line(b"VALUE /a 3 0", b"/a", 2),
            Ok(Line::Value {
                length: 0,
                gzip: true
            })
        );
        assert_eq!(
            parse_line(b"VALUE /a 1 5", b"/a", 2),
            Ok(Line::Value {
                length: 5,
                gzip: false
            })
        );
        assert_eq!(parse_line(b"END", b"/a", 0), Ok(Line::NotFound));
    }

    #[test]
    fn bad_lines_are_worded_as_nginx_logs_them() {
        assert_eq!(
            parse_line(b"SERVER_ERROR out of memory", b"/a", 0),
            Err("memcached sent invalid response: \"SERVER_ERROR out of memory\"".to_owned())
        );
        assert_eq!(
            parse_line(b"VALUE /b 0 8", b"/a", 0),
            Err(
                "memcached sent invalid key in response \"VALUE /b 0 8\" for key \"/a\"".to_owned()
            )
        );
        assert_eq!(
            parse_line(b"VALUE /a 0 x8", b"/a", 0),
            Err(
                "memcached sent invalid length in response \"VALUE /a 0 x8\" for key \"/a\""
                    .to_owned()
            )
        );
        assert_eq!(
            parse_line(b"VALUE /a z 8", b"/a", 1),
            Err(
                "memcached sent invalid flags in response \"VALUE /a z 8\" for key \"/a\""
                    .to_owned()
            )
        );
        assert!(parse_line(b"VALUE /a 8", b"/a", 0).is_err());
        assert!(parse_line(b"VALUE /ab 0 8", b"/a", 0).is_err());
    }

    #[test]
    fn the_trailer_is_matched_across_reads() {
        let whole = b"\r\nEND\r\n";
        for split in 0..=whole.len() {
            let mut trailer = Trailer::default();
            assert_eq!(trailer.take(&whole[..split]), split);
            assert!(!trailer.is_done() || split == whole.len());
            assert_eq!(trailer.take(&whole[split..]), whole.len() - split);
            assert!(trailer.is_whole());
        }
        let mut trailer = Trailer::default();
        assert_eq!(trailer.take(b"\r\nEND\r\nextra"), 7);
        assert!(trailer.is_whole());
        let mut trailer = Trailer::default();
        assert_eq!(trailer.take(b"\r\nENX"), 4);
        assert!(trailer.is_done() && !trailer.is_whole());
    }
}
