//! Request head tests. Expected answers come from nginx-tests (`http_uri.t`, `http_host.t`,
//! `http_method.t`, `http_headers_multi.t`, `ignore_invalid_headers.t`, `body_chunked.t`)
//! and from nginx 1.22 answering the same bytes, newer nginx where the tests expect it.

use super::*;

/// The outcome of parsing, as something comparable.
pub(super) type Outcome = Result<(Progress, String), RequestError>;

fn snapshot(progress: Progress, head: &RequestHead) -> (Progress, String) {
    (progress, format!("{head:?}"))
}

/// Parses `input` with the fast path and with the exact scanner alone, and every prefix of
/// it, checking that all agree: a prefix is `Partial` until the byte that completes or
/// rejects the head, and from there on gives the final outcome. Inputs over
/// [`EVERY_PREFIX_LEN_MAX`] bytes are cut at 1024 evenly spaced points and at each of their
/// last 64 bytes, to keep the quadratic check fast.
pub(super) fn parse_checked(input: &[u8], limits: &HeadLimits) -> Outcome {
    let mut head = RequestHead::default();
    let mut exact_head = RequestHead::default();
    let outcome = |head: &mut RequestHead, exact: &mut RequestHead, bytes: &[u8]| {
        let fast = parse_head(bytes, limits, head).map(|p| snapshot(p, head));
        let slow = parse_head_exact(bytes, limits, exact).map(|p| snapshot(p, exact));
        assert_eq!(
            fast,
            slow,
            "fast and exact paths disagree on {:?}",
            show(bytes)
        );
        fast
    };
    let whole = outcome(&mut head, &mut exact_head, input);
    let mut decided = false;
    let step = input.len().div_ceil(EVERY_PREFIX_LEN_MAX).max(1);
    let tail = input.len().saturating_sub(64);
    let ends = (0..input.len()).filter(|&end| end % step == 0 || end >= tail);
    for end in ends {
        let prefix = outcome(&mut head, &mut exact_head, &input[..end]);
        match &prefix {
            Ok((Progress::Partial, _)) => {
                assert!(
                    !decided,
                    "partial after a decision at {end} of {:?}",
                    show(input)
                )
            }
            _ => {
                decided = true;
                // A complete head ends before the rest of the input, which is body bytes.
                if let (Ok((Progress::Complete, _)), Ok((Progress::Complete, _))) =
                    (&prefix, &whole)
                {
                    continue;
                }
                assert_eq!(prefix, whole, "prefix of {end} bytes of {:?}", show(input));
            }
        }
    }
    whole
}

const EVERY_PREFIX_LEN_MAX: usize = 1024;

pub(super) fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parses and analyzes a head that must be complete; returns the head and info.
fn accept(input: &[u8]) -> (RequestHead, RequestInfo) {
    accept_with(input, &HeadLimits::default())
}

fn accept_with(input: &[u8], limits: &HeadLimits) -> (RequestHead, RequestInfo) {
    let outcome = parse_checked(input, limits);
    assert!(
        matches!(outcome, Ok((Progress::Complete, _))),
        "{:?}: {outcome:?}",
        show(input)
    );
    let mut head = RequestHead::default();
    parse_head(input, limits, &mut head).unwrap();
    assert!(head.len <= input.len());
    let mut info = RequestInfo::default();
    analyze(input, &head, &mut info).unwrap_or_else(|e| panic!("{:?}: {e:?}", show(input)));
    (head, info)
}

/// The error nginx answers `input` with, from `parse_head` or else `analyze`.
fn reject(input: &[u8]) -> RequestError {
    reject_with(input, &HeadLimits::default())
}

fn reject_with(input: &[u8], limits: &HeadLimits) -> RequestError {
    match parse_checked(input, limits) {
        Err(error) => error,
        Ok((Progress::Partial, _)) => panic!("{:?} is partial", show(input)),
        Ok((Progress::Complete, _)) => {
            let mut head = RequestHead::default();
            parse_head(input, limits, &mut head).unwrap();
            let mut info = RequestInfo::default();
            analyze(input, &head, &mut info).expect_err(&show(input))
        }
    }
}

