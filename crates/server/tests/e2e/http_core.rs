//! The core of HTTP/1.x serving: pipelining, versions, methods, HEAD, `Expect`, error pages,
//! `server_tokens`, `worker_connections` and `multi_accept`.

use std::time::Duration;

use crate::support::{Client, Ending, Instance, PATIENCE, get, get_keepalive, wait_until};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One server that answers `uri=$uri` for everything.
const ECHO_URI: &str = "server {
    listen 127.0.0.1:8080;
    location / {
        return 200 \"uri=$uri\\n\";
    }
}";

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write(
        "GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n\
         GET /b HTTP/1.1\r\nHost: localhost\r\n\r\n\
         GET /c HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    for (path, connection) in [("/a", "keep-alive"), ("/b", "keep-alive"), ("/c", "close")] {
        let response = client.read_response();
        assert_eq!(response.status, 200);
        assert_eq!(response.body_text(), format!("uri={path}\n"));
        assert_eq!(response.header("Connection"), Some(connection));
    }
    assert_eq!(client.wait_closed(), (Ending::Closed, Vec::new()));
}

#[test]
fn keepalive_session_serves_requests_one_by_one() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    for index in 0..5 {
        let response = client.request(get_keepalive(&format!("/{index}")));
        assert_eq!(response.body_text(), format!("uri=/{index}\n"));
        assert!(response.keeps_alive());
    }
}

#[test]
fn http10_closes_by_default() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    let response = client.request("GET /x HTTP/1.0\r\n\r\n");
    assert_eq!(response.version, "HTTP/1.1");
    assert_eq!(response.header("Connection"), Some("close"));
    assert_eq!(response.body_text(), "uri=/x\n");
    assert_eq!(client.wait_closed().0, Ending::Closed);
}

#[test]
fn http10_keepalive_is_honoured() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    let response = client.request("GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(response.header("Connection"), Some("keep-alive"));
    let response = client.request("GET /2 HTTP/1.0\r\n\r\n");
    assert_eq!(response.body_text(), "uri=/2\n");
    assert_eq!(response.header("Connection"), Some("close"));
    assert_eq!(client.wait_closed().0, Ending::Closed);
}

#[test]
fn http09_simple_request_gets_the_body_only() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write("GET /simple\r\n");
    assert_eq!(client.read_to_end(), b"uri=/simple\n");
}

#[test]
fn head_has_the_headers_of_get_and_no_body() {
    let server = Instance::http(ECHO_URI);
    let get_response = server.get("/head");
    let mut client = server.connect();
    // A GET right behind the HEAD proves that no body bytes follow the HEAD's headers.
    client.write(
        "HEAD /head HTTP/1.1\r\nHost: localhost\r\n\r\n\
         GET /next HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    let head_response = client.read_head_response();
    assert_eq!(head_response.status, 200);
    assert_eq!(
        head_response.header("Content-Length"),
        get_response.header("Content-Length")
    );
    assert_eq!(
        head_response.header("Content-Type"),
        get_response.header("Content-Type")
    );
    assert_eq!(client.read_response().body_text(), "uri=/next\n");
}

#[test]
fn expect_100_continue() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write("POST /upload HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    let interim = client.read_response();
    assert_eq!(interim.status, 100);
    assert_eq!(interim.raw, b"HTTP/1.1 100 Continue\r\n\r\n");
    client.write("hello");
    let response = client.read_response();
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "uri=/upload\n");
}

#[test]
fn expect_100_continue_is_not_sent_to_http10() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write("POST /upload HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello");
    let response = client.read_response();
    assert_eq!(response.status, 200);
    assert!(!String::from_utf8_lossy(&response.raw).contains("100 Continue"));
}

