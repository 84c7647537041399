//! `listen ... proxy_protocol`: PROXY protocol headers (v1 text, v2 binary, `UNKNOWN`,
//! `LOCAL`, TLVs) before a request or a TLS handshake, `$proxy_protocol_*`,
//! `real_ip_header proxy_protocol`, and bad input: broken lines, truncated and oversized
//! v2 headers, a header that never completes.

use std::time::Duration;

use crate::support::tls::{self, Options, have_openssl};
use crate::support::{Client, Instance, Response};

const CONFIG: &str = "
log_format pp '$remote_addr:$remote_port $proxy_protocol_addr';
add_header X-IP $remote_addr!$remote_port;
add_header X-PP $proxy_protocol_addr!$proxy_protocol_port;
add_header X-PPS $proxy_protocol_server_addr!$proxy_protocol_server_port;
server {
    listen 127.0.0.1:8080 proxy_protocol;
    root html;
    client_header_timeout 300ms;
    set_real_ip_from 127.0.0.1/32;
    location /pp {
        real_ip_header proxy_protocol;
        error_page 404 =200 /t;
        access_log logs/pp.log pp;
        location /pp_deny { deny 192.0.2.1; }
    }
    location / { }
    location /tlv {
        add_header X-ALPN $proxy_protocol_tlv_alpn-$proxy_protocol_tlv_0x01;
        add_header X-SSL $proxy_protocol_tlv_ssl_verify-$proxy_protocol_tlv_ssl_version;
    }
}";

const TCP4: &[u8] = b"PROXY TCP4 192.0.2.1 192.0.2.2 123 5678\r\n";
const TCP6: &[u8] = b"PROXY TCP6 2001:Db8::1 2001:Db8::2 123 5678\r\n";

fn start() -> Instance {
    Instance::http_builder(CONFIG)
        .file("html/t", "SEE-THIS")
        .file("html/tlv", "TLV")
        .start()
}

fn request(path: &str) -> String {
    format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n")
}

/// A connection that sends `header`, then `GET PATH`.
fn pp_get(server: &Instance, header: &[u8], path: &str) -> Response {
    let mut client = Client::connect(server.port_of(8080));
    client.write(header);
    client.request(request(path))
}

fn header(response: &Response, name: &str) -> String {
    response.header(name).unwrap_or_default().to_owned()
}

/// A version 2 header: `command` 1 is PROXY, `family` 0x11 TCP over IPv4.
fn v2(command: u8, family: u8, body: &[u8]) -> Vec<u8> {
    let mut header = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    header.push(0x20 | command);
    header.push(family);
    header.extend_from_slice(
        &u16::try_from(body.len())
            .expect("a short test header")
            .to_be_bytes(),
    );
    header.extend_from_slice(body);
    header
}

const INET: [u8; 12] = [192, 0, 2, 1, 192, 0, 2, 2, 0, 123, 0x16, 0x2e];

#[test]
fn v1_headers_set_the_variables_and_not_the_client_address() {
    let server = start();
    let response = pp_get(&server, TCP4, "/t");
    assert_eq!(response.body_text(), "SEE-THIS");
    assert_eq!(header(&response, "X-PP"), "192.0.2.1!123");
    assert_eq!(header(&response, "X-PPS"), "192.0.2.2!5678");
    assert!(header(&response, "X-IP").starts_with("127.0.0.1!"));
    let six = pp_get(&server, TCP6, "/t");
    assert_eq!(header(&six, "X-PP"), "2001:Db8::1!123");
    assert_eq!(header(&six, "X-PPS"), "2001:Db8::2!5678");
    for unknown in [&b"PROXY UNKNOWN\r\n"[..], b"PROXY UNKNOWN 1 2 3 4 5 6\r\n"] {
        let response = pp_get(&server, unknown, "/t");
        assert_eq!(response.body_text(), "SEE-THIS");
        assert_eq!(header(&response, "X-PP"), "!");
        assert_eq!(header(&response, "X-PPS"), "!");
    }
}

