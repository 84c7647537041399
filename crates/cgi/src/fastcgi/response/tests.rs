use super::*;
use crate::error::{HeadError, RecordError};
use crate::fastcgi::{ProtocolStatus, RecordHeader};

fn record(record_type: u8, content: &[u8]) -> Vec<u8> {
    let header = RecordHeader {
        version: 1,
        record_type,
        request_id: 1,
        content_len: u16::try_from(content.len()).expect("test content fits a record"),
        padding_len: (content.len() % 3) as u8,
    };
    let mut bytes = header.to_bytes().to_vec();
    bytes.extend_from_slice(content);
    bytes.resize(header.record_len(), 0);
    bytes
}

fn end_request() -> Vec<u8> {
    record(3, &[0, 0, 0, 9, 0, 0, 0, 0])
}

/// What a whole answer read in the given pieces comes to.
#[derive(Debug, Default, PartialEq, Eq)]
struct Answer {
    head: Option<CgiHead>,
    body: Vec<u8>,
    stderr: Vec<u8>,
    end: Option<EndRequest>,
    error: Option<FastcgiError>,
}

fn read_pieces(pieces: &[&[u8]], buffer_size: usize) -> Answer {
    let mut reader = ResponseReader::new(1, buffer_size);
    let mut answer = Answer::default();
    for piece in pieces {
        let mut at = 0;
        loop {
            let (used, event) = match reader.read(&piece[at..]) {
                Ok(read) => read,
                Err(error) => {
                    assert_eq!(
                        reader.read(&piece[at..]),
                        Ok((0, None)),
                        "nothing after an error"
                    );
                    answer.error = Some(error);
                    return answer;
                }
            };
            at += used;
            match event {
                None => break,
                Some(ResponseEvent::Head { head, body }) => {
                    assert!(answer.head.is_none(), "one head");
                    answer.head = Some(head);
                    answer.body.extend_from_slice(body);
                }
                Some(ResponseEvent::Body(body)) => {
                    assert!(answer.head.is_some() && !body.is_empty());
                    answer.body.extend_from_slice(body);
                }
                Some(ResponseEvent::Stderr(stderr)) => answer.stderr.extend_from_slice(stderr),
                Some(ResponseEvent::End(end)) => answer.end = Some(end),
            }
        }
    }
    answer
}

