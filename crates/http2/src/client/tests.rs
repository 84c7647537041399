//! The client role against a scripted server: frames written as bytes, the client's
//! output read back into frames.

use super::{ClientConfig, ClientConnection, ClientEvent, ClientSendError, HeadKind};
use crate::connection::PREFACE;
use crate::error::{Error, ErrorCode, Reason};
use crate::frame::{self, Frame, FrameHeader, HEADER_LEN, Setting, settings};
use crate::hpack::{self, DecodeLimits, HeaderField};
use crate::limits::Flood;

/// The server side of the tests: an HPACK context each way, frames as bytes.
struct Server {
    encoder: hpack::Encoder,
    decoder: hpack::Decoder,
}

/// A frame of the client's output, owning its payload.
#[derive(Debug)]
struct Written {
    header: FrameHeader,
    payload: Vec<u8>,
}

impl Written {
    fn frame(&self) -> Frame<'_> {
        frame::parse(&self.header, &self.payload).expect("the client writes valid frames")
    }
}

impl Server {
    fn new() -> Self {
        Self {
            encoder: hpack::Encoder::new(),
            decoder: hpack::Decoder::new(hpack::table::DEFAULT_SIZE),
        }
    }

    fn settings(params: &[Setting]) -> Vec<u8> {
        let mut payload = Vec::new();
        for param in params {
            param.write(&mut payload);
        }
        let mut out = Vec::new();
        Frame::Settings {
            ack: false,
            params: &payload,
        }
        .write(&mut out);
        out
    }

    fn headers(&mut self, stream_id: u32, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
        let fields: Vec<HeaderField> = fields
            .iter()
            .map(|&(name, value)| HeaderField::new(name, value))
            .collect();
        let mut block = Vec::new();
        self.encoder.encode(&fields, &mut block);
        let mut out = Vec::new();
        frame::write_header_block(
            &mut out,
            stream_id,
            &block,
            end_stream,
            frame::DEFAULT_MAX_FRAME_SIZE,
        );
        out
    }

    /// Reads the client's output: the preface (checked) and the frames after it.
    fn read(&mut self, client: &mut ClientConnection) -> Vec<Written> {
        let mut bytes = client.output().to_vec();
        client.advance_output(bytes.len());
        if bytes.starts_with(PREFACE) {
            bytes.drain(..PREFACE.len());
        }
        let mut frames = Vec::new();
        let mut at = 0;
        while at + HEADER_LEN <= bytes.len() {
            let header = FrameHeader::parse(bytes[at..at + HEADER_LEN].try_into().expect("9"));
            let end = at + HEADER_LEN + header.length as usize;
            frames.push(Written {
                header,
                payload: bytes[at + HEADER_LEN..end].to_vec(),
            });
            at = end;
        }
        assert_eq!(at, bytes.len(), "whole frames");
        frames
    }

    fn decode(&mut self, written: &Written) -> Vec<(String, String)> {
        let Frame::Headers { fragment, .. } = written.frame() else {
            panic!("not HEADERS: {written:?}");
        };
        let limits = DecodeLimits {
            max_field_size: 1 << 20,
            max_list_size: 1 << 20,
        };
        let decoded = self.decoder.decode(fragment, limits).expect("valid block");
        decoded
            .fields
            .iter()
            .map(|field| {
                (
                    String::from_utf8_lossy(field.name).into_owned(),
                    String::from_utf8_lossy(field.value).into_owned(),
                )
            })
            .collect()
    }
}

fn data(stream_id: u32, bytes: &[u8], end_stream: bool) -> Vec<u8> {
    let mut out = Vec::new();
    Frame::Data {
        stream_id,
        data: bytes,
        padding: None,
        end_stream,
    }
    .write(&mut out);
    out
}

fn request(path: &str) -> Vec<HeaderField> {
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "upstream"),
        (":path", path),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    .iter()
    .map(|&(name, value)| HeaderField::new(name, value))
    .collect()
}

fn events(client: &mut ClientConnection) -> Vec<ClientEvent> {
    std::iter::from_fn(|| client.poll_event()).collect()
}

