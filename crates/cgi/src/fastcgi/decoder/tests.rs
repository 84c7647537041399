use super::*;

/// A record as an application might write it, with the padding it chooses.
fn record(record_type: u8, request_id: u16, content: &[u8], padding: u8) -> Vec<u8> {
    let header = RecordHeader {
        version: 1,
        record_type,
        request_id,
        content_len: u16::try_from(content.len()).expect("test content fits a record"),
        padding_len: padding,
    };
    let mut bytes = header.to_bytes().to_vec();
    bytes.extend_from_slice(content);
    bytes.extend(std::iter::repeat_n(0xa5, usize::from(padding)));
    bytes
}

fn end_request(app_status: u32, protocol_status: u8, padding: u8) -> Vec<u8> {
    let mut body = app_status.to_be_bytes().to_vec();
    body.extend_from_slice(&[protocol_status, 0, 0, 0]);
    record(3, 1, &body, padding)
}

/// An event with its bytes owned; stream pieces next to each other are joined, so that
/// answers decoded from differently split input compare equal.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Owned {
    Stdout(Vec<u8>),
    StdoutEnd,
    Stderr(Vec<u8>),
    End(EndRequest),
}

fn push_event(events: &mut Vec<Owned>, event: Event<'_>) {
    match (events.last_mut(), event) {
        (_, Event::Stdout(piece) | Event::Stderr(piece)) if piece.is_empty() => {
            panic!("an empty piece was reported")
        }
        (Some(Owned::Stdout(joined)), Event::Stdout(piece)) => joined.extend_from_slice(piece),
        (Some(Owned::Stderr(joined)), Event::Stderr(piece)) => joined.extend_from_slice(piece),
        (_, Event::Stdout(piece)) => events.push(Owned::Stdout(piece.to_vec())),
        (_, Event::Stderr(piece)) => events.push(Owned::Stderr(piece.to_vec())),
        (_, Event::StdoutEnd) => events.push(Owned::StdoutEnd),
        (_, Event::EndRequest(end)) => events.push(Owned::End(end)),
    }
}

/// Decodes `pieces` one after the other; returns the events, the bytes left unused after
/// the end, and the error if one came.
fn decode_pieces(pieces: &[&[u8]]) -> (Vec<Owned>, usize, Option<RecordError>) {
    let mut decoder = Decoder::new(1);
    let mut events = Vec::new();
    let mut unused = 0;
    for piece in pieces {
        let mut at = 0;
        loop {
            match decoder.decode(&piece[at..]) {
                Err(error) => return (events, unused, Some(error)),
                Ok((used, event)) => {
                    at += used;
                    match event {
                        Some(event) => push_event(&mut events, event),
                        None => break,
                    }
                }
            }
        }
        unused += piece.len() - at;
        if !decoder.is_ended() {
            assert_eq!(
                at,
                piece.len(),
                "a decoder that has not ended uses all it is given"
            );
        }
    }
    (events, unused, None)
}

