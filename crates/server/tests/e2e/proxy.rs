//! The reverse proxy against scripted upstreams: what is sent upstream, how responses are
//! passed on in each framing, and nginx's answer to every kind of upstream failure.

use std::time::Duration;

use crate::support::cli::{assert_http_body_fails, test_http_body};
use crate::support::upstream::{MockUpstream, UpstreamConn};
use crate::support::{Client, Instance, PATIENCE, wait_until};

pub(crate) const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

/// A proxy whose config names the mock upstream as port 8081.
pub(crate) fn proxy_with(
    config: &str,
    script: impl Fn(UpstreamConn) + Send + Sync + 'static,
) -> (Instance, MockUpstream) {
    let mut builder = Instance::http_builder(config);
    let port = builder.port(8081);
    let upstream = MockUpstream::start(port, script);
    (builder.start(), upstream)
}

const SIMPLE: &str = "server {
    listen 127.0.0.1:8080;
    location / { proxy_pass http://127.0.0.1:8081; proxy_read_timeout 1s; }
    location /part/ { proxy_pass http://127.0.0.1:8081/other/; }
    location /set/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header User-Agent \"\";
        proxy_set_header X-Proxy-Host $proxy_host;
    }
}";

#[test]
fn the_request_upstream_follows_nginx() {
    let (server, upstream) = proxy_with(SIMPLE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let response = server.request(
        "GET /a/b?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\nConnection: keep-alive\r\nKeep-Alive\
            : 5\r\nTE: trailers\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "hello");
    let port = upstream.port;
    let request = &upstream.requests()[0];
    // The client's own target, HTTP/1.0, `Host: $proxy_host` and `Connection: close` first;
    // the client's hop-by-hop fields are not passed, its other fields are.
    assert!(
        request.starts_with(&format!(
            "GET /a/b?x=1 HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
        )),
        "{request}"
    );
    assert!(request.contains("User-Agent: t\r\n"), "{request}");
    assert!(
        !request.to_ascii_lowercase().contains("keep-alive: 5"),
        "{request}"
    );
    assert!(!request.contains("TE: trailers"), "{request}");
    assert!(!request.contains("example.com"), "{request}");
}

#[test]
fn a_uri_part_replaces_the_location_prefix() {
    let (server, upstream) = proxy_with(SIMPLE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    assert_eq!(server.get("/part/x%20y?q").status, 200);
    let request = &upstream.requests()[0];
    assert!(
        request.starts_with("GET /other/x%20y?q HTTP/1.0\r\n"),
        "{request}"
    );
}

#[test]
fn proxy_set_header_adds_replaces_and_removes() {
    let (server, upstream) = proxy_with(SIMPLE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let response = server.request(
        "GET /set/ HTTP/1.1\r\nHost: h\r\nUser-Agent: gone\r\nX-Forwarded-For: 10.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    let request = &upstream.requests()[0];
    let port = upstream.port;
    assert!(
        request.contains("X-Forwarded-For: 10.0.0.1, 127.0.0.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains(&format!("X-Proxy-Host: 127.0.0.1:{port}\r\n")),
        "{request}"
    );
    assert!(!request.contains("User-Agent"), "{request}");
    // The client's field of a name set by the proxy is not passed as well.
    assert_eq!(request.matches("X-Forwarded-For").count(), 1, "{request}");
}

#[test]
fn response_fields_are_filtered_and_the_status_line_kept() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write(
                "HTTP/1.1 299 Custom Reason\r\nServer: upstream\r\nDate: yesterday\r\nX-Pad: x\r\nX-Kept: yes\
                    \r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
            );
        }
    });
    let response = server.get("/");
    assert_eq!(response.status, 299);
    assert_eq!(response.reason, "Custom Reason");
    assert_eq!(response.header("X-Kept"), Some("yes"));
    assert!(
        response
            .header("Server")
            .is_some_and(|value| value != "upstream")
    );
    assert!(
        response
            .header("Date")
            .is_some_and(|value| value != "yesterday")
    );
    assert!(!response.has_header("X-Pad"));
    assert_eq!(response.body_text(), "ok");
}

#[test]
fn chunked_and_close_delimited_bodies_reach_the_client() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        let Some(request) = conn.read_request() else {
            return;
        };
        if request.starts_with(b"GET /chunked") {
            conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
            std::thread::sleep(Duration::from_millis(50));
            conn.write("6\r\n world\r\n0\r\n\r\n");
        } else {
            conn.write("HTTP/1.0 200 OK\r\n\r\nuntil ");
            std::thread::sleep(Duration::from_millis(50));
            conn.write("close");
            conn.close();
        }
    });
    let chunked = server.get("/chunked");
    assert_eq!(chunked.body_text(), "hello world");
    assert!(chunked.is_chunked());
    let close = server.get("/close");
    assert_eq!(close.body_text(), "until close");
    assert!(
        close.is_chunked(),
        "an HTTP/1.1 client gets the unknown length chunked"
    );
    let old = server.request("GET /close HTTP/1.0\r\nHost: x\r\n\r\n");
    assert_eq!(old.body_text(), "until close");
    assert!(!old.has_header("Content-Length"));
}

