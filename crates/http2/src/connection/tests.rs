//! The connection's protocol behaviour, frame by frame.

use super::tests_client::{Client, data, get, goaway, resets};
use super::{Config, Event, PREFACE};
use crate::error::ErrorCode;
use crate::frame::{self, Frame, PrioritySpec, Setting, settings};
use crate::hpack::HeaderField;

fn response(status: &str) -> Vec<HeaderField> {
    vec![
        HeaderField::new(":status", status),
        HeaderField::new("server", "portico"),
    ]
}

#[test]
fn handshake_sends_settings_window_and_acks() {
    let mut client = Client::raw(Config::default());
    let first = client.take_frames();
    let params: Vec<Setting> = first[0].parsed().settings().collect();
    assert_eq!(
        params,
        [
            Setting {
                id: settings::MAX_CONCURRENT_STREAMS,
                value: 128
            },
            Setting {
                id: settings::INITIAL_WINDOW_SIZE,
                value: 65_536
            },
            Setting {
                id: settings::MAX_FRAME_SIZE,
                value: 16_384
            },
        ]
    );
    assert_eq!(
        first[1].parsed(),
        Frame::WindowUpdate {
            stream_id: 0,
            increment: frame::MAX_WINDOW - 65_535
        }
    );
    // The preface may arrive in pieces: the caller keeps them until it is whole.
    for length in 0..PREFACE.len() {
        assert_eq!(client.connection.receive(&PREFACE[..length]), Ok(0));
    }
    assert_eq!(client.connection.receive(PREFACE), Ok(PREFACE.len()));
    client.settings(&[]).expect("settings");
    let frames = client.take_frames();
    assert_eq!(
        frames[0].parsed(),
        Frame::Settings {
            ack: true,
            params: &[]
        }
    );
}

#[test]
fn a_bad_preface_is_a_protocol_error_and_any_frame_may_come_first() {
    let mut client = Client::raw(Config::default());
    client.take_frames();
    assert!(client.connection.receive(b"GET / HTTP/1.1\r\n").is_err());
    assert_eq!(
        goaway(&client.take_frames()),
        Some((0, ErrorCode::PROTOCOL_ERROR))
    );
    assert!(client.connection.is_done());

    let mut client = Client::raw(Config::default());
    client.take_frames();
    let mut bytes = PREFACE.to_vec();
    Frame::Ping {
        ack: false,
        payload: [0; 8],
    }
    .write(&mut bytes);
    // nginx answers frames before the client's SETTINGS (nginx-tests send none).
    assert_eq!(client.connection.receive(&bytes), Ok(bytes.len()));
    assert_eq!(goaway(&client.take_frames()), None);
}

#[test]
fn partial_frames_wait_for_more_bytes() {
    let mut client = Client::new(Config::default());
    let mut bytes = Vec::new();
    Frame::Ping {
        ack: false,
        payload: *b"abcdefgh",
    }
    .write(&mut bytes);
    assert_eq!(client.connection.receive(&bytes[..5]), Ok(0));
    assert_eq!(client.connection.receive(&bytes[..12]), Ok(0));
    assert_eq!(client.connection.receive(&bytes), Ok(17));
    assert_eq!(
        client.take_frames()[0].parsed(),
        Frame::Ping {
            ack: true,
            payload: *b"abcdefgh"
        }
    );
}

#[test]
fn request_and_response_with_body() {
    let mut client = Client::new(Config::default());
    client
        .headers(1, &get("/index.html"), true)
        .expect("request");
    let events = client.events();
    let Event::Headers {
        stream_id: 1,
        fields,
        end_stream: true,
        trailers: false,
        ..
    } = &events[0]
    else {
        panic!("{events:?}");
    };
    assert_eq!(fields, &get("/index.html"));
    client
        .connection
        .send_headers(1, &response("200"), false)
        .expect("head");
    client
        .connection
        .send_data(1, &[b'x'; 20_000], true)
        .expect("body");
    client.connection.flush();
    let frames = client.take_frames();
    let Frame::Headers {
        fragment,
        end_stream: false,
        end_headers: true,
        ..
    } = frames[0].parsed()
    else {
        panic!("{frames:?}");
    };
    let head = client.decode(fragment);
    assert_eq!(
        head,
        [
            (":status".into(), "200".into()),
            ("server".into(), "portico".into())
        ]
    );
    assert_eq!(
        data(&frames),
        [(1, 8192, false), (1, 8192, false), (1, 3616, true)]
    );
    assert_eq!(client.connection.active_streams(), 0);
    assert_eq!(
        client.connection.send_data(1, b"late", true),
        Err(super::SendError::StreamGone)
    );
}

