//! RFC 9204 Appendix B, in both directions, then round trips, blocking and the limits.

use http2::hpack::HeaderField;

use super::*;

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).expect("ascii"), 16).expect("hex"))
        .collect()
}

fn field(name: &str, value: &str) -> HeaderField {
    HeaderField::new(name, value)
}

fn owned(fields: &http2::hpack::FieldList) -> Vec<HeaderField> {
    fields
        .iter()
        .map(|field| HeaderField {
            name: field.name.to_vec(),
            value: field.value.to_vec(),
            sensitive: field.sensitive,
        })
        .collect()
}

fn fields(decoded: Decoded) -> Vec<HeaderField> {
    match decoded {
        Decoded::Fields { fields, .. } => owned(&fields),
        Decoded::Blocked { .. } => panic!("section blocked"),
    }
}

const SETTINGS: DecoderSettings = DecoderSettings {
    max_table_capacity: 220,
    max_blocked_streams: 16,
    max_field_section_size: 16_384,
};

/// The encoder's and decoder's views after each step of Appendix B: the bytes each side
/// writes must be the RFC's, and each side must read the other's.
#[test]
fn rfc_9204_appendix_b() {
    let mut encoder = Encoder::new(220);
    encoder.set_huffman(false);
    let mut decoder = Decoder::new(SETTINGS);

    // B.1: a literal with a static name reference.
    let mut writer = encoder.writer();
    writer.literal_static_name(1, b"/index.html", false);
    let section = encoder.commit(0, writer);
    assert_eq!(section, hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"));
    assert_eq!(
        fields(decoder.decode_section(0, &section).expect("B.1")),
        [field(":path", "/index.html")]
    );
    assert!(decoder.take_instructions().is_empty());

    // B.2: capacity, two inserts, a section with post-base references, its acknowledgment.
    encoder.set_capacity(220).expect("220 is the maximum");
    assert_eq!(encoder.insert(b":authority", b"www.example.com"), Ok(0));
    assert_eq!(encoder.insert(b":path", b"/sample/path"), Ok(1));
    let instructions = encoder.take_instructions();
    assert_eq!(
        instructions,
        hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468")
    );
    let mut writer = encoder.writer_with_base(0);
    writer.indexed_dynamic(0);
    writer.indexed_dynamic(1);
    let section = encoder.commit(4, writer);
    assert_eq!(section, hex("0381 10 11"));
    assert!(encoder.is_blocking(0));
    assert_eq!(decoder.receive_encoder_stream(&instructions), Ok(vec![]));
    assert_eq!(decoder.table().size(), 106);
    assert_eq!(
        fields(decoder.decode_section(4, &section).expect("B.2")),
        [
            field(":authority", "www.example.com"),
            field(":path", "/sample/path")
        ]
    );
    let acknowledgment = decoder.take_instructions();
    assert_eq!(acknowledgment, hex("84"));
    encoder
        .receive_decoder_stream(&acknowledgment)
        .expect("B.2 ack");
    assert_eq!(encoder.known_received_count(), 2);
    assert!(!encoder.is_blocking(0));

    // B.3: a speculative insert with a literal name, acknowledged by an increment.
    assert_eq!(encoder.insert(b"custom-key", b"custom-value"), Ok(2));
    let instructions = encoder.take_instructions();
    assert_eq!(
        instructions,
        hex("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565")
    );
    assert_eq!(decoder.receive_encoder_stream(&instructions), Ok(vec![]));
    assert_eq!(decoder.table().size(), 160);
    let increment = decoder.take_instructions();
    assert_eq!(increment, hex("01"));
    encoder
        .receive_decoder_stream(&increment)
        .expect("B.3 increment");
    assert_eq!(encoder.known_received_count(), 3);

    // B.4: a duplicate, a section using it that arrives first, then a cancellation.
    assert_eq!(encoder.duplicate(0), Ok(3));
    let delayed = encoder.take_instructions();
    assert_eq!(delayed, hex("02"));
    let mut writer = encoder.writer();
    writer.indexed_dynamic(3);
    writer.indexed_static(1);
    writer.indexed_dynamic(2);
    let section = encoder.commit(8, writer);
    assert_eq!(section, hex("0500 80 c1 81"));
    assert_eq!(
        decoder.decode_section(8, &section),
        Ok(Decoded::Blocked {
            required_insert_count: 4
        })
    );
    assert_eq!(decoder.blocked_streams(), 1);
    decoder.cancel_stream(8);
    assert_eq!(decoder.blocked_streams(), 0);
    let cancellation = decoder.take_instructions();
    assert_eq!(cancellation, hex("48"));
    assert!(encoder.is_blocking(2));
    encoder
        .receive_decoder_stream(&cancellation)
        .expect("B.4 cancel");
    assert!(!encoder.is_blocking(2));
    assert!(encoder.is_blocking(3), "the duplicate is not acknowledged");
    assert_eq!(decoder.receive_encoder_stream(&delayed), Ok(vec![]));
    assert_eq!(decoder.table().size(), 217);
    assert_eq!(decoder.take_instructions(), hex("01"));
    encoder
        .receive_decoder_stream(&hex("01"))
        .expect("dup increment");

    // B.5: an insert with a dynamic name reference that evicts the oldest entry.
    assert_eq!(encoder.insert(b"custom-key", b"custom-value2"), Ok(4));
    let instructions = encoder.take_instructions();
    assert_eq!(instructions, hex("810d 6375 7374 6f6d 2d76 616c 7565 32"));
    assert_eq!(encoder.table().size(), 215);
    assert_eq!(decoder.receive_encoder_stream(&instructions), Ok(vec![]));
    assert_eq!(decoder.table().size(), 215);
    assert_eq!(decoder.table().first_index(), 1);
    assert_eq!(
        decoder.table().get(4).map(|entry| entry.value.clone()),
        Some(b"custom-value2".to_vec())
    );
}

#[test]
fn encoder_stream_split_at_every_byte() {
    let mut encoder = Encoder::new(4096);
    encoder.set_capacity(4096).expect("capacity");
    encoder.insert(b"x-long", &[b'v'; 300]).expect("insert");
    encoder.insert(b"x-long", b"second").expect("insert");
    encoder.duplicate(0).expect("duplicate");
    let stream = encoder.take_instructions();
    for cut in 0..=stream.len() {
        let mut decoder = Decoder::new(DecoderSettings {
            max_table_capacity: 4096,
            ..SETTINGS
        });
        decoder
            .receive_encoder_stream(&stream[..cut])
            .expect("first part");
        decoder
            .receive_encoder_stream(&stream[cut..])
            .expect("second part");
        assert_eq!(decoder.table().insert_count(), 3, "cut at {cut}");
        assert_eq!(decoder.table().get(2), encoder.table().get(2));
    }
}

#[test]
fn round_trip_uses_acknowledged_entries_only() {
    let mut encoder = Encoder::new(4096);
    encoder.set_capacity(4096).expect("capacity");
    let mut decoder = Decoder::new(DecoderSettings {
        max_table_capacity: 4096,
        ..SETTINGS
    });
    let mut response = vec![
        field(":status", "200"),
        field("server", "portico"),
        field("content-type", "text/html; charset=utf-8"),
        field("x-custom", "a value"),
        field("date", "Sun, 29 Nov 2026 19:00:00 GMT"),
    ];
    response.push(HeaderField {
        sensitive: true,
        ..field("authorization", "secret")
    });
    let mut sizes = Vec::new();
    for stream_id in [0u64, 4, 8] {
        let section = encoder.encode_section(stream_id, &response);
        sizes.push(section.len());
        decoder
            .receive_encoder_stream(&encoder.take_instructions())
            .expect("encoder stream");
        // Never blocked: only acknowledged entries are referenced.
        let decoded = fields(
            decoder
                .decode_section(stream_id, &section)
                .expect("section"),
        );
        assert_eq!(decoded, response);
        encoder
            .receive_decoder_stream(&decoder.take_instructions())
            .expect("decoder stream");
    }
    // "server" and "x-custom" were inserted after the first section and used after.
    assert!(sizes[1] < sizes[0], "{sizes:?}");
    assert_eq!(sizes[1], sizes[2]);
    let names: Vec<&[u8]> = encoder.table().iter().map(|(_, e)| &e.name[..]).collect();
    assert_eq!(names, [&b"server"[..], b"x-custom"]);
}

#[test]
fn round_trip_static_only_and_huffman() {
    let mut encoder = Encoder::new(0);
    let mut decoder = Decoder::new(DecoderSettings {
        max_table_capacity: 0,
        ..SETTINGS
    });
    let request = [
        field(":method", "GET"),
        field(":scheme", "https"),
        field(":authority", "example.com"),
        field(":path", "/a/b?c=d"),
        field("user-agent", "curl/8"),
        field("x-empty", ""),
        field("x-bytes", "\u{7f}\u{1}binary"),
    ];
    let section = encoder.encode_section(0, &request);
    assert_eq!(&section[..2], [0, 0]);
    assert!(encoder.take_instructions().is_empty());
    assert_eq!(
        fields(decoder.decode_section(0, &section).expect("decode")),
        request
    );
    // A strict prefix of the section is refused, or (cut between two field lines) gives
    // the fields before the cut.
    for cut in 0..section.len() {
        let mut decoder = Decoder::new(SETTINGS);
        match decoder.decode_section(0, &section[..cut]) {
            Ok(Decoded::Fields { fields, .. }) => {
                let fields = owned(&fields);
                assert!(cut >= 2 && fields.len() < request.len());
                assert_eq!(fields, request[..fields.len()]);
            }
            Ok(Decoded::Blocked { .. }) => panic!("static-only section blocked"),
            Err(error) => assert_eq!(error, QpackError::Section(Cause::Truncated)),
        }
    }
}

#[test]
fn blocked_streams_are_bounded() {
    let settings = DecoderSettings {
        max_table_capacity: 4096,
        max_blocked_streams: 2,
        max_field_section_size: 16_384,
    };
    let mut encoder = Encoder::new(4096);
    encoder.set_capacity(4096).expect("capacity");
    let absolute = encoder.insert(b"x-a", b"1").expect("insert");
    let instructions = encoder.take_instructions();
    let mut decoder = Decoder::new(settings);
    let section = |encoder: &mut Encoder, stream_id| {
        let mut writer = encoder.writer();
        writer.indexed_dynamic(absolute);
        encoder.commit(stream_id, writer)
    };
    let sections: Vec<Vec<u8>> = [0, 4, 8]
        .iter()
        .map(|&id| section(&mut encoder, id))
        .collect();
    let blocked = Decoded::Blocked {
        required_insert_count: 1,
    };
    assert_eq!(decoder.decode_section(0, &sections[0]), Ok(blocked.clone()));
    // The same stream again does not count twice.
    assert_eq!(decoder.decode_section(0, &sections[0]), Ok(blocked.clone()));
    assert_eq!(decoder.decode_section(4, &sections[1]), Ok(blocked));
    assert_eq!(
        decoder.decode_section(8, &sections[2]),
        Err(QpackError::Section(Cause::TooManyBlockedStreams))
    );
    assert_eq!(
        decoder.receive_encoder_stream(&instructions),
        Ok(vec![0, 4])
    );
    assert_eq!(decoder.blocked_streams(), 0);
    for (stream_id, section) in [(0, &sections[0]), (4, &sections[1])] {
        assert_eq!(
            fields(
                decoder
                    .decode_section(stream_id, section)
                    .expect("unblocked")
            ),
            [field("x-a", "1")]
        );
    }
    assert_eq!(decoder.take_instructions(), hex("80 84"));
}

#[test]
fn zero_blocked_streams_means_none() {
    let mut decoder = Decoder::new(DecoderSettings {
        max_blocked_streams: 0,
        ..SETTINGS
    });
    assert_eq!(
        decoder.decode_section(0, &hex("0200 80")),
        Err(QpackError::Section(Cause::TooManyBlockedStreams))
    );
}

#[test]
fn invalid_references_and_prefixes() {
    let mut decoder = Decoder::new(SETTINGS);
    decoder
        .receive_encoder_stream(&hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d"))
        .expect("one insert");
    let failures = [
        // Static index 99 does not exist.
        ("0000 ff24", Cause::BadStaticIndex { index: 99 }),
        // A dynamic reference with Required Insert Count 0.
        ("0000 80", Cause::BadDynamicIndex { index: 0 }),
        // Relative index 1 with Base 1: absolute -1.
        ("0200 81", Cause::BadDynamicIndex { index: 1 }),
        // Post-base index 0 with Base 1 (absolute 1) and Required Insert Count 1.
        ("0200 10", Cause::BadDynamicIndex { index: 0 }),
        // Encoded Required Insert Count above 2 * MaxEntries (12).
        ("0d00", Cause::BadRequiredInsertCount { encoded: 13 }),
        // Base = 1 - 1 - 1 < 0.
        ("0281", Cause::BadBase),
        ("", Cause::Truncated),
        ("00", Cause::Truncated),
        ("0000 51", Cause::Truncated),
        ("0000 5185 61", Cause::Truncated),
    ];
    for (section, cause) in failures {
        assert_eq!(
            decoder.decode_section(0, &hex(section)),
            Err(QpackError::Section(cause)),
            "{section}"
        );
    }
}

#[test]
fn required_insert_count_wraps() {
    // MaxEntries 6, FullRange 12: after 20 inserts, RIC 20 is encoded 20 % 12 + 1 = 9.
    let mut encoder = Encoder::new(220);
    encoder.set_capacity(220).expect("capacity");
    let mut decoder = Decoder::new(SETTINGS);
    for number in 0..20 {
        let value = format!("{number:02}");
        encoder.insert(b"x-n", value.as_bytes()).expect("insert");
        let instructions = encoder.take_instructions();
        decoder
            .receive_encoder_stream(&instructions)
            .expect("insert");
        encoder
            .receive_decoder_stream(&decoder.take_instructions())
            .expect("increment");
    }
    let mut writer = encoder.writer();
    writer.indexed_dynamic(19);
    writer.indexed_dynamic(15);
    let section = encoder.commit(0, writer);
    assert_eq!(section[0], 9);
    assert_eq!(
        fields(decoder.decode_section(0, &section).expect("decode")),
        [field("x-n", "19"), field("x-n", "15")]
    );
    // An evicted entry is refused.
    let mut writer = encoder.writer();
    writer.indexed_dynamic(19);
    writer.indexed_dynamic(10);
    let section = encoder.commit(4, writer);
    assert_eq!(
        decoder.decode_section(4, &section),
        Err(QpackError::Section(Cause::BadDynamicIndex { index: 9 }))
    );
}

#[test]
fn encoder_stream_errors() {
    // Each case: what sets the table up, then the instruction refused.
    let cases = [
        ("", "3fbe01", Cause::CapacityTooLarge { capacity: 221 }),
        // An insert into a table of capacity 0.
        ("", "c00161", Cause::EntryTooLarge { size: 43 }),
        // A duplicate of an entry that does not exist.
        ("3f41", "00", Cause::BadDynamicIndex { index: 0 }),
        ("3f41", "c0ff 8f08", Cause::StringTooLong { length: 1166 }),
        ("3f41", "ff63 00", Cause::BadStaticIndex { index: 162 }),
    ];
    for (setup, stream, cause) in cases {
        let mut decoder = Decoder::new(SETTINGS);
        decoder.receive_encoder_stream(&hex(setup)).expect("setup");
        let result = decoder.receive_encoder_stream(&hex(stream));
        assert_eq!(result, Err(QpackError::EncoderStream(cause)), "{stream}");
    }
}

#[test]
fn decoder_stream_errors() {
    let mut encoder = Encoder::new(220);
    assert_eq!(
        encoder.receive_decoder_stream(&hex("84")),
        Err(QpackError::DecoderStream(Cause::UnexpectedAcknowledgment {
            stream_id: 4
        }))
    );
    let mut encoder = Encoder::new(220);
    assert_eq!(
        encoder.receive_decoder_stream(&hex("01")),
        Err(QpackError::DecoderStream(Cause::BadIncrement {
            increment: 1
        }))
    );
    let mut encoder = Encoder::new(220);
    assert_eq!(
        encoder.receive_decoder_stream(&hex("00")),
        Err(QpackError::DecoderStream(Cause::BadIncrement {
            increment: 0
        }))
    );
    // A cancellation of a stream never used is harmless.
    let mut encoder = Encoder::new(220);
    assert_eq!(encoder.receive_decoder_stream(&hex("48")), Ok(()));
}

#[test]
fn encoder_never_evicts_a_blocking_entry() {
    let mut encoder = Encoder::new(100);
    encoder.set_capacity(100).expect("capacity");
    assert_eq!(encoder.insert(b"x-a", b"1"), Ok(0)); // 36 bytes
    assert_eq!(encoder.insert(b"x-b", b"2"), Ok(1));
    // Not acknowledged: no room for a third.
    assert_eq!(encoder.insert(b"x-c", b"3"), Err(EncodeError::NoRoom));
    assert_eq!(encoder.set_capacity(50), Err(EncodeError::NoRoom));
    assert_eq!(encoder.set_capacity(101), Err(EncodeError::AboveMaximum));
    encoder
        .receive_decoder_stream(&hex("02"))
        .expect("increment");
    // Referenced by a section in flight: still no room.
    let section = encoder.encode_section(0, &[field("x-a", "1")]);
    assert_eq!(section, hex("0201 81"));
    assert_eq!(encoder.insert(b"x-c", b"3"), Err(EncodeError::NoRoom));
    encoder.receive_decoder_stream(&hex("80")).expect("ack");
    assert_eq!(encoder.insert(b"x-c", b"3"), Ok(2));
    assert_eq!(encoder.table().first_index(), 1);
}

#[test]
fn field_section_size_limit_exactly() {
    let settings = DecoderSettings {
        max_field_section_size: 32 + 3 + 5,
        ..SETTINGS
    };
    let mut encoder = Encoder::new(0);
    let at_limit = encoder.encode_section(0, &[field("x-a", "12345")]);
    let past = encoder.encode_section(0, &[field("x-a", "123456")]);
    let mut decoder = Decoder::new(settings);
    assert!(matches!(
        decoder.decode_section(0, &at_limit),
        Ok(Decoded::Fields { size: 40, .. })
    ));
    assert_eq!(
        decoder.decode_section(0, &past),
        Err(QpackError::Section(Cause::FieldSectionTooLarge))
    );
}

/// Found by the fuzz target: a sensitive field that the static table holds whole was
/// indexed, which cannot carry the never-indexed bit.
#[test]
fn sensitive_fields_stay_literals() {
    let sensitive = HeaderField {
        sensitive: true,
        ..field("etag", "")
    };
    let mut encoder = Encoder::new(0);
    let section = encoder.encode_section(0, &[sensitive.clone(), field("etag", "")]);
    // Literal with static name reference 7 and N set, then indexed static 7.
    assert_eq!(section, hex("0000 7700 c7"));
    let mut decoder = Decoder::new(SETTINGS);
    assert_eq!(
        fields(decoder.decode_section(0, &section).expect("decode")),
        [sensitive, field("etag", "")]
    );
}