/// A client past the SETTINGS exchange with a server that announced `params`.
fn connected(params: &[Setting]) -> (ClientConnection, Server) {
    let mut client = ClientConnection::new(ClientConfig::default());
    let mut server = Server::new();
    server.read(&mut client);
    let settings = Server::settings(params);
    assert_eq!(client.receive(&settings), Ok(settings.len()));
    let written = server.read(&mut client);
    assert!(matches!(
        written[0].frame(),
        Frame::Settings { ack: true, .. }
    ));
    (client, server)
}

#[test]
fn the_preface_settings_and_window_come_first() {
    let mut client = ClientConnection::new(ClientConfig {
        stream_window: 1 << 20,
        connection_window: 1 << 24,
        ..ClientConfig::default()
    });
    assert!(client.output().starts_with(PREFACE));
    let written = Server::new().read(&mut client);
    let Frame::Settings { ack: false, .. } = written[0].frame() else {
        panic!("{written:?}");
    };
    let params: Vec<Setting> = written[0].frame().settings().collect();
    assert!(params.contains(&Setting {
        id: settings::ENABLE_PUSH,
        value: 0
    }));
    assert!(params.contains(&Setting {
        id: settings::INITIAL_WINDOW_SIZE,
        value: 1 << 20
    }));
    assert_eq!(
        written[1].frame(),
        Frame::WindowUpdate {
            stream_id: 0,
            increment: (1 << 24) - 65_535
        }
    );
}

#[test]
fn a_call_with_trailers_both_ways_split_at_every_byte() {
    let (mut client, mut server) = connected(&[]);
    let stream_id = client
        .open_stream(&request("/echo.Echo/Say"), false)
        .expect("open");
    assert_eq!(stream_id, 1);
    client
        .send_data(stream_id, b"\0\0\0\0\x05hello", false)
        .expect("data");
    client
        .send_trailers(stream_id, vec![HeaderField::new("x-sum", "1")])
        .expect("trailers");
    client.flush();
    let written = server.read(&mut client);
    assert_eq!(written.len(), 3, "{written:?}");
    assert_eq!(
        server.decode(&written[0])[3],
        (":path".into(), "/echo.Echo/Say".into())
    );
    assert!(matches!(
        written[1].frame(),
        Frame::Data {
            data: b"\0\0\0\0\x05hello",
            end_stream: false,
            ..
        }
    ));
    assert!(matches!(
        written[2].frame(),
        Frame::Headers {
            end_stream: true,
            ..
        }
    ));
    assert_eq!(
        server.decode(&written[2]),
        vec![("x-sum".into(), "1".into())]
    );

    let mut answer = server.headers(
        1,
        &[(":status", "200"), ("content-type", "application/grpc")],
        false,
    );
    answer.extend(data(1, b"\0\0\0\0\x02hi", false));
    answer.extend(server.headers(1, &[("grpc-status", "0")], true));
    for split in 0..=answer.len() {
        let (mut client, _) = connected(&[]);
        client.open_stream(&request("/x"), true).expect("open");
        let used = client.receive(&answer[..split]).expect("valid");
        let rest = [&answer[used..split], &answer[split..]].concat();
        assert_eq!(client.receive(&rest), Ok(rest.len()));
        let events = events(&mut client);
        assert_eq!(events.len(), 3, "split {split}: {events:?}");
        let ClientEvent::Headers {
            kind: HeadKind::Response,
            status: 200,
            end_stream: false,
            ..
        } = events[0]
        else {
            panic!("{events:?}");
        };
        assert_eq!(
            events[1],
            ClientEvent::Data {
                stream_id: 1,
                data: b"\0\0\0\0\x02hi".to_vec(),
                end_stream: false
            }
        );
        let ClientEvent::Headers {
            kind: HeadKind::Trailers,
            end_stream: true,
            ref fields,
            ..
        } = events[2]
        else {
            panic!("{events:?}");
        };
        assert_eq!(fields.get(0).map(|field| field.value), Some(&b"0"[..]));
        assert_eq!(client.open_streams(), 0, "both sides ended");
    }
}

