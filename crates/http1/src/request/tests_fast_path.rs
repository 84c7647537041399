//! The fast path (`fast_path.rs`) against the exact scanners alone, on generated heads:
//! common shapes, every near miss of them the pieces below can build, random byte changes,
//! and each under the limits that change what is accepted. The `http1_request_head` fuzz
//! target runs the same comparison on arbitrary bytes. `analyze`, which both paths share,
//! is checked here against the full walk over the headers that its shortcut replaced.

use super::known::contains_ignore_case;
use super::tests::parse_checked;
use super::*;
use crate::test_rng::TestRng;

const METHODS: [&str; 10] = [
    "GET", "GET", "HEAD", "POST", "CONNECT", "OPTIONS", "M-_X", "get", "G@T", "",
];
const TARGETS: [&str; 8] = [
    "/",
    "/",
    "*",
    "http://",
    "h.com",
    "http://h.com:80",
    "http://[::1]",
    "/%",
];
/// Pieces appended to a target; the first 17 have no control byte or space.
const TARGET_PIECES: [&str; 22] = [
    "a", "b/", "/", "/", ".", "..", "%2F", "%2e", "%zz", "?", "?", "#", "+", "x=1&y", "\u{e9}",
    "//", "/.", "\x7f", "\x01", "\t", " ", ":",
];
const PROTOCOLS: [&str; 13] = [
    " HTTP/1.1",
    " HTTP/1.1",
    " HTTP/1.0",
    " HTTP/1.9",
    " HTTP/1.10",
    " HTTP/1.01",
    " HTTP/2.0",
    " HTTP/1.1 ",
    "  HTTP/1.1",
    " http/1.1",
    " HTTP/1.",
    " HTTP/",
    "",
];
const LINE_ENDS: [&str; 7] = ["\r\n", "\r\n", "\r\n", "\n", "\r", "\r\r\n", ""];
const NAMES: [&str; 18] = [
    "Host",
    "host",
    "HOST",
    "Connection",
    "Content-Length",
    "Transfer-Encoding",
    "User-Agent",
    "If-Match",
    "If-Range",
    "Cookie",
    "Expect",
    "Accept-Encoding",
    "X_Y",
    "X.Y",
    "_",
    "",
    "X-Long-Header-Name-Here",
    "Ho st",
];
const COLONS: [&str; 7] = [": ", ": ", ":", ":   ", "", " :", ":\t"];
const VALUES: [&str; 25] = [
    "127.0.0.1:18500",
    "localhost",
    "www.example.com",
    "a..b",
    "[::1]:80",
    "h:99999",
    "keep-alive",
    "Keep-Alive",
    "close, Upgrade",
    "upgrade",
    "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)",
    "Opera/9.80 (Windows NT 6.1)",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Safari/605.1.15",
    "chunked",
    "100-continue",
    "12",
    "-1",
    "x\ty",
    "\x01",
    "a\x00b",
    "  ",
    "\u{e9}t\u{e9}",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0",
    "a\rb",
    "",
];

/// Limits that change what the scanners accept or where a buffer ends.
fn limit_sets() -> [HeadLimits; 4] {
    [
        HeadLimits::default(),
        HeadLimits {
            ignore_invalid_headers: false,
            underscores_in_headers: true,
            merge_slashes: false,
            ..HeadLimits::default()
        },
        HeadLimits {
            underscores_in_headers: true,
            max_headers: Some(3),
            ..HeadLimits::default()
        },
        HeadLimits {
            client_header_buffer_size: 32,
            large_client_header_buffers: (2, 64),
            ..HeadLimits::default()
        },
    ]
}