#[test]
fn frames_too_large_and_on_wrong_streams() {
    let mut client = Client::new(Config::default());
    let big = vec![0; 16_385];
    assert!(
        client
            .frame(Frame::Data {
                stream_id: 1,
                data: &big,
                padding: None,
                end_stream: false
            })
            .is_err()
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((0, ErrorCode::FRAME_SIZE_ERROR))
    );

    let mut client = Client::new(Config::default());
    assert!(
        client
            .frame(Frame::Data {
                stream_id: 1,
                data: b"x",
                padding: None,
                end_stream: false
            })
            .is_err()
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((0, ErrorCode::PROTOCOL_ERROR)),
        "DATA on an idle stream"
    );

    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), true).expect("request");
    client
        .frame(Frame::Data {
            stream_id: 1,
            data: b"x",
            padding: None,
            end_stream: false,
        })
        .expect("stream error");
    assert_eq!(
        resets(&client.take_frames()),
        [(1, ErrorCode::STREAM_CLOSED)],
        "DATA after END_STREAM"
    );
    assert!(
        client.headers(2, &get("/"), true).is_err(),
        "an even stream id"
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::PROTOCOL_ERROR))
    );

    let mut client = Client::new(Config::default());
    assert!(
        client
            .frame(Frame::RstStream {
                stream_id: 5,
                code: ErrorCode::CANCEL
            })
            .is_err()
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((0, ErrorCode::PROTOCOL_ERROR)),
        "RST_STREAM on an idle stream"
    );

    let mut client = Client::new(Config::default());
    assert!(
        client
            .frame(Frame::PushPromise {
                stream_id: 1,
                promised_id: 2,
                fragment: b"",
                padding: None,
                end_headers: true
            })
            .is_err()
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((0, ErrorCode::PROTOCOL_ERROR))
    );
}

#[test]
fn a_header_block_must_not_be_interrupted() {
    let mut client = Client::new(Config::default());
    let block = client.block(&get("/"));
    let (first, second) = block.split_at(3);
    let headers = Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: first,
        padding: None,
        end_stream: true,
        end_headers: false,
    };
    client.frame(headers).expect("first fragment");
    assert!(client.events().is_empty());
    client
        .frame(Frame::Continuation {
            stream_id: 1,
            fragment: second,
            end_headers: true,
        })
        .expect("rest");
    assert!(matches!(
        client.events()[..],
        [Event::Headers { stream_id: 1, .. }]
    ));

    let headers = Frame::Headers {
        stream_id: 3,
        priority: None,
        fragment: first,
        padding: None,
        end_stream: true,
        end_headers: false,
    };
    client.frame(headers).expect("first fragment");
    assert!(
        client
            .frame(Frame::Ping {
                ack: false,
                payload: [0; 8]
            })
            .is_err()
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::PROTOCOL_ERROR))
    );

    let mut client = Client::new(Config::default());
    assert!(
        client
            .frame(Frame::Continuation {
                stream_id: 1,
                fragment: b"\x82",
                end_headers: true
            })
            .is_err()
    );
}

#[test]
fn a_bad_header_block_is_a_compression_error() {
    let mut client = Client::new(Config::default());
    let headers = Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: &[0x80],
        padding: None,
        end_stream: true,
        end_headers: true,
    };
    assert!(client.frame(headers).is_err());
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::COMPRESSION_ERROR)),
        "the stream counts as processed, as nginx's GOAWAY says (h2_headers.t)"
    );

    // An integer cut off by the end of the block: nginx answers FRAME_SIZE_ERROR.
    let mut client = Client::new(Config::default());
    let fragment = &[0xff];
    let headers = Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment,
        padding: None,
        end_stream: true,
        end_headers: true,
    };
    assert!(client.frame(headers).is_err());
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::FRAME_SIZE_ERROR))
    );
}

