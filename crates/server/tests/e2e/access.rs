//! `allow` / `deny` (and `satisfy`): rule order, inheritance, the 403 and its error-log
//! line, IPv6, IPv4-mapped and unix-socket clients, and configuration errors.
//!
//! Clients from other addresses than 127.0.0.1 bind their socket to another loopback
//! address (all of 127.0.0.0/8 is local on Linux) before connecting. These tests pass
//! against nginx as well (`PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};

use crate::support::cli::{assert_fails, assert_http_body_fails, reported, test_http_body};
use crate::support::instance::STDERR_FILE;
use crate::support::log::message_at;
use crate::support::{Builder, Client, Instance, get, get_keepalive};

const FILE: &str = "file\n";

/// A client socket from `source` to 127.0.0.1:`port`.
fn connect_from(source: Ipv4Addr, port: u16) -> Client {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket};
    let socket = socket(AddressFamily::INET, SocketType::STREAM, None).expect("socket()");
    bind(&socket, &SocketAddrV4::new(source, 0))
        .unwrap_or_else(|error| panic!("bind() to {source}: {error}"));
    connect(&socket, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
        .unwrap_or_else(|error| panic!("connect() from {source} to port {port}: {error}"));
    Client::from_tcp(TcpStream::from(socket))
}

/// The status of `GET PATH` from `source` to a nominal port.
fn status_from(server: &Instance, source: [u8; 4], nominal: u16, path: &str) -> u16 {
    let source = Ipv4Addr::from(source);
    connect_from(source, server.port_of(nominal))
        .request(get(path))
        .status
}

/// The same file under each of `directories` of `html/`.
fn with_files(mut builder: Builder, directories: &[&str]) -> Builder {
    for directory in directories {
        builder = builder.file(&format!("html/{directory}f.txt"), FILE);
    }
    builder
}

const ORDER: &str = "
server {
    listen 127.0.0.1:8080;
    server_name example;
    root html;
    location /deny-first/ { deny 127.0.0.1; allow all; }
    location /allow-first/ { allow 127.0.0.1; deny all; }
    location /network/ { allow 127.0.0.2; deny 127.0.0.0/30; allow all; }
    location /other-kinds/ { deny ::1; deny unix:; }
    location /returns/ { deny all; return 200 \"returned\\n\"; }
    location / { }
    location = /index.html { deny all; }
}";

fn order_server() -> Instance {
    let builder = Instance::http_builder(ORDER).file("html/index.html", "index\n");
    with_files(
        builder,
        &[
            "deny-first/",
            "allow-first/",
            "network/",
            "other-kinds/",
            "",
        ],
    )
    .start()
}

#[test]
fn rules_apply_in_order_and_the_first_match_wins() {
    let server = order_server();
    assert_eq!(server.get("/deny-first/f.txt").status, 403);
    let allowed = server.get("/allow-first/f.txt");
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.body_text(), FILE);
    assert_eq!(
        status_from(&server, [127, 0, 0, 2], 8080, "/allow-first/f.txt"),
        403
    );
}

#[test]
fn networks_match_by_prefix() {
    let server = order_server();
    // allow 127.0.0.2; deny 127.0.0.0/30; allow all;
    assert_eq!(
        status_from(&server, [127, 0, 0, 1], 8080, "/network/f.txt"),
        403
    );
    assert_eq!(
        status_from(&server, [127, 0, 0, 2], 8080, "/network/f.txt"),
        200
    );
    assert_eq!(
        status_from(&server, [127, 0, 0, 3], 8080, "/network/f.txt"),
        403
    );
    assert_eq!(
        status_from(&server, [127, 0, 0, 4], 8080, "/network/f.txt"),
        200
    );
}

#[test]
fn rules_for_other_kinds_of_client_do_not_apply() {
    let server = order_server();
    assert_eq!(server.get("/other-kinds/f.txt").status, 200);
    assert_eq!(server.get("/f.txt").status, 200);
}

#[test]
fn return_runs_before_access() {
    let server = order_server();
    let response = server.get("/returns/");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "returned\n");
}

