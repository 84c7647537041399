//! Body framing, smuggling attempts and connection options (`analyze`).

use super::tests::{parse_checked, show};
use super::*;

fn analyzed(input: &[u8]) -> Result<RequestInfo, RequestError> {
    let limits = HeadLimits::default();
    match parse_checked(input, &limits)? {
        (Progress::Partial, _) => panic!("{:?} is partial", show(input)),
        (Progress::Complete, _) => {}
    }
    let mut head = RequestHead::default();
    parse_head(input, &limits, &mut head)?;
    let mut info = RequestInfo::default();
    analyze(input, &head, &mut info)?;
    Ok(info)
}

fn with_headers(version: &str, lines: &[&str]) -> Vec<u8> {
    let mut input = format!("POST / {version}\r\nHost: localhost\r\n");
    for line in lines {
        input.push_str(line);
        input.push_str("\r\n");
    }
    input.push_str("\r\n");
    input.into_bytes()
}

fn framing(lines: &[&str]) -> Result<BodyFraming, RequestError> {
    analyzed(&with_headers("HTTP/1.1", lines)).map(|info| info.framing)
}

#[test]
fn content_length_and_chunked_framing() {
    assert_eq!(framing(&[]), Ok(BodyFraming::None));
    assert_eq!(framing(&["Content-Length: 0"]), Ok(BodyFraming::Length(0)));
    assert_eq!(
        framing(&["Content-Length:    0042   "]),
        Ok(BodyFraming::Length(42))
    );
    let max = format!("Content-Length: {}", i64::MAX);
    assert_eq!(framing(&[&max]), Ok(BodyFraming::Length(i64::MAX as u64)));
    assert_eq!(
        framing(&["Transfer-Encoding: chunked"]),
        Ok(BodyFraming::Chunked)
    );
    assert_eq!(
        framing(&["Transfer-Encoding: CHUNKED"]),
        Ok(BodyFraming::Chunked)
    );
}

#[test]
fn invalid_content_length() {
    let one_past_max = format!("Content-Length: {}", i64::MAX as u64 + 1);
    for line in [
        "Content-Length: +5",
        "Content-Length: -5",
        "Content-Length: 0x5",
        "Content-Length: 5, 5",
        "Content-Length: 5 5",
        "Content-Length: 0\t",
        "Content-Length:\t0",
        "Content-Length: ",
        "Content-Length: 1e3",
        &one_past_max,
        "Content-Length: 99999999999999999999999",
    ] {
        assert_eq!(
            framing(&[line]),
            Err(RequestError::InvalidContentLength),
            "{line}"
        );
    }
    let error = RequestError::InvalidContentLength;
    assert_eq!(
        error.log_message(),
        "client sent invalid \"Content-Length\" header"
    );
}

#[test]
fn smuggling_attempts_are_rejected() {
    let both = RequestError::ContentLengthAndTransferEncoding;
    assert_eq!(
        framing(&["Transfer-Encoding: chunked", "Content-Length: 5"]),
        Err(both.clone())
    );
    assert_eq!(
        framing(&["Content-Length: 5", "Transfer-Encoding: chunked"]),
        Err(both.clone())
    );
    assert_eq!(
        both.log_message(),
        "client sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time"
    );
    // An invalid Content-Length is reported first, as nginx checks it first.
    assert_eq!(
        framing(&["Transfer-Encoding: chunked", "Content-Length: x"]),
        Err(RequestError::InvalidContentLength)
    );
    for value in [
        "chunked, chunked",
        "chunked, identity",
        "identity",
        "gzip, chunked",
        " chunked,",
    ] {
        let line = format!("Transfer-Encoding: {value}");
        let input = with_headers("HTTP/1.1", &[&line]);
        let error = analyzed(&input).unwrap_err();
        assert!(
            matches!(error, RequestError::UnknownTransferEncoding { .. }),
            "{value}"
        );
        assert_eq!(error.status(), 501);
        let quoted = format!(
            "client sent unknown \"Transfer-Encoding\": \"{}\"",
            value.trim()
        );
        assert_eq!(error.log_message_in(&input), quoted);
    }
    let repeated = framing(&["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"]);
    assert!(
        matches!(repeated, Err(RequestError::DuplicateHeader { .. })),
        "{repeated:?}"
    );
    let repeated = framing(&["Content-Length: 5", "Content-Length: 5"]);
    assert!(
        matches!(repeated, Err(RequestError::DuplicateHeader { .. })),
        "{repeated:?}"
    );
    let differing = framing(&["Content-Length: 5", "Content-Length: 6"]);
    assert!(
        matches!(differing, Err(RequestError::DuplicateHeader { .. })),
        "{differing:?}"
    );
    // HTTP/1.0 cannot carry Transfer-Encoding (body_chunked.t).
    let input = with_headers("HTTP/1.0", &["Transfer-Encoding: chunked"]);
    assert_eq!(
        analyzed(&input).unwrap_err(),
        RequestError::TransferEncodingHttp10
    );
    // A folded or space-padded name never reaches framing.
    for lines in [
        &["Transfer-Encoding:", " chunked"][..],
        &["Transfer-Encoding : chunked"],
        &["Transfer-Encoding\t: chunked"],
    ] {
        let error = framing(lines).unwrap_err();
        assert!(
            matches!(error, RequestError::InvalidHeaderLine { .. }),
            "{lines:?}"
        );
    }
    // With ignore_invalid_headers (default), `Transfer_Encoding` is dropped, not obeyed.
    assert_eq!(
        framing(&["Transfer_Encoding: chunked"]),
        Ok(BodyFraming::None)
    );
    assert_eq!(
        framing(&["Transfer_Encoding: chunked", "Content-Length: 3"]),
        Ok(BodyFraming::Length(3))
    );
}

