//! An upstream's `101 Switching Protocols` (WebSocket behind the proxy): the client gets
//! the 101 with `Connection: upgrade`, and then bytes go both ways as they come, those
//! the client sent right after its request included, until a side closes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use crate::support::Instance;

/// Reads until `needle` has arrived (or the peer closes); everything read.
fn read_until(stream: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !seen.windows(needle.len()).any(|window| window == needle) {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(count) => seen.extend_from_slice(&chunk[..count]),
        }
    }
    seen
}

#[test]
fn an_upgraded_connection_carries_bytes_both_ways() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_http_version 1.1;
                proxy_set_header Upgrade $http_upgrade;
                proxy_set_header Connection upgrade;
                proxy_read_timeout 5s;
            }
        }",
    );
    let listener = TcpListener::bind(("127.0.0.1", builder.port(8081))).expect("bind");
    let upstream = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let request = read_until(&mut stream, b"\r\n\r\n");
        stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nready;")
            .expect("write 101");
        // Echo upper-cased until the client's "bye".
        let mut seen = read_until(&mut stream, b"bye");
        seen.make_ascii_uppercase();
        stream.write_all(&seen).expect("echo");
        String::from_utf8_lossy(&request).into_owned()
    });
    let server = builder.start();
    let mut client = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // The first words come in the same write as the request.
    client
        .write_all(b"GET /chat HTTP/1.1\r\nHost: localhost\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nearly,")
        .expect("request");
    let head = read_until(&mut client, b"ready;");
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(head.contains("\r\nConnection: upgrade\r\n"), "{head}");
    assert!(head.contains("\r\nUpgrade: echo\r\n"), "{head}");
    client.write_all(b"later,bye").expect("more");
    let echoed = read_until(&mut client, b"BYE");
    assert_eq!(echoed, b"EARLY,LATER,BYE");
    let request = upstream.join().expect("upstream");
    assert!(request.contains("Upgrade: echo\r\n"), "{request}");
    assert!(request.contains("Connection: upgrade\r\n"), "{request}");
}

#[test]
fn a_101_the_client_did_not_ask_for_is_no_tunnel() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_http_version 1.1;
                proxy_set_header Upgrade $http_upgrade;
                proxy_set_header Connection upgrade;
            }
        }",
    );
    let listener = TcpListener::bind(("127.0.0.1", builder.port(8081))).expect("bind");
    let upstream = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let request = read_until(&mut stream, b"\r\n\r\n");
        // An upstream that switches whatever it is asked.
        stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nhandshaked")
            .expect("write 101");
        String::from_utf8_lossy(&request).into_owned()
    });
    let server = builder.start();
    let mut client = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n\r\n")
        .expect("request");
    let mut answer = Vec::new();
    let _ = client.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(answer.starts_with("HTTP/1.1 101 "), "{answer}");
    assert!(
        !answer.contains("handshaked"),
        "no tunnel: the head alone, then the connection closes: {answer}"
    );
    let request = upstream.join().expect("upstream thread");
    assert!(
        !request.contains("Upgrade:"),
        "no Upgrade was asked: {request}"
    );
}
