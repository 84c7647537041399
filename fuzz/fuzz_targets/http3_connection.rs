//! The HTTP/3 server connection from arbitrary stream data.
//!
//! The input is a list of writes: a byte that picks the stream (low bits: the client's
//! control, QPACK encoder or decoder stream, or one of four request streams; 0x80 ends the
//! stream, 0x40 resets it instead), a length byte, and that many bytes. Checks: no panic;
//! no more request streams open than allowed; a failed connection stays failed with the
//! same error; a request's events come in order (head, data, trailers, end); every byte
//! written to a request stream is whole HTTP/3 frames.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use portico_http3::connection::{Config, Connection, Event, Output};
use portico_http3::frame::Header;
use portico_http3::HeaderField;

const STREAMS: [u64; 7] = [2, 6, 10, 0, 4, 8, 12];

#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
enum Seen {
    Head,
    Trailers,
    End,
}

fuzz_target!(|data: &[u8]| {
    let config = Config {
        max_request_streams: 2,
        qpack_blocked_streams: 1,
        max_field_section_size: 1024,
        stream_buffer_size: 512,
        encoder_table_capacity: 256,
        ..Config::default()
    };
    let mut connection = Connection::new(config);
    let mut written: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    let mut failed = None;
    let mut input = data;
    while let Some((&[selector, length], rest)) = input.split_first_chunk::<2>() {
        let bytes = &rest[..usize::from(length).min(rest.len())];
        input = &rest[bytes.len()..];
        let stream_id = STREAMS[usize::from(selector & 0x0f) % STREAMS.len()];
        let result = if selector & 0x40 != 0 {
            connection.stream_reset(stream_id, u64::from(length))
        } else {
            connection.receive(stream_id, bytes, selector & 0x80 != 0)
        };
        if let Some(error) = failed {
            assert_eq!(result, Err(error));
            continue;
        }
        if let Err(error) = result {
            failed = Some(error);
            continue;
        }
        assert!(connection.open_requests() <= 2);
        while let Some(event) = connection.poll_event() {
            match event {
                Event::Headers { stream_id, trailers, .. } => {
                    let before = seen.insert(stream_id, if trailers { Seen::Trailers } else { Seen::Head });
                    assert_eq!(before.is_some(), trailers);
                    let head = [HeaderField::new(":status", "200"), HeaderField::new("x-a", "b")];
                    if !trailers {
                        let _ = connection.send_headers(stream_id, &head, false);
                    }
                }
                Event::Data { stream_id, .. } => assert_eq!(seen.get(&stream_id), Some(&Seen::Head)),
                Event::Finished { stream_id } => {
                    let before = seen.insert(stream_id, Seen::End);
                    assert!(before.is_some_and(|state| state < Seen::End));
                    let _ = connection.send_data(stream_id, b"body", true);
                }
                Event::Aborted { stream_id, .. } => {
                    seen.remove(&stream_id);
                }
                Event::GoAway { .. } => connection.send_goaway(),
            }
        }
        while let Some(output) = connection.poll_output() {
            if let Output::Data { stream_id, data, .. } = output {
                if stream_id % 4 == 0 {
                    written.entry(stream_id).or_default().extend_from_slice(&data);
                }
            }
        }
    }
    for bytes in written.values() {
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let (header, used) = Header::parse(rest).expect("a whole frame header");
            let end = used + usize::try_from(header.length).expect("small");
            assert!(end <= rest.len(), "a whole frame");
            rest = &rest[end..];
        }
    }
});