pub(super) fn generate_head(rng: &mut TestRng) -> Vec<u8> {
    let mut head = String::new();
    if rng.one_in(16) {
        head.push_str(rng.pick(&["\r\n", "\n"]));
    }
    // Half of the request lines have the shape the fast path reads, with any target.
    if rng.one_in(2) {
        head.push_str(rng.pick(&["GET", "HEAD", "POST", "OPTIONS", "M-_X"]));
        head.push(' ');
        head.push('/');
        for _ in 0..rng.below(8) {
            head.push_str(rng.pick(&TARGET_PIECES[..17]));
        }
        head.push_str(rng.pick(&PROTOCOLS[..4]));
        head.push_str(rng.pick(&LINE_ENDS[..4]));
    } else {
        head.push_str(rng.pick(&METHODS));
        head.push_str(rng.pick(&[" ", " ", " ", "  ", "\t"]));
        head.push_str(rng.pick(&TARGETS));
        for _ in 0..rng.below(6) {
            head.push_str(rng.pick(&TARGET_PIECES));
        }
        head.push_str(rng.pick(&PROTOCOLS));
        head.push_str(rng.pick(&LINE_ENDS));
    }
    // Half of the heads have only well-formed header lines, most with a valid `Host`
    // first, so that many complete and pass `analyze`.
    let clean = rng.one_in(2);
    if clean && !rng.one_in(8) {
        head.push_str("Host: ");
        head.push_str(rng.pick(&VALUES[..3]));
        head.push_str("\r\n");
    }
    for _ in 0..rng.below(6) {
        if clean {
            head.push_str(rng.pick(&NAMES[3..12]));
            head.push_str(": ");
            head.push_str(rng.pick(&VALUES[..18]));
            head.push_str("\r\n");
            continue;
        }
        head.push_str(rng.pick(&NAMES));
        head.push_str(rng.pick(&COLONS));
        head.push_str(rng.pick(&VALUES));
        head.push_str(rng.pick(&["", "", " ", "  "]));
        head.push_str(rng.pick(&LINE_ENDS));
    }
    head.push_str(rng.pick(&LINE_ENDS));
    let mut head = head.into_bytes();
    if rng.one_in(4) && !head.is_empty() {
        let at = rng.below(head.len());
        let byte = rng.next_u64() as u8;
        match rng.below(3) {
            0 => head[at] = byte,
            1 => head.insert(at, byte),
            _ => {
                head.remove(at);
            }
        }
    }
    head
}

/// Both paths on `input`: each line the fast path reads is the line the exact scanner
/// reads, and the outcome, the head and the analysis are the same.
fn check_agree(input: &[u8], limits: &HeadLimits) {
    check_lines_agree(input, limits.underscores_in_headers);
    let (mut fast, mut exact) = (RequestHead::default(), RequestHead::default());
    let fast_outcome = parse_head(input, limits, &mut fast);
    let exact_outcome = parse_head_exact(input, limits, &mut exact);
    let shown = String::from_utf8_lossy(input);
    assert_eq!(fast_outcome, exact_outcome, "{shown:?}");
    if fast_outcome == Ok(Progress::Complete) {
        assert_eq!(format!("{fast:?}"), format!("{exact:?}"), "{shown:?}");
        let (mut fast_info, mut exact_info) = (RequestInfo::default(), RequestInfo::default());
        let fast_analysis = analyze(input, &fast, &mut fast_info);
        let exact_analysis = analyze(input, &exact, &mut exact_info);
        assert_eq!(fast_analysis, exact_analysis, "{shown:?}");
        assert_eq!(
            format!("{fast_info:?}"),
            format!("{exact_info:?}"),
            "{shown:?}"
        );
        if fast_analysis.is_ok() {
            let expected = reference_connection_and_browser(input, &fast);
            assert_eq!(
                (fast_info.connection, fast_info.browser),
                expected,
                "{shown:?}"
            );
        }
    }
}

