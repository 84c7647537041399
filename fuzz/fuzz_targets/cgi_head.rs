//! A CGI-family response head from arbitrary bytes. The first byte picks the style (CGI
//! only, or a status line first) and the piece size, the second the buffer size; the rest
//! is the answer. Checks: no panic; a refusal is worded as nginx words it; a head fits the
//! buffer, its body offset lies in the piece that ended it, its fields lie in the head and
//! have names without control bytes; the pieces give what the whole input gives; the head
//! alone gives the same head; a 3-digit status; the status line, when given, starts with
//! the status's digits unless it is nginx's fixed text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_cgi::head::{CgiHead, HeadParser, HeadProgress, HeadStyle};

fn parse(
    style: HeadStyle,
    buffer_size: usize,
    input: &[u8],
    piece_len: usize,
) -> Result<Option<(CgiHead, usize)>, String> {
    let mut parser = HeadParser::new(style, buffer_size);
    let mut start = 0;
    for piece in input.chunks(piece_len) {
        match parser.push(piece) {
            Err(error) => {
                let text = error.to_string();
                assert!(text.starts_with("upstream sent "), "{text}");
                return Err(text);
            }
            Ok(HeadProgress::Partial) => start += piece.len(),
            Ok(HeadProgress::Complete { head, body_offset }) => {
                assert!(body_offset <= piece.len());
                return Ok(Some((head, start + body_offset)));
            }
        }
    }
    Ok(None)
}

fuzz_target!(|data: &[u8]| {
    let [choice, size_byte, input @ ..] = data else {
        return;
    };
    let style = if choice & 1 == 0 {
        HeadStyle::Cgi
    } else {
        HeadStyle::StatusLineOrCgi
    };
    let piece_len = usize::from(choice >> 1) + 1;
    let buffer_size = usize::from(*size_byte) * 8 + 1;
    let whole = parse(style, buffer_size, input, input.len().max(1));
    assert_eq!(parse(style, buffer_size, input, piece_len), whole);
    let Ok(Some((head, body_start))) = whole else {
        return;
    };
    assert_eq!(body_start, head.byte_len());
    assert!(head.byte_len() <= buffer_size && head.byte_len() <= input.len());
    assert!(head.status() <= 999);
    for (name, value) in head.fields() {
        assert!(
            !name.is_empty()
                && name
                    .iter()
                    .all(|&byte| byte > b' ' && byte != 0x7f && byte != b':')
        );
        assert!(!value.contains(&0) && !value.starts_with(b" ") && !value.ends_with(b" "));
    }
    if let Some(line) = head.status_line() {
        let fixed = line == b"200 OK" || line == b"302 Moved Temporarily";
        assert!(
            fixed || line.starts_with(format!("{:03}", head.status()).as_bytes()),
            "{line:?}"
        );
    }
    let alone = parse(
        style,
        buffer_size,
        &input[..head.byte_len()],
        input.len().max(1),
    );
    assert_eq!(alone, Ok(Some((head.clone(), head.byte_len()))));
});