/// Decodes `input` whole, split at every byte boundary, and one byte at a time, and
/// checks that all agree.
fn decode_every_split(input: &[u8]) -> (Vec<Owned>, usize, Option<RecordError>) {
    let whole = decode_pieces(&[input]);
    for split in 0..=input.len() {
        let (head, tail) = input.split_at(split);
        assert_eq!(decode_pieces(&[head, tail]), whole, "split at {split}");
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(decode_pieces(&bytes), whole, "one byte at a time");
    whole
}

fn php_like_answer() -> Vec<u8> {
    let mut input = record(7, 1, b"PHP message: warning\n", 3);
    input.extend(record(
        6,
        1,
        b"Status: 404 Not Found\r\nContent-Type: text/html\r\n\r\n",
        5,
    ));
    input.extend(record(7, 1, b"", 0));
    input.extend(record(6, 1, b"<p>missing</p>", 2));
    input.extend(record(7, 1, b"second", 0));
    input.extend(record(6, 1, b"", 7));
    input.extend(end_request(0x0102_0304, 0, 4));
    input
}

#[test]
fn an_answer_decodes_the_same_however_it_is_split() {
    let (events, unused, error) = decode_every_split(&php_like_answer());
    assert_eq!(error, None);
    assert_eq!(unused, 0);
    assert_eq!(
        events,
        [
            Owned::Stderr(b"PHP message: warning\n".to_vec()),
            Owned::Stdout(
                b"Status: 404 Not Found\r\nContent-Type: text/html\r\n\r\n<p>missing</p>".to_vec()
            ),
            Owned::Stderr(b"second".to_vec()),
            Owned::StdoutEnd,
            Owned::End(EndRequest {
                app_status: 0x0102_0304,
                protocol_status: ProtocolStatus::RequestComplete,
            }),
        ]
    );
}

#[test]
fn bytes_after_end_request_are_left_unused() {
    let mut input = end_request(0, 0, 0);
    input.extend_from_slice(b"\x01\x06extra");
    let (events, unused, error) = decode_every_split(&input);
    assert_eq!(error, None);
    assert_eq!(unused, 7);
    assert_eq!(events.len(), 1);

    let mut decoder = Decoder::new(1);
    assert!(matches!(
        decoder.decode(&input),
        Ok((16, Some(Event::EndRequest(_))))
    ));
    assert!(decoder.is_ended());
    assert_eq!(decoder.decode(&input[16..]), Ok((0, None)));
}

#[test]
fn end_request_is_reported_after_its_padding() {
    let input = end_request(7, 2, 255);
    let mut decoder = Decoder::new(1);
    assert_eq!(
        decoder.decode(&input[..input.len() - 1]),
        Ok((input.len() - 1, None))
    );
    assert!(!decoder.is_ended());
    let end = EndRequest {
        app_status: 7,
        protocol_status: ProtocolStatus::Overloaded,
    };
    assert_eq!(
        decoder.decode(&input[input.len() - 1..]),
        Ok((1, Some(Event::EndRequest(end))))
    );
}

#[test]
fn protocol_statuses_as_the_specification_numbers_them() {
    let statuses = [
        (0, ProtocolStatus::RequestComplete),
        (1, ProtocolStatus::CantMpxConn),
        (2, ProtocolStatus::Overloaded),
        (3, ProtocolStatus::UnknownRole),
        (4, ProtocolStatus::Other(4)),
        (255, ProtocolStatus::Other(255)),
    ];
    for (byte, status) in statuses {
        let (events, _, _) = decode_pieces(&[&end_request(u32::MAX, byte, 0)]);
        let end = EndRequest {
            app_status: u32::MAX,
            protocol_status: status,
        };
        assert_eq!(events, [Owned::End(end)]);
    }
}

#[test]
fn the_largest_record_and_padding_decode() {
    let content: Vec<u8> = (0..u16::MAX).map(|index| index as u8).collect();
    let mut input = record(6, 1, &content, 255);
    input.extend(record(6, 1, b"", 255));
    input.extend(end_request(0, 0, 255));
    let (events, unused, error) = decode_pieces(&[&input[..30_000], &input[30_000..]]);
    assert_eq!((unused, error), (0, None));
    assert_eq!(events[0], Owned::Stdout(content));
    assert_eq!(events[1], Owned::StdoutEnd);
}

#[test]
fn a_bad_version_is_refused_at_its_byte_in_nginx_words() {
    for version in [0, 2, 72, 255] {
        let mut input = record(6, 1, b"x", 0);
        input[0] = version;
        let (events, _, error) = decode_every_split(&input);
        assert!(events.is_empty());
        let error = error.expect("refused");
        assert_eq!(error, RecordError::UnsupportedVersion { version });
        let text = format!("upstream sent unsupported FastCGI protocol version: {version}");
        assert_eq!(error.to_string(), text);
        // Refused as soon as the byte arrives.
        assert_eq!(Decoder::new(1).decode(&[version]), Err(error));
    }
    // An HTTP answer to a FastCGI request: "H" is version 72.
    let error = Decoder::new(1)
        .decode(b"HTTP/1.1 200 OK\r\n")
        .expect_err("refused");
    assert_eq!(
        error.to_string(),
        "upstream sent unsupported FastCGI protocol version: 72"
    );
}

#[test]
fn only_stdout_stderr_and_end_request_may_come() {
    for record_type in [0, 1, 2, 4, 5, 8, 9, 10, 11, 12, 255] {
        let input = record(record_type, 1, b"", 0);
        let (_, _, error) = decode_every_split(&input);
        let error = error.expect("refused");
        assert_eq!(error, RecordError::InvalidRecordType { record_type });
        let text = format!("upstream sent invalid FastCGI record type: {record_type}");
        assert_eq!(error.to_string(), text);
    }
    // The management records' id (0) is not looked at: the type refuses them first.
    let error = Decoder::new(1)
        .decode(&record(10, 0, b"\x00", 0))
        .expect_err("refused");
    assert_eq!(error, RecordError::InvalidRecordType { record_type: 10 });
}

#[test]
fn another_request_id_is_refused_high_byte_first() {
    let cases = [
        (0x0101, RecordError::RequestIdHighByte { byte: 1 }),
        (0xff01, RecordError::RequestIdHighByte { byte: 255 }),
        (0x0002, RecordError::RequestIdLowByte { byte: 2 }),
        (0x0000, RecordError::RequestIdLowByte { byte: 0 }),
    ];
    for (request_id, expected) in cases {
        let (_, _, error) = decode_every_split(&record(6, request_id, b"x", 0));
        assert_eq!(error.as_ref(), Some(&expected), "{request_id:#06x}");
    }
    assert_eq!(
        RecordError::RequestIdHighByte { byte: 1 }.to_string(),
        "upstream sent unexpected FastCGI request id high byte: 1"
    );
    assert_eq!(
        RecordError::RequestIdLowByte { byte: 2 }.to_string(),
        "upstream sent unexpected FastCGI request id low byte: 2"
    );
    // Another decoder's id is its own.
    let mut decoder = Decoder::new(0x0203);
    let input = record(6, 0x0203, b"x", 0);
    assert_eq!(decoder.decode(&input), Ok((9, Some(Event::Stdout(b"x")))));
}

#[test]
fn end_request_must_be_eight_bytes_long() {
    for content_len in [0usize, 7, 9, 16, 65535] {
        let input = record(3, 1, &vec![0; content_len], 0);
        let (_, _, error) = decode_every_split(&input[..HEADER_LEN]);
        let expected = RecordError::EndRequestLength {
            content_len: content_len as u16,
        };
        assert_eq!(error, Some(expected.clone()));
        let text =
            format!("upstream sent invalid FastCGI END_REQUEST record length: {content_len}");
        assert_eq!(expected.to_string(), text);
    }
}

#[test]
fn nothing_is_decoded_after_an_error() {
    let mut decoder = Decoder::new(1);
    assert!(decoder.decode(b"\x02").is_err());
    assert_eq!(decoder.decode(&record(6, 1, b"x", 0)), Ok((0, None)));
    assert!(!decoder.is_ended());
}

#[test]
fn stdout_after_its_end_is_still_passed_on() {
    // nginx reads such records as more stdout; so does the decoder (the reader decides).
    let mut input = record(6, 1, b"", 0);
    input.extend(record(6, 1, b"late", 0));
    let (events, _, error) = decode_every_split(&input);
    assert_eq!(error, None);
    assert_eq!(events, [Owned::StdoutEnd, Owned::Stdout(b"late".to_vec())]);
}