/// Reads `input` whole, split at every byte boundary and one byte at a time.
fn read_every_split(input: &[u8], buffer_size: usize) -> Answer {
    let whole = read_pieces(&[input], buffer_size);
    for split in 0..=input.len() {
        let (first, second) = input.split_at(split);
        assert_eq!(
            read_pieces(&[first, second], buffer_size),
            whole,
            "split at {split}"
        );
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(
        read_pieces(&bytes, buffer_size),
        whole,
        "one byte at a time"
    );
    whole
}

/// A head split between records in the middle of a line, stderr between them.
fn split_answer() -> Vec<u8> {
    let mut input = record(7, b"PHP message: early\n");
    input.extend(record(6, b"Status: 404 Not Fo"));
    input.extend(record(7, b"PHP message: between"));
    input.extend(record(6, b"und\r\nX-Powered-By: PHP\r\n\r\n<html>"));
    input.extend(record(6, b"</html>"));
    input.extend(record(6, b""));
    input.extend(end_request());
    input
}

#[test]
fn head_body_stderr_and_end_however_split() {
    let answer = read_every_split(&split_answer(), 4096);
    assert_eq!(answer.error, None);
    let head = answer.head.expect("a head");
    assert_eq!(head.status(), 404);
    assert_eq!(head.status_line(), Some(&b"404 Not Found"[..]));
    assert_eq!(head.field(b"X-Powered-By"), Some(&b"PHP"[..]));
    assert_eq!(answer.body, b"<html></html>");
    assert_eq!(answer.stderr, b"PHP message: early\nPHP message: between");
    let end = answer.end.expect("an end");
    assert_eq!(
        (end.app_status, end.protocol_status),
        (9, ProtocolStatus::RequestComplete)
    );
}

#[test]
fn a_response_without_body_ends_with_an_empty_head_body() {
    let mut input = record(6, b"Status: 204\r\n\r\n");
    input.extend(record(6, b""));
    input.extend(end_request());
    let mut reader = ResponseReader::new(1, 4096);
    let (used, event) = reader.read(&input).expect("read");
    assert!(
        matches!(event, Some(ResponseEvent::Head { ref head, body: b"" }) if head.status() == 204)
    );
    let (rest, event) = reader.read(&input[used..]).expect("read");
    assert!(matches!(event, Some(ResponseEvent::End(_))));
    assert_eq!(used + rest, input.len());
    assert!(reader.is_ended());
    assert_eq!(reader.finish(), Ok(()));
}

#[test]
fn stdout_closed_before_the_head_ended_is_refused() {
    let mut input = record(6, b"Content-Type: text/html\r\n");
    input.extend(record(6, b""));
    let answer = read_every_split(&input, 4096);
    let error = answer.error.expect("refused");
    assert_eq!(error, FastcgiError::StdoutClosedBeforeHead);
    assert_eq!(
        error.to_string(),
        "upstream prematurely closed FastCGI stdout"
    );
}

#[test]
fn end_request_before_the_head_is_an_unexpected_record() {
    let mut input = record(7, b"Primary script unknown");
    input.extend(end_request());
    let answer = read_every_split(&input, 4096);
    assert_eq!(answer.stderr, b"Primary script unknown");
    let error = answer.error.expect("refused");
    assert_eq!(
        error.to_string(),
        "upstream sent unexpected FastCGI record: 3"
    );
}

#[test]
fn a_closed_connection_means_what_nginx_says_it_means() {
    let input = split_answer();
    let mut reader = ResponseReader::new(1, 4096);
    assert_eq!(reader.finish(), Err(FastcgiError::ClosedBeforeHead));
    assert_eq!(
        FastcgiError::ClosedBeforeHead.to_string(),
        "upstream prematurely closed connection"
    );
    let mut at = 0;
    loop {
        let (used, event) = reader.read(&input[at..]).expect("read");
        at += used;
        if matches!(event, Some(ResponseEvent::Head { .. })) {
            break;
        }
        assert_eq!(
            reader.finish(),
            Err(FastcgiError::ClosedBeforeHead),
            "{event:?}"
        );
    }
    let error = reader.finish().expect_err("the body has not ended");
    assert_eq!(
        error.to_string(),
        "upstream prematurely closed FastCGI request"
    );
}

#[test]
fn the_head_must_fit_the_buffer_but_stderr_does_not_count() {
    let head = b"Content-Type: text/plain\r\n\r\n";
    let mut input = record(7, &[b'e'; 5000]);
    input.extend(record(6, &head[..10]));
    input.extend(record(6, &head[10..]));
    input.extend(record(6, b""));
    input.extend(end_request());
    let answer = read_pieces(&[&input], head.len());
    assert_eq!((answer.error, answer.stderr.len()), (None, 5000));
    assert!(answer.head.is_some() && answer.end.is_some());
    let answer = read_pieces(&[&input], head.len() - 1);
    assert_eq!(answer.error, Some(FastcgiError::Head(HeadError::TooBig)));
}

#[test]
fn record_and_head_errors_keep_their_words() {
    let answer = read_every_split(b"HTTP/1.1 200 OK\r\n", 4096);
    let error = answer.error.expect("refused");
    assert_eq!(
        error,
        FastcgiError::Record(RecordError::UnsupportedVersion { version: 72 })
    );
    assert_eq!(
        error.to_string(),
        "upstream sent unsupported FastCGI protocol version: 72"
    );

    let answer = read_every_split(&record(6, b"Bad Line\r\n\r\n"), 4096);
    assert_eq!(
        answer.error.expect("refused").to_string(),
        "upstream sent invalid header: \"Bad\\x20...\""
    );
}

#[test]
fn bytes_after_the_end_are_not_used() {
    let mut input = record(6, b"\r\nbody");
    input.extend(end_request());
    let whole = input.len();
    input.extend_from_slice(b"next");
    let mut reader = ResponseReader::new(1, 4096);
    let mut at = 0;
    while let (used, Some(_)) = reader.read(&input[at..]).expect("read") {
        at += used;
    }
    assert_eq!(at, whole);
    assert!(reader.is_ended());
}
