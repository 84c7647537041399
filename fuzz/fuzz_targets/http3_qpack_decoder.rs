//! QPACK's decoder from arbitrary bytes: encoder-stream instructions and field sections.
//!
//! The first byte says where the encoder stream ends and the sections start, the second
//! the piece size the encoder stream is fed in; each section is one length byte and its
//! bytes, on streams 0, 4, 8... Checks: no panic; the encoder stream fed in pieces gives
//! what it gives whole (result and table); the table stays within its capacity; blocked
//! streams stay within the limit; a section that decodes is within the size limit and
//! re-encodes to one a fresh decoder reads as the same fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http3::HeaderField;
use portico_http3::qpack::{Decoded, Decoder, DecoderSettings, Encoder};

const SETTINGS: DecoderSettings = DecoderSettings {
    max_table_capacity: 512,
    max_blocked_streams: 3,
    max_field_section_size: 2048,
};

fuzz_target!(|data: &[u8]| {
    let Some((&[split, piece], input)) = data.split_first_chunk::<2>() else { return };
    let split = (usize::from(split) * input.len() / 255).min(input.len());
    let (encoder_stream, mut sections) = input.split_at(split);

    let mut whole = Decoder::new(SETTINGS);
    let whole_result = whole.receive_encoder_stream(encoder_stream).map(|_| ());
    let mut pieces = Decoder::new(SETTINGS);
    let mut pieces_result = Ok(());
    for chunk in encoder_stream.chunks(usize::from(piece).max(1)) {
        pieces_result = pieces.receive_encoder_stream(chunk).map(|_| ());
        if pieces_result.is_err() {
            break;
        }
    }
    assert_eq!(whole_result, pieces_result);
    if whole_result.is_err() {
        return;
    }
    let table = whole.table();
    assert_eq!(table.insert_count(), pieces.table().insert_count());
    assert!(table.iter().eq(pieces.table().iter()));
    assert!(table.size() <= table.capacity());
    assert!(table.capacity() as u64 <= SETTINGS.max_table_capacity);

    let mut stream_id = 0;
    while let Some((&length, rest)) = sections.split_first() {
        let section = &rest[..usize::from(length).min(rest.len())];
        sections = &rest[section.len()..];
        match whole.decode_section(stream_id, section) {
            Ok(Decoded::Fields { fields, size }) => {
                assert!(size <= SETTINGS.max_field_section_size);
                let owned: Vec<HeaderField> = fields
                    .iter()
                    .map(|field| HeaderField { name: field.name.to_vec(), value: field.value.to_vec(), sensitive: field.sensitive })
                    .collect();
                let mut encoder = Encoder::new(0);
                let encoded = encoder.encode_section(stream_id, &owned);
                let mut fresh = Decoder::new(DecoderSettings { max_field_section_size: u64::MAX, ..SETTINGS });
                let again = fresh.decode_section(stream_id, &encoded).expect("own encoding decodes");
                assert_eq!(again, Decoded::Fields { fields, size });
            }
            Ok(Decoded::Blocked { required_insert_count }) => {
                assert!(required_insert_count > whole.table().insert_count());
            }
            Err(_) => {}
        }
        assert!(whole.blocked_streams() as u64 <= SETTINGS.max_blocked_streams);
        stream_id += 4;
    }
    let _ = whole.take_instructions();
});