#[test]
fn a_slow_upstream_body_arrives_whole() {
    let body = "0123456789".repeat(100);
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (server, _upstream) = proxy_with(SIMPLE, move |mut conn| {
        if conn.read_request().is_some() {
            conn.write_slowly(answer.as_bytes(), 200, Duration::from_millis(20));
        }
    });
    let response = server.get("/slow");
    assert_eq!(response.body, body.as_bytes());
}

fn refused_with(answer: &'static str, log: &str) {
    let (server, _upstream) = proxy_with(SIMPLE, move |mut conn| {
        if conn.read_request().is_some() {
            conn.write(answer);
        }
    });
    let response = server.get("/bad");
    assert_eq!(response.status, 502, "{answer:?}");
    server.wait_for_error_log(log);
    // The server keeps serving.
    assert_eq!(server.get("/again").status, 502);
}

/// Current nginx refuses these; nginx 1.22 still passed some of them on.
#[test]
fn conflicting_or_invalid_framing_is_a_502() {
    refused_with(
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
        "upstream sent duplicate header line: \"Content-Length: 2\", previous value: \"Content-Length: 1\" whi\
            le reading response header from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "upstream sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time while reading res\
            ponse header from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        "upstream sent invalid \"Content-Length\" header: \"Content-Length: abc\" while reading response heade\
            r from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "upstream sent unknown \"Transfer-Encoding\": \"gzip\" while reading response header from upstream",
    );
    refused_with(
        "HTTP/1.1 200 OK\r\nBad Header Line\r\n\r\n",
        "upstream sent invalid header while reading response header from upstream",
    );
}

#[test]
fn an_upstream_closing_or_resetting_before_answering_is_a_502() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if let Some(request) = conn.read_request() {
            if request.starts_with(b"GET /reset") {
                conn.reset();
            } else {
                conn.close();
            }
        }
    });
    assert_eq!(server.get("/close").status, 502);
    server.wait_for_error_log(
        "upstream prematurely closed connection while reading response header from upstream",
    );
    assert_eq!(server.get("/reset").status, 502);
    server.wait_for_error_log("while reading response header from upstream, client: 127.0.0.1");
}

#[test]
fn a_stalled_upstream_times_out_with_504() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if conn.read_request().is_some() {
            std::thread::sleep(Duration::from_secs(3));
        }
    });
    let response = server.get("/stall");
    assert_eq!(response.status, 504);
    server.wait_for_error_log(
        "upstream timed out (110: Connection timed out) while reading response header from upstream",
    );
}

#[test]
fn a_client_leaving_while_the_upstream_thinks_ends_the_request_with_499() {
    let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::sync::Arc::clone(&closed);
    let mut builder = Instance::http_builder(
        "log_format st '$status $upstream_header_time';
         server {
             listen 127.0.0.1:8080;
             access_log logs/st.log st;
             location / { proxy_pass http://127.0.0.1:8081; }
         }",
    );
    let port = builder.port(8081);
    let _upstream = MockUpstream::start(port, move |mut conn| {
        if conn.read_request().is_some() && conn.wait_closed(Duration::from_secs(5)) {
            seen.store(true, std::sync::atomic::Ordering::Release);
        }
    });
    let server = builder.start();
    let mut client = server.connect();
    client.write("GET /think HTTP/1.1\r\nHost: x\r\n\r\n");
    std::thread::sleep(Duration::from_millis(200));
    drop(client);
    server.wait_for_line("logs/st.log", "499 -");
    server.wait_for_error_log(
        "epoll_wait() reported that client prematurely closed connection, \
         so upstream connection is closed too while sending request to upstream",
    );
    wait_until("the upstream connection to close", PATIENCE, || {
        closed.load(std::sync::atomic::Ordering::Acquire)
    });
}

#[test]
fn a_body_cut_short_closes_the_client_connection() {
    let (server, _upstream) = proxy_with(SIMPLE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
            conn.close();
        }
    });
    let mut client = server.connect();
    client.write("GET /short HTTP/1.1\r\nHost: x\r\n\r\n");
    let (_, received) = client.wait_closed();
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.ends_with("only ten b"), "{text}");
    server.wait_for_error_log("upstream prematurely closed connection while reading upstream");
}