fn uri_args(input: &[u8]) -> (String, Option<String>) {
    let (head, info) = accept(input);
    let args = info.target.args.map(|args| show(&input[args]));
    (show(&head.uri), args)
}

#[test]
fn uri_normalisation_as_http_uri_t() {
    let get = |target: &str| format!("GET {target} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let cases = [
        ("/foo/bar/.?args", "/foo/bar/", Some("args")),
        ("/foo/bar/.#frag", "/foo/bar/", None),
        ("/foo/bar/..?args", "/foo/", Some("args")),
        ("/foo/bar/..#frag", "/foo/", None),
        ("/foo/bar/.", "/foo/bar/", None),
        ("/foo/bar/..", "/foo/", None),
        ("http://localhost", "/", None),
        ("http://localhost/", "/", None),
        ("http://localhost?args", "/", Some("args")),
        ("http://localhost?args#frag", "/", Some("args")),
        ("http://localhost:8080", "/", None),
        ("http://localhost:8080/", "/", None),
        ("http://localhost:8080?args", "/", Some("args")),
        ("http://localhost:8080?args#frag", "/", Some("args")),
        ("/%02", "/\x02", None),
        // nginx 1.22 answers.
        ("/a%2F..%2Fb", "/b", None),
        ("/a?b#c", "/a", Some("b")),
        ("/a#b?c", "/a", None),
        ("/%41?x%zz", "/A", Some("x%zz")),
        ("/\u{ff}", "/\u{ff}", None),
    ];
    for (target, uri, args) in cases {
        let (got_uri, got_args) = uri_args(get(target).as_bytes());
        assert_eq!(
            (got_uri.as_str(), got_args.as_deref()),
            (uri, args),
            "{target}"
        );
    }
    for target in [
        "/foo/bar%",
        "/foo/bar%1",
        "/ /",
        "/\x02",
        "/../x",
        "/a\tb",
        "/\x7f",
    ] {
        assert_eq!(
            reject(get(target).as_bytes()),
            RequestError::InvalidRequest,
            "{target:?}"
        );
    }
}

#[test]
fn request_uri_and_parts_of_absolute_targets() {
    let input = b"GET http://Example.ORG:81/p?q HTTP/1.0\r\nHost: other\r\n\r\n";
    let (head, info) = accept(input);
    assert_eq!(show(&input[head.target.clone()]), "/p?q");
    assert_eq!(info.host, b"example.org");
    let TargetForm::Absolute { scheme, host, port } = info.target.form.clone() else {
        panic!("{:?}", info.target.form)
    };
    assert_eq!(
        (&input[scheme], &input[host]),
        (&b"http"[..], &b"Example.ORG"[..])
    );
    assert_eq!(port.map(|port| &input[port]), Some(&b"81"[..]));

    // `$request_uri` of `http://h?a=b` is "?a=b", of `http://h` the "/" of "http:/".
    let input = b"GET http://h?a=b HTTP/1.0\r\n\r\n";
    let (head, _) = accept(input);
    assert_eq!(show(&input[head.target]), "?a=b");
    let input = b"GET http://h HTTP/1.0\r\n\r\n";
    let (head, info) = accept(input);
    assert_eq!(
        (show(&input[head.target]), info.host),
        ("/".to_string(), b"h".to_vec())
    );
    // Any scheme is accepted; `_` is not a host byte in the request line.
    accept(b"GET ftp://h/x HTTP/1.0\r\n\r\n");
    assert_eq!(
        reject(b"GET http://a_b/ HTTP/1.0\r\n\r\n"),
        RequestError::InvalidRequest
    );
}