#[test]
fn access_is_checked_again_after_an_index_redirect() {
    let server = order_server();
    // `/` is allowed, its index file's location is not.
    assert_eq!(server.get("/").status, 403);
    assert_eq!(server.get("/index.html").status, 403);
}

const INHERITANCE: &str = "
allow 127.0.0.2;
deny all;
server {
    listen 127.0.0.1:8080;
    root html;
    location /inherits/ { }
    location /own/ { allow 127.0.0.1; }
    location /own-v6/ { deny ::1; }
}
server {
    listen 127.0.0.1:8081;
    root html;
    deny 127.0.0.1;
    location /outer/ {
        location /outer/inner/ { }
    }
    location /reset/ { allow all; }
}";

fn inheritance_server() -> Instance {
    let builder = Instance::http_builder(INHERITANCE);
    with_files(
        builder,
        &["inherits/", "own/", "own-v6/", "", "outer/inner/", "reset/"],
    )
    .start()
}

#[test]
fn a_level_without_rules_inherits_the_whole_list() {
    let server = inheritance_server();
    for path in ["/inherits/f.txt", "/f.txt"] {
        assert_eq!(
            status_from(&server, [127, 0, 0, 1], 8080, path),
            403,
            "{path}"
        );
        assert_eq!(
            status_from(&server, [127, 0, 0, 2], 8080, path),
            200,
            "{path}"
        );
    }
    // The server's own list reaches a nested location through its parent.
    let inner = "/outer/inner/f.txt";
    assert_eq!(status_from(&server, [127, 0, 0, 1], 8081, inner), 403);
    assert_eq!(status_from(&server, [127, 0, 0, 3], 8081, inner), 200);
}

#[test]
fn a_level_with_rules_drops_the_enclosing_list() {
    let server = inheritance_server();
    // `allow 127.0.0.1;` alone: the http level's `deny all` no longer applies.
    assert_eq!(
        status_from(&server, [127, 0, 0, 1], 8080, "/own/f.txt"),
        200
    );
    assert_eq!(
        status_from(&server, [127, 0, 0, 3], 8080, "/own/f.txt"),
        200
    );
    // Even a list with only an IPv6 rule replaces the IPv4 rules of the enclosing level.
    assert_eq!(
        status_from(&server, [127, 0, 0, 3], 8080, "/own-v6/f.txt"),
        200
    );
    assert_eq!(
        status_from(&server, [127, 0, 0, 1], 8081, "/reset/f.txt"),
        200
    );
}

const FORBIDDEN: &str = "
server {
    listen 127.0.0.1:8080;
    server_name example;
    root html;
    location /secret/ { deny all; }
    location /any/ { satisfy any; deny all; }
    location /all/ { satisfy all; allow all; }
    location /warned/ { deny 127.0.0.9/8; }
}";

/// The message of the first `[error]` line about `path`, without its `*N ` prefix.
fn forbidden_line(server: &Instance, path: &str) -> String {
    let line = server.wait_for_error_log(&format!("GET {path} "));
    let message = message_at("error", &line).unwrap_or_else(|| panic!("not an error line: {line}"));
    let (connection, rest) = message
        .split_once(' ')
        .unwrap_or_else(|| panic!("no connection number: {line}"));
    assert!(connection.starts_with('*'), "{line}");
    rest.to_owned()
}

#[test]
fn denied_requests_get_403_and_an_error_log_line() {
    let server = with_files(
        Instance::http_builder(FORBIDDEN),
        &["secret/", "any/", "all/"],
    )
    .start();
    let response = server.get("/secret/f.txt");
    assert_eq!(response.status, 403);
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    assert!(
        response
            .body_text()
            .contains("<title>403 Forbidden</title>"),
        "{}",
        response.body_text()
    );
    assert_eq!(
        forbidden_line(&server, "/secret/f.txt"),
        "access forbidden by rule, client: 127.0.0.1, server: example, \
         request: \"GET /secret/f.txt HTTP/1.1\", host: \"localhost\""
    );
    // The content phase never runs: a missing file is a 403 too, without an open() line.
    assert_eq!(server.get("/secret/missing.txt").status, 403);
    forbidden_line(&server, "/secret/missing.txt");
    assert!(
        !server.error_log().contains("open()"),
        "{}",
        server.error_log()
    );
}

