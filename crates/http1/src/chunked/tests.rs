use super::{CHUNK_SIZE_MAX, ChunkedDecoder};
use crate::error::RequestError;

/// Decodes `input` fed in pieces ending at `splits`; returns the body and the bytes
/// consumed in total, or the error.
fn decode_split(input: &[u8], splits: &[usize]) -> Result<(Vec<u8>, usize, bool), RequestError> {
    let mut decoder = ChunkedDecoder::new();
    let mut body = Vec::new();
    let mut start = 0;
    let mut ends: Vec<usize> = splits.to_vec();
    ends.push(input.len());
    for end in ends {
        // Feed `input[start..end]`; the decoder may leave bytes unconsumed only when done.
        while start < end && !decoder.is_done() {
            let piece = &input[start..end];
            let decoded = decoder.decode(piece)?;
            body.extend_from_slice(&piece[decoded.data.clone()]);
            assert!(decoded.data.end <= decoded.consumed);
            assert_eq!(decoded.done, decoder.is_done());
            start += decoded.consumed;
            if decoded.consumed == 0 {
                break;
            }
        }
    }
    Ok((body, start, decoder.is_done()))
}

fn decode_whole(input: &[u8]) -> Result<(Vec<u8>, usize, bool), RequestError> {
    decode_split(input, &[])
}

#[test]
fn valid_bodies_decode_the_same_at_every_split() {
    let bodies: [(&[u8], &[u8]); 7] = [
        (b"4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n", b"Wikipedia"),
        (b"0\r\n\r\n", b""),
        (
            b"A;name=value\r\n0123456789\r\n0;last\r\n\r\n",
            b"0123456789",
        ),
        (
            b"3 \t;x\r\nabc\r\n0 ;y\r\nTrailer: v\r\nOther: w\r\n\r\n",
            b"abc",
        ),
        (b"00000000000000000000001\r\nz\r\n000\r\n\r\n", b"z"),
        (b"1\r\n\r\r\n0\r\n\r\n", b"\r"),
        (b"f\r\n0123456789abcde\r\n0\r\n\r\n", b"0123456789abcde"),
    ];
    for (input, expected) in bodies {
        let whole = decode_whole(input).unwrap();
        assert_eq!(whole, (expected.to_vec(), input.len(), true), "{:?}", input);
        for split in 0..=input.len() {
            assert_eq!(
                decode_split(input, &[split]).unwrap(),
                whole,
                "split at {split}"
            );
        }
        let every_byte: Vec<usize> = (1..input.len()).collect();
        assert_eq!(decode_split(input, &every_byte).unwrap(), whole);
    }
}

#[test]
fn pipelined_bytes_after_the_body_are_not_consumed() {
    let input = b"1\r\na\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    let (body, consumed, done) = decode_whole(input).unwrap();
    assert_eq!((body.as_slice(), consumed, done), (&b"a"[..], 11, true));
    let mut decoder = ChunkedDecoder::new();
    let mut start = 0;
    while !decoder.is_done() {
        start += decoder.decode(&input[start..]).unwrap().consumed;
    }
    assert_eq!(decoder.decode(&input[start..]).unwrap().consumed, 0);
}

#[test]
fn partial_body_is_not_done() {
    let (body, consumed, done) = decode_whole(b"5\r\nab").unwrap();
    assert_eq!((body.as_slice(), consumed, done), (&b"ab"[..], 5, false));
    assert!(!decode_whole(b"0\r\n\r").unwrap().2);
}

fn assert_invalid(input: &[u8]) {
    let error = decode_whole(input).expect_err(&String::from_utf8_lossy(input));
    assert!(
        matches!(error, RequestError::InvalidChunkedBody { .. }),
        "{error:?}"
    );
    assert_eq!(error.status(), 400);
    assert_eq!(error.log_message(), "client sent invalid chunked body");
    for split in 0..input.len() {
        assert_eq!(
            decode_split(input, &[split]).unwrap_err(),
            error,
            "split at {split}"
        );
    }
}

