//! The DATA path: buffers handed over are framed and written without a copy, copies and
//! buffers keep their order, heads given as pairs encode as fields do.

use std::io::IoSlice;

use bytes::Bytes;

use super::Config;
use super::tests_client::{Client, OwnedFrame, data, get};
use crate::frame::{self, Frame};
use crate::hpack::HeaderField;

fn started(config: Config) -> Client {
    let mut client = Client::new(config);
    client.headers(1, &get("/"), true).expect("request");
    client
        .connection
        .send_header_pairs(1, [(&b":status"[..], &b"200"[..])], false)
        .expect("head");
    client.take_frames();
    client
}

/// The payloads of the DATA frames among `frames`, joined.
fn body(frames: &[OwnedFrame]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for owned in frames {
        if let Frame::Data { data, .. } = owned.parsed() {
            bytes.extend_from_slice(data);
        }
    }
    bytes
}

#[test]
fn a_shared_buffer_is_written_from_where_it_lies() {
    let mut client = started(Config::default());
    // Another open stream: a connection keeps a buffer per open stream, none when idle.
    client.headers(3, &get("/"), true).expect("request");
    let buffer = Bytes::from((0..=255u8).cycle().take(20_000).collect::<Vec<u8>>());
    let start = buffer.as_ptr() as usize;
    client
        .connection
        .send_data_shared(1, buffer.clone(), true)
        .expect("body");
    client.connection.flush();
    let mut slices = [IoSlice::new(&[]); 16];
    let filled = client.connection.output_slices(&mut slices);
    // Frame headers and payloads alternate; the payloads point into the buffer.
    let payloads: Vec<(usize, usize)> = slices[..filled]
        .iter()
        .filter(|slice| slice.len() > frame::HEADER_LEN)
        .map(|slice| (slice.as_ptr() as usize - start, slice.len()))
        .collect();
    assert_eq!(payloads, [(0, 8192), (8192, 8192), (16_384, 3616)]);
    drop(buffer);
    let frames = client.take_frames();
    assert_eq!(
        data(&frames),
        [(1, 8192, false), (1, 8192, false), (1, 3616, true)]
    );
    assert_eq!(
        body(&frames),
        (0..=255u8).cycle().take(20_000).collect::<Vec<u8>>()
    );
    // All of it written: the buffer comes back empty for the next piece.
    let reclaimed = client.connection.take_reclaimed_buffer();
    assert!(reclaimed.is_some_and(|buffer| buffer.is_empty() && buffer.capacity() >= 20_000));
    client
        .connection
        .send_data_shared(3, Bytes::from(vec![0; 5000]), true)
        .expect("body");
    client.connection.flush();
    client.take_frames();
    assert_eq!(client.connection.active_streams(), 0);
    assert_eq!(
        client.connection.take_reclaimed_buffer(),
        None,
        "idle: none kept"
    );
}

#[test]
fn copies_and_buffers_go_out_in_the_order_they_were_queued() {
    let mut client = started(Config::default());
    let connection = &mut client.connection;
    connection.send_data(1, b"one,", false).expect("copy");
    connection.send_data(1, b"two,", false).expect("copy");
    let large = Bytes::from(vec![b'3'; 5000]);
    connection
        .send_data_shared(1, large, false)
        .expect("buffer");
    connection.send_data(1, b",four", true).expect("copy");
    connection.flush();
    let frames = client.take_frames();
    let mut want = b"one,two,".to_vec();
    want.extend_from_slice(&[b'3'; 5000]);
    want.extend_from_slice(b",four");
    assert_eq!(body(&frames), want);
    // A frame never joins two buffers: the copies before the large one are a frame.
    assert_eq!(
        data(&frames),
        [(1, 8, false), (1, 5000, false), (1, 5, true)]
    );
}

#[test]
fn a_head_given_as_pairs_encodes_as_the_same_fields() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), true).expect("request");
    client.headers(3, &get("/"), true).expect("request");
    client.take_frames();
    let pairs: [(&[u8], &[u8]); 3] = [
        (b":status", b"404"),
        (b"server", b"portico"),
        (b"x-long", b"a value long enough to be worth indexing"),
    ];
    let fields: Vec<HeaderField> = pairs
        .iter()
        .map(|&(name, value)| HeaderField::new(name, value))
        .collect();
    client
        .connection
        .send_header_pairs(1, pairs, true)
        .expect("pairs");
    client
        .connection
        .send_headers(3, &fields, true)
        .expect("fields");
    let frames = client.take_frames();
    let blocks: Vec<Vec<(String, String)>> = frames
        .iter()
        .map(|owned| owned.payload.clone())
        .map(|block| client.decode(&block))
        .collect();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0], blocks[1]);
    assert_eq!(blocks[0][2].1, "a value long enough to be worth indexing");
    // The second block found the fields the first one indexed.
    assert!(frames[1].payload.len() < frames[0].payload.len());
}

#[test]
fn data_queued_after_an_idle_flush_is_framed() {
    let mut client = started(Config::default());
    // Nothing to frame: the next flush returns at once, until something is queued.
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), []);
    client.connection.flush();
    client.connection.send_data(1, b"late", true).expect("body");
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), [(1, 4, true)]);
}
