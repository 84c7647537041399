//! The HTTP/2 client role from arbitrary bytes: what an upstream server sends.
//!
//! The first byte picks the piece size the connection is fed in, the second how many
//! calls are open (each with a body and trailers); the rest is the server's bytes after
//! a valid SETTINGS. Checks: no panic; the client consumes only whole frames and writes
//! only whole, valid frames; its output stays bounded while it is not written; no
//! stream opens after a failure or a GOAWAY.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http2::client::{ClientConfig, ClientConnection, ClientEvent};
use portico_http2::connection::PREFACE;
use portico_http2::frame::{self, Frame, FrameHeader};
use portico_http2::hpack::HeaderField;

/// Checks that `output` is whole, valid frames.
fn check_output(mut output: &[u8]) {
    while !output.is_empty() {
        let header = FrameHeader::parse(output.first_chunk().expect("a whole frame header"));
        let end = frame::HEADER_LEN + header.length as usize;
        assert!(frame::parse(&header, &output[frame::HEADER_LEN..end]).is_ok(), "{header:?}");
        output = &output[end..];
    }
}

fn head() -> Vec<HeaderField> {
    [(":method", "POST"), (":scheme", "http"), (":authority", "u"), (":path", "/s/M")]
        .iter()
        .map(|&(name, value)| HeaderField::new(name, value))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [piece, calls, input @ ..] = data else { return };
    let mut client = ClientConnection::new(ClientConfig::default());
    let preface = client.output().to_vec();
    assert!(preface.starts_with(PREFACE));
    check_output(&preface[PREFACE.len()..]);
    client.advance_output(preface.len());
    for _ in 0..(calls % 8) {
        let Ok(stream_id) = client.open_stream(&head(), false) else { break };
        let _ = client.send_data(stream_id, &[b'x'; 70_000], false);
        let _ = client.send_trailers(stream_id, vec![HeaderField::new("x-t", "1")]);
    }
    let mut wire = Vec::new();
    Frame::Settings { ack: false, params: &[] }.write(&mut wire);
    wire.extend_from_slice(input);
    let (mut fed, mut used) = (0, 0);
    let piece = usize::from(*piece).max(1);
    let mut written = 0;
    while fed < wire.len() {
        fed = (fed + piece).min(wire.len());
        let result = client.receive(&wire[used..fed]);
        let Ok(taken) = result else {
            assert!(client.is_failed());
            assert!(!client.can_open_stream());
            break;
        };
        used += taken;
        while let Some(event) = client.poll_event() {
            match event {
                ClientEvent::Data { stream_id, data, .. } => {
                    client.release(stream_id, u32::try_from(data.len()).unwrap_or(u32::MAX));
                }
                ClientEvent::GoAway { .. } => assert!(!client.can_open_stream()),
                _ => {}
            }
        }
        client.flush();
        // Every other turn the output is left unwritten: it must stay bounded.
        written += 1;
        if written % 2 == 0 {
            let output = client.output().to_vec();
            check_output(&output);
            client.advance_output(output.len());
        }
        assert!(client.output().len() < 8 << 20);
    }
});