#[test]
fn smuggling_and_malformed_framing_are_rejected() {
    let cases: [&[u8]; 20] = [
        // body_chunked.t "runaway chunk": data longer than the size.
        b"4\r\nSEE-THIS\r\n0\r\n\r\n",
        // Bare LF line endings (RFC 9112 §7.1 requires CRLF; current nginx rejects them).
        b"4\nWiki\r\n0\r\n\r\n",
        b"4\r\nWiki\n0\r\n\r\n",
        b"4\r\nWiki\r\n0\n\r\n",
        b"4\r\nWiki\r\n0\r\n\n",
        b"4;ext\nWiki\r\n0\r\n\r\n",
        b"0\r\nTrailer: x\n\r\n",
        // Sign, prefix and empty sizes.
        b"+4\r\nWiki\r\n0\r\n\r\n",
        b"-4\r\nWiki\r\n0\r\n\r\n",
        b"0x4\r\nWiki\r\n0\r\n\r\n",
        b"\r\n4\r\nWiki\r\n0\r\n\r\n",
        b" 4\r\nWiki\r\n0\r\n\r\n",
        b"4g\r\nWiki\r\n0\r\n\r\n",
        // Missing CRLF after data.
        b"4\r\nWikiX\r\n0\r\n\r\n",
        b"4\r\nWiki\rX0\r\n\r\n",
        // CR not followed by LF.
        b"4\r\rWiki\r\n0\r\n\r\n",
        b"0\r\n\r\r",
        // Overflow: more digits than i64 can hold.
        b"10000000000000000\r\n",
        b"ffffffffffffffffffff\r\n",
        // One past nginx's largest size.
        b"800000000000000\r\n",
    ];
    for input in cases {
        assert_invalid(input);
    }
}

#[test]
fn largest_chunk_size_is_accepted_one_more_is_not() {
    let at_limit = format!("{CHUNK_SIZE_MAX:x}\r\nabc");
    let (body, consumed, done) = decode_whole(at_limit.as_bytes()).unwrap();
    assert_eq!(
        (body.as_slice(), consumed, done),
        (&b"abc"[..], at_limit.len(), false)
    );
    assert_invalid(format!("{:x}\r\n", CHUNK_SIZE_MAX + 1).as_bytes());
}

#[test]
fn error_offset_counts_body_bytes() {
    let mut decoder = ChunkedDecoder::new();
    let first = decoder.decode(b"2\r\nab").unwrap();
    assert_eq!((first.consumed, first.data), (5, 3..5));
    let error = decoder.decode(b"X").unwrap_err();
    assert_eq!(error, RequestError::InvalidChunkedBody { offset: 5 });
}

/// A decoder that keeps the trailer section gives its fields, at every split of the input;
/// one that does not keeps nothing.
#[test]
fn kept_trailers_are_the_fields_after_the_last_chunk() {
    let input = b"4\r\nWiki\r\n0\r\nX-Trailer: foo\r\nx-another:bar \t\r\n\r\nNEXT";
    for split in 0..=input.len() {
        let mut decoder = ChunkedDecoder::keeping_trailers(1024);
        let mut body = Vec::new();
        let mut start = 0;
        for end in [split, input.len()] {
            while start < end && !decoder.is_done() {
                let decoded = decoder.decode(&input[start..end]).expect("valid");
                body.extend_from_slice(&input[start..end][decoded.data.clone()]);
                start += decoded.consumed;
                if decoded.consumed == 0 {
                    break;
                }
            }
        }
        assert!(decoder.is_done(), "split at {split}");
        assert_eq!(&input[start..], b"NEXT", "split at {split}");
        assert_eq!(body, b"Wiki");
        let fields = decoder.trailers().expect("fields");
        assert_eq!(
            fields,
            vec![
                (b"X-Trailer".to_vec(), b"foo".to_vec()),
                (b"x-another".to_vec(), b"bar".to_vec())
            ],
            "split at {split}"
        );
    }
    let mut plain = ChunkedDecoder::new();
    let decoded = plain.decode(input).expect("valid");
    let rest = &input[decoded.consumed..];
    plain.decode(rest).expect("valid");
    assert!(plain.is_done());
    assert_eq!(plain.trailers(), Some(Vec::new()));
}

#[test]
fn kept_trailers_that_are_not_fields_or_too_long_are_errors() {
    let mut decoder = ChunkedDecoder::keeping_trailers(1024);
    decoder
        .decode(b"0\r\nno colon here\r\n\r\n")
        .expect("the framing is valid");
    assert!(decoder.is_done());
    assert_eq!(decoder.trailers(), None);
    let mut decoder = ChunkedDecoder::keeping_trailers(1024);
    decoder
        .decode(b"0\r\nbad name: x\r\n\r\n")
        .expect("framing");
    assert_eq!(decoder.trailers(), None);
    let mut decoder = ChunkedDecoder::keeping_trailers(8);
    assert!(decoder.decode(b"0\r\nX-Long: 123456\r\n\r\n").is_err());
}