#[test]
fn malformed_request_lines_are_rejected() {
    let server = Instance::http(ECHO_URI);
    let cases = [
        "GET\r\n\r\n",
        "GET / HTTP/1.1 extra\r\nHost: localhost\r\n\r\n",
        "GET x HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "GET / HTTX/1.1\r\nHost: localhost\r\n\r\n",
        " GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "GET / HTTP/1.1\r\n: no name\r\nHost: localhost\r\n\r\n",
        "G\x01T / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    ];
    for request in cases {
        let mut client = server.connect();
        let response = client.request(request);
        assert_eq!(response.status, 400, "for {request:?}");
        assert_eq!(
            response.header("Connection"),
            Some("close"),
            "for {request:?}"
        );
        assert_eq!(client.wait_closed().1, b"", "for {request:?}");
    }
}

#[test]
fn lowercase_method_is_rejected() {
    let server = Instance::http(ECHO_URI);
    assert_eq!(
        server
            .request("get / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .status,
        400
    );
}

/// A client speaking another protocol (here the start of a uwsgi packet, which has no line
/// end) gets its 400 without having to send a line end, as from nginx.
#[test]
fn binary_bytes_without_a_line_end_are_rejected_at_once() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect();
    client.write(b"\x00\x2a\x00\x00\x0e\x00REQUEST_METHOD\x03\x00GET");
    let response = client.read_response();
    assert_eq!(response.status, 400);
    assert_eq!(response.header("Connection"), Some("close"));
    server.wait_for_error_log("client sent invalid method while reading client request line");
}

#[test]
fn unknown_uppercase_method_is_served() {
    let server = Instance::http(ECHO_URI);
    let response =
        server.request("FOO /m HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "uri=/m\n");
}

#[test]
fn trace_is_not_allowed() {
    let server = Instance::http(ECHO_URI);
    let response = server.request("TRACE / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(response.status, 405);
    assert_eq!(response.reason, "Not Allowed");
    assert_eq!(response.header("Connection"), Some("close"));
}

#[test]
fn unsupported_http_version() {
    let server = Instance::http(ECHO_URI);
    let response = server.request("GET / HTTP/2.0\r\nHost: localhost\r\n\r\n");
    assert_eq!(response.status, 505);
    assert_eq!(response.reason, "HTTP Version Not Supported");
}

#[test]
fn error_page_shape() {
    let server = Instance::http("server { listen 127.0.0.1:8080; location / { return 404; } }");
    let response = server.get("/");
    assert_eq!(response.status, 404);
    assert_eq!(response.reason, "Not Found");
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    let body = format!(
        "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n\
         <center><h1>404 Not Found</h1></center>\r\n<hr><center>portico/{VERSION}</center>\r\n\
         </body>\r\n</html>\r\n"
    );
    assert_eq!(response.body_text(), body);
    assert_eq!(response.content_length(), Some(body.len()));
}

#[test]
fn response_head_shape() {
    let server = Instance::http(ECHO_URI);
    let response = server.request(get_keepalive("/"));
    let names: Vec<&str> = response
        .headers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "Server",
            "Date",
            "Content-Type",
            "Content-Length",
            "Connection"
        ]
    );
    assert_eq!(
        response.header("Server"),
        Some(format!("portico/{VERSION}").as_str())
    );
    let date = response.header("Date").unwrap();
    assert!(
        crate::support::log::matches(
            r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$",
            date
        ),
        "Date: {date}"
    );
}

#[test]
fn server_tokens() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            location /on { server_tokens on; return 404; }
            location /off { server_tokens off; return 404; }
            location /build { server_tokens build; return 404; }
        }",
    );
    let on = server.get("/on");
    assert_eq!(
        on.header("Server"),
        Some(format!("portico/{VERSION}").as_str())
    );
    assert!(
        on.body_text()
            .contains(&format!("<hr><center>portico/{VERSION}</center>"))
    );
    let off = server.get("/off");
    assert_eq!(off.header("Server"), Some("portico"));
    assert!(off.body_text().contains("<hr><center>portico</center>"));
    let build = server.get("/build");
    let header = build.header("Server").unwrap();
    assert!(
        header.starts_with(&format!("portico/{VERSION}")),
        "Server: {header}"
    );
}

#[test]
fn worker_connections_limit() {
    // As in nginx, the listening socket takes one of the worker's connections: 3 leaves
    // room for 2 clients.
    let server = Instance::builder(
        "worker_processes 1;
        events {
            worker_connections 3;
        }
        http {
            server { listen 127.0.0.1:8080; location / { return 200 \"ok\\n\"; } }
        }",
    )
    .expect_log("[alert]")
    .start();
    let mut first = server.connect();
    assert_eq!(first.request(get_keepalive("/1")).status, 200);
    let mut second = server.connect();
    assert_eq!(second.request(get_keepalive("/2")).status, 200);
    let mut third = server.connect().with_timeout(PATIENCE);
    let _ = third.try_write(get("/3"));
    third.expect_closed_without_response();
    server.wait_for_error_log("3 worker_connections are not enough");
    drop(first);
    drop(second);
    // Once the others are gone, slots free up again.
    wait_until("a free connection slot", PATIENCE, || {
        let mut client = server.connect();
        client.try_write(get("/4")).is_ok()
            && client
                .try_read_response()
                .is_ok_and(|response| response.status == 200)
    });
}

#[test]
fn multi_accept_on_serves_a_burst() {
    let server = Instance::builder(
        "worker_processes 1;
        events {
            multi_accept on;
        }
        http {
            server { listen 127.0.0.1:8080; location / { return 200 \"ok\\n\"; } }
        }",
    )
    .start();
    let mut clients: Vec<Client> = (0..50).map(|_| server.connect()).collect();
    for (index, client) in clients.iter_mut().enumerate() {
        client.write(get(&format!("/{index}")));
    }
    for client in &mut clients {
        assert_eq!(client.read_response().status, 200);
    }
}

#[test]
fn connection_close_from_the_client_is_honoured() {
    let server = Instance::http(ECHO_URI);
    let mut client = server.connect().with_timeout(Duration::from_secs(5));
    let response = client.request(get("/"));
    assert_eq!(response.header("Connection"), Some("close"));
    assert_eq!(client.wait_closed().0, Ending::Closed);
}
