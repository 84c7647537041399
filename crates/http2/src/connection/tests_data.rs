//! The DATA path: buffers handed over are framed and written without a copy, copies and
//! buffers keep their order, heads given as pairs encode as fields do.

use std::io::IoSlice;

use bytes::Bytes;

use super::Config;
use super::tests_client::{Client, OwnedFrame, data, get};
use crate::frame::{self, Frame, PrioritySpec, Setting, settings};
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
    // Frames are cut by the windows and the frame size alone, not where buffers end.
    assert_eq!(data(&frames), [(1, 5013, true)]);
}

/// File pieces queued by reference, as the static handler hands them over.
fn send_pieces(client: &mut Client, stream_id: u32, lengths: &[usize], end_stream: bool) {
    for (index, &length) in lengths.iter().enumerate() {
        let last = end_stream && index + 1 == lengths.len();
        client
            .connection
            .send_data_shared(stream_id, Bytes::from(vec![b'x'; length]), last)
            .expect("piece");
    }
}

#[test]
fn a_frame_joins_the_rest_of_one_buffer_and_the_next_in_priority_order() {
    // h2_priority.t "weight - PRIORITY 1": stream 1 (a 65,616-byte file) used the whole
    // connection window; stream 3 (8 bytes) waits for it. PRIORITY gives 1 weight 1 and 3
    // weight 256, then both windows open: one DATA frame each, 3 first. The window ended
    // one byte into the second piece; the 81 bytes left are one frame, as nginx sends them.
    let mut client = started(Config::default());
    send_pieces(&mut client, 1, &[32_768, 32_768, 80], true);
    client.connection.flush();
    let first: usize = data(&client.take_frames())
        .iter()
        .map(|&(_, length, _)| length)
        .sum();
    assert_eq!(first, 65_535);
    client.headers(3, &get("/"), true).expect("request");
    client
        .connection
        .send_header_pairs(3, [(&b":status"[..], &b"200"[..])], false)
        .expect("head");
    send_pieces(&mut client, 3, &[8], true);
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), []);
    for (stream_id, weight) in [(1, 1), (3, 256)] {
        let priority = PrioritySpec {
            dependency: 0,
            exclusive: false,
            weight,
        };
        let frame = Frame::Priority {
            stream_id,
            priority,
        };
        client.frame(frame).expect("priority");
    }
    for stream_id in [1, 3, 0] {
        let increment = 1 << 17;
        let update = Frame::WindowUpdate {
            stream_id,
            increment,
        };
        client.frame(update).expect("update");
    }
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), [(3, 8, true), (1, 81, true)]);
}

#[test]
fn settings_that_open_the_window_and_raise_the_frame_size_cut_frames_by_size() {
    // h2.t "multiple SETTINGS": a stream window of 42, then one SETTINGS frame raising it
    // to 2^17 and the frame size to 2^15; `http2_chunk_size 64k`. The 65,616-byte file was
    // queued as the stream's writer took it: 65,536 bytes, then 42, then 38.
    let config = Config {
        chunk_size: 64 * 1024,
        ..Config::default()
    };
    let mut client = Client::new(config);
    let update = Frame::WindowUpdate {
        stream_id: 0,
        increment: 1 << 17,
    };
    client.frame(update).expect("update");
    let small_window = Setting {
        id: settings::INITIAL_WINDOW_SIZE,
        value: 42,
    };
    client.settings(&[small_window]).expect("settings");
    client.headers(1, &get("/"), true).expect("request");
    client
        .connection
        .send_header_pairs(1, [(&b":status"[..], &b"200"[..])], false)
        .expect("head");
    client.take_frames();
    send_pieces(&mut client, 1, &[65_536, 42, 38], true);
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), [(1, 42, false)]);
    let both = [
        Setting {
            id: settings::INITIAL_WINDOW_SIZE,
            value: 1 << 17,
        },
        Setting {
            id: settings::MAX_FRAME_SIZE,
            value: 1 << 15,
        },
    ];
    client.settings(&both).expect("settings");
    // Flushed and written until nothing is left (the output stops at its high-water mark).
    let mut frames = Vec::new();
    loop {
        client.connection.flush();
        let written = client.take_frames();
        if written.is_empty() {
            break;
        }
        frames.extend(written);
    }
    assert_eq!(
        data(&frames),
        [(1, 32_768, false), (1, 32_768, false), (1, 38, true)]
    );
    assert_eq!(body(&frames), vec![b'x'; 65_574]);
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

/// The WINDOW_UPDATE frames among `frames` as (stream, increment).
fn window_updates(frames: &[OwnedFrame]) -> Vec<(u32, u32)> {
    frames
        .iter()
        .filter_map(|owned| match owned.parsed() {
            Frame::WindowUpdate {
                stream_id,
                increment,
            } => Some((stream_id, increment)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_body_read_whole_gets_a_wider_window_at_once() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/upload"), false).expect("request");
    let piece = vec![b'x'; 16_384];
    let data = |end_stream| Frame::Data {
        stream_id: 1,
        data: &piece,
        padding: None,
        end_stream,
    };
    client.frame(data(false)).expect("within the window");
    client.take_frames();
    client.connection.widen_window(1, 256 * 1024);
    // The whole difference at once, as nginx's one large update for a buffered body.
    assert_eq!(
        window_updates(&client.take_frames()),
        [(1, 256 * 1024 - 65_536)]
    );
    // The client may now send past the 64 KiB of SETTINGS without a release.
    for _ in 0..14 {
        client.frame(data(false)).expect("within the wider window");
    }
    client.frame(data(true)).expect("the last piece");
    assert!(window_updates(&client.take_frames()).is_empty());
}

#[test]
fn a_window_is_not_widened_below_its_size_or_after_the_body() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/upload"), false).expect("request");
    client.connection.widen_window(1, 1024);
    client
        .headers(3, &get("/done"), true)
        .expect("request without body");
    client.connection.widen_window(3, 1 << 20);
    client.connection.widen_window(5, 1 << 20);
    assert!(window_updates(&client.take_frames()).is_empty());
}
