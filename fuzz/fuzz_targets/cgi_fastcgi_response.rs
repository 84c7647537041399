//! A FastCGI responder's answer from arbitrary bytes, read by `ResponseReader` and by the
//! bare `Decoder`. The first byte picks the piece size the input is fed in, the second the
//! head's buffer size; the rest is the answer. Checks: no panic; every refusal is worded
//! as nginx words it; the reader uses only what it is given and nothing after the end;
//! events come in order (stderr any time, one head, then body, then the end); the pieces
//! give what the whole input gives; the head fits the buffer; the decoder's stdout is the
//! head and the body the reader found.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_cgi::fastcgi::{Decoder, Event, ResponseEvent, ResponseReader};

#[derive(Debug, Default, PartialEq, Eq)]
struct Answer {
    head_len: Option<usize>,
    body: Vec<u8>,
    stderr: Vec<u8>,
    ended: bool,
    error: Option<String>,
    used: usize,
}

fn read(input: &[u8], piece_len: usize, buffer_size: usize) -> Answer {
    let mut reader = ResponseReader::new(1, buffer_size);
    let mut answer = Answer::default();
    for piece in input.chunks(piece_len) {
        let mut at = 0;
        while at < piece.len() {
            let (used, event) = match reader.read(&piece[at..]) {
                Ok(read) => read,
                Err(error) => {
                    let text = error.to_string();
                    assert!(text.starts_with("upstream "), "{text}");
                    answer.error = Some(text);
                    // How much was used before an error depends on the pieces.
                    answer.used = 0;
                    return answer;
                }
            };
            assert!(used <= piece.len() - at);
            at += used;
            answer.used += used;
            let Some(event) = event else { break };
            assert!(!answer.ended, "nothing after the end");
            match event {
                ResponseEvent::Head { head, body } => {
                    assert!(answer.head_len.is_none(), "one head");
                    assert!(head.byte_len() <= buffer_size);
                    answer.head_len = Some(head.byte_len());
                    answer.body.extend_from_slice(body);
                }
                ResponseEvent::Body(body) => {
                    assert!(answer.head_len.is_some() && !body.is_empty());
                    answer.body.extend_from_slice(body);
                }
                ResponseEvent::Stderr(stderr) => {
                    assert!(!stderr.is_empty());
                    answer.stderr.extend_from_slice(stderr);
                }
                ResponseEvent::End(_) => {
                    assert!(answer.head_len.is_some());
                    answer.ended = true;
                }
            }
        }
        if answer.ended {
            break;
        }
    }
    assert_eq!(answer.ended, reader.is_ended());
    answer
}

/// The decoder's stdout and stderr, joined, up to its end or first error.
fn decode(input: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut decoder = Decoder::new(1);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut at = 0;
    while let Ok((used, Some(event))) = decoder.decode(&input[at..]) {
        at += used;
        match event {
            Event::Stdout(piece) => stdout.extend_from_slice(piece),
            Event::Stderr(piece) => stderr.extend_from_slice(piece),
            Event::StdoutEnd => {}
            Event::EndRequest(_) => break,
        }
    }
    (stdout, stderr)
}

fuzz_target!(|data: &[u8]| {
    let [piece_byte, size_byte, input @ ..] = data else {
        return;
    };
    let piece_len = usize::from(*piece_byte) + 1;
    let buffer_size = usize::from(*size_byte) * 16 + 1;
    let whole = read(input, input.len().max(1), buffer_size);
    let pieces = read(input, piece_len, buffer_size);
    assert_eq!(pieces, whole);
    if whole.error.is_none() {
        let (stdout, stderr) = decode(input);
        assert_eq!(stderr, whole.stderr);
        if let Some(head_len) = whole.head_len {
            assert_eq!(stdout[head_len..], whole.body[..]);
        }
    }
});
