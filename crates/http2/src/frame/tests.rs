//! Frame parsing and writing: round trips of every type, and each malformed case with the
//! error scope and code RFC 9113 §6 gives it.

use super::*;

fn header_of(bytes: &[u8]) -> FrameHeader {
    FrameHeader::parse(bytes[..HEADER_LEN].try_into().expect("9 bytes"))
}

fn round_trip(frame: Frame<'_>) {
    let mut out = Vec::new();
    frame.write(&mut out);
    let header = header_of(&out);
    assert_eq!(
        usize::try_from(header.length).ok(),
        Some(out.len() - HEADER_LEN)
    );
    let parsed = parse(&header, &out[HEADER_LEN..]).expect("a written frame parses");
    assert_eq!(parsed, frame);
}

/// Parses a frame from its header fields and payload.
fn parse_raw(kind: u8, flags: u8, stream_id: u32, payload: &[u8]) -> Result<Frame<'_>, Error> {
    let length = u32::try_from(payload.len()).expect("small");
    parse(
        &FrameHeader {
            length,
            kind,
            flags,
            stream_id,
        },
        payload,
    )
}

fn connection(code: ErrorCode) -> impl Fn(Result<Frame<'_>, Error>) {
    move |result| match result {
        Err(Error::Connection { code: got, .. }) => assert_eq!(got, code),
        other => panic!("expected a connection error {code}, got {other:?}"),
    }
}

#[test]
fn header_reads_and_writes_the_nine_bytes() {
    let bytes = [
        0x00,
        0x40,
        0x01,
        kind::HEADERS,
        0x25,
        0x80,
        0x00,
        0x00,
        0x03,
    ];
    let header = header_of(&bytes);
    assert_eq!(
        header,
        FrameHeader {
            length: 0x4001,
            kind: kind::HEADERS,
            flags: 0x25,
            stream_id: 3
        }
    );
    let mut out = Vec::new();
    header.write(&mut out);
    assert_eq!(
        out,
        [
            0x00,
            0x40,
            0x01,
            kind::HEADERS,
            0x25,
            0x00,
            0x00,
            0x00,
            0x03
        ],
        "reserved bit cleared"
    );
}

#[test]
fn every_frame_type_round_trips() {
    let priority = PrioritySpec {
        dependency: 7,
        exclusive: true,
        weight: 256,
    };
    let mut params = Vec::new();
    Setting {
        id: settings::MAX_CONCURRENT_STREAMS,
        value: 100,
    }
    .write(&mut params);
    Setting { id: 0x99, value: 5 }.write(&mut params);
    let frames = [
        Frame::Data {
            stream_id: 1,
            data: b"hello",
            padding: None,
            end_stream: true,
        },
        Frame::Data {
            stream_id: 3,
            data: b"",
            padding: Some(255),
            end_stream: false,
        },
        Frame::Headers {
            stream_id: 5,
            priority: Some(priority),
            fragment: b"\x82\x86",
            padding: Some(3),
            end_stream: true,
            end_headers: false,
        },
        Frame::Headers {
            stream_id: 5,
            priority: None,
            fragment: b"",
            padding: None,
            end_stream: false,
            end_headers: true,
        },
        Frame::Priority {
            stream_id: 9,
            priority: PrioritySpec {
                dependency: 0,
                exclusive: false,
                weight: 1,
            },
        },
        Frame::RstStream {
            stream_id: 9,
            code: ErrorCode::CANCEL,
        },
        Frame::RstStream {
            stream_id: 9,
            code: ErrorCode(0xdead),
        },
        Frame::Settings {
            ack: false,
            params: &params,
        },
        Frame::Settings {
            ack: true,
            params: &[],
        },
        Frame::PushPromise {
            stream_id: 1,
            promised_id: 2,
            fragment: b"\x82",
            padding: Some(1),
            end_headers: true,
        },
        Frame::Ping {
            ack: true,
            payload: *b"12345678",
        },
        Frame::GoAway {
            last_stream_id: 11,
            code: ErrorCode::ENHANCE_YOUR_CALM,
            debug: b"flood",
        },
        Frame::WindowUpdate {
            stream_id: 0,
            increment: MAX_WINDOW,
        },
        Frame::Continuation {
            stream_id: 5,
            fragment: b"\x84",
            end_headers: true,
        },
        Frame::Unknown {
            kind: 0x42,
            flags: 0xff,
            stream_id: 77,
            payload: b"extension",
        },
    ];
    for frame in frames {
        round_trip(frame);
    }
    let parsed = parse_raw(kind::SETTINGS, 0, 0, &params).expect("settings");
    let read: Vec<Setting> = parsed.settings().collect();
    assert_eq!(
        read,
        [
            Setting { id: 3, value: 100 },
            Setting { id: 0x99, value: 5 }
        ]
    );
}

