//! The flood defences and size limits, each driven past its limit by a hostile client.

use super::Config;
use super::tests_client::{Client, data, get, goaway, resets};
use crate::error::{Error, ErrorCode, Reason};
use crate::frame::{Frame, PrioritySpec, Setting};
use crate::hpack::{HeaderField, Limit, integer};
use crate::limits::Flood;

fn flood_of(result: Result<(), Error>) -> Flood {
    match result {
        Err(Error::Connection {
            code: ErrorCode::ENHANCE_YOUR_CALM,
            reason: Reason::Flood(flood),
        }) => flood,
        other => panic!("expected a flood, got {other:?}"),
    }
}

#[test]
fn rapid_reset_is_cut_off() {
    // CVE-2023-44487: open a stream, reset it at once, again and again.
    let mut client = Client::new(Config::default());
    let mut result = Ok(());
    let mut opened = 0;
    for stream_id in (1..10_000).step_by(2) {
        result = client.headers(stream_id, &get("/"), true);
        if result.is_ok() {
            result = client.frame(Frame::RstStream {
                stream_id,
                code: ErrorCode::CANCEL,
            });
        }
        if result.is_err() {
            break;
        }
        opened += 1;
    }
    assert_eq!(flood_of(result), Flood::RapidReset);
    assert_eq!(opened, 256, "the limit, early_resets_max");
    let (_, code) = goaway(&client.take_frames()).expect("GOAWAY");
    assert_eq!(code, ErrorCode::ENHANCE_YOUR_CALM);
}

#[test]
fn resets_of_completed_streams_are_not_a_flood() {
    let mut client = Client::new(Config::default());
    for stream_id in (1..4_000).step_by(2) {
        client
            .headers(stream_id, &get("/"), false)
            .expect("request");
        let head = [HeaderField::new(":status", "200")];
        client
            .connection
            .send_headers(stream_id, &head, true)
            .expect("response");
        // The client resets after the whole response: a CANCEL of its upload, not a flood.
        client
            .frame(Frame::RstStream {
                stream_id,
                code: ErrorCode::NO_ERROR,
            })
            .expect("reset is fine");
    }
    // Half of them reset early, half completed: the balance stays within the limit.
    for stream_id in (4_001..4_400).step_by(4) {
        client.headers(stream_id, &get("/"), true).expect("request");
        client
            .frame(Frame::RstStream {
                stream_id,
                code: ErrorCode::CANCEL,
            })
            .expect("reset");
        client
            .headers(stream_id + 2, &get("/"), true)
            .expect("request");
        let head = [HeaderField::new(":status", "204")];
        client
            .connection
            .send_headers(stream_id + 2, &head, true)
            .expect("response");
    }
}

#[test]
fn continuation_flood_is_cut_off() {
    let mut client = Client::new(Config::default());
    let headers = Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: b"\x82",
        padding: None,
        end_stream: true,
        end_headers: false,
    };
    client.frame(headers).expect("first fragment");
    let mut result = Ok(());
    for _ in 0..1_000 {
        result = client.frame(Frame::Continuation {
            stream_id: 1,
            fragment: b"\x84",
            end_headers: false,
        });
        if result.is_err() {
            break;
        }
    }
    assert_eq!(flood_of(result), Flood::Continuation);
}