#[test]
fn real_ip_header_proxy_protocol_replaces_the_address_for_access_and_logs() {
    let mut server = start();
    let response = pp_get(&server, TCP4, "/pp");
    assert_eq!(response.body_text(), "SEE-THIS");
    assert_eq!(header(&response, "X-IP"), "192.0.2.1!123");
    let six = pp_get(&server, TCP6, "/pp");
    assert_eq!(header(&six, "X-IP"), "2001:db8::1!123");
    assert_eq!(pp_get(&server, TCP4, "/pp_deny").status, 403);
    // Without a header's addresses there is nothing to take.
    let unknown = pp_get(&server, b"PROXY UNKNOWN\r\n", "/pp");
    assert!(header(&unknown, "X-IP").starts_with("127.0.0.1!"));
    server.wait_for_error_log("access forbidden by rule, client: 192.0.2.1");
    server.stop();
    let log = server.read("logs/pp.log");
    // The redirected requests end in `location /`, which logs elsewhere.
    assert_eq!(log, "192.0.2.1:123 192.0.2.1\n");
}

#[test]
fn v2_headers_with_tlvs_local_and_in_pieces() {
    let server = start();
    let mut body = INET.to_vec();
    body.extend_from_slice(&[0x01, 0, 2, b'h', b'2']);
    // PP2_TYPE_SSL: client, verify 7, then a version sub-TLV.
    body.extend_from_slice(&[
        0x20, 0, 12, 0x01, 0, 0, 0, 7, 0x21, 0, 4, b'T', b'L', b'S', b'3',
    ]);
    let response = pp_get(&server, &v2(1, 0x11, &body), "/tlv");
    assert_eq!(response.body_text(), "TLV");
    assert_eq!(header(&response, "X-ALPN"), "h2-h2");
    assert_eq!(header(&response, "X-SSL"), "7-TLS3");
    let mut six = [0u8; 36];
    six[..2].copy_from_slice(&[0x20, 0x01]);
    six[15] = 1;
    six[33] = 80;
    let response = pp_get(&server, &v2(1, 0x21, &six), "/t");
    assert_eq!(header(&response, "X-PP"), "2001::1!80");
    // LOCAL: the connection's own addresses stand.
    let inet = pp_get(&server, &v2(1, 0x11, &INET), "/t");
    assert_eq!(header(&inet, "X-PP"), "192.0.2.1!123");
    assert_eq!(header(&inet, "X-PPS"), "192.0.2.2!5678");
    let local = pp_get(&server, &v2(0, 0x00, &[]), "/t");
    assert_eq!(
        (local.status, header(&local, "X-PP")),
        (200, "!".to_owned())
    );
    // A header in three pieces, the request in the last one.
    let whole = [v2(1, 0x11, &INET), request("/t").into_bytes()].concat();
    let mut client = Client::connect(server.port_of(8080));
    client.write_pieces(
        &[&whole[..5], &whole[5..20], &whole[20..]],
        Duration::from_millis(50),
    );
    let response = client.read_response();
    assert_eq!(header(&response, "X-PP"), "192.0.2.1!123");
}

#[test]
fn a_broken_v1_line_closes_the_connection_with_nginx_error() {
    let server = start();
    let mut client = Client::connect(server.port_of(8080));
    client.write(request("/t"));
    client.expect_closed_without_response();
    let port = server.port_of(8080);
    let line = server.wait_for_error_log(&format!(
        "broken header: \"GET /t HTTP/1.0\" while reading PROXY protocol, client: \
         127.0.0.1, server: 127.0.0.1:{port}"
    ));
    assert!(line.contains("[error]"), "{line}");
    let mut bad_port = Client::connect(port);
    bad_port.write("PROXY TCP4 192.0.2.1 192.0.2.2 123 99999\r\n");
    bad_port.expect_closed_without_response();
    server.wait_for_error_log("broken header: \"PROXY TCP4 192.0.2.1 192.0.2.2 123 99999\"");
    // The server goes on.
    assert_eq!(pp_get(&server, TCP4, "/t").status, 200);
}

