use super::*;

/// The head and the body's first bytes, from `input` pushed in `pieces` of the given sizes
/// (the last piece takes the rest).
fn parse_in(
    style: HeadStyle,
    buffer_size: usize,
    input: &[u8],
    cuts: &[usize],
) -> Result<Option<(CgiHead, Vec<u8>)>, HeadError> {
    let mut parser = HeadParser::new(style, buffer_size);
    let mut start = 0;
    for end in cuts.iter().copied().chain([input.len()]) {
        let piece = &input[start..end];
        start = end;
        if let HeadProgress::Complete { head, body_offset } = parser.push(piece)? {
            let mut body = piece[body_offset..].to_vec();
            body.extend_from_slice(&input[end..]);
            return Ok(Some((head, body)));
        }
    }
    Ok(None)
}

/// Parses `input` whole and split at every byte boundary (and in three pieces around
/// each), checking that all agree.
fn parse(
    style: HeadStyle,
    buffer_size: usize,
    input: &[u8],
) -> Result<Option<(CgiHead, Vec<u8>)>, HeadError> {
    let whole = parse_in(style, buffer_size, input, &[]);
    for split in 0..=input.len() {
        let result = parse_in(style, buffer_size, input, &[split]);
        assert_eq!(result, whole, "split at {split}");
        let third = (split + 1).min(input.len());
        assert_eq!(
            parse_in(style, buffer_size, input, &[split, third]),
            whole,
            "split at {split}, {third}"
        );
    }
    whole
}

fn cgi(input: &[u8]) -> (CgiHead, Vec<u8>) {
    parse(HeadStyle::Cgi, 4096, input)
        .expect("accepted")
        .expect("complete")
}

fn fields(head: &CgiHead) -> Vec<(String, String)> {
    head.fields()
        .map(|(name, value)| {
            (
                String::from_utf8_lossy(name).into(),
                String::from_utf8_lossy(value).into(),
            )
        })
        .collect()
}

#[test]
fn status_field_sets_the_status_and_its_line() {
    let (head, body) = cgi(b"Status: 404 Not Found\r\nContent-Type: text/html\r\n\r\n<p>gone</p>");
    assert_eq!(head.status(), 404);
    assert_eq!(head.status_line(), Some(&b"404 Not Found"[..]));
    assert_eq!(head.field(b"content-type"), Some(&b"text/html"[..]));
    assert_eq!(head.redirect(), None);
    assert_eq!(body, b"<p>gone</p>");
    assert_eq!(head.byte_len(), 50);
    assert_eq!(
        fields(&head),
        [
            ("Status".into(), "404 Not Found".into()),
            ("Content-Type".into(), "text/html".into())
        ]
    );
}

#[test]
fn a_bare_code_leaves_the_line_to_the_standard_one() {
    let (head, _) = cgi(b"status: 503\n\n");
    assert_eq!((head.status(), head.status_line()), (503, None));
    // Only the first three bytes count, as nginx reads them.
    let (head, _) = cgi(b"Status: 2000 odd\n\n");
    assert_eq!(
        (head.status(), head.status_line()),
        (200, Some(&b"2000 odd"[..]))
    );
}

#[test]
fn location_without_status_is_a_302_and_says_what_kind() {
    let (head, _) = cgi(b"Location: http://example.com/next\r\n\r\n");
    assert_eq!(head.status(), 302);
    assert_eq!(head.status_line(), Some(&b"302 Moved Temporarily"[..]));
    assert_eq!(head.redirect(), Some(Redirect::Client));
    let (head, _) = cgi(b"Location: /local?x=1\r\n\r\n");
    assert_eq!(
        (head.status(), head.redirect()),
        (302, Some(Redirect::Local))
    );
    let (head, _) = cgi(b"Location: //other.example/\r\n\r\n");
    assert_eq!(head.redirect(), Some(Redirect::Client));
    // A status given with the location wins.
    let (head, _) = cgi(b"Location: /moved\r\nStatus: 301 Moved Permanently\r\n\r\n");
    assert_eq!(
        (head.status(), head.redirect()),
        (301, Some(Redirect::Local))
    );
}

#[test]
fn no_status_and_no_location_is_200_ok() {
    let (head, body) = cgi(b"\r\nbody only");
    assert_eq!(
        (head.status(), head.status_line()),
        (200, Some(&b"200 OK"[..]))
    );
    assert_eq!(head.fields().len(), 0);
    assert_eq!(body, b"body only");
}