#[test]
fn missing_host_on_http11_only() {
    let input = b"GET / HTTP/1.1\r\n\r\n";
    assert_eq!(analyzed(input).unwrap_err(), RequestError::MissingHost);
    assert_eq!(
        analyzed(b"GET http://h/x HTTP/1.1\r\n\r\n").unwrap_err(),
        RequestError::MissingHost
    );
    assert!(analyzed(b"GET / HTTP/1.0\r\n\r\n").is_ok());
}

#[test]
fn connection_options() {
    let connection = |lines: &[&str]| {
        analyzed(&with_headers("HTTP/1.1", lines))
            .map(|info| info.connection)
            .unwrap()
    };
    assert_eq!(connection(&[]), ConnectionOption::Default);
    assert_eq!(connection(&["Connection: close"]), ConnectionOption::Close);
    assert_eq!(
        connection(&["Connection: Keep-Alive"]),
        ConnectionOption::KeepAlive
    );
    assert_eq!(
        connection(&["Connection: x-close-y"]),
        ConnectionOption::Close
    );
    assert_eq!(
        connection(&["Connection: keep-alive, close"]),
        ConnectionOption::Close
    );
    assert_eq!(
        connection(&["Connection: close", "Connection: keep-alive"]),
        ConnectionOption::KeepAlive
    );
    assert_eq!(
        connection(&["Connection: close", "Connection: te"]),
        ConnectionOption::Close
    );
    assert_eq!(
        connection(&["Connection: Upgrade"]),
        ConnectionOption::Upgrade
    );
    assert_eq!(
        connection(&["Connection: upgrade, close"]),
        ConnectionOption::Close
    );
}

#[test]
fn expect_continue_only_exact_and_on_http11() {
    let expect = |version: &str, value: &str| {
        let line = format!("Expect: {value}");
        analyzed(&with_headers(version, &[&line]))
            .unwrap()
            .expect_continue
    };
    assert!(expect("HTTP/1.1", "100-continue"));
    assert!(expect("HTTP/1.1", "100-Continue"));
    assert!(!expect("HTTP/1.1", "100-continue, x"));
    assert!(!expect("HTTP/1.0", "100-continue"));
}

#[test]
fn browsers_as_ngx_http_process_user_agent() {
    let browser = |agents: &[&str]| {
        let lines: Vec<String> = agents
            .iter()
            .map(|agent| format!("User-Agent: {agent}"))
            .collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        analyzed(&with_headers("HTTP/1.1", &lines)).unwrap().browser
    };
    let msie6 = browser(&["Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"]);
    assert!(msie6.msie && msie6.msie6);
    let sp2 = browser(&["Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)"]);
    assert!(sp2.msie && !sp2.msie6);
    let msie8 = browser(&["Mozilla/4.0 (compatible; MSIE 8.0)"]);
    assert!(msie8.msie && !msie8.msie6);
    // "MSIE " needs three more bytes after it.
    assert!(!browser(&["MSIE 6."]).msie);
    assert!(browser(&["MSIE 6.0"]).msie6);
    let opera = browser(&["Opera/9.80 (MSIE 6.0; Windows)"]);
    assert!(opera.opera && !opera.msie && !opera.msie6);
    assert!(browser(&["Mozilla/5.0 Gecko/20100101 Firefox/118.0"]).gecko);
    let chrome = browser(&["Mozilla/5.0 AppleWebKit/537.36 Chrome/118.0 Safari/537.36"]);
    assert!(chrome.chrome && !chrome.safari);
    assert!(browser(&["Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15) Safari/605.1.15"]).safari);
    assert!(!browser(&["Mozilla/5.0 (Windows) Safari/605.1.15"]).safari);
    assert!(browser(&["Mozilla/5.0 (compatible; Konqueror/4.5)"]).konqueror);
    let both = browser(&["MSIE 5.5 x", "Gecko/1"]);
    assert!(both.msie6 && !both.gecko);
}

#[test]
fn info_is_reset_between_requests() {
    let limits = HeadLimits::default();
    let first = with_headers("HTTP/1.1", &["Content-Length: 5", "Connection: close"]);
    let second = b"GET / HTTP/1.0\r\n\r\n";
    let mut head = RequestHead::default();
    let mut info = RequestInfo::default();
    parse_head(&first, &limits, &mut head).unwrap();
    analyze(&first, &head, &mut info).unwrap();
    assert_eq!(info.framing, BodyFraming::Length(5));
    parse_head(second, &limits, &mut head).unwrap();
    analyze(second, &head, &mut info).unwrap();
    assert_eq!(
        (info.framing, info.connection),
        (BodyFraming::None, ConnectionOption::Default)
    );
    assert!(info.host.is_empty() && head.headers.is_empty() && info.known.host.is_none());
}
