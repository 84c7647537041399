use super::*;
use crate::fastcgi::{NameValuePairs, RecordType};

/// The records in `bytes`: each header and its content. Checks that every record is whole,
/// padded as nginx pads and with zero padding bytes.
fn records(mut bytes: &[u8]) -> Vec<(RecordHeader, Vec<u8>)> {
    let mut records = Vec::new();
    while !bytes.is_empty() {
        let header = RecordHeader::from_bytes(bytes[..HEADER_LEN].try_into().expect("8 bytes"));
        assert_eq!(header.version, 1);
        assert_eq!(header.request_id, 7);
        let content_len = usize::from(header.content_len);
        assert_eq!(header.padding_len, crate::fastcgi::padding_len(content_len));
        let content = bytes[HEADER_LEN..HEADER_LEN + content_len].to_vec();
        let padding = &bytes[HEADER_LEN + content_len..header.record_len()];
        assert!(padding.iter().all(|&byte| byte == 0));
        records.push((header, content));
        bytes = &bytes[header.record_len()..];
    }
    records
}

fn encoder() -> RequestEncoder {
    RequestEncoder::new(7, KeepConn::Close)
}

#[test]
fn begin_request_asks_for_a_responder_with_or_without_keep_conn() {
    let mut out = Vec::new();
    RequestEncoder::new(1, KeepConn::Keep).begin(&mut out);
    assert_eq!(out, [1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
    out.clear();
    RequestEncoder::new(0x1234, KeepConn::Close).begin(&mut out);
    assert_eq!(out, [1, 1, 0x12, 0x34, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn params_are_one_padded_record_then_the_empty_one() {
    let pairs = [("SCRIPT_FILENAME", "/srv/index.php"), ("QUERY_STRING", "")];
    let mut out = Vec::new();
    encoder().params(&mut out, pairs).expect("small params fit");
    let records = records(&out);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].0.record_type, RecordType::Params as u8);
    let read: Vec<_> = NameValuePairs::new(&records[0].1).collect();
    assert_eq!(
        read,
        [
            (&b"SCRIPT_FILENAME"[..], &b"/srv/index.php"[..]),
            (b"QUERY_STRING", b"")
        ]
    );
    assert_eq!((records[1].0.record_type, records[1].0.content_len), (4, 0));
}

#[test]
fn no_params_is_only_the_empty_record() {
    let mut out = Vec::new();
    encoder()
        .params(&mut out, std::iter::empty::<(&[u8], &[u8])>())
        .expect("nothing fits");
    assert_eq!(out, [1, 4, 0, 7, 0, 0, 0, 0]);
}

#[test]
fn params_beyond_one_record_are_split_between_whole_pairs() {
    let value = vec![b'v'; 1000];
    let names: Vec<String> = (0..200).map(|index| format!("HTTP_X_{index:03}")).collect();
    let pairs: Vec<(&[u8], &[u8])> = names
        .iter()
        .map(|name| (name.as_bytes(), &value[..]))
        .collect();
    let mut out = Vec::new();
    encoder()
        .params(&mut out, pairs.iter().copied())
        .expect("each pair fits");
    let records = records(&out);
    assert!(
        records.len() >= 4,
        "about 200 KB need four records: {}",
        records.len()
    );
    let (last, streamed) = records.split_last().expect("records");
    assert_eq!(last.0.content_len, 0);
    let mut read = Vec::new();
    for (header, content) in streamed {
        assert_eq!(header.record_type, RecordType::Params as u8);
        assert!(header.content_len > 0);
        let mut pairs = NameValuePairs::new(content);
        read.extend(pairs.by_ref());
        assert!(pairs.rest().is_empty(), "a record holds whole pairs");
    }
    assert_eq!(read, pairs);
    // Records are filled: the next pair (all are the same size) would not have fitted.
    let each = pair_len(pairs[0].0, pairs[0].1);
    for (header, _) in &streamed[..streamed.len() - 1] {
        assert!(usize::from(header.content_len) + each > CONTENT_LEN_MAX);
    }
}

#[test]
fn a_pair_of_exactly_a_record_fits_and_one_byte_more_does_not() {
    // Lengths of 1 + 4 bytes, a 10-byte name: the value that makes 65535.
    let name = b"HTTP_HUGE_";
    let value = vec![b'v'; CONTENT_LEN_MAX - 5 - name.len()];
    let mut out = Vec::new();
    encoder()
        .params(&mut out, [(&name[..], &value[..])])
        .expect("a pair of 65535 bytes fits");
    let records = records(&out);
    assert_eq!(records[0].0.content_len, u16::MAX);
    assert_eq!(records[0].0.padding_len, 1);

    let value = vec![b'v'; value.len() + 1];
    let mut out = b"kept".to_vec();
    let refused = encoder().params(
        &mut out,
        [
            ("A", "b"),
            ("HTTP_HUGE_", std::str::from_utf8(&value).expect("ascii")),
        ],
    );
    assert_eq!(
        refused,
        Err(RequestError::FastcgiRecordTooBig { len: 65536 })
    );
    assert_eq!(
        refused.expect_err("refused").to_string(),
        "fastcgi request record is too big: 65536"
    );
    assert_eq!(out, b"kept", "nothing of a refused stream is left");
}

#[test]
fn stdin_is_split_into_records_of_32_kib() {
    for len in [
        1,
        7,
        8,
        9,
        STDIN_RECORD_CONTENT_MAX - 1,
        STDIN_RECORD_CONTENT_MAX,
        STDIN_RECORD_CONTENT_MAX + 1,
        100_000,
    ] {
        let body: Vec<u8> = (0..len).map(|index| (index % 251) as u8).collect();
        let mut out = Vec::new();
        encoder().stdin(&mut out, &body);
        let records = records(&out);
        assert_eq!(
            records.len(),
            len.div_ceil(STDIN_RECORD_CONTENT_MAX),
            "{len}"
        );
        let mut joined = Vec::new();
        for (header, content) in records {
            assert_eq!(header.record_type, RecordType::Stdin as u8);
            assert!(content.len() <= STDIN_RECORD_CONTENT_MAX && !content.is_empty());
            joined.extend_from_slice(&content);
        }
        assert_eq!(joined, body, "{len}");
    }
}

#[test]
fn an_empty_piece_writes_nothing_and_the_end_is_an_empty_record() {
    let mut out = Vec::new();
    encoder().stdin(&mut out, b"");
    assert!(out.is_empty());
    encoder().stdin_end(&mut out);
    assert_eq!(out, [1, 5, 0, 7, 0, 0, 0, 0]);
    out.clear();
    encoder().abort(&mut out);
    assert_eq!(out, [1, 2, 0, 7, 0, 0, 0, 0]);
}

#[test]
fn a_caller_placed_stdin_record_matches_what_stdin_writes() {
    let content = b"placed by the caller";
    let header = encoder().stdin_record_header(content.len() as u16);
    let mut placed = header.to_bytes().to_vec();
    placed.extend_from_slice(content);
    placed.resize(placed.len() + usize::from(header.padding_len), 0);
    let mut written = Vec::new();
    encoder().stdin(&mut written, content);
    assert_eq!(placed, written);
}
