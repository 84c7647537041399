//! `upstream` blocks against scripted servers: which server a balancing method picks, the
//! group's keep-alive limits, and the log lines of servers taken out after failures.

use crate::support::Instance;
use crate::support::log::messages_at;
use crate::support::upstream::MockUpstream;

/// Three servers answering with their own name, nominal ports 8081 to 8083.
const NAMED: [(u16, &str); 3] = [
    (8081, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"),
    (8082, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"),
    (8083, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nthree"),
];

/// A proxy to the group `upstream_block` defines (as `backend`) over the three servers of
/// [`NAMED`].
fn group_with(upstream_block: &str) -> (Instance, Vec<MockUpstream>) {
    let mut builder = Instance::http_builder(&format!(
        "{upstream_block}
         server {{
             listen 127.0.0.1:8080;
             location / {{ proxy_pass http://backend; }}
         }}"
    ));
    let upstreams = NAMED
        .iter()
        .map(|(nominal, answer)| MockUpstream::answering(builder.port(*nominal), answer))
        .collect();
    (builder.start(), upstreams)
}

fn connections(upstreams: &[MockUpstream]) -> Vec<usize> {
    upstreams.iter().map(MockUpstream::connections).collect()
}

#[test]
fn ip_hash_sends_one_client_address_to_one_server() {
    let (server, upstreams) = group_with(
        "upstream backend {
             ip_hash;
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
         }",
    );
    // nginx's hash of 127.0.0.x over three equal servers picks the third.
    for _ in 0..6 {
        assert_eq!(server.get("/").body_text(), "three");
    }
    assert_eq!(connections(&upstreams), [0, 0, 6]);
}

#[test]
fn hash_sends_one_key_to_one_server_as_nginx_does() {
    let (server, upstreams) = group_with(
        "upstream backend {
             hash $arg_k;
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
         }",
    );
    // The servers nginx picks: CRC32 of the key, bits 16 to 30, modulo the total weight.
    for (key, expected) in [("b", "one"), ("h", "two"), ("a", "three"), ("g", "one")] {
        for _ in 0..3 {
            assert_eq!(
                server.get(&format!("/?k={key}")).body_text(),
                expected,
                "k={key}"
            );
        }
    }
    assert_eq!(connections(&upstreams), [6, 3, 3]);
}

#[test]
fn random_spreads_requests_and_skips_a_down_server() {
    let (server, upstreams) = group_with(
        "upstream backend {
             random;
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083 down;
         }",
    );
    for _ in 0..30 {
        let body = server.get("/").body_text();
        assert!(body == "one" || body == "two", "{body}");
    }
    let counts = connections(&upstreams);
    // Both live servers are drawn (all 30 on one has a chance of 2^-29); never the down one.
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");
    assert_eq!(counts[0] + counts[1], 30, "{counts:?}");
    assert_eq!(counts[2], 0, "{counts:?}");
}

#[test]
fn keepalive_requests_one_opens_a_connection_per_request() {
    let mut builder = Instance::http_builder(
        "upstream limited { server 127.0.0.1:8081; keepalive 4; keepalive_requests 1; }
         upstream kept { server 127.0.0.1:8082; keepalive 4; }
         server {
             listen 127.0.0.1:8080;
             proxy_http_version 1.1;
             proxy_set_header Connection \"\";
             location /limited { proxy_pass http://limited; }
             location /kept { proxy_pass http://kept; }
         }",
    );
    let limited = MockUpstream::answering(builder.port(8081), NAMED[0].1);
    let kept = MockUpstream::answering(builder.port(8082), NAMED[1].1);
    let server = builder.start();
    for _ in 0..3 {
        assert_eq!(server.get("/limited").body_text(), "one");
        assert_eq!(server.get("/kept").body_text(), "two");
    }
    assert_eq!(limited.connections(), 3);
    assert_eq!(kept.connections(), 1);
}

#[test]
fn servers_out_after_max_fails_are_logged_and_then_no_live_upstreams() {
    let mut builder = Instance::http_builder(
        "upstream dead { server 127.0.0.1:8081 max_fails=1; server 127.0.0.1:8082 max_fails=1; }
         log_format up '$uri $upstream_addr|$upstream_status';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / { proxy_pass http://dead; }
         }",
    );
    let first = builder.port(8081);
    let second = builder.port(8082);
    let server = builder.start();
    // Both servers refuse the connection: each reaches `max_fails` and is taken out.
    assert_eq!(server.get("/first").status, 502);
    server.wait_for_line(
        "logs/up.log",
        &format!("/first 127.0.0.1:{first}, 127.0.0.1:{second}|502, 502"),
    );
    for port in [first, second] {
        server.wait_for_error_log(&format!(
            "upstream server temporarily disabled while connecting to upstream, client: 127.0.0.1, serve\
                r: , request: \"GET /first HTTP/1.1\", upstream: \"http://127.0.0.1:{port}/first\""
        ));
    }
    // At `warn`, once for each server.
    let log = server.error_log();
    let warnings = messages_at("warn", &log);
    assert_eq!(
        warnings
            .iter()
            .filter(|message| message.contains("upstream server temporarily disabled"))
            .count(),
        2,
        "{log}"
    );
    // With both out the next request tries none.
    assert_eq!(server.get("/second").status, 502);
    server.wait_for_line("logs/up.log", "/second dead|502");
    // The group's name stands for the peer, as in nginx.
    let line = server.wait_for_error_log(
        "no live upstreams while connecting to upstream, client: 127.0.0.1, server: , request: \"GET /second \
         HTTP/1.1\", upstream: \"http://dead/second\"",
    );
    assert!(line.contains(" [error] "), "{line}");
    // Then the failures are forgotten and both servers are tried again, in either order.
    assert_eq!(server.get("/third").status, 502);
    let third = server.wait_for_line("logs/up.log", "/third ");
    assert!(third.ends_with("|502, 502"), "{third}");
    for port in [first, second] {
        assert!(third.contains(&format!("127.0.0.1:{port}")), "{third}");
    }
}