#[test]
fn host_as_http_host_t() {
    let by_header = |host: &str| format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n");
    let by_target = |host: &str| format!("GET http://{host}/ HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let valid = [
        ("l", "l"),
        ("L", "l"),
        ("abcd-ef.g02.xyz:", "abcd-ef.g02.xyz"),
        ("abcd-ef.g02.xyz.:88", "abcd-ef.g02.xyz"),
        ("[abcd::ef98:0:7654:321]:80", "[abcd::ef98:0:7654:321]"),
        ("[::123.45.67.89]:4321", "[::123.45.67.89]"),
    ];
    for (raw, expected) in valid {
        for input in [by_header(raw), by_target(raw)] {
            assert_eq!(
                accept(input.as_bytes()).1.host,
                expected.as_bytes(),
                "{input:?}"
            );
        }
    }
    for raw in [
        "",
        ".",
        "example.com.:1.2",
        "[abcd::ef98:0:7654:321].",
        "..examp-LE.com",
    ] {
        assert_eq!(
            reject(by_header(raw).as_bytes()),
            RequestError::InvalidHost,
            "{raw}"
        );
    }
    // nginx 1.29.4 rules: long port, double port, missing bracket.
    for raw in [
        "123.49.0.78:98777",
        "123.40.56.78:9000:80",
        "[abcd::ef98:0:7654:321",
    ] {
        assert_eq!(
            reject(by_header(raw).as_bytes()),
            RequestError::InvalidHost,
            "{raw}"
        );
    }
    for raw in ["", ".", "123.40.56.78:123456", "[ab..cd::ef98:0:7654:321]"] {
        let error = reject(by_target(raw).as_bytes());
        assert_eq!(error, RequestError::InvalidHostInRequestLine, "{raw}");
    }
    // The request-line grammar rejects these before Host validation.
    for raw in [
        "123.40.56.78:9000:80",
        "example.com.:1.2",
        "\\e/xample.com",
        "extra[abcd::ef98:0:7654:321]",
    ] {
        assert_eq!(
            reject(by_target(raw).as_bytes()),
            RequestError::InvalidRequest,
            "{raw}"
        );
    }
    assert_eq!(
        reject(by_header("localhost\x02").as_bytes()),
        RequestError::InvalidHost
    );
    let repeat = reject(b"GET / HTTP/1.0\r\nHost: localhost\nHost: again\r\n\r\n");
    assert!(
        matches!(repeat, RequestError::DuplicateHost { .. }),
        "{repeat:?}"
    );
    // Without a Host header the host is empty.
    assert_eq!(accept(b"GET / HTTP/1.0\r\n\r\n").1.host, b"");
}