#[test]
fn send_windows_hold_data_until_window_update() {
    let mut client = Client::new(Config::default());
    client
        .settings(&[Setting {
            id: settings::INITIAL_WINDOW_SIZE,
            value: 100,
        }])
        .expect("settings");
    client.headers(1, &get("/"), true).expect("request");
    client.take_frames();
    client
        .connection
        .send_headers(1, &response("200"), false)
        .expect("head");
    client
        .connection
        .send_data(1, &[7; 250], true)
        .expect("body");
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), [(1, 100, false)]);
    assert_eq!(client.connection.send_capacity(1), 0);
    client
        .frame(Frame::WindowUpdate {
            stream_id: 1,
            increment: 100,
        })
        .expect("update");
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), [(1, 100, false)]);
    // Lowering the initial size makes the window negative: nothing goes until it recovers.
    client
        .settings(&[Setting {
            id: settings::INITIAL_WINDOW_SIZE,
            value: 0,
        }])
        .expect("settings");
    client
        .frame(Frame::WindowUpdate {
            stream_id: 1,
            increment: 50,
        })
        .expect("update");
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), []);
    client
        .frame(Frame::WindowUpdate {
            stream_id: 1,
            increment: 100,
        })
        .expect("update");
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), [(1, 50, true)]);
}

#[test]
fn window_overflow_by_scope() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), true).expect("request");
    client
        .frame(Frame::WindowUpdate {
            stream_id: 1,
            increment: frame::MAX_WINDOW,
        })
        .expect("stream error");
    assert_eq!(
        resets(&client.take_frames()),
        [(1, ErrorCode::FLOW_CONTROL_ERROR)]
    );
    assert!(matches!(
        client.events()[..],
        [
            _,
            Event::Reset {
                stream_id: 1,
                by_peer: false,
                ..
            }
        ]
    ));
    assert!(
        client
            .frame(Frame::WindowUpdate {
                stream_id: 0,
                increment: frame::MAX_WINDOW
            })
            .is_err()
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::FLOW_CONTROL_ERROR))
    );

    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), false).expect("request");
    client
        .frame(Frame::WindowUpdate {
            stream_id: 1,
            increment: frame::MAX_WINDOW - 65_535,
        })
        .expect("fits");
    let setting = Setting {
        id: settings::INITIAL_WINDOW_SIZE,
        value: 65_536,
    };
    assert!(
        client.settings(&[setting]).is_err(),
        "a SETTINGS change that overflows a stream window"
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::FLOW_CONTROL_ERROR))
    );
}

#[test]
fn request_bodies_are_flow_controlled() {
    let config = Config {
        stream_window: 1000,
        ..Config::default()
    };
    let mut client = Client::new(config);
    client.headers(1, &get("/upload"), false).expect("request");
    client
        .frame(Frame::Data {
            stream_id: 1,
            data: &[1; 900],
            padding: Some(20),
            end_stream: false,
        })
        .expect("body");
    let events = client.events();
    assert!(
        matches!(&events[1], Event::Data { stream_id: 1, data, end_stream: false } if data.len() == 900)
    );
    client.connection.release(1, 600);
    let updates: Vec<_> = client
        .take_frames()
        .iter()
        .map(|owned| owned.parsed().stream_id())
        .collect();
    assert_eq!(
        updates,
        [1],
        "padding and 600 bytes consumed: more than half a window owed"
    );
    client
        .frame(Frame::Data {
            stream_id: 1,
            data: &[1; 700],
            padding: None,
            end_stream: false,
        })
        .expect("body");
    assert_eq!(client.events().len(), 1);
    client
        .frame(Frame::Data {
            stream_id: 1,
            data: &[1; 200],
            padding: None,
            end_stream: false,
        })
        .expect("stream error");
    assert_eq!(
        resets(&client.take_frames()),
        [(1, ErrorCode::FLOW_CONTROL_ERROR)]
    );
}

