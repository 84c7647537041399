//! The codec on its own: round trips, compression, and broken packets at every length.

use super::super::fake::{Fake, answer};
use super::*;
use std::net::Ipv4Addr;

fn question(name: &str, kind: u16) -> Question {
    Question {
        name: name.to_owned(),
        kind,
    }
}

#[test]
fn queries_and_answers_round_trip() {
    let asked = question("example.com", TYPE_A);
    let query = encode_query(0x1234, &asked).expect("encodable");
    assert_eq!(&query[..2], &[0x12, 0x34]);
    assert_eq!(&query[12..25], b"\x07example\x03com\x00");
    let reply = answer(
        &query,
        0,
        false,
        &[
            Fake::A("example.com", 300, Ipv4Addr::new(10, 0, 0, 1)),
            Fake::A("Example.COM", 60, Ipv4Addr::new(10, 0, 0, 2)),
        ],
        &[],
    );
    let Some(Reply::Records { answers, .. }) = decode_reply(&reply, 0x1234, &asked) else {
        panic!("not records");
    };
    let (addresses, ttl) = addresses_of(&answers, "example.com", TYPE_A);
    assert_eq!(addresses.len(), 2);
    assert_eq!(ttl, 60);
    assert_eq!(
        decode_reply(&reply, 0x9999, &asked),
        Some(Reply::WrongId(0x1234))
    );
    assert_eq!(
        decode_reply(&reply, 0x1234, &question("example.org", TYPE_A)),
        Some(Reply::WrongQuestion)
    );
    assert!(encode_query(1, &question("a..b", TYPE_A)).is_none());
    assert!(encode_query(1, &question(&"x".repeat(64), TYPE_A)).is_none());
}

#[test]
fn compressed_names_are_read_and_pointer_loops_refused() {
    let asked = question("a.test", TYPE_A);
    let mut reply = encode_query(7, &asked).expect("encodable");
    reply[2] = 0x81;
    reply[3] = 0x80;
    reply[7] = 1;
    // A CNAME at the question's name pointing to "b" + the question's "test".
    reply.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 9, 0, 4, 1, b'b', 0xc0, 14]);
    let Some(Reply::Records { answers, .. }) = decode_reply(&reply, 7, &asked) else {
        panic!("not records");
    };
    assert_eq!(answers[0].data, RecordData::Alias("b.test".into()));
    assert_eq!(chase_alias(&answers, "a.test"), Some(("b.test".into(), 9)));
    // A pointer to itself.
    let mut looped = reply.clone();
    let at = looped.len() - 2;
    looped[at + 1] = u8::try_from(at).expect("small");
    assert_eq!(decode_reply(&looped, 7, &asked), None);
}

#[test]
fn every_cut_and_every_flipped_byte_is_survived() {
    let asked = question("cut.test", TYPE_SRV);
    let query = encode_query(42, &asked).expect("encodable");
    let reply = answer(
        &query,
        0,
        false,
        &[
            Fake::Srv("cut.test", 5, [1, 2, 3], "t.test"),
            Fake::Cname("x.test", 1, "y.test"),
        ],
        &[Fake::Aaaa("t.test", 5, "::1".parse().expect("v6"))],
    );
    assert!(matches!(
        decode_reply(&reply, 42, &asked),
        Some(Reply::Records { .. })
    ));
    for length in 0..reply.len() {
        let _ = decode_reply(&reply[..length], 42, &asked);
    }
    for at in 0..reply.len() {
        for value in [0x00, 0x3f, 0xc0, 0xff] {
            let mut broken = reply.clone();
            broken[at] = value;
            let _ = decode_reply(&broken, 42, &asked);
        }
    }
}

#[test]
fn a_truncated_answer_says_so_and_a_ttl_with_the_top_bit_is_zero() {
    let asked = question("t.test", TYPE_A);
    let query = encode_query(3, &asked).expect("encodable");
    let reply = answer(&query, 0, true, &[], &[]);
    assert_eq!(decode_reply(&reply, 3, &asked), Some(Reply::Truncated));
    let reply = answer(
        &query,
        0,
        false,
        &[Fake::A("t.test", u32::MAX, Ipv4Addr::LOCALHOST)],
        &[],
    );
    let Some(Reply::Records { answers, .. }) = decode_reply(&reply, 3, &asked) else {
        panic!("not records");
    };
    assert_eq!(answers[0].ttl, 0);
}