#[test]
fn a_dead_upstream_is_a_502_and_the_next_server_is_tried() {
    let mut builder = Instance::http_builder(
        "upstream two { server 127.0.0.1:8082; server 127.0.0.1:8081; }
         log_format up '$upstream_addr $upstream_status';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / { proxy_pass http://two; }
             location /dead { proxy_pass http://127.0.0.1:8082; }
         }",
    );
    let live = builder.port(8081);
    let dead = builder.port(8082);
    let _upstream = MockUpstream::answering(live, OK);
    let server = builder.start();
    let response = server.get("/dead");
    assert_eq!(response.status, 502);
    server.wait_for_error_log(&format!(
        "connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, server\
            : , request: \"GET /dead HTTP/1.1\", upstream: \"http://127.0.0.1:{dead}/dead\""
    ));
    // Round robin starts with the dead server once; the live one answers.
    for _ in 0..2 {
        assert_eq!(server.get("/").status, 200);
    }
    // The failed try is logged first, with the status nginx gives a failed connect.
    server.wait_for_line(
        "logs/up.log",
        &format!("127.0.0.1:{dead}, 127.0.0.1:{live} 502, 200"),
    );
}

const KEEPALIVE: &str = "upstream backend { server 127.0.0.1:8081; keepalive 4; }
    server {
        listen 127.0.0.1:8080;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }";

#[test]
fn keepalive_reuses_upstream_connections() {
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    for _ in 0..5 {
        assert_eq!(server.get("/").body_text(), "hello");
    }
    assert_eq!(upstream.connections(), 1);
    let request = &upstream.requests()[0];
    assert!(
        request.contains(" HTTP/1.1\r\n") && !request.contains("Connection:"),
        "{request}"
    );
}

#[test]
fn a_connection_closed_by_the_upstream_while_idle_is_replaced() {
    // The upstream answers one request per connection but says nothing about closing:
    // the cached connection is dead when the next request comes.
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write(OK);
            std::thread::sleep(Duration::from_millis(20));
            conn.close();
        }
    });
    for _ in 0..4 {
        assert_eq!(server.get("/").body_text(), "hello");
        std::thread::sleep(Duration::from_millis(60));
    }
    assert_eq!(upstream.connections(), 4);
}

#[test]
fn a_stale_connection_failing_on_reuse_is_retried_for_get_not_for_post() {
    // The upstream reads the next request and closes without answering: the proxy learns
    // the connection was stale only after sending.
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        if conn.read_request().is_some() {
            conn.write(OK);
        }
        let _ = conn.read_request();
        conn.close();
    });
    assert_eq!(server.get("/first").status, 200);
    assert_eq!(
        server.get("/second").status,
        200,
        "a GET is repeated on a new connection"
    );
    let post = server.request(
        "POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
    );
    assert_eq!(post.status, 502, "a POST is not repeated");
    // The first connection, then the one the GET was repeated on (the POST's).
    assert_eq!(upstream.connections(), 2);
}

