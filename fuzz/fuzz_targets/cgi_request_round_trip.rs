//! Name-value pairs from arbitrary bytes (split at 0xff: name, value, name, ...) written
//! by the three request encoders and read back. Checks: no panic; FastCGI PARAMS records
//! are padded to 8, at most 65535 bytes, hold whole pairs and give back the pairs, or a
//! pair too big for a record is refused and nothing is written; the uwsgi packet gives
//! back the vars, or vars over 65535 bytes are refused; the SCGI netstring gives back
//! `CONTENT_LENGTH` then the headers, or a NUL in one is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_cgi::RequestError;
use portico_cgi::fastcgi::{self, KeepConn, NameValuePairs, RecordHeader, RequestEncoder};
use portico_cgi::{scgi, uwsgi};

fn fastcgi_round_trip(pairs: &[(&[u8], &[u8])]) {
    let mut out = b"x".to_vec();
    match RequestEncoder::new(1, KeepConn::Keep).params(&mut out, pairs.iter().copied()) {
        Err(RequestError::FastcgiRecordTooBig { len }) => {
            assert!(len > fastcgi::CONTENT_LEN_MAX);
            assert_eq!(out, b"x");
            return;
        }
        Err(other) => panic!("{other}"),
        Ok(()) => {}
    }
    let mut records = &out[1..];
    let mut read = Vec::new();
    loop {
        let header =
            RecordHeader::from_bytes(records[..fastcgi::HEADER_LEN].try_into().expect("a header"));
        assert_eq!(
            (header.version, header.record_type, header.request_id),
            (1, 4, 1)
        );
        assert_eq!(
            (usize::from(header.content_len) + usize::from(header.padding_len)) % 8,
            0
        );
        let content =
            &records[fastcgi::HEADER_LEN..fastcgi::HEADER_LEN + usize::from(header.content_len)];
        records = &records[header.record_len()..];
        if content.is_empty() {
            break;
        }
        let mut pairs = NameValuePairs::new(content);
        read.extend(pairs.by_ref());
        assert!(pairs.rest().is_empty(), "whole pairs in each record");
    }
    assert!(records.is_empty());
    assert_eq!(read, pairs);
}

fn uwsgi_round_trip(pairs: &[(&[u8], &[u8])]) {
    let mut out = Vec::new();
    let modifiers = uwsgi::Modifiers {
        modifier1: 0,
        modifier2: 0,
    };
    match uwsgi::encode_request(&mut out, modifiers, pairs.iter().copied()) {
        Err(RequestError::UwsgiTooBig { len }) => {
            assert!(len > uwsgi::VARS_LEN_MAX && out.is_empty());
            return;
        }
        Err(other) => panic!("{other}"),
        Ok(()) => {}
    }
    let packet = uwsgi::Packet::parse(&out).expect("a whole packet");
    assert_eq!(packet.byte_len(), out.len());
    let mut vars = packet.vars();
    assert!(vars.by_ref().eq(pairs.iter().copied()));
    assert!(vars.rest().is_empty());
}

fn scgi_round_trip(pairs: &[(&[u8], &[u8])], content_length: u64) {
    let mut out = Vec::new();
    match scgi::encode_request(&mut out, content_length, pairs.iter().copied()) {
        Err(RequestError::ScgiNul { .. }) => {
            assert!(
                pairs
                    .iter()
                    .any(|(name, value)| name.contains(&0) || value.contains(&0))
            );
            assert!(out.is_empty());
            return;
        }
        Err(other) => panic!("{other}"),
        Ok(()) => {}
    }
    let request = scgi::Request::parse(&out).expect("valid").expect("whole");
    assert_eq!(request.byte_len(), out.len());
    let mut headers = request.headers();
    let length = content_length.to_string();
    assert_eq!(
        headers.next(),
        Some((&b"CONTENT_LENGTH"[..], length.as_bytes()))
    );
    assert!(headers.eq(pairs.iter().copied()));
}

fuzz_target!(|data: &[u8]| {
    let (length_bytes, rest) = data.split_at(data.len().min(8));
    let mut length = [0u8; 8];
    length[..length_bytes.len()].copy_from_slice(length_bytes);
    let parts: Vec<&[u8]> = rest.split(|&byte| byte == 0xff).collect();
    let pairs: Vec<(&[u8], &[u8])> = parts
        .chunks_exact(2)
        .map(|pair| (pair[0], pair[1]))
        .collect();
    fastcgi_round_trip(&pairs);
    uwsgi_round_trip(&pairs);
    scgi_round_trip(&pairs, u64::from_le_bytes(length));
});
