//! A request encoded by the crate to an SCGI server written here (its netstring read by
//! hand, not by the crate), which answers with a CGI head or an HTTP status line and
//! closes; the answer read by the crate's head parser.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::thread::JoinHandle;

use portico_cgi::scgi::encode_request;

use crate::support::{PATIENCE, TempDir, exchange_until_close, read_answer_head};

/// Serves `connections` requests on `listener`, one per connection. The answer's body lists
/// the headers it read (`NAME=VALUE` lines), then the request body.
fn serve(listener: UnixListener, connections: usize) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for _ in 0..connections {
            let (stream, _) = listener.accept().expect("accept");
            stream
                .set_read_timeout(Some(PATIENCE))
                .expect("read timeout");
            answer(stream);
        }
    })
}

fn answer(stream: UnixStream) {
    let mut reader = BufReader::new(stream);
    let mut length = Vec::new();
    reader
        .read_until(b':', &mut length)
        .expect("read the netstring length");
    let length: usize = std::str::from_utf8(&length[..length.len() - 1])
        .expect("ascii")
        .parse()
        .expect("a decimal length");
    let mut netstring = vec![0; length + 1];
    reader
        .read_exact(&mut netstring)
        .expect("read the netstring");
    assert_eq!(
        netstring.pop(),
        Some(b','),
        "the netstring ends with a comma"
    );
    let strings: Vec<&[u8]> = netstring.split(|&byte| byte == 0).collect();
    let (last, strings) = strings.split_last().expect("NUL-ended strings");
    assert!(
        last.is_empty() && strings.len() % 2 == 0,
        "names and values, each NUL-ended"
    );
    let headers: Vec<(String, String)> = strings
        .chunks(2)
        .map(|pair| {
            (
                String::from_utf8_lossy(pair[0]).into(),
                String::from_utf8_lossy(pair[1]).into(),
            )
        })
        .collect();
    assert_eq!(
        headers[0].0, "CONTENT_LENGTH",
        "the SCGI specification wants it first"
    );
    let mut body = vec![0; headers[0].1.parse().expect("a decimal CONTENT_LENGTH")];
    reader.read_exact(&mut body).expect("read the body");

    let uri = headers
        .iter()
        .find(|(name, _)| name == "REQUEST_URI")
        .map(|(_, value)| value.as_str());
    let mut out = match uri {
        Some("/http") => b"HTTP/1.0 200 OK\r\nX-Style: http\r\n\r\n".to_vec(),
        _ => b"Status: 202 Accepted\r\nContent-Type: text/plain\r\n\r\n".to_vec(),
    };
    for (name, value) in &headers {
        out.extend_from_slice(format!("{name}={value}\n").as_bytes());
    }
    out.extend_from_slice(&body);
    let mut stream = reader.into_inner();
    stream.write_all(&out).expect("answer");
}

#[test]
fn scgi_round_trip_with_cgi_and_http_style_answers() {
    let dir = TempDir::new("scgi");
    let socket = dir.join("scgi.sock");
    let server = serve(UnixListener::bind(&socket).expect("bind"), 2);

    let body = b"name=portico&x=1";
    let headers = [
        ("SCGI", "1"),
        ("REQUEST_METHOD", "POST"),
        ("REQUEST_URI", "/cgi"),
    ];
    let mut request = Vec::new();
    encode_request(&mut request, body.len() as u64, headers).expect("no NUL");
    request.extend_from_slice(body);
    let head = read_answer_head(&exchange_until_close(&socket, &request));
    assert_eq!(head.status, 202);
    assert_eq!(head.status_line.as_deref(), Some(&b"202 Accepted"[..]));
    assert!(head.has_field("Content-Type", "text/plain"));
    let expected =
        "CONTENT_LENGTH=16\nSCGI=1\nREQUEST_METHOD=POST\nREQUEST_URI=/cgi\nname=portico&x=1";
    assert_eq!(String::from_utf8_lossy(&head.body), expected);

    let mut request = Vec::new();
    encode_request(&mut request, 0, [("SCGI", "1"), ("REQUEST_URI", "/http")]).expect("no NUL");
    let head = read_answer_head(&exchange_until_close(&socket, &request));
    assert_eq!(
        (head.status, head.status_line.as_deref()),
        (200, Some(&b"200 OK"[..]))
    );
    assert!(head.has_field("X-Style", "http"));
    assert_eq!(
        String::from_utf8_lossy(&head.body),
        "CONTENT_LENGTH=0\nSCGI=1\nREQUEST_URI=/http\n"
    );
    server.join().expect("the server checked every request");
}