#[test]
fn request_bodies_are_sent_with_a_length() {
    let (server, upstream) = proxy_with(SIMPLE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let response = server.request(
        "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\
            \r\n2\r\nde\r\n0\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    let request = &upstream.requests()[0];
    assert!(request.contains("Content-Length: 5\r\n"), "{request}");
    assert!(!request.contains("chunked"), "{request}");
    assert!(request.ends_with("\r\n\r\nabcde"), "{request}");
}

#[test]
fn next_upstream_on_500_and_intercepted_errors() {
    let mut builder = Instance::http_builder(
        "upstream two { server 127.0.0.1:8081; server 127.0.0.1:8082; }
         server {
             listen 127.0.0.1:8080;
             location / { proxy_pass http://two; proxy_next_upstream error http_500; }
             location /intercept { proxy_pass http://127.0.0.1:8081; proxy_intercept_errors on;
                                   error_page 500 = /fallback; }
             location /fallback { return 200 \"fallback $upstream_status\"; }
         }",
    );
    let failing = builder.port(8081);
    let good = builder.port(8082);
    let _failing = MockUpstream::answering(
        failing,
        "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\nfail",
    );
    let _good = MockUpstream::answering(good, OK);
    let server = builder.start();
    for _ in 0..3 {
        assert_eq!(server.get("/").body_text(), "hello");
    }
    assert_eq!(server.get("/intercept").body_text(), "fallback 500");
}

#[test]
fn x_accel_redirect_redirects_internally() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location /p { proxy_pass http://127.0.0.1:8081; }
            location /target { return 200 \"target $request_method $upstream_http_x_accel_redirect\"; }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write("HTTP/1.1 200 OK\r\nX-Accel-Redirect: /target\r\nX-Other: gone\r\nContent-Length: 0\
                    \r\n\r\n");
            }
        },
    );
    let response = server
        .request("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert_eq!(response.body_text(), "target GET /target");
    assert!(!response.has_header("X-Other"));
}

#[test]
fn proxy_redirect_default_rewrites_location() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location /app/ { proxy_pass http://127.0.0.1:8081/inner/; }
        }",
    );
    let port = builder.port(8081);
    let answer: &'static str = Box::leak(
        format!("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{port}/inner/next\r\nContent-Length: 0\r\n\r\n")
            .into_boxed_str(),
    );
    let _upstream = MockUpstream::answering(port, answer);
    let server = builder.start();
    let response = server.get("/app/x");
    assert_eq!(response.status, 302);
    let location = response.header("Location").unwrap_or_default();
    assert!(location.ends_with("/app/next"), "{location}");
    assert!(!location.contains("inner"), "{location}");
}

#[test]
fn auto_redirect_adds_the_slash_of_a_proxied_location() {
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location /app/ { proxy_pass http://127.0.0.1:8081; }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    let response = server.get("/app?x=1");
    assert_eq!(response.status, 301);
    assert!(
        response
            .header("Location")
            .is_some_and(|value| value.ends_with("/app/?x=1"))
    );
    assert_eq!(upstream.connections(), 0);
}

#[test]
fn proxy_config_errors_read_as_nginx_writes_them() {
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; location ~ /x { proxy_pass http://127.0.0.1:1/uri; } }",
        "\"proxy_pass\" cannot have URI part in location given by regular expression, or inside named location\
            , or inside \"if\" statement, or inside \"limit_except\" block in {conf}:4",
    );
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; location / { proxy_pass http://no-such-host.invalid; } }",
        "host not found in upstream \"no-such-host.invalid\" in {conf}:4",
    );
    assert_http_body_fails(
        "upstream u { } server { listen 127.0.0.1:8080; }",
        "no servers are inside upstream in {conf}:4",
    );
    assert_http_body_fails(
        "upstream u { server 127.0.0.1:1 weight=0; } server { listen 127.0.0.1:8080; }",
        "invalid parameter \"weight=0\" in {conf}:4",
    );
    assert_http_body_fails(
        "upstream u { server 127.0.0.1:1; } upstream u { server 127.0.0.1:2; } server { listen 127.0.0.1:8080; }",
        "duplicate upstream \"u\" in {conf}:4",
    );
    assert_http_body_fails(
        "upstream u { server 127.0.0.1:1; } server { listen 127.0.0.1:8080; location / { proxy_pass http://u:80; } }",
        "upstream \"u\" may not have port 80 in {conf}:4",
    );
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; location / { proxy_pass ftp://x; } }",
        "invalid URL prefix in {conf}:4",
    );
    let (_, output) = test_http_body(
        "upstream u { server 127.0.0.1:1; keepalive 8; least_conn; } server { listen 127.0.0.1:8080; locatio\
            n / { proxy_pass http://u; } }",
    );
    output.assert_code(0);
}

#[test]
fn upstream_variables_are_logged() {
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_addr|$upstream_status|$upstream_http_x_id|$upstream_response_length|$proxy_host';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / { proxy_pass http://127.0.0.1:8081; }
         }",
    );
    let port = builder.port(8081);
    let _upstream = MockUpstream::answering(
        port,
        "HTTP/1.1 201 Created\r\nX-Id: 42\r\nContent-Length: 5\r\n\r\nhello",
    );
    let server = builder.start();
    assert_eq!(server.get("/").status, 201);
    server.wait_for_line(
        "logs/up.log",
        &format!("127.0.0.1:{port}|201|42|5|127.0.0.1:{port}"),
    );
}

