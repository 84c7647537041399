//! RFC 7541's examples (Appendix C), round trips and malformed blocks.

use super::table::DynamicTable;
use super::{DecodeLimits, Decoder, Encoder, HeaderField, HpackError, huffman, integer};

const NO_LIMITS: DecodeLimits = DecodeLimits {
    max_field_size: usize::MAX,
    max_list_size: usize::MAX,
};

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).expect("ascii"), 16).expect("hex"))
        .collect()
}

fn fields(pairs: &[(&str, &str)]) -> Vec<HeaderField> {
    pairs
        .iter()
        .map(|&(name, value)| HeaderField::new(name, value))
        .collect()
}

#[test]
fn integers_as_appendix_c1() {
    let cases: [(u64, u8, &[u8]); 3] = [
        (10, 5, &[0x0a]),
        (1337, 5, &[0x1f, 0x9a, 0x0a]),
        (42, 8, &[0x2a]),
    ];
    for (value, prefix, wire) in cases {
        let mut out = Vec::new();
        integer::encode(value, prefix, 0, &mut out);
        assert_eq!(out, wire);
        assert_eq!(integer::decode(wire, prefix), Ok((value, wire.len())));
    }
}

#[test]
fn integers_round_trip_and_refuse_overflow() {
    for value in [
        0, 1, 30, 31, 127, 128, 255, 16_383, 65_535,
        // The most three continuation octets carry, whatever the prefix.
        2_097_151,
    ] {
        for prefix in 1..=8 {
            let mut out = Vec::new();
            integer::encode(value, prefix, 0, &mut out);
            assert_eq!(
                integer::decode(&out, prefix),
                Ok((value, out.len())),
                "{value} prefix {prefix}"
            );
        }
    }
    assert_eq!(
        integer::decode(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0x0f], 5),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(
        integer::decode(&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 5),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(
        integer::decode(&[0x1f, 0x9a], 5),
        Err(HpackError::Truncated)
    );
    // Four octets at most, as nginx reads them; a block that ends on the fourth is cut
    // short rather than holding too long an integer.
    assert_eq!(
        integer::decode(&[0x1f, 0xff, 0xff, 0x7f], 5),
        Ok((31 + 127 + (127 << 7) + (127 << 14), 4))
    );
    assert_eq!(
        integer::decode(&[0x1f, 0xff, 0xff, 0xff, 0x00], 5),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(
        integer::decode(&[0x1f, 0xff, 0xff, 0xff], 5),
        Err(HpackError::Truncated)
    );
    assert_eq!(integer::decode(&[], 5), Err(HpackError::Truncated));
}

#[test]
fn literal_representations_as_appendix_c2() {
    let mut decoder = Decoder::new(4096);
    let decoded = decoder.decode(
        &hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
        NO_LIMITS,
    );
    assert_eq!(
        decoded.expect("C.2.1").fields,
        fields(&[("custom-key", "custom-header")])
    );
    assert_eq!(decoder.table().size(), 55);

    let mut decoder = Decoder::new(4096);
    let decoded = decoder
        .decode(&hex("040c 2f73 616d 706c 652f 7061 7468"), NO_LIMITS)
        .expect("C.2.2");
    assert_eq!(decoded.fields, fields(&[(":path", "/sample/path")]));
    assert!(decoder.table().is_empty());

    let decoded = decoder
        .decode(
            &hex("1008 7061 7373 776f 7264 0673 6563 7265 74"),
            NO_LIMITS,
        )
        .expect("C.2.3");
    assert_eq!(
        decoded.fields,
        vec![HeaderField {
            sensitive: true,
            ..HeaderField::new("password", "secret")
        }]
    );
    assert!(decoder.table().is_empty());

    let decoded = decoder.decode(&[0x82], NO_LIMITS).expect("C.2.4");
    assert_eq!(decoded.fields, fields(&[(":method", "GET")]));
}

const REQUESTS: [&[(&str, &str)]; 3] = [
    &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
    ],
    &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
        ("cache-control", "no-cache"),
    ],
    &[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ],
];

