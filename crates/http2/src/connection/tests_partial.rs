//! Header blocks looked through while their frames arrive: an integer too long is refused
//! before its frame is complete, as nginx refuses it (`h2_headers.t`, "too long index" and
//! "too long literal"); a valid block arriving in any pieces is not.

use super::tests_client::{Client, get, goaway};
use super::{Config, Event};
use crate::error::{Error, ErrorCode, Reason};
use crate::frame::{Frame, FrameHeader, flag, kind};
use crate::hpack::HpackError;

/// Feeds `bytes` and returns how many the connection took (whole frames only).
fn feed(client: &mut Client, bytes: &[u8]) -> Result<usize, Error> {
    client.connection.receive(bytes)
}

fn header_bytes(length: u32, kind: u8, flags: u8, stream_id: u32) -> Vec<u8> {
    FrameHeader {
        length,
        kind,
        flags,
        stream_id,
    }
    .to_bytes()
    .to_vec()
}

fn assert_compression_error(result: Result<usize, Error>, client: &mut Client) {
    match result {
        Err(Error::Connection {
            code: ErrorCode::COMPRESSION_ERROR,
            reason: Reason::Compression(HpackError::IntegerOverflow),
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::COMPRESSION_ERROR))
    );
}

#[test]
fn a_too_long_index_fails_before_its_frame_is_complete() {
    let mut client = Client::new(Config::default());
    // A HEADERS frame of 5 bytes of which 4 came: an index whose octets all say more follow.
    let mut bytes = header_bytes(5, kind::HEADERS, flag::END_STREAM | flag::END_HEADERS, 1);
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    assert_compression_error(feed(&mut client, &bytes), &mut client);
}

#[test]
fn a_too_long_string_length_fails_before_its_frame_is_complete() {
    let mut client = Client::new(Config::default());
    // A literal on name index 2, its value's length in 4 continuing octets, of 6 bytes.
    let mut bytes = header_bytes(6, kind::HEADERS, flag::END_STREAM | flag::END_HEADERS, 1);
    bytes.extend_from_slice(&[0x42, 0xff, 0xff, 0xff, 0xff]);
    assert_compression_error(feed(&mut client, &bytes), &mut client);
}

#[test]
fn a_too_long_integer_in_a_continuation_fails_as_it_arrives() {
    let mut client = Client::new(Config::default());
    let first = client.block(&get("/"));
    let mut bytes = header_bytes(
        u32::try_from(first.len()).expect("a small block"),
        kind::HEADERS,
        flag::END_STREAM,
        1,
    );
    bytes.extend_from_slice(&first);
    assert_eq!(feed(&mut client, &bytes), Ok(bytes.len()));
    // A padded, prioritised HEADERS has no CONTINUATION; this one's fragment is 10 bytes.
    let mut bytes = header_bytes(10, kind::CONTINUATION, flag::END_HEADERS, 1);
    bytes.extend_from_slice(&[0x10, 0xff, 0xff]);
    assert_eq!(feed(&mut client, &bytes), Ok(0), "not an error yet");
    bytes.extend_from_slice(&[0xff, 0xff]);
    assert_compression_error(feed(&mut client, &bytes), &mut client);
}

#[test]
fn padding_and_priority_are_not_read_as_the_block() {
    let mut client = Client::new(Config::default());
    // Padded (pad length 4) and with a priority: 1 + 5 bytes before the block, whose
    // first byte then is an index in four continuing octets.
    let flags = flag::END_STREAM | flag::END_HEADERS | flag::PADDED | flag::PRIORITY;
    let mut bytes = header_bytes(1 + 5 + 6 + 4, kind::HEADERS, flags, 1);
    bytes.extend_from_slice(&[4, 0, 0, 0, 0, 15]);
    assert_eq!(
        feed(&mut client, &bytes),
        Ok(0),
        "the pad length and priority"
    );
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    assert_compression_error(feed(&mut client, &bytes), &mut client);
}

#[test]
fn a_valid_block_arriving_a_byte_at_a_time_is_decoded_whole() {
    let mut client = Client::new(Config::default());
    let mut fields = get("/");
    fields.push(crate::hpack::HeaderField::new("referer", "1234".repeat(32)));
    let block = client.block(&fields);
    let mut bytes = Vec::new();
    Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: &block,
        padding: Some(3),
        end_stream: true,
        end_headers: true,
    }
    .write(&mut bytes);
    for arrived in 1..bytes.len() {
        assert_eq!(
            feed(&mut client, &bytes[..arrived]),
            Ok(0),
            "{arrived} bytes"
        );
    }
    assert_eq!(feed(&mut client, &bytes), Ok(bytes.len()));
    let events = client.events();
    let [Event::Headers { fields: got, .. }] = &events[..] else {
        panic!("{events:?}");
    };
    assert_eq!(got, &fields);
}