#[test]
fn a_client_connection_stays_usable_after_a_proxied_response() {
    let (server, upstream) = proxy_with(KEEPALIVE, |mut conn| {
        while conn.read_request().is_some() {
            conn.write(OK);
        }
    });
    let mut client: Client = server.connect();
    for _ in 0..3 {
        let response = client.request("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(response.body_text(), "hello");
        assert!(response.keeps_alive());
    }
    wait_until("one upstream connection", PATIENCE, || {
        upstream.connections() == 1
    });
}

/// A name server answering every A question with 127.0.0.1 (twice) and every other one with
/// no record; it counts the questions.
fn dns_server(port: u16) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let questions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&questions);
    let socket = std::net::UdpSocket::bind(("127.0.0.1", port)).expect("bind the name server");
    std::thread::spawn(move || {
        let mut packet = [0u8; 512];
        while let Ok((length, from)) = socket.recv_from(&mut packet) {
            counted.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            let question_end = length;
            let kind = u16::from_be_bytes([packet[question_end - 4], packet[question_end - 3]]);
            let mut answer = packet[..question_end].to_vec();
            answer[2] = 0x81;
            answer[3] = 0x80;
            if kind == 1 {
                answer[7] = 2;
                for _ in 0..2 {
                    answer.extend_from_slice(&[
                        0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1,
                    ]);
                }
            }
            let _ = socket.send_to(&answer, from);
        }
    });
    questions
}

#[test]
fn a_resolver_finds_names_from_variables_and_caches_them() {
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_addr';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / {
                 resolver 127.0.0.1:8082 ipv6=off;
                 proxy_pass http://$arg_host:%%PORT_8081%%;
             }
             location /none { proxy_pass http://$arg_host:%%PORT_8081%%; }
         }",
    );
    let port = builder.port(8081);
    let dns = builder.port(8082);
    let questions = dns_server(dns);
    let _upstream = MockUpstream::answering(port, OK);
    let server = builder.start();
    assert_eq!(server.get("/?host=backend.test").body_text(), "hello");
    assert_eq!(server.get("/?host=backend.test").body_text(), "hello");
    // One question: the second request used the cached answer (TTL 60 s).
    assert_eq!(questions.load(std::sync::atomic::Ordering::Acquire), 1);
    server.wait_for_line("logs/up.log", &format!("127.0.0.1:{port}"));
    assert_eq!(server.get("/none?host=backend.test").status, 502);
    server.wait_for_error_log("no resolver defined to resolve backend.test");
}

/// With `proxy_buffering on` the proxy reads the upstream's answer ahead of a client that
/// does not read, so the upstream is done (and its connection free) long before the
/// client takes the body; with `off` the upstream waits for the client.
#[test]
fn buffering_reads_ahead_of_a_slow_client() {
    const BODY: usize = 48 << 20;
    // Memory alone (no temporary file), a temporary file beyond small buffers, and no
    // buffering at all.
    for (buffering, buffers, temp, expect_done_early) in [
        ("on", "2048 32k", "0", true),
        ("on", "4 32k", "1024m", true),
        ("on", "4 32k", "0", false),
        ("off", "2048 32k", "0", false),
    ] {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&done);
        let mut builder = Instance::http_builder(&format!(
            "server {{
                listen 127.0.0.1:8080;
                location / {{
                    proxy_pass http://127.0.0.1:8081;
                    proxy_buffering {buffering};
                    proxy_buffers {buffers};
                    proxy_max_temp_file_size {temp};
                }}
            }}"
        ));
        let port = builder.port(8081);
        let _upstream = MockUpstream::start(port, move |mut conn| {
            if conn.read_request().is_some() {
                conn.write(format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\n\r\n"));
                conn.write(vec![b'x'; BODY]);
                flag.store(true, std::sync::atomic::Ordering::Release);
                let _ = conn.wait_closed(Duration::from_secs(10));
            }
        });
        let server = builder.start();
        let mut client = server.connect();
        client.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        // The client reads nothing for a while.
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(
            done.load(std::sync::atomic::Ordering::Acquire),
            expect_done_early,
            "proxy_buffering {buffering}"
        );
        let (_, received) = client.wait_closed();
        assert!(
            received.len() > BODY,
            "the whole body arrives ({} bytes)",
            received.len()
        );
    }
}