#[test]
fn streams_past_the_limit_are_refused() {
    let mut config = Config::default();
    config.limits.max_concurrent_streams = 2;
    let mut client = Client::new(config);
    for stream_id in [1, 3, 5] {
        client.headers(stream_id, &get("/"), true).expect("request");
    }
    assert_eq!(
        resets(&client.take_frames()),
        [(5, ErrorCode::REFUSED_STREAM)]
    );
    assert_eq!(client.events().len(), 2);
    assert_eq!(client.connection.counters().streams_refused, 1);
    // The refused block was still decoded: the next stream's HPACK references work.
    client
        .connection
        .send_headers(1, &response("204"), true)
        .expect("response");
    client.headers(7, &get("/"), true).expect("request");
    assert!(matches!(
        client.events()[..],
        [Event::Headers { stream_id: 7, .. }]
    ));
}

#[test]
fn trailers_must_end_the_stream() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), false).expect("request");
    let trailers = [HeaderField::new("x-checksum", "abc")];
    client.headers(1, &trailers, true).expect("trailers");
    let events = client.events();
    assert!(matches!(
        &events[1],
        Event::Headers {
            stream_id: 1,
            trailers: true,
            end_stream: true,
            ..
        }
    ));

    client.headers(3, &get("/"), false).expect("request");
    client.headers(3, &trailers, false).expect("stream error");
    assert_eq!(
        resets(&client.take_frames()),
        [(3, ErrorCode::PROTOCOL_ERROR)]
    );
}

#[test]
fn response_trailers_follow_the_body() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), true).expect("request");
    client
        .connection
        .send_headers(1, &response("200"), false)
        .expect("head");
    client
        .connection
        .send_data(1, b"body", false)
        .expect("body");
    client
        .connection
        .send_trailers(1, vec![HeaderField::new("x-sum", "1")])
        .expect("trailers");
    client.connection.flush();
    let frames = client.take_frames();
    let kinds: Vec<u8> = frames.iter().map(|owned| owned.header.kind).collect();
    assert_eq!(
        kinds,
        [
            frame::kind::HEADERS,
            frame::kind::DATA,
            frame::kind::HEADERS
        ]
    );
    let Frame::Headers {
        fragment,
        end_stream: true,
        ..
    } = frames[2].parsed()
    else {
        panic!()
    };
    client.decode(match frames[0].parsed() {
        Frame::Headers { fragment, .. } => fragment,
        _ => panic!(),
    });
    assert_eq!(
        client.decode(fragment),
        [("x-sum".to_string(), "1".to_string())]
    );
}

#[test]
fn data_goes_out_in_priority_order() {
    // h2_priority.t "weighted dependency - PRIORITY 1": 5 on the root, 1 (weight 256) and
    // 3 (weight 1) on 5; all three wait on the connection window, then it opens.
    let mut client = Client::new(Config::default());
    let priority = |dependency, weight| PrioritySpec {
        dependency,
        exclusive: false,
        weight,
    };
    client
        .frame(Frame::Priority {
            stream_id: 5,
            priority: priority(0, 16),
        })
        .expect("priority");
    client
        .frame(Frame::Priority {
            stream_id: 1,
            priority: priority(5, 256),
        })
        .expect("priority");
    client
        .frame(Frame::Priority {
            stream_id: 3,
            priority: priority(5, 1),
        })
        .expect("priority");
    for stream_id in [1, 3, 5] {
        client.headers(stream_id, &get("/"), true).expect("request");
        client
            .connection
            .send_headers(stream_id, &response("200"), false)
            .expect("head");
    }
    client
        .connection
        .send_data(1, &[0; 65_535], false)
        .expect("body");
    client.connection.flush();
    assert_eq!(
        data(&client.take_frames())
            .iter()
            .map(|(_, length, _)| length)
            .sum::<usize>(),
        65_535
    );
    for stream_id in [1, 3, 5] {
        client
            .connection
            .send_data(stream_id, b"SEE-THIS", true)
            .expect("body");
    }
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), []);
    client
        .frame(Frame::WindowUpdate {
            stream_id: 1,
            increment: 1000,
        })
        .expect("update");
    client.connection.flush();
    assert_eq!(data(&client.take_frames()), []);
    client
        .frame(Frame::WindowUpdate {
            stream_id: 0,
            increment: 1000,
        })
        .expect("update");
    client.connection.flush();
    let order: Vec<u32> = data(&client.take_frames())
        .iter()
        .map(|&(stream_id, ..)| stream_id)
        .collect();
    assert_eq!(order, [5, 1, 3]);
}

