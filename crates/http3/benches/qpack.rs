//! QPACK and the connection's hot paths, timed with std only: `cargo bench -p
//! portico-http3`. Prints nanoseconds per operation: a browser-like request head decoded
//! as most clients send it (static references and Huffman literals), then as an encoder
//! with a warm dynamic table sends it (mostly indexes), a response head encoded, and a
//! request through a `Connection` that stays open (HEADERS in, a response with a small
//! body out), as `portico-http2`'s bench times HTTP/2's.
// A bench reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use portico_http3::HeaderField;
use portico_http3::connection::{Config, Connection, Event};
use portico_http3::frame::{self, Header, Settings};
use portico_http3::qpack::{Decoder, DecoderSettings, Encoder};

const SETTINGS: DecoderSettings = DecoderSettings {
    max_table_capacity: 4096,
    max_blocked_streams: 16,
    max_field_section_size: 65_536,
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
    println!("{name:<48} {nanos:>8} ns");
}

fn main() {
    let request = browser_request();
    let static_only = Encoder::new(0).encode_section(0, &request);

    // A warm dynamic table: the fields inserted and acknowledged, then referenced.
    let mut encoder = Encoder::new(4096);
    encoder.set_capacity(4096).expect("capacity");
    let mut decoder = Decoder::new(SETTINGS);
    let _ = encoder.encode_section(0, &request);
    decoder
        .receive_encoder_stream(&encoder.take_instructions())
        .expect("inserts");
    encoder
        .receive_decoder_stream(&decoder.take_instructions())
        .expect("increment");
    let indexed = encoder.encode_section(4, &request);
    println!(
        "request section: {} bytes static-only, {} bytes with a warm table",
        static_only.len(),
        indexed.len()
    );

    time(
        "decode browser request, static and literals",
        100_000,
        || {
            let mut decoder = Decoder::new(SETTINGS);
            black_box(decoder.decode_section(0, black_box(&static_only)).ok());
        },
    );
    time(
        "decode browser request, warm dynamic table",
        100_000,
        || {
            black_box(decoder.decode_section(4, black_box(&indexed)).ok());
            decoder.take_instructions();
        },
    );
    let response = [
        HeaderField::new(":status", "200"),
        HeaderField::new("server", "portico"),
        HeaderField::new("date", "Wed, 25 Nov 2026 21:00:00 GMT"),
        HeaderField::new("content-type", "text/html"),
        HeaderField::new("content-length", "612"),
        HeaderField::new("last-modified", "Tue, 24 Nov 2026 10:00:00 GMT"),
        HeaderField::new("etag", "\"6564a8a0-264\""),
        HeaderField::new("accept-ranges", "bytes"),
    ];
    let mut response_encoder = Encoder::new(0);
    time("encode response head, static and literals", 100_000, || {
        black_box(response_encoder.encode_section(0, black_box(&response)));
    });

    connection_round_trip(&request, &response);
}

/// One request in, one response out, on a connection that stays open (the client encodes
/// each head afresh, with the static table and literals, as most clients send them).
fn connection_round_trip(request: &[HeaderField], response: &[HeaderField]) {
    let mut connection = Connection::new(Config::default());
    let mut control = vec![frame::STREAM_CONTROL as u8];
    Settings::default().encode(&mut control);
    connection.receive(2, &control, false).expect("control");
    while connection.poll_output().is_some() {}
    let mut client = Encoder::new(0);
    let mut stream_id = 0;
    time(
        "connection: request in, 612-byte response out",
        100_000,
        || {
            let section = client.encode_section(stream_id, request);
            let mut bytes = Vec::with_capacity(section.len() + 4);
            Header::encode(frame::HEADERS, section.len() as u64, &mut bytes);
            bytes.extend_from_slice(&section);
            connection
                .receive(stream_id, &bytes, true)
                .expect("request");
            while let Some(event) = connection.poll_event() {
                if let Event::Finished { stream_id } = event {
                    connection
                        .send_headers(stream_id, response, false)
                        .expect("head");
                    connection
                        .send_data(stream_id, &[b'x'; 612], true)
                        .expect("body");
                }
            }
            while let Some(output) = connection.poll_output() {
                black_box(output);
            }
            stream_id += 4;
        },
    );
}
