//! `host_len` against the byte-at-a-time state machine it replaced (kept here as the
//! reference), on every short string over an alphabet of the bytes that matter and on
//! random longer ones.

use super::{host_len, validate_host, write_validated_host};
use crate::test_rng::TestRng;

/// One byte of each class `host_len` tells apart, and a few more.
const ALPHABET: &[u8] = b"aZ09.:[]%-~!/ \x02\x80";

#[test]
fn host_len_matches_the_reference_on_every_short_string() {
    let mut raw = Vec::new();
    for len in 0..=5u32 {
        for mut code in 0..ALPHABET.len().pow(len) {
            raw.clear();
            for _ in 0..len {
                raw.push(ALPHABET[code % ALPHABET.len()]);
                code /= ALPHABET.len();
            }
            check(&raw);
        }
    }
}

#[test]
fn host_len_matches_the_reference_on_random_hosts() {
    let pieces: &[&[u8]] = &[
        b"a",
        b"Z",
        b"9",
        b".",
        b"..",
        b":",
        b"[",
        b"]",
        b"%",
        b"-",
        b"_",
        b"~",
        b"!",
        b"/",
        b"\x00",
        b"\xff",
        b"127.0.0.1",
        b"[::1]",
        b"example.com",
        b":80",
        b":65535",
        b":65536",
        b":0000080",
        b"99999",
    ];
    let mut rng = TestRng::new(0x4057);
    let mut raw = Vec::new();
    for _ in 0..200_000 {
        raw.clear();
        for _ in 0..rng.below(7) {
            raw.extend_from_slice(rng.pick(pieces));
        }
        check(&raw);
    }
}

fn check(raw: &[u8]) {
    let expected = reference_host_len(raw);
    assert_eq!(
        host_len(raw),
        expected,
        "{:?}",
        String::from_utf8_lossy(raw)
    );
    let mut out = b"stale".to_vec();
    let validated = validate_host(raw, &mut out);
    let lower = expected.map(|len| raw[..len].to_ascii_lowercase());
    assert_eq!(validated.as_ref().map(|()| out.clone()).ok(), lower);
    if validated.is_err() {
        assert!(out.is_empty(), "out is cleared first");
    }
    if let Some(lower) = lower {
        write_validated_host(raw, &mut out);
        assert_eq!(out, lower);
    }
}

/// `host_len` as it was before the table-driven version.
fn reference_host_len(raw: &[u8]) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Name,
        IpLiteral,
        AfterIpLiteral,
        Port,
    }

    let mut state = if raw.first() == Some(&b'[') {
        State::IpLiteral
    } else {
        State::Name
    };
    let mut host_len = raw.len();
    let mut last_dot: Option<usize> = None;
    let mut port: u32 = 0;

    for (i, &byte) in raw.iter().enumerate() {
        match state {
            State::Name | State::IpLiteral => {
                if byte == b'.' {
                    // Two dots in a row would let a host name climb directories when it
                    // is used in a path (`root /sites/$host`).
                    if i > 0 && last_dot == Some(i - 1) {
                        return None;
                    }
                    last_dot = Some(i);
                } else if state == State::IpLiteral && i == 0 {
                    // The opening bracket.
                } else if byte.is_ascii_alphanumeric() || is_unreserved_or_sub_delim(byte) {
                } else if state == State::Name && byte == b'%' {
                    // pct-encoded is allowed in a reg-name only.
                } else if state == State::Name && byte == b':' {
                    host_len = i;
                    state = State::Port;
                } else if state == State::IpLiteral && byte == b':' {
                } else if state == State::IpLiteral && byte == b']' {
                    host_len = i + 1;
                    state = State::AfterIpLiteral;
                } else {
                    return None;
                }
            }
            State::AfterIpLiteral => {
                if byte != b':' {
                    return None;
                }
                state = State::Port;
            }
            State::Port => {
                if !byte.is_ascii_digit() {
                    return None;
                }
                port = port * 10 + u32::from(byte - b'0');
                if port > u32::from(u16::MAX) {
                    return None;
                }
            }
        }
    }

    if state == State::IpLiteral {
        return None;
    }
    if host_len > 0 && last_dot == Some(host_len - 1) {
        host_len -= 1;
    }
    if host_len == 0 {
        return None;
    }
    Some(host_len)
}

fn is_unreserved_or_sub_delim(byte: u8) -> bool {
    matches!(
        byte,
        b'-' | b'_'
            | b'~'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}