#[test]
fn self_dependency_is_a_connection_error_as_in_nginx() {
    let mut client = Client::new(Config::default());
    let priority = PrioritySpec {
        dependency: 1,
        exclusive: false,
        weight: 16,
    };
    assert!(
        client
            .frame(Frame::Priority {
                stream_id: 1,
                priority
            })
            .is_err()
    );
    assert_eq!(
        goaway(&client.take_frames()),
        Some((0, ErrorCode::PROTOCOL_ERROR))
    );
}

#[test]
fn goaway_lets_open_streams_finish_and_ignores_new_ones() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), true).expect("request");
    client.events();
    client.connection.go_away(ErrorCode::NO_ERROR);
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::NO_ERROR))
    );
    client.headers(3, &get("/"), true).expect("ignored");
    assert!(client.events().is_empty());
    assert!(!client.connection.is_done());
    client
        .connection
        .send_headers(1, &response("204"), true)
        .expect("response");
    assert!(client.connection.is_done());

    // A connection error after a graceful GOAWAY still says why, with the same last stream.
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), false).expect("request");
    client.connection.go_away(ErrorCode::NO_ERROR);
    client.headers(3, &get("/"), false).expect("ignored");
    client.take_frames();
    let update = Frame::WindowUpdate {
        stream_id: 0,
        increment: frame::MAX_WINDOW,
    };
    assert!(client.frame(update).is_err());
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::FLOW_CONTROL_ERROR))
    );
}

#[test]
fn client_reset_and_goaway_become_events() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/"), true).expect("request");
    client
        .frame(Frame::RstStream {
            stream_id: 1,
            code: ErrorCode::CANCEL,
        })
        .expect("reset");
    client
        .frame(Frame::GoAway {
            last_stream_id: 0,
            code: ErrorCode::NO_ERROR,
            debug: b"bye",
        })
        .expect("goaway");
    let events = client.events();
    assert_eq!(
        events[1],
        Event::Reset {
            stream_id: 1,
            code: ErrorCode::CANCEL,
            by_peer: true
        }
    );
    assert_eq!(
        events[2],
        Event::GoAway {
            last_stream_id: 0,
            code: ErrorCode::NO_ERROR
        }
    );
    assert_eq!(
        client.connection.send_headers(1, &response("200"), true),
        Err(super::SendError::StreamGone)
    );
    // Frames for the closed stream are ignored, except DATA, which is answered.
    client
        .frame(Frame::WindowUpdate {
            stream_id: 1,
            increment: 10,
        })
        .expect("ignored");
    client
        .frame(Frame::RstStream {
            stream_id: 1,
            code: ErrorCode::CANCEL,
        })
        .expect("ignored");
    assert_eq!(client.take_frames(), []);
}

#[test]
fn unknown_frames_and_settings_are_ignored() {
    let mut client = Client::new(Config::default());
    client
        .frame(Frame::Unknown {
            kind: 0xfa,
            flags: 0,
            stream_id: 0,
            payload: b"ext",
        })
        .expect("ignored");
    client
        .settings(&[Setting {
            id: 0x4242,
            value: 1,
        }])
        .expect("settings");
    assert_eq!(
        client.take_frames()[0].parsed(),
        Frame::Settings {
            ack: true,
            params: &[]
        }
    );
}

#[test]
fn a_push_promise_header_is_refused_before_its_payload() {
    let mut client = Client::new(Config::default());
    client.take_frames();
    // Length 4, PUSH_PROMISE, stream 1, and no payload yet (nginx-tests' h2.t sends this).
    let header = [0, 0, 4, 5, 0, 0, 0, 0, 1];
    assert!(client.connection.receive(&header).is_err());
    assert_eq!(
        goaway(&client.take_frames()).map(|(_, code)| code),
        Some(ErrorCode::PROTOCOL_ERROR)
    );
}

