//! `proxy_http_version 2`: a front server proxying over HTTP/2 (h2c) to a back server of
//! the same instance that speaks HTTP/2, which proxies on to a scripted HTTP/1 upstream:
//! requests arrive as HTTP/2 streams, bodies go through, `proxy_pass_trailers` passes the
//! back server's trailers, a HEAD's answer and kept connections carry the next requests.

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

const CONFIG: &str = "
    upstream back {
        server 127.0.0.1:8081;
        keepalive 2;
    }
    server {
        listen 127.0.0.1:8080;
        location / {
            proxy_pass http://back;
            proxy_http_version 2;
        }
        location /with/ {
            proxy_pass http://back/;
            proxy_http_version 2;
            proxy_pass_trailers on;
        }
    }
    server {
        listen 127.0.0.1:8081;
        http2 on;
        # The front's kept connection to this server closes only when the instance
        # stops: do not linger for it then.
        lingering_timeout 100ms;
        add_header X-Back-Protocol $server_protocol;
        add_header X-Back-Connection $connection;
        location / {
            return 200 \"method=$request_method uri=$request_uri\";
        }
        location /trailers/ {
            add_trailer X-Sum 42;
            return 200 \"with trailers\";
        }
        location /post {
            proxy_pass http://127.0.0.1:8082;
        }
    }";

/// The instance and the HTTP/1 upstream behind the back server (nominal port 8082),
/// which answers every request with the body it received.
fn start() -> (Instance, MockUpstream) {
    let mut builder = Instance::http_builder(CONFIG);
    let port = builder.port(8082);
    let upstream = MockUpstream::start(port, |mut conn| {
        while let Some(request) = conn.read_request() {
            let text = String::from_utf8_lossy(&request).into_owned();
            let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
            conn.write(format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ));
        }
    });
    (builder.start(), upstream)
}

#[test]
fn requests_go_upstream_as_http2_streams() {
    let (server, _upstream) = start();
    let response = server.get("/page?x=1");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "method=GET uri=/page?x=1");
    assert_eq!(response.header("X-Back-Protocol"), Some("HTTP/2.0"));

    let mut client = server.connect();
    client.write("HEAD /page HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    assert_eq!(head.content_length(), Some("method=HEAD uri=/page".len()));
    assert!(
        client.read_to_end().is_empty(),
        "a HEAD's answer has no body"
    );
}

#[test]
fn a_request_body_goes_through_and_kept_connections_carry_the_next_requests() {
    let (server, upstream) = start();
    let body = "x".repeat(100_000);
    let response = server.request(format!(
        "POST /post HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text().len(), body.len());
    assert!(upstream.requests()[0].ends_with(&body));

    // One HTTP/2 connection between the servers carries the next requests, in turn.
    let connections: Vec<String> = (0..3)
        .map(|_| {
            let response = server.get("/again");
            assert_eq!(response.status, 200);
            response
                .header("X-Back-Connection")
                .expect("the back server's connection number")
                .to_owned()
        })
        .collect();
    assert!(
        connections.iter().all(|number| *number == connections[0]),
        "{connections:?}"
    );
}

#[test]
fn proxy_pass_trailers_passes_the_upstreams_trailers() {
    let (server, _upstream) = start();
    let response =
        server.request("GET /with/trailers/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "with trailers");
    assert!(response.is_chunked(), "{}", response.head_text());
    assert_eq!(response.trailer("X-Sum"), Some("42"));
    // Without the directive, trailers stop at the proxy.
    let response =
        server.request("GET /trailers/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.trailer("X-Sum"), None);
}