#[test]
fn satisfy_any_and_all_give_the_same_answer_without_auth_modules() {
    let server = with_files(
        Instance::http_builder(FORBIDDEN),
        &["secret/", "any/", "all/"],
    )
    .start();
    assert_eq!(server.get("/any/f.txt").status, 403);
    assert!(forbidden_line(&server, "/any/f.txt").starts_with("access forbidden by rule, "));
    assert_eq!(server.get("/all/f.txt").status, 200);
}

#[test]
fn host_bits_beyond_the_prefix_warn_and_are_ignored() {
    let server = with_files(Instance::http_builder(FORBIDDEN), &["warned/"]).start();
    let conf = server.prefix().join("portico.conf").display().to_string();
    let number = server
        .config()
        .lines()
        .position(|line| line.contains("127.0.0.9/8"))
        .expect("the config has the rule")
        + 1;
    // Reported on stderr while the configuration loads, before any error log is open.
    let message = format!("low address bits of 127.0.0.9/8 are meaningless in {conf}:{number}");
    let stderr = server.read(STDERR_FILE);
    assert!(
        reported(&stderr, "warn", &message),
        "want {message:?} in:\n{stderr}"
    );
    // `127.0.0.9/8` is 127.0.0.0/8.
    assert_eq!(
        status_from(&server, [127, 0, 0, 1], 8080, "/warned/f.txt"),
        403
    );
}

const UNIX: &str = "
server {
    listen 127.0.0.1:8080;
    listen unix:%%PREFIX%%/access.sock;
    root html;
    location /allow-all/ { allow all; }
    location /allow-unix/ { allow unix:; }
    location /deny-all/ { deny all; }
    location /deny-unix/ { deny unix:; }
}";

#[test]
fn unix_socket_clients() {
    let directories = ["allow-all/", "allow-unix/", "deny-all/", "deny-unix/"];
    let server = with_files(Instance::http_builder(UNIX), &directories).start();
    let socket = server.prefix().join("access.sock");
    let over_unix = |path: &str| Client::connect_unix(&socket).request(get(path)).status;
    assert_eq!(over_unix("/allow-all/f.txt"), 200);
    assert_eq!(over_unix("/allow-unix/f.txt"), 200);
    assert_eq!(over_unix("/deny-all/f.txt"), 403);
    assert_eq!(over_unix("/deny-unix/f.txt"), 403);
    assert_eq!(server.get("/allow-all/f.txt").status, 200);
    assert_eq!(server.get("/allow-unix/f.txt").status, 200);
    assert_eq!(server.get("/deny-all/f.txt").status, 403);
    assert_eq!(server.get("/deny-unix/f.txt").status, 200);
    let line = server.wait_for_error_log("GET /deny-unix/f.txt ");
    assert!(
        line.contains("access forbidden by rule, client: unix:, "),
        "{line}"
    );
}

#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn ipv6_loopback_available() -> bool {
    let available = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok();
    if !available {
        eprintln!("skipped: IPv6 loopback is unavailable");
    }
    available
}

#[test]
fn ipv6_clients() {
    if !ipv6_loopback_available() {
        return;
    }
    let server = with_files(
        Instance::http_builder(
            "server {
                listen [::1]:8080;
                root html;
                location /deny-v6/ { deny ::1; }
                location /deny-v6-network/ { allow ::2; deny ::/64; }
                location /deny-v4/ { deny 127.0.0.1; }
                location /allow-first/ { allow ::1; deny all; }
                location /deny-all/ { deny all; }
            }",
        ),
        &[
            "deny-v6/",
            "deny-v6-network/",
            "deny-v4/",
            "allow-first/",
            "deny-all/",
        ],
    )
    .start();
    let address = SocketAddr::from((Ipv6Addr::LOCALHOST, server.port()));
    let status = |path: &str| Client::connect_addr(address).request(get(path)).status;
    assert_eq!(status("/deny-v6/f.txt"), 403);
    assert_eq!(status("/deny-v6-network/f.txt"), 403);
    assert_eq!(status("/deny-v4/f.txt"), 200);
    assert_eq!(status("/allow-first/f.txt"), 200);
    assert_eq!(status("/deny-all/f.txt"), 403);
}