#[test]
fn truncated_oversized_and_unknown_version_v2_headers_are_refused() {
    let server = start();
    let whole = v2(1, 0x11, &INET);
    let mut truncated = Client::connect(server.port_of(8080));
    truncated.write(&whole[..20]);
    truncated.shutdown_write();
    truncated.expect_closed_without_response();
    let line = server.wait_for_error_log("header is too large while reading PROXY protocol");
    assert!(line.contains("[error]"), "{line}");
    let mut large = v2(1, 0x11, &INET);
    large[14..16].copy_from_slice(&5000u16.to_be_bytes());
    let mut client = Client::connect(server.port_of(8080));
    client.write(&large);
    client.expect_closed_without_response();
    let mut version = whole.clone();
    version[12] = 0x11;
    let mut client = Client::connect(server.port_of(8080));
    client.write(&version);
    client.expect_closed_without_response();
    server.wait_for_error_log("unknown PROXY protocol version: 1 while reading PROXY protocol");
    assert_eq!(pp_get(&server, &whole, "/t").status, 200);
}

#[test]
fn a_header_that_never_completes_times_out() {
    let server = start();
    let mut client = Client::connect(server.port_of(8080)).with_timeout(Duration::from_secs(5));
    client.write("PROXY TCP4 192.0.2.1 ");
    let started = std::time::Instant::now();
    client.expect_closed_without_response();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let line = server.wait_for_error_log(
        "client timed out (110: Connection timed out) while reading PROXY protocol",
    );
    assert!(line.contains("[info]"), "{line}");
    // A client that closes before a byte is noted at info too.
    let mut silent = Client::connect(server.port_of(8080));
    silent.shutdown_write();
    silent.expect_closed_without_response();
    server.wait_for_error_log("client closed connection while reading PROXY protocol");
}

#[test]
fn the_header_comes_before_the_tls_handshake() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(
        "server {
            listen 127.0.0.1:8443 ssl proxy_protocol;
            ssl_certificate localhost.crt;
            ssl_certificate_key localhost.key;
            set_real_ip_from 127.0.0.1;
            location / { return 200 \"$remote_addr $proxy_protocol_addr $https\"; }
            location /pp { real_ip_header proxy_protocol; return 200 \"$remote_addr\"; }
        }",
    );
    let options = Options {
        preamble: TCP4.to_vec(),
        ..Options::sni("localhost")
    };
    let response = tls::get(server.port_of(8443), &options, "/");
    assert_eq!(response.body_text(), "127.0.0.1 192.0.2.1 on");
    let options = Options {
        preamble: v2(1, 0x11, &INET),
        ..Options::sni("localhost")
    };
    let response = tls::get(server.port_of(8443), &options, "/");
    assert_eq!(response.body_text(), "127.0.0.1 192.0.2.1 on");
}

#[test]
fn a_connection_waiting_for_its_header_does_not_hold_up_quit() {
    let mut server = Instance::http(
        "server { listen 127.0.0.1:8080 proxy_protocol; }
        server { listen 127.0.0.1:8081; location / { stub_status; } }",
    );
    let mut waiting = Client::connect(server.port_of(8080));
    // Accepted: the status page counts it with its own connection.
    crate::support::poll(crate::support::PATIENCE, || {
        let status = server.request_to(8081, request("/")).body_text();
        status.starts_with("Active connections: 2").then_some(())
    })
    .expect("the connection is accepted");
    server.signal(crate::support::Signal::QUIT);
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("exit within the drain grace, not client_header_timeout");
    assert!(status.success(), "{status}");
    waiting.expect_closed_without_response();
}
