//! The server connection against a client written here from the crate's own frames and
//! QPACK: the request sequence, the control and QPACK streams, the errors of RFC 9114 §8
//! and the limits.

use super::*;
use crate::FieldList;
use crate::frame::Header;
use crate::qpack::{Decoded, DecoderSettings, Encoder};

const CLIENT_CONTROL: u64 = 2;
const CLIENT_ENCODER: u64 = 6;
const CLIENT_DECODER: u64 = 10;

fn field(name: &str, value: &str) -> HeaderField {
    HeaderField::new(name, value)
}

fn get(path: &str) -> Vec<HeaderField> {
    vec![
        field(":method", "GET"),
        field(":scheme", "https"),
        field(":authority", "localhost"),
        field(":path", path),
    ]
}

/// The list the decoder makes of `fields`.
fn list(fields: &[HeaderField]) -> FieldList {
    let mut list = FieldList::new();
    for field in fields {
        list.push(&field.name, &field.value, field.sensitive);
    }
    list
}

fn frame_bytes(frame_type: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Header::encode(frame_type, payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

fn headers_frame(encoder: &mut Encoder, stream_id: u64, fields: &[HeaderField]) -> Vec<u8> {
    frame_bytes(frame::HEADERS, &encoder.encode_section(stream_id, fields))
}

fn control_stream(settings: Settings) -> Vec<u8> {
    let mut out = vec![frame::STREAM_CONTROL as u8];
    settings.encode(&mut out);
    out
}

fn events(connection: &mut Connection) -> Vec<Event> {
    std::iter::from_fn(|| connection.poll_event()).collect()
}

fn outputs(connection: &mut Connection) -> Vec<Output> {
    std::iter::from_fn(|| connection.poll_output()).collect()
}

/// A connection whose client has sent its control stream.
fn connected(config: Config) -> Connection {
    let mut connection = Connection::new(config);
    connection
        .receive(CLIENT_CONTROL, &control_stream(Settings::default()), false)
        .expect("SETTINGS");
    outputs(&mut connection);
    connection
}

fn error_code(result: Result<(), Error>) -> Code {
    result.expect_err("a connection error").code
}

#[test]
fn opens_its_three_streams_with_settings() {
    let mut connection = Connection::new(Config::default());
    let outputs = outputs(&mut connection);
    assert_eq!(outputs.len(), 3);
    let Output::Data {
        stream_id: CONTROL_STREAM_ID,
        data,
        fin: false,
    } = &outputs[0]
    else {
        panic!("control stream first: {outputs:?}");
    };
    assert_eq!(data[0], 0x00);
    let (header, used) = Header::parse(&data[1..]).expect("SETTINGS header");
    assert_eq!(header.frame_type, frame::SETTINGS);
    let settings = Settings::parse(&data[1 + used..]).expect("settings");
    assert_eq!(settings.qpack_max_table_capacity, 4096);
    assert_eq!(settings.qpack_blocked_streams, 16);
    assert_eq!(settings.max_field_section_size, Some(65_536));
    assert_eq!(
        outputs[1..],
        [
            Output::Data {
                stream_id: ENCODER_STREAM_ID,
                data: vec![0x02],
                fin: false
            },
            Output::Data {
                stream_id: DECODER_STREAM_ID,
                data: vec![0x03],
                fin: false
            },
        ]
    );
}

#[test]
fn get_and_response() {
    let mut connection = connected(Config::default());
    let mut client = Encoder::new(0);
    let request = headers_frame(&mut client, 0, &get("/"));
    connection.receive(0, &request, true).expect("request");
    assert_eq!(
        events(&mut connection),
        [
            Event::Headers {
                stream_id: 0,
                fields: list(&get("/")),
                trailers: false,
                section_len: request.len() - 2,
            },
            Event::Finished { stream_id: 0 },
        ]
    );
    let head = [field(":status", "200"), field("content-type", "text/plain")];
    connection.send_headers(0, &head, false).expect("head");
    connection.send_data(0, b"hello", true).expect("body");
    assert_eq!(
        connection.send_data(0, b"more", true),
        Err(SendError::StreamGone)
    );
    assert!(connection.is_idle());
    let mut response = Vec::new();
    for output in outputs(&mut connection) {
        let Output::Data {
            stream_id: 0,
            data,
            fin,
        } = output
        else {
            panic!("only the request stream: {output:?}");
        };
        response.extend_from_slice(&data);
        assert_eq!(fin, response.ends_with(b"hello"));
    }
    let (header, used) = Header::parse(&response).expect("HEADERS");
    assert_eq!(header.frame_type, frame::HEADERS);
    let section = &response[used..used + header.length as usize];
    let mut decoder = crate::qpack::Decoder::new(DecoderSettings {
        max_table_capacity: 0,
        max_blocked_streams: 0,
        max_field_section_size: 1 << 16,
    });
    assert_eq!(
        decoder.decode_section(0, section),
        Ok(Decoded::Fields {
            fields: list(&head),
            size: 32 + 7 + 3 + 32 + 12 + 10,
        })
    );
    assert_eq!(
        &response[used + section.len()..],
        frame_bytes(frame::DATA, b"hello")
    );
}

/// A request with a body, trailers and unknown frames, fed in two pieces split at every
/// byte, gives the same events.
#[test]
fn body_and_trailers_split_at_every_byte() {
    let mut client = Encoder::new(0);
    let mut request = headers_frame(&mut client, 0, &get("/upload"));
    request.extend(frame_bytes(0x21, b"reserved"));
    request.extend(frame_bytes(frame::DATA, b"hello "));
    request.extend(frame_bytes(frame::DATA, b""));
    request.extend(frame_bytes(0x1f * 5 + 0x21, b""));
    request.extend(frame_bytes(frame::DATA, b"world"));
    request.extend(headers_frame(&mut client, 0, &[field("x-checksum", "1")]));
    request.extend(frame_bytes(0x4242, b"after trailers"));
    for cut in 0..=request.len() {
        let mut connection = connected(Config::default());
        connection
            .receive(0, &request[..cut], false)
            .expect("first");
        connection
            .receive(0, &request[cut..], true)
            .expect("second");
        let mut body = Vec::new();
        let mut heads = Vec::new();
        let mut finished = false;
        for event in events(&mut connection) {
            match event {
                Event::Data { data, .. } => body.extend(data),
                Event::Headers {
                    fields, trailers, ..
                } => heads.push((fields, trailers)),
                Event::Finished { stream_id: 0 } => finished = true,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(body, b"hello world", "cut {cut}");
        assert_eq!(
            heads,
            [
                (list(&get("/upload")), false),
                (list(&[field("x-checksum", "1")]), true)
            ]
        );
        assert!(finished);
    }
}

#[test]
fn request_sequence_errors() {
    let mut client = Encoder::new(0);
    let head = headers_frame(&mut client, 0, &get("/"));
    let trailers = headers_frame(&mut client, 0, &[field("x-t", "1")]);
    let cases: Vec<(Vec<u8>, Code)> = vec![
        (frame_bytes(frame::DATA, b"x"), Code::FrameUnexpected),
        (
            [&head[..], &trailers, &trailers].concat(),
            Code::FrameUnexpected,
        ),
        (
            [&head[..], &trailers, &frame_bytes(frame::DATA, b"x")].concat(),
            Code::FrameUnexpected,
        ),
        (frame_bytes(frame::SETTINGS, b""), Code::FrameUnexpected),
        (frame_bytes(frame::PUSH_PROMISE, b""), Code::FrameUnexpected),
        (frame_bytes(0x08, b""), Code::FrameUnexpected),
        (frame_bytes(frame::GOAWAY, &[0]), Code::FrameUnexpected),
        // A section that does not decode.
        (
            frame_bytes(frame::HEADERS, &[0x00]),
            Code::QpackDecompressionFailed,
        ),
    ];
    for (bytes, code) in cases {
        let mut connection = connected(Config::default());
        assert_eq!(
            error_code(connection.receive(0, &bytes, false)),
            code,
            "{bytes:?}"
        );
        // A failed connection stays failed.
        assert_eq!(error_code(connection.receive(4, &head, true)), code);
    }
    // The stream ends inside a frame.
    let mut connection = connected(Config::default());
    let code = error_code(connection.receive(0, &head[..head.len() - 1], true));
    assert_eq!(code, Code::FrameError);
}

#[test]
fn request_without_head_is_a_stream_error() {
    let mut connection = connected(Config::default());
    connection
        .receive(0, &frame_bytes(0x21, b"x"), true)
        .expect("stream error only");
    assert_eq!(
        events(&mut connection),
        [Event::Aborted {
            stream_id: 0,
            code: Code::RequestIncomplete
        }]
    );
    assert_eq!(
        outputs(&mut connection),
        [Output::Reset {
            stream_id: 0,
            code: Code::RequestIncomplete
        }]
    );
    // The connection goes on.
    let mut client = Encoder::new(0);
    let request = headers_frame(&mut client, 4, &get("/"));
    connection.receive(4, &request, true).expect("next request");
    assert_eq!(events(&mut connection).len(), 2);
}

#[test]
fn control_stream_rules() {
    let settings = control_stream(Settings::default());
    let cases: Vec<(Vec<u8>, Code)> = vec![
        // The first frame must be SETTINGS.
        (vec![0x00, 0x07, 0x01, 0x00], Code::MissingSettings),
        (
            [&settings[..], &frame_bytes(frame::SETTINGS, b"")].concat(),
            Code::FrameUnexpected,
        ),
        (
            [&settings[..], &frame_bytes(frame::DATA, b"")].concat(),
            Code::FrameUnexpected,
        ),
        (
            [&settings[..], &frame_bytes(frame::HEADERS, b"")].concat(),
            Code::FrameUnexpected,
        ),
        (
            [&settings[..], &frame_bytes(0x06, b"")].concat(),
            Code::FrameUnexpected,
        ),
        // HTTP/2's SETTINGS_MAX_FRAME_SIZE.
        (
            [&[0x00][..], &frame_bytes(frame::SETTINGS, &[0x05, 0x01])].concat(),
            Code::SettingsError,
        ),
        (
            [&[0x00][..], &frame_bytes(frame::SETTINGS, &[0x01])].concat(),
            Code::FrameError,
        ),
        (
            [&settings[..], &frame_bytes(frame::GOAWAY, &[])].concat(),
            Code::FrameError,
        ),
        // CANCEL_PUSH without MAX_PUSH_ID.
        (
            [&settings[..], &frame_bytes(frame::CANCEL_PUSH, &[0])].concat(),
            Code::IdError,
        ),
        (
            [
                &settings[..],
                &frame_bytes(frame::MAX_PUSH_ID, &[5]),
                &frame_bytes(frame::MAX_PUSH_ID, &[4]),
            ]
            .concat(),
            Code::IdError,
        ),
        (
            [
                &settings[..],
                &frame_bytes(frame::GOAWAY, &[4]),
                &frame_bytes(frame::GOAWAY, &[8]),
            ]
            .concat(),
            Code::IdError,
        ),
        (
            [&[0x00][..], &frame_bytes(frame::SETTINGS, &[0x21, 0x40])].concat(),
            Code::FrameError,
        ),
    ];
    for (bytes, code) in cases {
        let mut connection = Connection::new(Config::default());
        let result = connection.receive(CLIENT_CONTROL, &bytes, false);
        assert_eq!(error_code(result), code, "{bytes:02x?}");
    }
    // Unknown and reserved frames are skipped, even split; GOAWAY is reported.
    let mut connection = Connection::new(Config::default());
    let stream = [
        &settings[..],
        &frame_bytes(0x21, &[7; 100]),
        &frame_bytes(frame::MAX_PUSH_ID, &[5]),
        &frame_bytes(frame::CANCEL_PUSH, &[5]),
        &frame_bytes(frame::GOAWAY, &[0]),
    ]
    .concat();
    for piece in stream.chunks(3) {
        connection
            .receive(CLIENT_CONTROL, piece, false)
            .expect("valid");
    }
    assert_eq!(events(&mut connection), [Event::GoAway { id: 0 }]);
    assert_eq!(connection.peer_settings(), Some(Settings::default()));
    // A control frame past the limit.
    let mut connection = Connection::new(Config::default());
    let mut big = vec![0x00];
    Header::encode(frame::SETTINGS, 16 * 1024 + 1, &mut big);
    let code = error_code(connection.receive(CLIENT_CONTROL, &big, false));
    assert_eq!(code, Code::ExcessiveLoad);
}

#[test]
fn unidirectional_stream_rules() {
    let settings = control_stream(Settings::default());
    // A second control stream, a push stream, closing or resetting a critical stream.
    let mut connection = connected(Config::default());
    let code = error_code(connection.receive(14, &settings, false));
    assert_eq!(code, Code::StreamCreationError);
    let mut connection = connected(Config::default());
    assert_eq!(
        error_code(connection.receive(14, &[0x01], false)),
        Code::StreamCreationError
    );
    let mut connection = connected(Config::default());
    let code = error_code(connection.receive(CLIENT_CONTROL, &[], true));
    assert_eq!(code, Code::ClosedCriticalStream);
    for (stream_type, stream_id) in [(0x02u8, CLIENT_ENCODER), (0x03, CLIENT_DECODER)] {
        let mut connection = connected(Config::default());
        connection
            .receive(stream_id, &[stream_type], false)
            .expect("opened");
        let code = error_code(connection.receive(stream_id, &[], true));
        assert_eq!(code, Code::ClosedCriticalStream);
        let mut connection = connected(Config::default());
        connection
            .receive(stream_id, &[stream_type], false)
            .expect("opened");
        let code = error_code(connection.stream_reset(stream_id, 0x100));
        assert_eq!(code, Code::ClosedCriticalStream);
        let mut connection = connected(Config::default());
        connection
            .receive(stream_id, &[stream_type], false)
            .expect("opened");
        let code = error_code(connection.receive(stream_id + 12, &[stream_type], false));
        assert_eq!(code, Code::StreamCreationError);
    }
    // A reserved stream type is read no further, and its data is dropped.
    let mut connection = connected(Config::default());
    connection
        .receive(14, &[0x40, 0x21, 1, 2, 3], false)
        .expect("ignored");
    connection.receive(14, &[4, 5], true).expect("ignored");
    assert_eq!(
        outputs(&mut connection),
        [Output::StopSending {
            stream_id: 14,
            code: Code::StreamCreationError
        }]
    );
    // Server-initiated ids never come from a client.
    let code = error_code(connection.receive(1, &[], false));
    assert_eq!(code, Code::StreamCreationError);
}

/// A request whose head refers to an entry still on its way waits for it; the entry's
/// arrival decodes it, and the decoder stream acknowledges the section.
#[test]
fn blocked_request_resumes_when_the_entry_arrives() {
    let mut connection = connected(Config::default());
    let mut client = Encoder::new(4096);
    client.set_capacity(4096).expect("capacity");
    let absolute = client.insert(b"x-token", b"abc").expect("insert");
    let mut writer = client.writer();
    writer.indexed_static(17);
    writer.indexed_dynamic(absolute);
    let section = client.commit(0, writer);
    let mut request = frame_bytes(frame::HEADERS, &section);
    request.extend(frame_bytes(frame::DATA, b"body"));
    connection
        .receive(0, &request, true)
        .expect("blocked, no error");
    assert_eq!(events(&mut connection), []);
    let mut encoder_stream = vec![0x02];
    encoder_stream.extend(client.take_instructions());
    connection
        .receive(CLIENT_ENCODER, &encoder_stream, false)
        .expect("entries");
    assert_eq!(
        events(&mut connection),
        [
            Event::Headers {
                stream_id: 0,
                fields: list(&[field(":method", "GET"), field("x-token", "abc")]),
                trailers: false,
                section_len: section.len(),
            },
            Event::Data {
                stream_id: 0,
                data: b"body".to_vec()
            },
            Event::Finished { stream_id: 0 },
        ]
    );
    assert_eq!(
        outputs(&mut connection),
        [Output::Data {
            stream_id: DECODER_STREAM_ID,
            data: vec![0x80],
            fin: false
        }]
    );
}

#[test]
fn blocked_streams_past_the_limit_fail_the_connection() {
    let config = Config {
        qpack_blocked_streams: 1,
        ..Config::default()
    };
    let mut connection = connected(config);
    let mut client = Encoder::new(4096);
    client.set_capacity(4096).expect("capacity");
    let absolute = client.insert(b"x-token", b"abc").expect("insert");
    let mut request = |stream_id| {
        let mut writer = client.writer();
        writer.indexed_dynamic(absolute);
        frame_bytes(frame::HEADERS, &client.commit(stream_id, writer))
    };
    let first = request(0);
    let second = request(4);
    connection
        .receive(0, &first, false)
        .expect("one blocked stream");
    let code = error_code(connection.receive(4, &second, false));
    assert_eq!(code, Code::QpackDecompressionFailed);
}

#[test]
fn reset_of_a_blocked_stream_cancels_it() {
    let mut connection = connected(Config::default());
    let mut client = Encoder::new(4096);
    client.set_capacity(4096).expect("capacity");
    let absolute = client.insert(b"x-token", b"abc").expect("insert");
    let mut writer = client.writer();
    writer.indexed_dynamic(absolute);
    let request = frame_bytes(frame::HEADERS, &client.commit(0, writer));
    connection.receive(0, &request, false).expect("blocked");
    connection.stream_reset(0, 0x10c).expect("reset");
    assert_eq!(
        events(&mut connection),
        [Event::Aborted {
            stream_id: 0,
            code: Code::RequestCancelled
        }]
    );
    // Stream Cancellation for stream 0.
    assert_eq!(
        outputs(&mut connection),
        [Output::Data {
            stream_id: DECODER_STREAM_ID,
            data: vec![0x40],
            fin: false
        }]
    );
    assert_eq!(
        connection.send_data(0, b"x", true),
        Err(SendError::StreamGone)
    );
}

#[test]
fn field_section_limits_refuse_one_request() {
    let config = Config {
        max_field_section_size: 200,
        stream_buffer_size: 100,
        ..Config::default()
    };
    let mut client = Encoder::new(0);
    let long = [get("/"), vec![field("x-long", &"v".repeat(300))]].concat();
    let mut too_long_frame = Vec::new();
    Header::encode(frame::HEADERS, 201, &mut too_long_frame);
    let cases = [
        // Decoded past 200 bytes.
        headers_frame(&mut client, 0, &long)[..].to_vec(),
        // A HEADERS frame longer than the section limit, refused from its header.
        too_long_frame,
        // A frame within the limits whose bytes pile up past the stream buffer.
        [&[0x01, 0x40, 0xc8][..], &[0x00; 101]].concat(),
    ];
    for bytes in cases {
        let mut connection = connected(config);
        connection
            .receive(0, &bytes, false)
            .expect("a stream error only");
        assert_eq!(
            events(&mut connection),
            [Event::Aborted {
                stream_id: 0,
                code: Code::ExcessiveLoad
            }]
        );
        let request = headers_frame(&mut client, 4, &get("/"));
        connection.receive(4, &request, true).expect("next request");
        assert_eq!(events(&mut connection).len(), 2);
    }
}

#[test]
fn request_stream_limit_and_goaway() {
    let config = Config {
        max_request_streams: 2,
        ..Config::default()
    };
    let mut connection = connected(config);
    let mut client = Encoder::new(0);
    for stream_id in [0, 4] {
        let request = headers_frame(&mut client, stream_id, &get("/"));
        connection
            .receive(stream_id, &request, false)
            .expect("open");
    }
    assert_eq!(connection.open_requests(), 2);
    let request = headers_frame(&mut client, 8, &get("/"));
    connection
        .receive(8, &request, false)
        .expect("refused, no error");
    assert_eq!(
        outputs(&mut connection),
        [Output::Reset {
            stream_id: 8,
            code: Code::RequestRejected
        }]
    );
    // More bytes of the refused stream are dropped.
    connection.receive(8, b"junk", true).expect("dropped");
    connection.abort(4, Code::RequestCancelled);
    assert_eq!(connection.open_requests(), 1);
    connection.send_goaway();
    let goaway = outputs(&mut connection);
    assert_eq!(
        goaway.last(),
        Some(&Output::Data {
            stream_id: CONTROL_STREAM_ID,
            data: vec![0x07, 0x01, 12],
            fin: false
        })
    );
    let request = headers_frame(&mut client, 12, &get("/"));
    connection
        .receive(12, &request, true)
        .expect("refused, no error");
    assert_eq!(
        outputs(&mut connection),
        [Output::Reset {
            stream_id: 12,
            code: Code::RequestRejected
        }]
    );
    // Stream 0 is still served.
    connection
        .send_headers(0, &[field(":status", "204")], true)
        .expect("served");
}

/// With a dynamic table allowed both ways, response heads use it once the client
/// acknowledges the entries, and decode the same.
#[test]
fn responses_through_the_dynamic_table() {
    let config = Config {
        encoder_table_capacity: 1024,
        ..Config::default()
    };
    let mut connection = Connection::new(config);
    outputs(&mut connection);
    let client_settings = Settings {
        qpack_max_table_capacity: 2048,
        qpack_blocked_streams: 0,
        max_field_section_size: None,
    };
    connection
        .receive(CLIENT_CONTROL, &control_stream(client_settings), false)
        .expect("SETTINGS");
    connection
        .receive(CLIENT_DECODER, &[0x03], false)
        .expect("decoder stream");
    let mut decoder = crate::qpack::Decoder::new(DecoderSettings {
        max_table_capacity: 2048,
        max_blocked_streams: 0,
        max_field_section_size: 1 << 16,
    });
    let mut client = Encoder::new(0);
    let head = [
        field(":status", "200"),
        field("server", "portico"),
        field("x-a", "b"),
    ];
    let mut sizes = Vec::new();
    for stream_id in [0u64, 4, 8] {
        let request = headers_frame(&mut client, stream_id, &get("/"));
        connection
            .receive(stream_id, &request, true)
            .expect("request");
        connection
            .send_headers(stream_id, &head, true)
            .expect("head");
        for output in outputs(&mut connection) {
            let Output::Data {
                stream_id: written,
                data,
                ..
            } = output
            else {
                panic!("data only");
            };
            if written == ENCODER_STREAM_ID {
                decoder.receive_encoder_stream(&data).expect("instructions");
            } else {
                assert_eq!(written, stream_id);
                let (header, used) = Header::parse(&data).expect("HEADERS");
                assert_eq!(header.frame_type, frame::HEADERS);
                sizes.push(header.length);
                let decoded = decoder.decode_section(stream_id, &data[used..]);
                let Ok(Decoded::Fields { fields, .. }) = decoded else {
                    panic!("never blocked: {decoded:?}");
                };
                assert_eq!(fields, list(&head));
            }
        }
        let acknowledgments = decoder.take_instructions();
        connection
            .receive(CLIENT_DECODER, &acknowledgments, false)
            .expect("acks");
    }
    assert!(sizes[1] < sizes[0], "{sizes:?}");
    // A bad decoder instruction is the connection's error.
    let code = error_code(connection.receive(CLIENT_DECODER, &[0x84], false));
    assert_eq!(code, Code::QpackDecoderStreamError);
}

/// QUIC delivers streams' data in any order: a higher stream's data opens the lower
/// streams, whose own data arrives later and is served.
#[test]
fn streams_opened_out_of_order() {
    let mut connection = connected(Config {
        max_request_streams: 2,
        ..Config::default()
    });
    let mut client = Encoder::new(0);
    let later = headers_frame(&mut client, 4, &get("/later"));
    connection.receive(4, &later, true).expect("stream 4 first");
    let first = headers_frame(&mut client, 0, &get("/first"));
    connection.receive(0, &first, true).expect("then stream 0");
    let served: Vec<u64> = events(&mut connection)
        .into_iter()
        .filter_map(|event| match event {
            Event::Finished { stream_id } => Some(stream_id),
            _ => None,
        })
        .collect();
    assert_eq!(served, [4, 0]);
    // Stream 12 opens 8 and 12, past the limit of two open streams.
    let request = headers_frame(&mut client, 12, &get("/"));
    connection
        .receive(12, &request, true)
        .expect("refused, no error");
    let refused = [8, 12].map(|stream_id| Output::Reset {
        stream_id,
        code: Code::RequestRejected,
    });
    assert_eq!(outputs(&mut connection), refused);
}

/// HTTP/3's rules for a request head are HTTP/2's (RFC 9114 §4.3): the decoded list is
/// the one `http2::request::parse` checks.
#[test]
fn heads_are_checked_by_the_http2_rules() {
    let policy = http2::request::FieldPolicy::default();
    let mut client = Encoder::new(0);
    let mut heads = Vec::new();
    let good = [
        get("/a"),
        vec![field("cookie", "a=1"), field("cookie", "b=2")],
    ]
    .concat();
    let bad = [get("/b"), vec![field("Upper", "x")]].concat();
    let mut connection = connected(Config::default());
    for (stream_id, fields) in [(0, &good), (4, &bad)] {
        let request = headers_frame(&mut client, stream_id, fields);
        connection
            .receive(stream_id, &request, true)
            .expect("request");
    }
    for event in events(&mut connection) {
        if let Event::Headers { fields, .. } = event {
            heads.push(http2::request::parse(fields, policy));
        }
    }
    let head = heads[0].as_ref().expect("a valid head");
    assert_eq!(head.method(), b"GET");
    assert_eq!(head.path(), Some(&b"/a"[..]));
    assert_eq!(head.authority(), Some(&b"localhost"[..]));
    let cookie: Vec<_> = head.fields().map(|field| field.value.to_vec()).collect();
    assert_eq!(cookie, [b"a=1; b=2".to_vec()]);
    assert!(heads[1].is_err());
}

/// A head larger than the client's SETTINGS_MAX_FIELD_SECTION_SIZE is not sent.
#[test]
fn response_heads_within_the_clients_limit() {
    let mut connection = Connection::new(Config::default());
    let settings = Settings {
        max_field_section_size: Some(32 + 7 + 3 + 32 + 5 + 5),
        ..Settings::default()
    };
    connection
        .receive(CLIENT_CONTROL, &control_stream(settings), false)
        .expect("SETTINGS");
    let mut client = Encoder::new(0);
    let request = headers_frame(&mut client, 0, &get("/"));
    connection.receive(0, &request, true).expect("request");
    outputs(&mut connection);
    let at_limit = [field(":status", "200"), field("x-abc", "12345")];
    let past = [field(":status", "200"), field("x-abc", "123456")];
    assert_eq!(
        connection.send_headers(0, &past, true),
        Err(SendError::FieldSectionTooLarge)
    );
    assert_eq!(outputs(&mut connection), []);
    connection
        .send_headers(0, &at_limit, true)
        .expect("at the limit");
    assert_eq!(outputs(&mut connection).len(), 1);
}

/// An empty DATA frame is reported: it tells a request with an empty body from one with
/// none, which only HEADERS and the stream's end make.
#[test]
fn an_empty_data_frame_is_an_event() {
    let mut client = Encoder::new(0);
    let head = headers_frame(&mut client, 0, &get("/"));
    let mut with_empty = head.clone();
    with_empty.extend(frame_bytes(frame::DATA, b""));
    for (request, data_events) in [(head, 0), (with_empty, 1)] {
        let mut connection = connected(Config::default());
        connection.receive(0, &request, true).expect("request");
        let seen = events(&mut connection)
            .iter()
            .filter(|event| matches!(event, Event::Data { data, .. } if data.is_empty()))
            .count();
        assert_eq!(seen, data_events);
    }
}