#[test]
fn padding_is_checked_and_counted_for_flow_control() {
    let frame = parse_raw(kind::DATA, flag::PADDED, 1, b"\x02abcXY").expect("padded");
    assert_eq!(
        frame,
        Frame::Data {
            stream_id: 1,
            data: b"abc",
            padding: Some(2),
            end_stream: false
        }
    );
    assert_eq!(data_flow_len(b"abc", Some(2)), 6);
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind::DATA, flag::PADDED, 1, b"\x06abcXY"));
    assert!(
        parse_raw(kind::DATA, flag::PADDED, 1, b"\x05abcXY").is_ok(),
        "all padding is allowed"
    );
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind::DATA, flag::PADDED, 1, b"\x01"));
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::DATA, flag::PADDED, 1, b""));
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind::HEADERS, flag::PADDED, 1, b"\x04abc"));
    // The priority fields count inside the padded payload.
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(
        kind::HEADERS,
        flag::PADDED | flag::PRIORITY,
        1,
        b"\x01abcdX",
    ));
}

#[test]
fn stream_zero_rules() {
    for kind in [
        kind::DATA,
        kind::HEADERS,
        kind::PRIORITY,
        kind::RST_STREAM,
        kind::PUSH_PROMISE,
        kind::CONTINUATION,
    ] {
        connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind, 0, 0, &[0; 5]));
    }
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind::SETTINGS, 0, 1, b""));
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind::PING, 0, 1, &[0; 8]));
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind::GOAWAY, 0, 1, &[0; 8]));
}

#[test]
fn lengths_by_type() {
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::RST_STREAM, 0, 1, &[0; 5]));
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::PING, 0, 0, &[0; 7]));
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::GOAWAY, 0, 0, &[0; 7]));
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::WINDOW_UPDATE, 0, 1, &[0; 3]));
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::SETTINGS, 0, 0, &[0; 5]));
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::SETTINGS, flag::ACK, 0, &[0; 6]));
    connection(ErrorCode::FRAME_SIZE_ERROR)(parse_raw(kind::PUSH_PROMISE, 0, 1, &[0; 3]));
    // A PRIORITY frame of the wrong length is only a stream error (§6.3).
    match parse_raw(kind::PRIORITY, 0, 3, &[0; 4]) {
        Err(Error::Stream {
            stream_id: 3,
            code: ErrorCode::FRAME_SIZE_ERROR,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn window_update_increment_zero_by_scope() {
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(kind::WINDOW_UPDATE, 0, 0, &[0; 4]));
    match parse_raw(kind::WINDOW_UPDATE, 0, 5, &[0x80, 0, 0, 0]) {
        Err(Error::Stream {
            stream_id: 5,
            code: ErrorCode::PROTOCOL_ERROR,
            reason: Reason::ZeroWindowIncrement,
        }) => {}
        other => panic!("the reserved bit is ignored, leaving 0: {other:?}"),
    }
}

#[test]
fn settings_values_are_range_checked() {
    let one = |id, value| {
        let mut payload = Vec::new();
        Setting { id, value }.write(&mut payload);
        payload
    };
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(
        kind::SETTINGS,
        0,
        0,
        &one(settings::ENABLE_PUSH, 2),
    ));
    connection(ErrorCode::FLOW_CONTROL_ERROR)(parse_raw(
        kind::SETTINGS,
        0,
        0,
        &one(settings::INITIAL_WINDOW_SIZE, 1 << 31),
    ));
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(
        kind::SETTINGS,
        0,
        0,
        &one(settings::MAX_FRAME_SIZE, 16_383),
    ));
    connection(ErrorCode::PROTOCOL_ERROR)(parse_raw(
        kind::SETTINGS,
        0,
        0,
        &one(settings::MAX_FRAME_SIZE, 1 << 24),
    ));
    for (id, value) in [
        (settings::ENABLE_PUSH, 1),
        (settings::INITIAL_WINDOW_SIZE, MAX_WINDOW),
        (0xff, u32::MAX),
    ] {
        assert!(parse_raw(kind::SETTINGS, 0, 0, &one(id, value)).is_ok());
    }
}

#[test]
fn header_blocks_split_into_continuations() {
    let block: Vec<u8> = (0..40_000u32).map(|index| index as u8).collect();
    let mut out = Vec::new();
    write_header_block(&mut out, 7, &block, true, DEFAULT_MAX_FRAME_SIZE);
    let mut rest = &out[..];
    let mut joined = Vec::new();
    let mut kinds = Vec::new();
    while !rest.is_empty() {
        let header = header_of(rest);
        let end = HEADER_LEN + header.length as usize;
        match parse(&header, &rest[HEADER_LEN..end]).expect("parses") {
            Frame::Headers {
                fragment,
                end_stream,
                end_headers,
                ..
            } => {
                assert!(end_stream && !end_headers);
                joined.extend_from_slice(fragment);
            }
            Frame::Continuation {
                stream_id: 7,
                fragment,
                end_headers,
            } => {
                assert_eq!(end_headers, end == rest.len());
                joined.extend_from_slice(fragment);
            }
            other => panic!("{other:?}"),
        }
        kinds.push(header.kind);
        rest = &rest[end..];
    }
    assert_eq!(
        kinds,
        [kind::HEADERS, kind::CONTINUATION, kind::CONTINUATION]
    );
    assert_eq!(joined, block);
}