#[test]
fn ipv4_mapped_clients() {
    if !ipv6_loopback_available() {
        return;
    }
    let server = with_files(
        Instance::http_builder(
            "server {
                listen [::]:%%PORT_8080%% ipv6only=off;
                root html;
                location = /address { return 200 \"$remote_addr\"; }
                location /v4-rule/ { deny 127.0.0.1; }
                location /mapped-rule/ { deny ::ffff:127.0.0.1; }
                location /mapped-rule-unused/ { deny ::ffff:127.0.0.1; allow 10.0.0.0/8; }
            }",
        ),
        &["v4-rule/", "mapped-rule/", "mapped-rule-unused/"],
    )
    .start();
    // An IPv4 client of the dual-stack socket has a mapped address.
    assert_eq!(server.get("/address").body_text(), "::ffff:127.0.0.1");
    assert_eq!(server.get("/v4-rule/f.txt").status, 403);
    // Without IPv4 rules, the IPv6 rules see the mapped address...
    assert_eq!(server.get("/mapped-rule/f.txt").status, 403);
    // ... and with any IPv4 rule, only the IPv4 rules are consulted.
    assert_eq!(server.get("/mapped-rule-unused/f.txt").status, 200);
}

#[test]
fn invalid_parameters() {
    for argument in [
        "1.2.3.4/33",
        "::1/129",
        "1.2.3.4/",
        "1.2.3.4.5",
        "ALL",
        "unix:/tmp/portico.sock",
        "example.com",
        "fe80::1%eth0",
        "255.255.255.255",
    ] {
        assert_http_body_fails(
            &format!("server {{ deny {argument}; }}"),
            &format!("invalid parameter \"{argument}\" in {{conf}}:4"),
        );
    }
}

#[test]
fn wrong_places_and_argument_counts() {
    assert_http_body_fails(
        "server {\nallow 127.0.0.1 127.0.0.2;\n}",
        "invalid number of arguments in \"allow\" directive in {conf}:5",
    );
    assert_http_body_fails(
        "deny;",
        "invalid number of arguments in \"deny\" directive in {conf}:4",
    );
    assert_fails(
        "events {\n}\nallow all;\n",
        "\"allow\" directive is not allowed here in {conf}:3",
    );
}

#[test]
fn satisfy_values() {
    assert_http_body_fails("satisfy some;", "invalid value \"some\" in {conf}:4");
    assert_http_body_fails(
        "server {\nsatisfy any;\nsatisfy all;\n}",
        "\"satisfy\" directive is duplicate in {conf}:6",
    );
    let (_conf, output) = test_http_body("satisfy any; server { location / { satisfy all; } }");
    output.assert_code(0);
}

#[test]
fn meaningless_low_bits_are_a_warning() {
    let (conf, output) = test_http_body("server {\nallow 10.0.0.1/8;\ndeny ::1/0;\n}");
    output.assert_code(0);
    for (text, line) in [("10.0.0.1/8", 5), ("::1/0", 6)] {
        let message = format!("low address bits of {text} are meaningless in {conf}:{line}");
        assert!(
            reported(&output.stderr, "warn", &message),
            "want [warn] {message:?} in:\n{}",
            output.stderr
        );
    }
    assert!(
        output.stderr.contains("test is successful"),
        "{}",
        output.stderr
    );
}

#[test]
fn each_request_of_a_keepalive_connection_is_checked() {
    let server = order_server();
    let mut client = server.connect();
    let allowed = client.request(get_keepalive("/allow-first/f.txt"));
    assert_eq!(allowed.status, 200);
    let denied = client.request(get_keepalive("/deny-first/f.txt"));
    assert_eq!(denied.status, 403);
    let again = client.request(get("/allow-first/f.txt"));
    assert_eq!(again.status, 200);
}
