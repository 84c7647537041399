//! `set_real_ip_from`, `real_ip_header`, `real_ip_recursive`, `$realip_remote_addr`,
//! `$realip_remote_port`: the client's address taken from a header of a trusted client,
//! and everything that reads the address afterwards (variables, `allow`/`deny`, limits,
//! `$proxy_add_x_forwarded_for`, both logs).

use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};

use crate::support::cli::assert_http_body_fails;
use crate::support::{Client, Instance};

/// A client socket from `source` to 127.0.0.1:`port`.
fn connect_from(source: Ipv4Addr, port: u16) -> Client {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket};
    let socket = socket(AddressFamily::INET, SocketType::STREAM, None).expect("socket()");
    bind(&socket, &SocketAddrV4::new(source, 0)).expect("bind()");
    connect(&socket, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).expect("connect()");
    Client::from_tcp(TcpStream::from(socket))
}

fn with_header(path: &str, header: &str) -> String {
    format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{header}\r\n\r\n")
}

/// A location's `return` runs in the rewrite phase, before realip's preaccess run with
/// the location's settings: these locations serve a file and show the address in a header,
/// as nginx's tests do.
const ADDRESSES: &str = "
set_real_ip_from 127.0.0.1/32;
set_real_ip_from 10.0.1.0/24;
server {
    listen 127.0.0.1:8080;
    root html;
    add_header X-IP \"$remote_addr|$remote_port\";
    location / {
        return 200 \"$remote_addr|$remote_port|$realip_remote_addr|$realip_remote_port\";
    }
    location /custom { real_ip_header X-Client; }
    location /xff { real_ip_header X-Forwarded-For; }
    location /lower { real_ip_header x-forwarded-for; }
    location /recursive {
        real_ip_header X-Forwarded-For;
        real_ip_recursive on;
    }
}";

fn addresses() -> Instance {
    Instance::http_builder(ADDRESSES)
        .file("html/custom", "")
        .file("html/xff", "")
        .file("html/recursive", "")
        .file("html/lower", "")
        .start()
}

/// The `X-IP` header of the answer to `GET PATH` with `header`.
fn address(server: &Instance, path: &str, header: &str) -> String {
    let response = server.request(with_header(path, header));
    assert_eq!(response.status, 200, "{}", response.head_text());
    response.header("X-IP").unwrap_or_default().to_owned()
}

#[test]
fn x_real_ip_from_a_trusted_client_replaces_the_address() {
    let server = addresses();
    let mut client = Client::connect(server.port_of(8080));
    let port = client.local_port();
    let response = client.request(with_header("/", "X-Real-IP: 192.0.2.1"));
    // The header has no port: `$remote_port` is empty; the socket's stay in `$realip_*`.
    assert_eq!(response.body_text(), format!("192.0.2.1||127.0.0.1|{port}"));
    let plain = server.get("/").body_text();
    assert!(plain.starts_with("127.0.0.1|"), "{plain}");
    // Not an address: nothing changes.
    let response = server.request(with_header("/", "X-Real-IP: nonsense"));
    assert!(response.body_text().starts_with("127.0.0.1|"));
}

#[test]
fn untrusted_clients_are_not_believed() {
    let server = addresses();
    let mut client = connect_from(Ipv4Addr::new(127, 0, 0, 2), server.port_of(8080));
    let response = client.request(with_header("/", "X-Real-IP: 192.0.2.1"));
    assert!(
        response.body_text().starts_with("127.0.0.2|"),
        "{}",
        response.body_text()
    );
}

#[test]
fn any_header_and_x_forwarded_for_with_ports() {
    let server = addresses();
    assert_eq!(
        address(&server, "/custom", "X-Client: 192.0.2.9"),
        "192.0.2.9|"
    );
    // The server's settings are used first, after the head is read (nginx's post-read
    // phase): there `X-Real-IP` counts, whatever the location names.
    assert_eq!(
        address(&server, "/custom", "X-Real-IP: 192.0.2.9"),
        "192.0.2.9|"
    );
    let xff = "X-Forwarded-For: 10.0.0.1, 192.0.2.1:8000";
    assert_eq!(address(&server, "/xff", xff), "192.0.2.1|8000");
    let six = "X-Forwarded-For: [2001:db8::5]:81";
    assert_eq!(address(&server, "/xff", six), "2001:db8::5|81");
}

#[test]
fn recursion_walks_the_chain_past_trusted_proxies() {
    let server = addresses();
    let chain = "X-Forwarded-For: 10.0.1.1, 192.0.2.1, 127.0.0.1";
    // Off: the last address, trusted or not.
    assert_eq!(address(&server, "/xff", chain), "127.0.0.1|");
    assert_eq!(address(&server, "/recursive", chain), "192.0.2.1|");
    // Several header lines are one list, in order.
    let lines = "X-Forwarded-For: 10.0.1.1\r\nX-Forwarded-For: 192.0.2.1\r\n\
                 X-Forwarded-For: 10.0.1.7";
    assert_eq!(address(&server, "/recursive", lines), "192.0.2.1|");
    assert_eq!(address(&server, "/xff", lines), "10.0.1.7|");
    // Spelt otherwise, it is an ordinary header, of which nginx reads the first line.
    assert_eq!(address(&server, "/lower", lines), "10.0.1.1|");
    // Every address trusted: the leftmost.
    let trusted = "X-Forwarded-For: 10.0.1.3, 10.0.1.2";
    assert_eq!(address(&server, "/recursive", trusted), "10.0.1.3|");
}