#[test]
fn an_invalid_status_is_refused_in_nginx_words() {
    for value in [&b"abc"[..], b"20", b"", b"2x0 OK", b"20\t0"] {
        let mut input = b"Status: ".to_vec();
        input.extend_from_slice(value);
        input.extend_from_slice(b"\r\n\r\n");
        let error = parse(HeadStyle::Cgi, 4096, &input).expect_err("refused");
        let trimmed = String::from_utf8_lossy(value).trim().to_owned();
        assert_eq!(
            error.to_string(),
            format!("upstream sent invalid status \"{trimmed}\"")
        );
    }
}

#[test]
fn an_invalid_line_is_refused_with_its_quote() {
    let error =
        parse(HeadStyle::Cgi, 4096, b"Good: 1\r\nBad Name: 2\r\n\r\n").expect_err("refused");
    assert_eq!(
        error.to_string(),
        "upstream sent invalid header: \"Bad\\x20...\""
    );
}

#[test]
fn the_head_must_fit_the_buffer_exactly() {
    let input = b"Content-Type: text/plain\r\n\r\nbody";
    let head_len = 28;
    let (head, body) = parse(HeadStyle::Cgi, head_len, input)
        .expect("fits")
        .expect("complete");
    assert_eq!((head.byte_len(), body.as_slice()), (head_len, &b"body"[..]));
    assert_eq!(
        parse(HeadStyle::Cgi, head_len - 1, input),
        Err(HeadError::TooBig)
    );
    assert_eq!(
        HeadError::TooBig.to_string(),
        "upstream sent too big header"
    );
    // A head that has not ended waits while there is room.
    assert_eq!(
        parse(HeadStyle::Cgi, head_len, &input[..head_len - 1]),
        Ok(None)
    );
}

#[test]
fn a_status_line_that_never_ends_is_too_big() {
    let input = [b"HTTP/1.1 200 ".as_slice(), &[b'x'; 100]].concat();
    assert_eq!(
        parse(HeadStyle::StatusLineOrCgi, 64, &input),
        Err(HeadError::TooBig)
    );
    assert_eq!(parse(HeadStyle::StatusLineOrCgi, 200, &input), Ok(None));
}

#[test]
fn uwsgi_and_scgi_heads_may_start_with_a_status_line() {
    let input = b"HTTP/1.1 201 Created\r\nStatus: 500 Ignored\r\nX-A: b\r\n\r\n{}";
    let (head, body) = parse(HeadStyle::StatusLineOrCgi, 4096, input)
        .expect("ok")
        .expect("complete");
    assert_eq!(head.status(), 201);
    assert_eq!(head.status_line(), Some(&b"201 Created"[..]));
    assert_eq!(
        fields(&head),
        [
            ("Status".into(), "500 Ignored".into()),
            ("X-A".into(), "b".into())
        ]
    );
    assert_eq!(body, b"{}");

    let (head, _) = parse(HeadStyle::StatusLineOrCgi, 4096, b"Status: 404\r\n\r\n")
        .expect("ok")
        .expect("complete");
    assert_eq!(head.status(), 404);
    // What is not a status line is read as header lines; a line starting `HTTP/` is skipped.
    let (head, _) = parse(
        HeadStyle::StatusLineOrCgi,
        4096,
        b"HTTP/1.1 2000\r\nA: b\r\n\r\n",
    )
    .expect("ok")
    .expect("complete");
    assert_eq!(
        (head.status(), fields(&head)),
        (200, vec![("A".into(), "b".into())])
    );
}

#[test]
fn fastcgi_heads_skip_a_status_line() {
    let (head, _) = cgi(b"HTTP/1.1 404 Not Found\r\nA: b\r\n\r\n");
    assert_eq!(head.status(), 200);
    assert_eq!(fields(&head), [("A".to_owned(), "b".to_owned())]);
}

#[test]
fn the_body_offset_is_in_the_piece_that_ended_the_head() {
    let mut parser = HeadParser::new(HeadStyle::Cgi, 100);
    assert_eq!(parser.push(b"A: b\r\n"), Ok(HeadProgress::Partial));
    match parser.push(b"\r\nbody") {
        Ok(HeadProgress::Complete { head, body_offset }) => {
            assert_eq!((head.byte_len(), body_offset), (8, 2));
        }
        other => panic!("{other:?}"),
    }
    let mut parser = HeadParser::new(HeadStyle::Cgi, 100);
    match parser.push(b"A: b\n\n") {
        Ok(HeadProgress::Complete { body_offset, .. }) => assert_eq!(body_offset, 6),
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_the_head_is_kept_of_a_long_piece() {
    let mut input = b"A: b\r\n\r\n".to_vec();
    input.extend(vec![b'x'; 10_000]);
    let mut parser = HeadParser::new(HeadStyle::Cgi, 64);
    match parser.push(&input) {
        Ok(HeadProgress::Complete { head, body_offset }) => {
            assert_eq!((head.byte_len(), body_offset), (8, 8));
        }
        other => panic!("{other:?}"),
    }
}