#[test]
fn methods_as_http_method_t() {
    let trace = b"TRACE / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_eq!(reject(trace), RequestError::TraceMethod);
    assert_eq!(RequestError::TraceMethod.status(), 405);
    let connect = b"CONNECT localhost:8080 HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let (head, info) = accept(connect);
    assert_eq!(info.host, b"localhost");
    assert_eq!(check_connect(&head, &info, ConnectAllowed::Yes), Ok(()));
    // Refused where the server does not tunnel, on HTTP/1.0, and with a body.
    assert_eq!(
        check_connect(&head, &info, ConnectAllowed::No),
        Err(RequestError::ConnectMethod)
    );
    let (head_10, info_10) = accept(b"CONNECT localhost:8080 HTTP/1.0\r\n\r\n");
    assert_eq!(
        check_connect(&head_10, &info_10, ConnectAllowed::Yes),
        Err(RequestError::ConnectMethod)
    );
    for with_body in [
        &b"CONNECT a:1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n"[..],
        b"CONNECT a:1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
    ] {
        let (head, info) = accept(with_body);
        assert_eq!(
            check_connect(&head, &info, ConnectAllowed::Yes),
            Err(RequestError::ConnectWithBody)
        );
    }
    let (head, info) = accept(b"CONNECT a:1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(check_connect(&head, &info, ConnectAllowed::Yes), Ok(()));
    // Other methods pass whatever the server.
    let (get, get_info) = accept(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(check_connect(&get, &get_info, ConnectAllowed::No), Ok(()));
    let (head, _) = accept_head(connect);
    assert_eq!(
        (head.method, head.target_parts.form.clone()),
        (Method::Connect, TargetForm::Authority)
    );
    for input in [
        &b"CONNECT / HTTP/1.1\r\nHost: localhost\r\n\r\n"[..],
        b"CONNECT localhost HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"CONNECT localhost: HTTP/1.1\r\nHost: localhost\r\n\r\n",
    ] {
        assert_eq!(
            reject(input),
            RequestError::InvalidRequest,
            "{:?}",
            show(input)
        );
    }
    // Method bytes: A-Z, `_` and `-` only; unknown names are `Other`.
    for input in [
        &b"get / HTTP/1.0\r\n\r\n"[..],
        b"G3T / HTTP/1.0\r\n\r\n",
        b"GET\t/ HTTP/1.0\r\n\r\n",
    ] {
        assert_eq!(
            reject(input),
            RequestError::InvalidMethod,
            "{:?}",
            show(input)
        );
    }
    let input = b"G-_T / HTTP/1.0\r\n\r\n";
    let (head, _) = accept(input);
    assert_eq!(
        (head.method, &input[head.method_bytes]),
        (Method::Other, &b"G-_T"[..])
    );
    assert_eq!(
        reject(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
        RequestError::InvalidRequest
    );
}

/// Parses a complete head without analyzing it.
fn accept_head(input: &[u8]) -> (RequestHead, Outcome) {
    let outcome = parse_checked(input, &HeadLimits::default());
    let mut head = RequestHead::default();
    parse_head(input, &HeadLimits::default(), &mut head).unwrap();
    (head, outcome)
}

#[test]
fn versions_as_nginx_answers_them() {
    let with_host = |version: &str| format!("GET / {version}\r\nHost: a\r\n\r\n");
    for (version, expected) in [
        ("HTTP/1.0", Version::Http10),
        ("HTTP/1.1", Version::Http11),
        ("HTTP/1.2", Version::Http11),
        ("HTTP/1.01", Version::Http11),
        ("HTTP/1.999", Version::Http11),
        ("HTTP/1.0000", Version::Http10),
    ] {
        let input = with_host(version);
        let (head, _) = accept(input.as_bytes());
        assert_eq!(head.version, expected, "{version}");
        assert_eq!(show(&input.as_bytes()[head.protocol]), version);
    }
    for (version, error) in [
        ("HTTP/2.0", RequestError::InvalidVersion),
        ("HTTP/10.0", RequestError::InvalidVersion),
        ("HTTP/1.1000", RequestError::InvalidRequest),
        ("HTTP/0.9", RequestError::InvalidRequest),
        ("HTTP/1", RequestError::InvalidRequest),
        ("http/1.0", RequestError::InvalidRequest),
        ("HTTP/1.1x", RequestError::InvalidRequest),
        ("HTTP/1.1 x", RequestError::InvalidRequest),
    ] {
        assert_eq!(reject(with_host(version).as_bytes()), error, "{version}");
    }
    assert_eq!(RequestError::InvalidVersion.status(), 505);
    // HTTP/1.0001 is HTTP/1.1 and so needs a Host header.
    assert_eq!(
        reject(b"GET / HTTP/1.0001\r\n\r\n"),
        RequestError::MissingHost
    );
}

#[test]
fn http09_simple_requests() {
    for input in [&b"GET /x?y\r\n"[..], b"GET /x?y\n", b"GET /x?y  \r\n"] {
        let (head, info) = accept(input);
        assert_eq!(
            (head.version, head.len, head.uri.as_slice()),
            (Version::Http09, input.len(), &b"/x"[..])
        );
        assert_eq!(info.target.args.map(|a| &input[a]), Some(&b"y"[..]));
        assert!(head.protocol.is_empty());
    }
    assert_eq!(reject(b"HEAD /x\r\n"), RequestError::InvalidMethodHttp09);
    assert_eq!(
        reject(b"CONNECT h:80 \r\n"),
        RequestError::InvalidMethodHttp09
    );
    assert_eq!(reject(b"CONNECT h:80\r\n"), RequestError::InvalidRequest);
}

#[test]
fn request_line_whitespace_and_line_ends() {
    let input = b"\r\n\n\r\nGET    /s   HTTP/1.0   \r\n\r\n";
    let (head, _) = accept(input);
    assert_eq!(show(&input[head.request_line]), "GET    /s   HTTP/1.0   ");
    assert_eq!(show(&input[head.protocol]), "HTTP/1.0   ");
    let input = b"GET /lf HTTP/1.0\nX: a\n\n";
    let (head, _) = accept(input);
    assert_eq!((head.headers.len(), head.len), (1, input.len()));
    assert_eq!(
        reject(b"GET / HTTP/1.0\rX\n\r\n"),
        RequestError::InvalidRequest
    );
    assert_eq!(
        reject(b" GET / HTTP/1.0\r\n\r\n"),
        RequestError::InvalidMethod
    );
}

#[test]
fn header_lines_as_nginx_reads_them() {
    let input =
        b"GET / HTTP/1.0\r\nFoo\r\nX: \ta\x01\t \r\r\nY:z\r\nEmpty:   \r\nX:Y: \x7f\r\n\r\n";
    let (head, _) = accept(input);
    let fields: Vec<(String, String)> = head
        .headers
        .iter()
        .map(|field| (show(field.name_in(input)), show(field.value_in(input))))
        .collect();
    let expected = [
        ("Foo", ""),
        ("X", "\ta\x01\t"),
        ("Y", "z"),
        ("Empty", ""),
        ("X", "Y: \x7f"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(fields, expected);
}

#[test]
fn invalid_header_lines_and_their_log_text() {
    let cases: [(&[u8], &str); 8] = [
        (b"GET / HTTP/1.0\r\nX\x7f: 1\r\n\r\n", "\"X\\x7f...\""),
        (b"GET / HTTP/1.0\r\nFo o: x\r\n\r\n", "\"Fo\\x20...\""),
        (b"GET / HTTP/1.0\r\nX: a\r\n b\r\n\r\n", "\"\\x20...\""),
        (b"GET / HTTP/1.0\r\nX: a\x00b\r\n\r\n", "\"X: a\\x00...\""),
        (b"GET / HTTP/1.0\r\nX: a\rb\r\n\r\n", "\"X: a\\x0d...\""),
        (b"GET / HTTP/1.0\r\nX: a\r\n\rx", "\"\\x0d...\""),
        (b"GET / HTTP/1.0\r\n:foo: x-bar\r\n\r\n", "\"\\x3a...\""),
        (
            b"GET / HTTP/1.0\r\nfoo\x02: x-bar\r\n\r\n",
            "\"foo\\x02...\"",
        ),
    ];
    for (input, quoted) in cases {
        let error = reject(input);
        assert!(
            matches!(error, RequestError::InvalidHeaderLine { .. }),
            "{error:?}"
        );
        let expected = format!("client sent invalid header line: {quoted}");
        assert_eq!(error.log_message_in(input), expected);
        assert_eq!(error.status(), 400);
    }
}

#[test]
fn ignore_invalid_headers_as_ignore_invalid_headers_t() {
    let underscore = b"GET / HTTP/1.0\r\nx_foo: x-bar\r\n\r\n";
    let underscore_first = b"GET / HTTP/1.0\r\n_foo: x-bar\r\n\r\n";
    let bad = b"GET / HTTP/1.0\r\nx.foo: x-bar\r\n\r\n";
    let bad_first = b"GET / HTTP/1.0\r\n.foo: x-bar\r\n\r\n";
    let off = HeadLimits {
        ignore_invalid_headers: false,
        ..HeadLimits::default()
    };
    let on = HeadLimits::default();
    let underscores = HeadLimits {
        underscores_in_headers: true,
        ..HeadLimits::default()
    };
    for input in [&underscore[..], underscore_first, bad, bad_first] {
        assert_eq!(
            accept_with(input, &off).0.headers.len(),
            1,
            "{:?}",
            show(input)
        );
        let (head, _) = accept_with(input, &on);
        assert_eq!(head.headers.len(), 0);
        assert_eq!(head.ignored_headers, vec![16..input.len() - 4]);
    }
    for input in [&underscore[..], underscore_first] {
        assert_eq!(accept_with(input, &underscores).0.headers.len(), 1);
    }
    let several = b"GET /v HTTP/1.0\r\nHost: localhost\r\ncoo: foo\r\n</kie>: x-bar\r\n\r\n";
    let (head, _) = accept_with(several, &off);
    assert_eq!(head.known.cookie, None);
    assert_eq!(head.headers.len(), 3);
}

#[test]
fn unique_headers_as_http_headers_multi_t() {
    let get = |lines: &str| format!("GET /d HTTP/1.1\r\nHost: localhost\r\n{lines}\r\n\r\n");
    for name in [
        "If-Modified-Since",
        "If-Unmodified-Since",
        "If-Match",
        "If-None-Match",
        "Content-Length",
        "Content-Range",
        "If-Range",
        "Transfer-Encoding",
        "Expect",
        "Authorization",
        "Proxy-Authorization",
    ] {
        let input = get(&format!("{name}: foo\r\n{}: bar", name.to_lowercase()));
        let error = reject(input.as_bytes());
        assert!(
            matches!(error, RequestError::DuplicateHeader { .. }),
            "{name}: {error:?}"
        );
        let expected = format!(
            "client sent duplicate header line: \"{}: bar\", previous value: \"{name}: foo\"",
            name.to_lowercase()
        );
        assert_eq!(error.log_message_in(input.as_bytes()), expected);
    }
    let error = reject(get("Host: foo\r\nHost: bar").as_bytes());
    let input = get("Host: foo\r\nHost: bar");
    let expected =
        "client sent duplicate host header: \"Host: foo\", previous value: \"Host: localhost\"";
    assert_eq!(error.log_message_in(input.as_bytes()), expected);
    for repeated in [
        "User-Agent",
        "Referer",
        "Via",
        "Cookie",
        "X-Forwarded-For",
        "Content-Type",
    ] {
        let input = get(&format!("{repeated}: foo\r\n{repeated}: bar"));
        let (head, _) = accept(input.as_bytes());
        assert_eq!(head.headers.len(), 3, "{repeated}");
    }
}

#[test]
fn known_headers_are_found_by_any_case() {
    let input = b"GET / HTTP/1.1\r\nHOST: a\r\nuser-agent: u\r\nCOOKIE: c\r\ncookie: d\r\n\r\n";
    let (head, info) = accept(input);
    assert_eq!(info.known.host, Some(0));
    assert_eq!(info.known.user_agent, Some(1));
    assert_eq!(head.known.cookie, Some(2));
}

#[test]
fn errors_are_reported_before_the_head_is_complete() {
    let limits = HeadLimits::default();
    let mut head = RequestHead::default();
    assert_eq!(
        parse_head(b"g", &limits, &mut head),
        Err(RequestError::InvalidMethod)
    );
    assert_eq!(
        parse_head(b"GET /\x01", &limits, &mut head),
        Err(RequestError::InvalidRequest)
    );
    let error = parse_head(
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nX-Partial: ",
        &limits,
        &mut head,
    );
    assert!(
        matches!(error, Err(RequestError::DuplicateHost { .. })),
        "{error:?}"
    );
    assert_eq!(
        parse_head(b"GET / HTTP/1.1\r\nHost", &limits, &mut head),
        Ok(Progress::Partial)
    );
    assert_eq!(head.len, 0);
}

#[test]
fn fast_and_exact_paths_agree_past_the_fast_path_field_count() {
    let mut input = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 0..40 {
        input.extend_from_slice(format!("X-{i}: \t{i} \r\n").as_bytes());
    }
    input.extend_from_slice(b"\r\n");
    let (head, _) = accept(&input);
    assert_eq!(head.headers.len(), 41);
    assert_eq!(head.headers[40].value_in(&input), b"\t39");
}
