//! HTTP/2 from arbitrary bytes: frames, HPACK and the connection state machine.
//!
//! The first byte picks the piece size the connection is fed in; the rest is what a client
//! sends after the preface. Checks: no panic; the connection consumes only whole frames and
//! writes only whole, valid frames; no more streams than allowed are open; a frame parsed
//! from the input writes back to bytes that parse to the same frame; a header block the
//! decoder accepts re-encodes to one a fresh decoder reads as the same fields.
#![no_main]

use std::io::IoSlice;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use portico_http2::connection::{Config, Connection, Event, PREFACE};
use portico_http2::frame::{self, Frame, FrameHeader};
use portico_http2::hpack::{DecodeLimits, Decoder, Encoder, HeaderField};

const LIMITS: DecodeLimits = DecodeLimits { max_field_size: 4096, max_list_size: 16_384 };

/// Every frame in `input`, parsed, written back and parsed again.
fn frames_round_trip(mut input: &[u8]) {
    while let Some(header_bytes) = input.first_chunk::<{ frame::HEADER_LEN }>() {
        let header = FrameHeader::parse(header_bytes);
        let Some(payload) = input.get(frame::HEADER_LEN..frame::HEADER_LEN + header.length as usize) else {
            return;
        };
        input = &input[frame::HEADER_LEN + payload.len()..];
        let Ok(parsed) = frame::parse(&header, payload) else { continue };
        let mut written = Vec::new();
        parsed.write(&mut written);
        let again = FrameHeader::parse(written.first_chunk().expect("a header"));
        assert_eq!(frame::parse(&again, &written[frame::HEADER_LEN..]), Ok(parsed));
        if let Frame::Headers { fragment, .. } = parsed {
            hpack_round_trip(fragment);
        }
    }
}

fn hpack_round_trip(block: &[u8]) {
    let Ok(decoded) = Decoder::new(4096).decode(block, LIMITS) else { return };
    // The list limit counts names and values, as nginx counts them (not RFC 7541's + 32).
    let list_bytes: usize = decoded.fields.iter().map(|field| field.name.len() + field.value.len()).sum();
    assert!(decoded.over_limit.is_some() || list_bytes <= LIMITS.max_list_size);
    let fields: Vec<HeaderField> = decoded
        .fields
        .iter()
        .map(|field| HeaderField {
            name: field.name.to_vec(),
            value: field.value.to_vec(),
            sensitive: field.sensitive,
        })
        .collect();
    let mut encoded = Vec::new();
    Encoder::new().encode(&fields, &mut encoded);
    let unlimited = DecodeLimits { max_field_size: usize::MAX, max_list_size: usize::MAX };
    let again = Decoder::new(4096).decode(&encoded, unlimited).expect("own encoding decodes");
    assert_eq!(again.fields, fields);
}

/// The output as the gathered write sees it, joined; it must be what `output_to_vec` copies.
fn gathered_output(connection: &Connection) -> Vec<u8> {
    let mut slices = [IoSlice::new(&[]); 64];
    let mut joined = Vec::new();
    let filled = connection.output_slices(&mut slices);
    for slice in &slices[..filled] {
        joined.extend_from_slice(slice);
    }
    let whole = connection.output_to_vec();
    assert!(whole.starts_with(&joined));
    assert_eq!(filled < slices.len(), joined.len() == whole.len());
    whole
}

/// Checks that `output` is whole, valid frames.
fn check_output(mut output: &[u8]) {
    while !output.is_empty() {
        let header = FrameHeader::parse(output.first_chunk().expect("a whole frame header"));
        let end = frame::HEADER_LEN + header.length as usize;
        assert!(frame::parse(&header, &output[frame::HEADER_LEN..end]).is_ok(), "{header:?}");
        output = &output[end..];
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece, input)) = data.split_first() else { return };
    frames_round_trip(input);
    hpack_round_trip(input);

    let mut config = Config::default();
    config.limits.max_concurrent_streams = 4;
    let mut connection = Connection::new(config);
    let mut wire = PREFACE.to_vec();
    Frame::Settings { ack: false, params: &[] }.write(&mut wire);
    wire.extend_from_slice(input);
    let (mut fed, mut used) = (0, 0);
    let piece = usize::from(piece).max(1);
    while fed < wire.len() {
        fed = (fed + piece).min(wire.len());
        let Ok(taken) = connection.receive(&wire[used..fed]) else { break };
        used += taken;
        assert!(connection.active_streams() <= 4);
        while let Some(event) = connection.poll_event() {
            if let Event::Headers { stream_id, trailers: false, .. } = event {
                let head = [HeaderField::new(":status", "200")];
                let _ = connection.send_headers(stream_id, &head, false);
                // A copy, then buffers handed over: frames span them.
                let _ = connection.send_data(stream_id, &[b'x'; 5_000], false);
                let _ = connection.send_data_shared(stream_id, Bytes::from(vec![b'y'; 9_000]), false);
                let _ = connection.send_data_shared(stream_id, Bytes::from(vec![b'z'; 6_000]), true);
            }
        }
        connection.flush();
        let output = gathered_output(&connection);
        check_output(&output);
        connection.advance_output(output.len());
    }
});