#[test]
fn request_data_waits_for_the_windows() {
    let (mut client, mut server) = connected(&[Setting {
        id: settings::INITIAL_WINDOW_SIZE,
        value: 10,
    }]);
    let stream_id = client.open_stream(&request("/up"), false).expect("open");
    client.send_data(stream_id, &[7; 25], true).expect("data");
    client.flush();
    let written = server.read(&mut client);
    assert!(
        matches!(written[1].frame(), Frame::Data { data, end_stream: false, .. } if data.len() == 10)
    );
    assert_eq!(client.queued(stream_id), 15);
    client.flush();
    assert!(server.read(&mut client).is_empty(), "the window is closed");
    let mut update = Vec::new();
    Frame::WindowUpdate {
        stream_id,
        increment: 100,
    }
    .write(&mut update);
    client.receive(&update).expect("valid");
    client.flush();
    let written = server.read(&mut client);
    assert!(
        matches!(written[0].frame(), Frame::Data { data, end_stream: true, .. } if data.len() == 15)
    );
    assert_eq!(
        client.send_data(stream_id, b"x", false),
        Err(ClientSendError::StreamEnded)
    );
}

#[test]
fn response_data_past_the_window_resets_the_stream() {
    let (mut client, mut server) = connected(&[]);
    client.open_stream(&request("/down"), true).expect("open");
    server.read(&mut client);
    let mut answer = server.headers(1, &[(":status", "200")], false);
    let big = vec![1u8; 16_384];
    for _ in 0..4 {
        answer.extend(data(1, &big, false));
    }
    answer.extend(data(1, b"x", false));
    client.receive(&answer).expect("a stream error only");
    let events = events(&mut client);
    assert_eq!(
        events.last(),
        Some(&ClientEvent::Reset {
            stream_id: 1,
            code: ErrorCode::FLOW_CONTROL_ERROR,
            by_peer: false,
            reason: Some(Reason::WindowExceeded),
        })
    );
    let written = server.read(&mut client);
    assert!(written.iter().any(|frame| frame.frame()
        == Frame::RstStream {
            stream_id: 1,
            code: ErrorCode::FLOW_CONTROL_ERROR
        }));
    // Consumed data opens the window again.
    let (mut client, mut server) = connected(&[]);
    client.open_stream(&request("/down"), true).expect("open");
    server.read(&mut client);
    let mut answer = server.headers(1, &[(":status", "200")], false);
    answer.extend(data(1, &big, false));
    answer.extend(data(1, &big, false));
    client.receive(&answer).expect("valid");
    client.release(1, 32_768);
    let written = server.read(&mut client);
    assert!(written.iter().any(|frame| frame.frame()
        == Frame::WindowUpdate {
            stream_id: 1,
            increment: 32_768
        }));
}

#[test]
fn goaway_refuses_the_streams_it_left_out() {
    let (mut client, _) = connected(&[]);
    client.open_stream(&request("/a"), true).expect("open");
    client.open_stream(&request("/b"), true).expect("open");
    let mut goaway = Vec::new();
    Frame::GoAway {
        last_stream_id: 1,
        code: ErrorCode::NO_ERROR,
        debug: b"bye",
    }
    .write(&mut goaway);
    client.receive(&goaway).expect("valid");
    assert_eq!(
        events(&mut client),
        vec![
            ClientEvent::Reset {
                stream_id: 3,
                code: ErrorCode::REFUSED_STREAM,
                by_peer: true,
                reason: None
            },
            ClientEvent::GoAway {
                last_stream_id: 1,
                code: ErrorCode::NO_ERROR,
                debug: b"bye".to_vec()
            }
        ]
    );
    assert!(!client.can_open_stream());
    assert_eq!(
        client.open_stream(&request("/c"), true),
        Err(ClientSendError::ConnectionClosing)
    );
    assert_eq!(client.open_streams(), 1);
}