#[test]
fn a_stream_is_reset_after_its_response_when_asked() {
    let mut client = Client::new(Config::default());
    client.take_frames();
    // A request whose body has not come: the response ends, then RST_STREAM(NO_ERROR).
    client.headers(1, &get("/"), false).expect("request");
    client.events();
    client
        .connection
        .send_headers(1, &[HeaderField::new(":status", "200")], false)
        .expect("open");
    client.connection.send_data(1, b"body", true).expect("open");
    client
        .connection
        .reset_after_response(1, ErrorCode::NO_ERROR);
    assert_eq!(resets(&client.take_frames()), vec![]);
    client.connection.flush();
    let frames = client.take_frames();
    assert_eq!(data(&frames), vec![(1, 4, true)]);
    assert_eq!(resets(&frames), vec![(1, ErrorCode::NO_ERROR)]);
    assert_eq!(client.connection.active_streams(), 0);
}

#[test]
fn a_body_before_our_settings_are_acknowledged_is_refused() {
    let config = Config {
        stream_window: 1000,
        ..Config::default()
    };
    let mut client = Client::raw(config);
    client.take_frames();
    let mut bytes = PREFACE.to_vec();
    Frame::Settings {
        ack: false,
        params: &[],
    }
    .write(&mut bytes);
    client.send(&bytes).expect("preface");
    // The client has not seen our smaller window yet: a request with a body is refused
    // (nginx's REFUSED_STREAM); one without a body is served.
    client
        .headers(1, &get("/upload"), false)
        .expect("a stream error");
    assert_eq!(
        resets(&client.take_frames()),
        vec![(1, ErrorCode::REFUSED_STREAM)]
    );
    client.headers(3, &get("/"), true).expect("request");
    assert_eq!(client.events().len(), 1);
    client
        .frame(Frame::Settings {
            ack: true,
            params: &[],
        })
        .expect("ack");
    client.headers(5, &get("/upload"), false).expect("request");
    assert!(matches!(
        &client.events()[..],
        [Event::Headers { stream_id: 5, .. }]
    ));
    assert_eq!(resets(&client.take_frames()), vec![]);
}

#[test]
fn frames_that_could_never_be_accepted_are_refused_on_their_header() {
    let config = Config {
        max_frame_size: frame::MAX_FRAME_SIZE_LIMIT,
        ..Config::default()
    };
    // A header block announced past `header_block_max`: refused before its payload.
    let mut client = Client::new(config);
    let header = [0x10, 0, 0, 1, 4, 0, 0, 0, 1];
    assert!(client.connection.receive(&header).is_err());
    assert_eq!(
        goaway(&client.take_frames()).map(|(_, code)| code),
        Some(ErrorCode::ENHANCE_YOUR_CALM)
    );
    // A PING announced at 1 MiB: a frame size error at once.
    let mut client = Client::new(config);
    let header = [0x10, 0, 0, 6, 0, 0, 0, 0, 0];
    assert!(client.connection.receive(&header).is_err());
    assert_eq!(
        goaway(&client.take_frames()).map(|(_, code)| code),
        Some(ErrorCode::FRAME_SIZE_ERROR)
    );
}

#[test]
fn data_sent_before_our_reset_arrived_is_ignored() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/upload"), false).expect("request");
    client.events();
    client.connection.reset(1, ErrorCode::NO_ERROR);
    assert_eq!(resets(&client.take_frames()), [(1, ErrorCode::NO_ERROR)]);
    // The client's DATA was on its way: no second RST_STREAM, no connection error.
    for _ in 0..2 {
        client
            .frame(Frame::Data {
                stream_id: 1,
                data: b"late body",
                padding: None,
                end_stream: false,
            })
            .expect("ignored");
    }
    assert!(resets(&client.take_frames()).is_empty());
    // A stream the client itself closed still gets STREAM_CLOSED for its DATA.
    client.headers(3, &get("/"), true).expect("request");
    client
        .frame(Frame::Data {
            stream_id: 3,
            data: b"x",
            padding: None,
            end_stream: false,
        })
        .expect("stream error");
    assert_eq!(
        resets(&client.take_frames()),
        [(3, ErrorCode::STREAM_CLOSED)]
    );
}
