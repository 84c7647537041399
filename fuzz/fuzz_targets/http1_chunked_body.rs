//! Chunked bodies from arbitrary bytes: decoding in pieces equals decoding in one go.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http1::RequestError;
use portico_http1::chunked::ChunkedDecoder;

/// Feeds `input` in pieces of at most `piece_len` bytes; returns body, bytes used, done.
fn decode(input: &[u8], piece_len: usize) -> Result<(Vec<u8>, usize, bool), RequestError> {
    let mut decoder = ChunkedDecoder::new();
    let (mut body, mut used) = (Vec::new(), 0);
    while used < input.len() && !decoder.is_done() {
        let piece = &input[used..input.len().min(used.saturating_add(piece_len))];
        let decoded = decoder.decode(piece)?;
        assert!(decoded.consumed <= piece.len() && decoded.data.end <= decoded.consumed);
        body.extend_from_slice(&piece[decoded.data]);
        used += decoded.consumed;
        if decoded.consumed == 0 {
            break;
        }
    }
    Ok((body, used, decoder.is_done()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece_len, input)) = data.split_first() else { return };
    let whole = decode(input, usize::MAX);
    assert_eq!(decode(input, usize::from(piece_len).max(1)), whole);
    assert_eq!(decode(input, 1), whole);
});
