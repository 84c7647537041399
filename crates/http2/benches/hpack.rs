//! HPACK and the connection's hot paths, timed with std only: `cargo bench -p portico-http2`.
//! Prints nanoseconds per operation: a browser-like request block decoded (first on a fresh
//! context, all literals with Huffman; then as the second request on a warm one, mostly
//! indexes), Huffman alone, a response head encoded, and a whole request through a
//! `Connection` (HEADERS in, a response with a small body framed out).
// A bench reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use portico_http2::connection::{Config, Connection, Event, PREFACE};
use portico_http2::frame::Frame;
use portico_http2::hpack::{DecodeLimits, Decoder, Encoder, HeaderField, huffman};

const LIMITS: DecodeLimits = DecodeLimits {
    max_field_size: 8192,
    max_list_size: 65_536,
};

fn browser_request() -> Vec<HeaderField> {
    [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "www.example.com"),
        (":path", "/static/app/main.4f3a9c.js?v=12&lang=en"),
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0",
        ),
        (
            "accept",
            "text/javascript, application/javascript, */*; q=0.01",
        ),
        ("accept-language", "en-US,en;q=0.9"),
        ("accept-encoding", "gzip, deflate, br"),
        ("referer", "https://www.example.com/account/settings"),
        (
            "cookie",
            "session=8f14e45fceea167a5a36dedd4bea2543; theme=dark; consent=1",
        ),
    ]
    .iter()
    .map(|&(name, value)| HeaderField::new(name, value))
    .collect()
}

fn time(name: &str, iterations: u32, mut operation: impl FnMut()) {
    for _ in 0..iterations / 10 {
        operation();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        operation();
    }
    let nanos = start.elapsed().as_nanos() / u128::from(iterations);
    println!("{name:<44} {nanos:>8} ns");
}

fn main() {
    let request = browser_request();
    let mut first = Vec::new();
    let mut encoder = Encoder::new();
    encoder.encode(&request, &mut first);
    let mut second = Vec::new();
    encoder.encode(&request, &mut second);
    println!(
        "request block: {} bytes cold, {} bytes warm",
        first.len(),
        second.len()
    );

    time("decode browser request, cold context", 100_000, || {
        let mut decoder = Decoder::new(4096);
        black_box(decoder.decode(black_box(&first), LIMITS).ok());
    });
    let mut warm = Decoder::new(4096);
    let _ = warm.decode(&first, LIMITS);
    time("decode browser request, warm context", 100_000, || {
        black_box(warm.decode(black_box(&second), LIMITS).ok());
    });
    let text =
        b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0";
    let mut coded = Vec::new();
    huffman::encode(text, &mut coded);
    time("huffman decode 84-byte user-agent", 200_000, || {
        let mut out = Vec::with_capacity(128);
        black_box(huffman::decode(black_box(&coded), &mut out).ok());
    });
    time("huffman encode 84-byte user-agent", 200_000, || {
        let mut out = Vec::with_capacity(128);
        huffman::encode(black_box(text), &mut out);
        black_box(out);
    });
    let response = [
        HeaderField::new(":status", "200"),
        HeaderField::new("server", "portico"),
        HeaderField::new("date", "Wed, 25 Nov 2026 21:00:00 GMT"),
        HeaderField::new("content-type", "text/html"),
        HeaderField::new("content-length", "612"),
    ];
    let mut response_encoder = Encoder::new();
    time("encode response head, warm context", 200_000, || {
        let mut out = Vec::with_capacity(64);
        response_encoder.encode(black_box(&response), &mut out);
        black_box(out);
    });
    connection_round_trip(&request, &response);
}

/// One request in, one response out, on a connection that stays open.
fn connection_round_trip(request: &[HeaderField], response: &[HeaderField]) {
    let mut connection = Connection::new(Config::default());
    let mut wire = PREFACE.to_vec();
    Frame::Settings {
        ack: false,
        params: &[],
    }
    .write(&mut wire);
    let _ = connection.receive(&wire);
    let written = connection.output_len();
    connection.advance_output(written);
    let mut client = Encoder::new();
    let mut stream_id = 1;
    time(
        "connection: request in, 612-byte response out",
        100_000,
        || {
            let mut block = Vec::new();
            client.encode(request, &mut block);
            let mut bytes = Vec::new();
            let headers = Frame::Headers {
                stream_id,
                priority: None,
                fragment: &block,
                padding: None,
                end_stream: true,
                end_headers: true,
            };
            headers.write(&mut bytes);
            let _ = connection.receive(&bytes);
            while let Some(event) = connection.poll_event() {
                if let Event::Headers { stream_id, .. } = event {
                    let _ = connection.send_headers(stream_id, response, false);
                    let _ = connection.send_data(stream_id, &[b'x'; 612], true);
                }
            }
            connection.flush();
            let written = connection.output_len();
            connection.advance_output(written);
            stream_id += 2;
        },
    );
}
