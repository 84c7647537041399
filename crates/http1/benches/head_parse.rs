//! Head parsing and chunked decoding, timed with std only: `cargo bench -p portico-http1`.
//! Prints nanoseconds per operation for the fast path, the exact scanners alone (the
//! reference, and the path partial heads and unusual lines take) and the chunked decoder.
// A bench reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use portico_http1::chunked::ChunkedDecoder;
use portico_http1::request::{
    self, HeadLimits, Progress, RequestHead, RequestInfo, parse_head, parse_head_exact,
};

const BROWSER_HEAD: &[u8] = b"GET /static/app/main.4f3a9c.js?v=12&lang=en HTTP/1.1\r\n\
Host: www.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0 Safari/537.36\r\n\
Accept: text/javascript, application/javascript, */*; q=0.01\r\n\
Accept-Language: en-US,en;q=0.9\r\n\
Accept-Encoding: gzip, deflate, br\r\n\
Referer: https://www.example.com/account/settings\r\n\
Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark; consent=1\r\n\
Connection: keep-alive\r\n\
If-None-Match: \"5d8c72a5-1a2b\"\r\n\
If-Modified-Since: Sat, 21 Nov 2026 21:00:00 GMT\r\n\r\n";

const SHORT_HEAD: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// What `wrk` sends: only `Host`, with an IP address and a port.
const WRK_HEAD: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:18500\r\n\r\n";

fn time(name: &str, iterations: u32, mut operation: impl FnMut()) {
    for _ in 0..iterations / 10 {
        operation();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        operation();
    }
    let nanos = start.elapsed().as_nanos() / u128::from(iterations);
    println!("{name:<44} {nanos:>8} ns/op");
}

type Parser =
    fn(&[u8], &HeadLimits, &mut RequestHead) -> Result<Progress, portico_http1::RequestError>;

fn bench_head(name: &str, input: &[u8], parser: Parser) {
    let limits = HeadLimits::default();
    let mut head = RequestHead::default();
    let mut info = RequestInfo::default();
    time(name, 200_000, || {
        let progress = parser(black_box(input), &limits, &mut head);
        assert_eq!(progress, Ok(Progress::Complete));
        request::analyze(input, &head, &mut info).expect("the bench heads are valid");
        black_box(&info);
    });
}

fn bench_parse_only(name: &str, input: &[u8], parser: Parser) {
    let limits = HeadLimits::default();
    let mut head = RequestHead::default();
    time(name, 200_000, || {
        let progress = parser(black_box(input), &limits, &mut head);
        assert_eq!(progress, Ok(Progress::Complete));
        black_box(&head);
    });
}

fn main() {
    bench_parse_only("parse_head browser (fast path)", BROWSER_HEAD, parse_head);
    bench_parse_only(
        "parse_head browser (exact scanner)",
        BROWSER_HEAD,
        parse_head_exact,
    );
    let limits = HeadLimits::default();
    let mut head = RequestHead::default();
    parse_head(BROWSER_HEAD, &limits, &mut head).expect("valid head");
    let mut info = RequestInfo::default();
    time("analyze browser", 200_000, || {
        request::analyze(black_box(BROWSER_HEAD), &head, &mut info).expect("valid head");
        black_box(&info);
    });
    bench_head(
        "parse_head+analyze browser (fast path)",
        BROWSER_HEAD,
        parse_head,
    );
    bench_head(
        "parse_head+analyze browser (exact scanner)",
        BROWSER_HEAD,
        parse_head_exact,
    );
    bench_head(
        "parse_head+analyze short (fast path)",
        SHORT_HEAD,
        parse_head,
    );
    bench_head(
        "parse_head+analyze short (exact scanner)",
        SHORT_HEAD,
        parse_head_exact,
    );
    bench_head("parse_head+analyze wrk (fast path)", WRK_HEAD, parse_head);
    bench_head(
        "parse_head+analyze wrk (exact scanner)",
        WRK_HEAD,
        parse_head_exact,
    );

    let mut body = Vec::new();
    for _ in 0..64 {
        body.extend_from_slice(b"400\r\n");
        body.extend(std::iter::repeat_n(b'x', 0x400));
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    time("chunked decode 64 KiB in 1 KiB chunks", 20_000, || {
        let mut decoder = ChunkedDecoder::new();
        let mut used = 0;
        while !decoder.is_done() {
            let decoded = decoder
                .decode(black_box(&body[used..]))
                .expect("valid body");
            used += decoded.consumed;
        }
        black_box(used);
    });
}