#[test]
fn rst_stream_and_interim_heads() {
    let (mut client, mut server) = connected(&[]);
    client.open_stream(&request("/a"), true).expect("open");
    let mut answer = server.headers(1, &[(":status", "103"), ("link", "</s.css>")], false);
    answer.extend(server.headers(1, &[(":status", "204")], true));
    client.receive(&answer).expect("valid");
    let kinds: Vec<(HeadKind, u16)> = events(&mut client)
        .into_iter()
        .map(|event| match event {
            ClientEvent::Headers { kind, status, .. } => (kind, status),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, [(HeadKind::Interim, 103), (HeadKind::Response, 204)]);

    client.open_stream(&request("/b"), false).expect("open");
    let mut reset = Vec::new();
    Frame::RstStream {
        stream_id: 3,
        code: ErrorCode::CANCEL,
    }
    .write(&mut reset);
    client.receive(&reset).expect("valid");
    assert_eq!(
        events(&mut client),
        vec![ClientEvent::Reset {
            stream_id: 3,
            code: ErrorCode::CANCEL,
            by_peer: true,
            reason: None
        }]
    );
    assert_eq!(
        client.send_data(3, b"x", true),
        Err(ClientSendError::StreamGone)
    );
    // A head for a stream we reset is decoded (the table stays in step) and dropped.
    let late = server.headers(3, &[(":status", "200"), ("x-late", "yes")], true);
    client.receive(&late).expect("valid");
    assert!(events(&mut client).is_empty());
}

#[test]
fn bad_heads_reset_their_stream() {
    for (fields, end_stream) in [
        (&[("x-no-status", "1")][..], false),
        (&[(":status", "2000")][..], false),
        (&[("a", "b"), (":status", "200")][..], false),
        (&[(":status", "100")][..], true),
        (&[(":status", "101")][..], false),
    ] {
        let (mut client, mut server) = connected(&[]);
        client.open_stream(&request("/a"), true).expect("open");
        let head = server.headers(1, fields, end_stream);
        client.receive(&head).expect("a stream error only");
        assert_eq!(
            events(&mut client),
            vec![ClientEvent::Reset {
                stream_id: 1,
                code: ErrorCode::PROTOCOL_ERROR,
                by_peer: false,
                reason: Some(Reason::BadStatus)
            }],
            "{fields:?}"
        );
    }
    let (mut client, mut server) = connected(&[]);
    client.open_stream(&request("/a"), true).expect("open");
    let mut answer = server.headers(1, &[(":status", "200")], false);
    answer.extend(server.headers(1, &[("grpc-status", "0")], false));
    client.receive(&answer).expect("a stream error only");
    assert!(matches!(
        events(&mut client).last(),
        Some(ClientEvent::Reset {
            reason: Some(Reason::TrailersWithoutEndStream),
            ..
        })
    ));
    assert_eq!(
        Reason::BadStatus.by("upstream").to_string(),
        "upstream sent invalid :status header"
    );
    let (mut client, _) = connected(&[]);
    client.open_stream(&request("/a"), true).expect("open");
    client
        .receive(&data(1, b"early", false))
        .expect("a stream error only");
    assert!(matches!(
        events(&mut client).last(),
        Some(ClientEvent::Reset {
            reason: Some(Reason::UnexpectedData),
            ..
        })
    ));
}

fn connection_error(client: &mut ClientConnection, input: &[u8]) -> Error {
    let error = client.receive(input).expect_err("a connection error");
    let written = Server::new().read(client);
    assert!(
        matches!(written.last().map(Written::frame), Some(Frame::GoAway { code, .. }) if code == error.code()),
        "{written:?}"
    );
    assert!(client.is_failed());
    error
}

#[test]
fn connection_errors_end_with_goaway() {
    // The server's first frame must be SETTINGS.
    let mut client = ClientConnection::new(ClientConfig::default());
    Server::new().read(&mut client);
    let mut ping = Vec::new();
    Frame::Ping {
        ack: false,
        payload: [0; 8],
    }
    .write(&mut ping);
    let error = connection_error(&mut client, &ping);
    assert_eq!(
        error.reason(),
        Reason::SettingsExpected {
            kind: frame::kind::PING
        }
    );

    let (mut client, _) = connected(&[]);
    client.open_stream(&request("/a"), true).expect("open");
    let mut push = Vec::new();
    Frame::PushPromise {
        stream_id: 1,
        promised_id: 2,
        fragment: &[0x88],
        padding: None,
        end_headers: true,
    }
    .write(&mut push);
    assert_eq!(
        connection_error(&mut client, &push).reason(),
        Reason::PushPromise
    );

    // A stream the client never opened.
    let (mut client, mut server) = connected(&[]);
    let head = server.headers(5, &[(":status", "200")], true);
    assert_eq!(
        connection_error(&mut client, &head).reason(),
        Reason::IdleStream {
            kind: frame::kind::HEADERS
        }
    );
    assert_eq!(
        client.open_stream(&request("/a"), true),
        Err(ClientSendError::ConnectionClosing)
    );

    // A frame longer than we announced.
    let (mut client, _) = connected(&[]);
    let long = data(1, &vec![0; 20_000], false);
    assert_eq!(
        connection_error(&mut client, &long).reason(),
        Reason::FrameTooLarge { length: 20_000 }
    );
}

#[test]
fn endless_continuation_and_control_floods_are_cut_off() {
    let (mut client, _) = connected(&[]);
    client.open_stream(&request("/a"), true).expect("open");
    let mut input = Vec::new();
    Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: &[],
        padding: None,
        end_stream: false,
        end_headers: false,
    }
    .write(&mut input);
    for _ in 0..100 {
        Frame::Continuation {
            stream_id: 1,
            fragment: &[],
            end_headers: false,
        }
        .write(&mut input);
    }
    assert_eq!(
        connection_error(&mut client, &input).reason(),
        Reason::Flood(Flood::Continuation)
    );

    // SETTINGS and PING faster than their answers are written.
    let (mut client, _) = connected(&[]);
    let mut flood = Vec::new();
    for _ in 0..2000 {
        flood.extend(Server::settings(&[]));
    }
    assert_eq!(
        connection_error(&mut client, &flood).reason(),
        Reason::Flood(Flood::ControlFrames)
    );

    // A header block past its limit, however it is split.
    let mut client = ClientConnection::new(ClientConfig {
        header_block_max: 100,
        ..ClientConfig::default()
    });
    client.receive(&Server::settings(&[])).expect("valid");
    client.open_stream(&request("/a"), true).expect("open");
    let mut input = Vec::new();
    Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: &[0; 60],
        padding: None,
        end_stream: false,
        end_headers: false,
    }
    .write(&mut input);
    Frame::Continuation {
        stream_id: 1,
        fragment: &[0; 60],
        end_headers: false,
    }
    .write(&mut input);
    assert_eq!(
        connection_error(&mut client, &input).reason(),
        Reason::HeaderBlockTooLarge
    );
}