#[test]
fn cookies_and_hidden_fields_are_rewritten_as_configured() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_cookie_domain backend.internal example.com;
                proxy_cookie_path /app/ /;
                proxy_hide_header X-Secret;
                proxy_pass_header Server;
            }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write(concat!(
                    "HTTP/1.1 200 OK\r\nServer: app/1.0\r\nX-Secret: s\r\n",
                    "Set-Cookie: a=1; Domain=.Backend.Internal; Path=/app/x\r\n",
                    "Set-Cookie: b=2; path=/other\r\nContent-Length: 0\r\n\r\n"
                ));
            }
        },
    );
    let response = server.get("/");
    assert_eq!(response.header("Server"), Some("app/1.0"));
    assert!(!response.has_header("X-Secret"));
    let cookies = response.header_all("Set-Cookie");
    assert_eq!(
        cookies,
        ["a=1; Domain=.example.com; Path=/x", "b=2; path=/other"]
    );
}

#[test]
fn method_body_and_headers_can_be_replaced() {
    let (server, upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_method PUT;
                proxy_set_body \"replaced $request_method\";
                proxy_pass_request_headers off;
            }
        }",
        |mut conn| {
            while conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    let response = server.request(
        "POST / HTTP/1.1\r\nHost: x\r\nX-Client: yes\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    );
    assert_eq!(response.status, 200);
    let request = &upstream.requests()[0];
    assert!(request.starts_with("PUT / HTTP/1.0\r\n"), "{request}");
    assert!(!request.contains("X-Client"), "{request}");
    assert!(request.contains("Content-Length: 13\r\n"), "{request}");
    assert!(request.ends_with("\r\n\r\nreplaced POST"), "{request}");
}

#[test]
fn proxy_bind_sets_the_local_address() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = std::sync::Arc::clone(&seen);
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / { proxy_pass http://127.0.0.1:8081; proxy_bind 127.0.0.2; }
        }",
        move |mut conn| {
            *record.lock().unwrap() = conn.peer().map(|address| address.ip());
            if conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    assert_eq!(server.get("/").status, 200);
    let ip = *seen.lock().unwrap();
    assert_eq!(ip, Some("127.0.0.2".parse().unwrap()));
}

#[test]
fn proxy_ignore_headers_passes_x_accel_redirect_on() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / { proxy_pass http://127.0.0.1:8081; proxy_ignore_headers X-Accel-Redirect; }
            location /target { return 200 redirected; }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write("HTTP/1.1 200 OK\r\nX-Accel-Redirect: /target\r\nContent-Length: 5\r\n\r\nfirst");
            }
        },
    );
    let response = server.get("/");
    assert_eq!(response.body_text(), "first");
    // The field itself stays hidden, as nginx hides it.
    assert!(!response.has_header("X-Accel-Redirect"));
}

#[test]
fn resolver_and_zone_settings_load_and_bad_ones_are_refused() {
    let (_, output) = test_http_body(
        "upstream u { zone backends 64k; server 127.0.0.1:1; }
         server { listen 127.0.0.1:8080;
                  location / { resolver 127.0.0.1:53 valid=30s ipv6=off; resolver_timeout 5s;
                               proxy_pass http://$host; } }",
    );
    output.assert_code(0);
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; resolver no-such-host.invalid; }",
        "host not found in resolver \"no-such-host.invalid\" in {conf}:4",
    );
    // `ipv4=` is current nginx's (1.23.1); nginx 1.22 takes it for a host name.
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; resolver 127.0.0.1 ipv4=off ipv6=off; }",
        "\"ipv4\" and \"ipv6\" cannot both be \"off\" in {conf}:4",
    );
}

/// The upstream's redirect for each request the `proxy_redirect` test sends, by the path
/// the upstream received.
pub(crate) fn redirect_answer(path: &str, port: u16) -> String {
    let fields = match path {
        "/inner/next" => format!("Location: http://127.0.0.1:{port}/inner/next\r\n"),
        "/one/x" => {
            "Location: http://upstream/one/x?y=1\r\nRefresh: 3; url=http://upstream/one/r\r\n"
                .to_owned()
        }
        "/one/other" => format!("Location: http://127.0.0.1:{port}/one/other\r\n"),
        "/regex/x" => "Location: http://elsewhere:99/path/q?z\r\n".to_owned(),
        _ => "Location: /relative/kept\r\n".to_owned(),
    };
    format!("HTTP/1.1 302 Found\r\n{fields}Content-Length: 0\r\n\r\n")
}