#[test]
fn the_server_level_runs_before_the_server_rewrite_phase() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            set_real_ip_from 127.0.0.1;
            return 200 \"$remote_addr\";
        }",
    );
    let response = server.request(with_header("/", "X-Real-IP: 192.0.2.3"));
    assert_eq!(response.body_text(), "192.0.2.3");
}

#[test]
fn access_rules_logs_and_the_next_request_see_the_right_address() {
    let mut server = Instance::http_builder(
        "log_format realip '$remote_addr $realip_remote_addr $status';
        server {
            listen 127.0.0.1:8080;
            root html;
            set_real_ip_from 127.0.0.1;
            access_log logs/realip.log realip;
            add_header X-IP $remote_addr;
            location / { deny 192.0.2.1; }
            location /redirect { real_ip_header X-Other; error_page 404 /after; }
            location /after { return 200 \"after $remote_addr\"; }
        }",
    )
    .file("html/index.html", "")
    .start();
    let mut client = Client::connect(server.port_of(8080));
    let keepalive = |header: &str| {
        format!("GET / HTTP/1.1\r\nHost: localhost\r\n{header}Connection: keep-alive\r\n\r\n")
    };
    assert_eq!(
        client.request(keepalive("X-Real-IP: 192.0.2.1\r\n")).status,
        403
    );
    // The next request on the connection has the socket's address again.
    let next = client.request(keepalive(""));
    assert_eq!(next.header("X-IP"), Some("127.0.0.1"));
    // An internal redirect keeps the address realip found in the location it left.
    let response = server.request(with_header("/redirect", "X-Other: 192.0.2.2"));
    assert_eq!(response.body_text(), "after 192.0.2.2");
    server.wait_for_error_log(
        "access forbidden by rule, client: 192.0.2.1, server: , request: \"GET / HTTP/1.1\"",
    );
    server.stop();
    let log = server.read("logs/realip.log");
    assert!(
        log.starts_with(
            "192.0.2.1 127.0.0.1 403\n127.0.0.1 127.0.0.1 200\n192.0.2.2 127.0.0.1 404\n"
        ),
        "{log}"
    );
}

#[test]
fn limits_and_upstreams_get_the_real_address() {
    let server = Instance::http_builder(
        "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;
        upstream hashed { ip_hash; server 127.0.0.1:8081; }
        server {
            listen 127.0.0.1:8080;
            root html;
            set_real_ip_from 127.0.0.1;
            location /limited { limit_req zone=one; }
            location /proxied {
                proxy_pass http://hashed;
                proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            }
        }
        server {
            listen 127.0.0.1:8081;
            location / { return 200 \"$http_x_forwarded_for\"; }
        }",
    )
    .file("html/limited", "")
    .start();
    let from = |address: &str| with_header("/limited", &format!("X-Real-IP: {address}"));
    assert_eq!(server.request(from("192.0.2.1")).status, 200);
    // The same real address is over its rate; another one is not.
    assert_eq!(server.request(from("192.0.2.1")).status, 503);
    assert_eq!(server.request(from("192.0.2.2")).status, 200);
    let proxied = server.request(with_header(
        "/proxied",
        "X-Real-IP: 192.0.2.7\r\nX-Forwarded-For: 10.9.9.9",
    ));
    assert_eq!(proxied.body_text(), "10.9.9.9, 192.0.2.7");
}

#[test]
fn unix_socket_clients_and_host_names() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            listen unix:%%PREFIX%%/realip.sock;
            root html;
            add_header X-IP $remote_addr;
            location /unix { set_real_ip_from unix:; }
            location /name { set_real_ip_from localhost; }
        }",
    )
    .file("html/unix", "")
    .file("html/name", "")
    .start();
    let header = "X-Real-IP: 192.0.2.4";
    let socket = server.prefix().join("realip.sock");
    let ip = |response: crate::support::Response| response.header("X-IP").map(str::to_owned);
    let unix = Client::connect_unix(&socket).request(with_header("/unix", header));
    assert_eq!(ip(unix).as_deref(), Some("192.0.2.4"));
    let untrusted = Client::connect_unix(&socket).request(with_header("/name", header));
    assert_eq!(ip(untrusted).as_deref(), Some("unix:"));
    let name = server.request(with_header("/name", header));
    assert_eq!(ip(name).as_deref(), Some("192.0.2.4"));
    let not_unix = server.request(with_header("/unix", header));
    assert_eq!(ip(not_unix).as_deref(), Some("127.0.0.1"));
}

#[test]
fn configuration_errors() {
    assert_http_body_fails(
        "set_real_ip_from no-such-host.invalid;",
        "host not found in set_real_ip_from \"no-such-host.invalid\" in {conf}:4",
    );
    assert_http_body_fails(
        "real_ip_header X-Real-IP; real_ip_header X-Forwarded-For;",
        "\"real_ip_header\" directive is duplicate in {conf}:4",
    );
    assert_http_body_fails(
        "real_ip_recursive yes;",
        "invalid value \"yes\" in \"real_ip_recursive\" directive, it must be \"on\" or \"off\" \
         in {conf}:4",
    );
}