const RESPONSES: [&[(&str, &str)]; 3] = [
    &[
        (":status", "302"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ],
    &[
        (":status", "307"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ],
    &[
        (":status", "200"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
        ("location", "https://www.example.com"),
        ("content-encoding", "gzip"),
        (
            "set-cookie",
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
        ),
    ],
];

/// Decodes the blocks in order on one context and checks fields and table sizes.
fn check_sequence(
    size: usize,
    blocks: &[&str],
    expected: &[&[(&str, &str)]],
    table_sizes: &[usize],
) {
    let mut decoder = Decoder::new(size);
    for ((block, want), table_size) in blocks.iter().zip(expected).zip(table_sizes) {
        let decoded = decoder
            .decode(&hex(block), NO_LIMITS)
            .expect("an RFC example decodes");
        assert_eq!(decoded.fields, fields(want));
        assert_eq!(decoder.table().size(), *table_size);
    }
}

/// Encodes the lists in order on one context and checks the bytes against the RFC's.
fn check_encoding(size: usize, blocks: &[&str], lists: &[&[(&str, &str)]]) {
    let mut encoder = Encoder::new();
    encoder.set_peer_max_size(size);
    for (index, (block, list)) in blocks.iter().zip(lists).enumerate() {
        let mut out = Vec::new();
        encoder.encode(&fields(list), &mut out);
        if index == 0 && size != 4096 {
            // The size update the RFC's examples leave out: 001 prefix, 5-bit integer.
            let mut update = Vec::new();
            integer::encode(size as u64, 5, 0x20, &mut update);
            assert_eq!(out[..update.len()], update);
            out.drain(..update.len());
        }
        assert_eq!(out, hex(block), "block {index}");
    }
}

const C3: [&str; 3] = [
    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "8286 84be 5808 6e6f 2d63 6163 6865",
    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
];
const C4: [&str; 3] = [
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
];
const C5: [&str; 3] = [
    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a \
     3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "4803 3330 37c1 c0bf",
    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 \
     677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 \
     553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
];
const C6: [&str; 3] = [
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e \
     919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    "4883 640e ffc1 c0bf",
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 \
     821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed \
     4ee5 b106 3d50 07",
];

#[test]
fn requests_as_appendix_c3_and_c4() {
    check_sequence(4096, &C3, &REQUESTS, &[57, 110, 164]);
    check_sequence(4096, &C4, &REQUESTS, &[57, 110, 164]);
    check_encoding(4096, &C4, &REQUESTS);
}

#[test]
fn responses_as_appendix_c5_and_c6_with_evictions() {
    check_sequence(256, &C5, &RESPONSES, &[222, 222, 215]);
    check_sequence(256, &C6, &RESPONSES, &[222, 222, 215]);
    check_encoding(256, &C6, &RESPONSES);
}

#[test]
fn huffman_round_trips_every_byte_and_matches_appendix_c4() {
    let all: Vec<u8> = (0..=255).collect();
    for input in [&all[..], b"", b"a", b"www.example.com", b"\x00\xff\xfe/"] {
        let mut coded = Vec::new();
        huffman::encode(input, &mut coded);
        assert_eq!(coded.len(), huffman::encoded_len(input));
        let mut decoded = Vec::new();
        huffman::decode(&coded, &mut decoded).expect("own encoding decodes");
        assert_eq!(decoded, input);
    }
    let mut coded = Vec::new();
    huffman::encode(b"www.example.com", &mut coded);
    assert_eq!(coded, hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff"));
}

#[test]
fn huffman_refuses_bad_padding_and_eos() {
    let mut out = Vec::new();
    // "a" is 00011: padding of zeros is not the start of EOS.
    assert_eq!(
        huffman::decode(&[0b0001_1000], &mut out),
        Err(HpackError::BadHuffman)
    );
    // Padding longer than 8 bits.
    assert_eq!(
        huffman::decode(&[0b0001_1111, 0xff], &mut out),
        Err(HpackError::BadHuffman)
    );
    // A whole byte of ones after a string that ends on a byte boundary: accepted, as nginx
    // accepts it ("0" and "a" have 5-bit codes: eight of them fill five bytes).
    let mut coded = Vec::new();
    huffman::encode(b"0a0a0a0a", &mut coded);
    assert_eq!(coded.len(), 5);
    coded.push(0xff);
    out.clear();
    assert_eq!(huffman::decode(&coded, &mut out), Ok(()));
    assert_eq!(out, b"0a0a0a0a");
    // EOS itself (30 ones).
    assert_eq!(
        huffman::decode(&[0xff, 0xff, 0xff, 0xfc], &mut out),
        Err(HpackError::BadHuffman)
    );
    assert_eq!(
        huffman::decode(&[0xff, 0xff, 0xff, 0xff], &mut out),
        Err(HpackError::BadHuffman)
    );
    out.clear();
    assert_eq!(huffman::decode(&[0b0001_1111], &mut out), Ok(()));
    assert_eq!(out, b"a");
}

#[test]
fn malformed_blocks_are_compression_errors() {
    let cases: [(&[u8], HpackError); 6] = [
        (&[0x80], HpackError::BadIndex { index: 0 }),
        (&[0xbe], HpackError::BadIndex { index: 62 }),
        (&[0x41, 0x05, b'a'], HpackError::Truncated),
        (
            &[0x3f, 0xe2, 0x1f],
            HpackError::TableSizeTooLarge { size: 4097 },
        ),
        (&[0x82, 0x20], HpackError::LateTableSizeUpdate),
        (&[0x40, 0x81, 0x00, 0x00], HpackError::BadHuffman),
    ];
    for (block, error) in cases {
        assert_eq!(
            Decoder::new(4000).decode(block, NO_LIMITS),
            Err(error),
            "{block:x?}"
        );
    }
}

#[test]
fn table_size_updates_evict_and_bound_the_table() {
    let mut decoder = Decoder::new(4096);
    decoder.decode(&hex(C3[0]), NO_LIMITS).expect("C.3.1");
    assert_eq!(decoder.table().len(), 1);
    // Size 0 then back to 4096 at the start of one block: the table is emptied.
    let decoded = decoder
        .decode(&[0x20, 0x3f, 0xe1, 0x1f, 0x82], NO_LIMITS)
        .expect("size updates");
    assert_eq!(decoded.fields, fields(&[(":method", "GET")]));
    assert!(decoder.table().is_empty());
    assert_eq!(
        decoder.decode(&[0xbe], NO_LIMITS),
        Err(HpackError::BadIndex { index: 62 })
    );

    let mut table = DynamicTable::new(100);
    table.insert(b"a", &[b'x'; 40]);
    table.insert(b"b", &[b'y'; 40]);
    assert_eq!((table.len(), table.size()), (1, 73));
    table.insert(b"c", &[b'z'; 100]);
    assert!(
        table.is_empty(),
        "an entry larger than the table empties it"
    );
}

#[test]
fn hpack_bomb_is_bounded_and_keeps_the_table_in_step() {
    let mut decoder = Decoder::new(4096);
    // One 4000-byte value indexed, then referenced 10,000 times: 10 KB of block that
    // expands to 40 MB.
    let mut block = vec![0x40, 0x01, b'x'];
    integer::encode(4000, 7, 0, &mut block);
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 10_000));
    let limits = DecodeLimits {
        max_field_size: 8192,
        max_list_size: 65_536,
    };
    let decoded = decoder
        .decode(&block, limits)
        .expect("a bomb is valid HPACK");
    assert_eq!(decoded.over_limit, Some(super::Limit::List));
    assert!(
        decoded.fields.len() < 20,
        "kept {} fields",
        decoded.fields.len()
    );
    assert_eq!(decoded.list_size, 10_001 * (1 + 4000 + 32));
    // The next block still refers to the same entry.
    let next = decoder.decode(&[0xbe], NO_LIMITS).expect("table in step");
    assert_eq!(
        next.fields.get(0).map(|field| field.value.len()),
        Some(4000)
    );
}

#[test]
fn encoder_round_trips_through_the_decoder_over_many_blocks() {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new(4096);
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    for round in 0..300 {
        let mut list = Vec::new();
        for field in 0..(round % 7 + 1) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let name = format!("x-field-{}", rng % 13);
            let value = "v".repeat((rng % 300) as usize) + &field.to_string();
            list.push(HeaderField {
                sensitive: rng.is_multiple_of(11),
                ..HeaderField::new(name, value)
            });
        }
        list.push(HeaderField::new(":status", "200"));
        let mut block = Vec::new();
        encoder.encode(&list, &mut block);
        let decoded = decoder
            .decode(&block, NO_LIMITS)
            .expect("own block decodes");
        assert_eq!(decoded.fields, list, "round {round}");
        if round == 150 {
            encoder.set_peer_max_size(100);
            decoder = Decoder::new(4096);
            // A fresh decoder models a peer that lowered its setting; the encoder says so first.
            let mut update = Vec::new();
            encoder.encode(&[], &mut update);
            assert_eq!(update, [0x3f, 0x45]);
            decoder.decode(&update, NO_LIMITS).expect("size update");
        }
    }
}

#[test]
fn huffman_accepts_exactly_the_canonical_encodings() {
    // A code without ambiguity and padding fixed to the shortest run of ones: any input the
    // decoder accepts is exactly the encoding of what it decoded to, or that encoding and
    // one byte of ones when it ends on a byte boundary (nginx's extra padding).
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut accepted = 0;
    for round in 0..200_000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let length = (rng % 6) as usize;
        let mut input: Vec<u8> = rng.to_le_bytes()[..length].to_vec();
        if round % 2 == 0 {
            // Mostly ones, as valid padding and long codes are.
            input.iter_mut().for_each(|byte| *byte |= 0xe0);
        }
        let mut decoded = Vec::new();
        if huffman::decode(&input, &mut decoded).is_ok() {
            accepted += 1;
            let mut encoded = Vec::new();
            huffman::encode(&decoded, &mut encoded);
            let padded = input.len() == encoded.len() + 1 && input.last() == Some(&0xff);
            assert!(
                encoded == input || (padded && input.starts_with(&encoded)),
                "{decoded:?}"
            );
        }
    }
    assert!(accepted > 10_000, "{accepted}");
}
