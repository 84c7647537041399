//! Timeouts of the HTTP/1 request path, on the paused clock: each waits its configured
//! time in test time, none in real time.

use std::time::Duration;

use super::{Server, read_until_closed, run, send};

/// How long a test lets pass (in test time) before it calls the connection stuck.
const LONG: Duration = Duration::from_secs(3600);

#[test]
fn client_header_timeout_closes_a_partial_head_without_a_response() {
    run(async {
        let server = Server::new(
            "server { listen 127.0.0.1:8080; client_header_timeout 30s; location / { return 200 ok; } }",
        );
        let mut client = server.connect();
        let started = tokio::time::Instant::now();
        send(&mut client, b"GET / HTTP/1.1\r\nHost: localhost\r\n").await;
        let (received, closed) = read_until_closed(&mut client, LONG).await;
        let waited = started.elapsed();
        assert!(closed, "the connection stays open");
        assert!(
            received.is_empty(),
            "{:?}",
            String::from_utf8_lossy(&received)
        );
        assert!(
            (Duration::from_secs(30)..Duration::from_secs(31)).contains(&waited),
            "closed after {waited:?}"
        );
        let log = server.error_log();
        assert!(
            log.contains(
                "client timed out (110: Connection timed out) while reading client request \
                 headers, client: unix:, server: , request: \"GET / HTTP/1.1\", host: \"localhost\""
            ),
            "{log}"
        );
    });
}

#[test]
fn keepalive_timeout_closes_an_idle_connection_after_its_request() {
    run(async {
        let server = Server::new(
            "server { listen 127.0.0.1:8080; keepalive_timeout 75s; location / { return 200 ok; } }",
        );
        let mut client = server.connect();
        send(&mut client, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
        let started = tokio::time::Instant::now();
        let (received, closed) = read_until_closed(&mut client, LONG).await;
        let waited = started.elapsed();
        assert!(closed);
        let text = String::from_utf8_lossy(&received);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Connection: keep-alive\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nok"), "{text}");
        assert!(
            (Duration::from_secs(75)..Duration::from_secs(76)).contains(&waited),
            "closed after {waited:?}"
        );
    });
}

#[test]
fn client_body_timeout_ends_the_request_silently_with_408() {
    run(async {
        let server = Server::new(
            "log_format st '$status $request_length';
            server {
                listen 127.0.0.1:8080;
                client_body_timeout 20s;
                access_log logs/st.log st;
                location / { return 200 ok; }
                location /read { client_body_buffer_size 1k; return 200 ok; }
                location /body { proxy_pass http://127.0.0.1:1; }
            }",
        );
        let mut client = server.connect();
        let started = tokio::time::Instant::now();
        send(
            &mut client,
            b"POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nabc",
        )
        .await;
        let (received, closed) = read_until_closed(&mut client, LONG).await;
        let waited = started.elapsed();
        assert!(closed);
        // nginx sends nothing: 408 is the status it logs.
        assert!(
            received.is_empty(),
            "{:?}",
            String::from_utf8_lossy(&received)
        );
        assert!(
            (Duration::from_secs(20)..Duration::from_secs(21)).contains(&waited),
            "closed after {waited:?}"
        );
        assert!(!server.error_log().contains("client timed out"));
    });
}

#[test]
fn client_header_timeout_applies_to_a_new_connection_that_sends_nothing() {
    run(async {
        let server = Server::new(
            "server { listen 127.0.0.1:8080; client_header_timeout 30s; location / { return 200 ok; } }",
        );
        let mut client = server.connect();
        let started = tokio::time::Instant::now();
        let (received, closed) = read_until_closed(&mut client, LONG).await;
        let waited = started.elapsed();
        assert!(closed && received.is_empty());
        assert!(
            (Duration::from_secs(30)..Duration::from_secs(31)).contains(&waited),
            "closed after {waited:?}"
        );
        let log = server.error_log();
        assert!(
            log.contains("[info]")
                && log.contains(
                    "client timed out (110: Connection timed out) while waiting for request, \
                     client: unix:, server: "
                ),
            "{log}"
        );
    });
}

#[test]
fn send_timeout_closes_a_client_that_does_not_read() {
    run(async {
        let server = Server::new("server { listen 127.0.0.1:8080; send_timeout 60s; }");
        let size = 16 * 1024 * 1024;
        let root = server.prefix_path().join("html");
        std::fs::create_dir_all(&root).expect("a root");
        std::fs::write(root.join("big.bin"), vec![b'z'; size]).expect("a file");
        let mut client = server.connect();
        send(
            &mut client,
            b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n",
        )
        .await;
        // The client reads nothing for two minutes of test time...
        tokio::time::sleep(Duration::from_secs(120)).await;
        // ...by then the server has given up and closed: what was sent is in the socket.
        let (received, closed) = read_until_closed(&mut client, LONG).await;
        assert!(closed);
        assert!(received.len() < size, "the whole file arrived");
        assert!(
            server.error_log().contains(
                "client timed out (110: Connection timed out) while sending response to client"
            ),
            "{}",
            server.error_log()
        );
    });
}