#[test]
fn header_block_size_is_bounded_before_decoding() {
    let mut client = Client::new(Config::default());
    let fragment = vec![0x82; 16_000];
    let headers = Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: &fragment,
        padding: None,
        end_stream: true,
        end_headers: false,
    };
    client.frame(headers).expect("first fragment");
    let mut result = Ok(());
    for _ in 0..5 {
        result = client.frame(Frame::Continuation {
            stream_id: 1,
            fragment: &fragment,
            end_headers: false,
        });
        if result.is_err() {
            break;
        }
    }
    match result {
        Err(Error::Connection {
            code: ErrorCode::ENHANCE_YOUR_CALM,
            reason: Reason::HeaderBlockTooLarge,
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn hpack_bomb_ends_the_connection_with_enhance_your_calm() {
    let mut client = Client::new(Config::default());
    // A 4000-byte field indexed once, then referenced 2000 times: 8 MB from 6 KB.
    let mut block = client.block(&get("/"));
    block.extend_from_slice(&[0x40, 0x01, b'x']);
    integer::encode(4000, 7, 0, &mut block);
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 2000));
    let headers = Frame::Headers {
        stream_id: 1,
        priority: None,
        fragment: &block,
        padding: None,
        end_stream: true,
        end_headers: true,
    };
    // As nginx: past `large_client_header_buffers` (number times size) is a connection
    // error, and GOAWAY names the stream.
    match client.frame(headers) {
        Err(Error::Connection {
            code: ErrorCode::ENHANCE_YOUR_CALM,
            reason: Reason::HeaderTooLarge(Limit::List),
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(client.events().is_empty());
    assert_eq!(
        goaway(&client.take_frames()),
        Some((1, ErrorCode::ENHANCE_YOUR_CALM))
    );
}

#[test]
fn one_field_past_its_size_ends_the_connection() {
    let mut config = Config::default();
    config.limits.field_max = 512;
    for (size, refused) in [(512, false), (513, true)] {
        let mut client = Client::new(config);
        let mut fields = get("/");
        fields.push(HeaderField::new("x".repeat(size), "value"));
        let result = client.headers(1, &fields, true);
        match (result, refused) {
            (Ok(()), false) => {}
            (
                Err(Error::Connection {
                    code: ErrorCode::ENHANCE_YOUR_CALM,
                    reason: Reason::HeaderTooLarge(Limit::Field),
                }),
                true,
            ) => {}
            (other, _) => panic!("{size}: {other:?}"),
        }
    }
}

#[test]
fn settings_and_ping_floods_are_cut_off_when_the_answers_are_not_written() {
    let limit = Config::default().limits.pending_control_max;
    let mut client = Client::new(Config::default());
    let mut sent = 0;
    let mut result = Ok(());
    while result.is_ok() {
        result = client.settings(&[Setting { id: 0x9, value: 1 }]);
        sent += 1;
    }
    assert_eq!(flood_of(result), Flood::ControlFrames);
    assert_eq!(sent, limit + 1, "cut off one past pending_control_max");
    let mut client = Client::new(Config::default());
    let mut sent = 0;
    let mut result = Ok(());
    while result.is_ok() {
        result = client.frame(Frame::Ping {
            ack: false,
            payload: [2; 8],
        });
        sent += 1;
    }
    assert_eq!(flood_of(result), Flood::ControlFrames);
    assert_eq!(sent, limit + 1);
}

#[test]
fn settings_and_ping_floods_are_cut_off_even_when_the_answers_are_written() {
    // The answers are drained after every frame (as a socket with megabytes of buffers
    // takes them from a client that does not read): the count does not start over.
    let config = Config::default();
    let limit = config.limits.control_frames_max;
    let mut client = Client::new(config);
    // The handshake's SETTINGS counted one.
    let mut sent = 1;
    let mut result = Ok(());
    while result.is_ok() {
        result = if sent % 2 == 0 {
            client.settings(&[])
        } else {
            client.frame(Frame::Ping {
                ack: false,
                payload: [3; 8],
            })
        };
        sent += 1;
        if result.is_ok() {
            let answers = client.take_frames();
            assert_eq!(answers.len(), 1, "every frame answered until the limit");
        }
    }
    assert_eq!(flood_of(result), Flood::ControlFramesBeyondResponses);
    assert_eq!(sent, limit + 1, "cut off one past control_frames_max");
    let (_, code) = goaway(&client.take_frames()).expect("GOAWAY");
    assert_eq!(code, ErrorCode::ENHANCE_YOUR_CALM);
}

#[test]
fn pings_while_responses_go_out_are_never_a_flood() {
    // A client that measures the link with a PING per DATA frame it receives (gRPC does)
    // sends more PINGs than the limit over a long response, and is answered every time.
    let config = Config {
        chunk_size: 16,
        ..Config::default()
    };
    let limit = config.limits.control_frames_max;
    let mut client = Client::new(config);
    client.headers(1, &get("/"), true).expect("request");
    let head = [HeaderField::new(":status", "200")];
    client
        .connection
        .send_headers(1, &head, false)
        .expect("head");
    let rounds = limit as usize * 2;
    for round in 0..rounds {
        client
            .connection
            .send_data(1, &[b'x'; 16], round + 1 == rounds)
            .expect("body");
        client.connection.flush();
        client
            .frame(Frame::Ping {
                ack: false,
                payload: [4; 8],
            })
            .expect("a PING per DATA frame is not a flood");
        let frames = client.take_frames();
        if round % 3_000 == 0 {
            // The stream's window (64 KiB) is given back now and then, as a client does.
            client
                .frame(Frame::WindowUpdate {
                    stream_id: 1,
                    increment: 60_000,
                })
                .expect("window");
            client
                .frame(Frame::WindowUpdate {
                    stream_id: 0,
                    increment: 60_000,
                })
                .expect("window");
        }
        assert_eq!(data(&frames).len(), 1, "one DATA frame in round {round}");
    }
    assert!(client.connection.counters().control_frames <= 1);
}

#[test]
fn empty_frames_flood_is_cut_off() {
    let mut client = Client::new(Config::default());
    client.headers(1, &get("/upload"), false).expect("request");
    let mut result = Ok(());
    for _ in 0..2_000 {
        result = client.frame(Frame::Data {
            stream_id: 1,
            data: b"",
            padding: None,
            end_stream: false,
        });
        if result.is_err() {
            break;
        }
    }
    assert_eq!(flood_of(result), Flood::EmptyFrames);
}

#[test]
fn priority_flood_is_cut_off_and_the_tree_bounded() {
    let mut client = Client::new(Config::default());
    let mut result = Ok(());
    for stream_id in (1..100_000).step_by(2) {
        let priority = PrioritySpec {
            dependency: stream_id + 2,
            exclusive: true,
            weight: 200,
        };
        result = client.frame(Frame::Priority {
            stream_id,
            priority,
        });
        if result.is_err() {
            break;
        }
        assert!(client.connection.priority_tree().len() <= 256 + 2);
    }
    assert_eq!(flood_of(result), Flood::Priority);
}

#[test]
fn too_many_new_streams_in_one_read_are_refused() {
    let mut config = Config::default();
    config.limits.new_streams_per_receive = 4;
    let mut client = Client::new(config);
    let mut bytes = Vec::new();
    for stream_id in (1..=11).step_by(2) {
        let fragment = client.block(&get("/"));
        Frame::Headers {
            stream_id,
            priority: None,
            fragment: &fragment,
            padding: None,
            end_stream: true,
            end_headers: true,
        }
        .write(&mut bytes);
    }
    client.send(&bytes).expect("one read");
    assert_eq!(
        resets(&client.take_frames()),
        [
            (9, ErrorCode::REFUSED_STREAM),
            (11, ErrorCode::REFUSED_STREAM)
        ]
    );
}