#[test]
fn the_servers_stream_limit_and_window_changes_hold() {
    let (mut client, _) = connected(&[Setting {
        id: settings::MAX_CONCURRENT_STREAMS,
        value: 1,
    }]);
    client.open_stream(&request("/a"), false).expect("open");
    assert!(!client.can_open_stream());
    assert_eq!(
        client.open_stream(&request("/b"), true),
        Err(ClientSendError::TooManyStreams)
    );
    client.reset(1, ErrorCode::CANCEL);
    assert!(client.can_open_stream());

    // A window lowered below what was sent goes negative, and data waits for it.
    let (mut client, mut server) = connected(&[]);
    let stream_id = client.open_stream(&request("/a"), false).expect("open");
    client
        .send_data(stream_id, &[1; 1000], false)
        .expect("data");
    client.flush();
    server.read(&mut client);
    let settings = Server::settings(&[Setting {
        id: settings::INITIAL_WINDOW_SIZE,
        value: 500,
    }]);
    client.receive(&settings).expect("valid");
    client.send_data(stream_id, &[2; 10], true).expect("data");
    client.flush();
    let written = server.read(&mut client);
    assert!(
        written
            .iter()
            .all(|frame| !matches!(frame.frame(), Frame::Data { .. })),
        "{written:?}"
    );
}

#[test]
fn a_table_size_update_past_the_announced_size_fails_the_connection() {
    let mut client = ClientConnection::new(ClientConfig {
        header_table_size: 0,
        ..ClientConfig::default()
    });
    let mut server = Server::new();
    let written = server.read(&mut client);
    let params: Vec<Setting> = written[0].frame().settings().collect();
    assert!(params.contains(&Setting {
        id: settings::HEADER_TABLE_SIZE,
        value: 0
    }));
    let settings = Server::settings(&[]);
    assert_eq!(client.receive(&settings), Ok(settings.len()));
    server.read(&mut client);
    // A size update to 0 is allowed; the next head's update to 1 is not.
    for (update, allowed) in [(0u8, true), (1, false)] {
        let stream_id = client.open_stream(&request("/"), true).expect("open");
        server.read(&mut client);
        let mut block = vec![0x20 | update];
        server
            .encoder
            .encode(&[HeaderField::new(":status", "200")], &mut block);
        let mut frame = Vec::new();
        frame::write_header_block(&mut frame, stream_id, &block, true, 16_384);
        let _ = client.receive(&frame);
        assert_eq!(!client.is_failed(), allowed, "update to {update}");
    }
}