/// What `analyze` found in `Connection` and `User-Agent` before it started its walk at the
/// first of them and skipped other names by length: a walk over every header.
fn reference_connection_and_browser(buf: &[u8], head: &RequestHead) -> (ConnectionOption, Browser) {
    let mut connection = ConnectionOption::Default;
    let mut browser = Browser::default();
    let mut upgrade = false;
    for field in &head.headers {
        let name = field.name_in(buf);
        if name.eq_ignore_ascii_case(b"connection") {
            let value = field.value_in(buf);
            if contains_ignore_case(value, b"close") {
                connection = ConnectionOption::Close;
            } else if contains_ignore_case(value, b"keep-alive") {
                connection = ConnectionOption::KeepAlive;
            }
            upgrade |= contains_ignore_case(value, b"upgrade");
        } else if name.eq_ignore_ascii_case(b"user-agent") {
            browser.detect(field.value_in(buf));
        }
    }
    if upgrade && connection == ConnectionOption::Default {
        connection = ConnectionOption::Upgrade;
    }
    (connection, browser)
}

/// Line by line, so that a difference in the request line shows even when a later line
/// makes both paths fail the head the same way.
fn check_lines_agree(input: &[u8], underscores: bool) {
    let shown = String::from_utf8_lossy(input);
    let (_, exact) = request_line::scan_request_line(input);
    let mut next = match (fast_path::scan_request_line(input), exact) {
        (Some(fast), Scan::Complete(exact)) => {
            assert_eq!(format!("{fast:?}"), format!("{exact:?}"), "{shown:?}");
            fast.end
        }
        (Some(_), _) => panic!("only the fast path completes the request line of {shown:?}"),
        (None, Scan::Complete(exact)) => exact.end,
        (None, _) => return,
    };
    loop {
        let fast = fast_path::scan_header_line(input, next, underscores);
        let Scan::Complete(exact) = header_line::scan_header_line(input, next, underscores) else {
            assert_eq!(fast, None, "{shown:?} at {next}");
            return;
        };
        if let Some(fast) = fast {
            assert_eq!(fast, exact, "{shown:?} at {next}");
        }
        if matches!(exact, Line::End { .. }) {
            return;
        }
        next = exact.lf() + 1;
    }
}

#[test]
fn fast_path_agrees_with_the_exact_scanners_on_generated_heads() {
    let limit_sets = limit_sets();
    let mut rng = TestRng::new(0xfa57);
    for round in 0..60_000 {
        let input = generate_head(&mut rng);
        let limits = &limit_sets[round % limit_sets.len()];
        check_agree(&input, limits);
        if round % 64 == 0 {
            // Every prefix too, as a client sending the head in pieces would.
            let _ = parse_checked(&input, limits);
        }
    }
}

#[test]
fn fast_path_agrees_with_the_exact_scanners_on_changed_common_heads() {
    let heads: [&[u8]; 4] = [
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1:18500\r\n\r\n",
        b"POST /api/v1/items?page=2 HTTP/1.1\r\nHost: api.example.com:8443\r\n\
Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        b"HEAD /static/app.js HTTP/1.0\nUser-Agent: curl/8.5.0\nAccept: */*\n\n",
        b"GET /a%20b/./c//d?x#y HTTP/1.1\r\nHost: [::1]:80\r\nUser-Agent: Mozilla/5.0 \
(Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 Safari/605.1.15\r\n\r\n",
    ];
    let limit_sets = limit_sets();
    let mut rng = TestRng::new(0xc0de);
    for head in heads {
        let _ = parse_checked(head, &HeadLimits::default());
        for at in 0..head.len() {
            for byte in [
                0, b'\t', b'\n', b'\r', b' ', b'#', b'%', b'.', b'/', b':', b'?',
            ] {
                let mut changed = head.to_vec();
                changed[at] = byte;
                check_agree(&changed, &limit_sets[rng.below(limit_sets.len())]);
            }
        }
        for _ in 0..5_000 {
            let mut changed = head.to_vec();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(changed.len());
                changed[at] = rng.next_u64() as u8;
            }
            check_agree(&changed, &limit_sets[rng.below(limit_sets.len())]);
        }
    }
}
