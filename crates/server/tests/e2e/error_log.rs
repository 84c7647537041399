//! `error_log` at every level, level filtering, and the form of client-error lines.

use crate::support::log::{matches, message_at, messages_at};
use crate::support::{Instance, get};

/// `*N ` then the message, as nginx starts a connection's log lines.
const CONNECTION: &str = r"^\*\d+ ";

#[test]
fn main_error_logs_filter_by_level() {
    let server = Instance::builder(
        "worker_processes 1;
        error_log logs/warn.error.log warn;
        events {
        }
        http {
            server { listen 127.0.0.1:8080; server_name example; root html; }
        }",
    )
    .start();
    server.get("/missing");
    server.request("GET / HTTP/1.1 x\r\nHost: localhost\r\n\r\n");
    server.wait_for_error_log("client sent invalid request");
    let missing = server.wait_for_line("logs/warn.error.log", "/missing");
    assert!(missing.contains("[error]"), "{missing}");
    let warn_log = server.read("logs/warn.error.log");
    assert!(
        !warn_log.contains("[info]") && !warn_log.contains("[notice]"),
        "{warn_log}"
    );
}

#[test]
fn client_errors_are_logged_at_info_in_nginx_form() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; server_name example; location / { return 200 ok; } }",
    );
    server.request("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
    let line = server.wait_for_error_log("duplicate header line");
    let message = message_at("info", &line).unwrap_or_else(|| panic!("not an info line: {line}"));
    let expected = concat!(
        r#"client sent duplicate header line: "Content-Length: 2", previous value: "Content-Length: 1""#,
        r#" while reading client request headers, client: 127\.0\.0\.1, server: example,"#,
        r#" request: "GET / HTTP/1\.1", host: "h"$"#,
    );
    assert!(
        matches(&format!("{CONNECTION}{expected}"), message),
        "{line}"
    );
}

#[test]
fn invalid_request_line_is_logged_with_the_request() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; server_name example; location / { return 200 ok; } }",
    );
    server.request("GET / HTTP/1.1 x\r\nHost: h\r\n\r\n");
    let line = server.wait_for_error_log("client sent invalid request");
    let message = message_at("info", &line).unwrap_or_else(|| panic!("not an info line: {line}"));
    let expected = concat!(
        r#"client sent invalid request while reading client request line, client: 127\.0\.0\.1,"#,
        r#" server: example, request: "GET / HTTP/1\.1 x"$"#,
    );
    assert!(
        matches(&format!("{CONNECTION}{expected}"), message),
        "{line}"
    );
}

#[test]
fn request_errors_carry_the_request_context() {
    let server =
        Instance::http("server { listen 127.0.0.1:8080; server_name example; root html; }");
    server.get("/missing");
    let line = server.wait_for_error_log("/missing");
    let message = message_at("error", &line).unwrap_or_else(|| panic!("not an error line: {line}"));
    let path = server.prefix().join("html/missing").display().to_string();
    assert_eq!(
        message.split_once(' ').map(|(_, rest)| rest),
        Some(
            format!(
                "open() \"{path}\" failed (2: No such file or directory), client: 127.0.0.1, \
                 server: example, request: \"GET /missing HTTP/1.1\", host: \"localhost\""
            )
            .as_str()
        )
    );
}

const SCOPED: &str = "
error_log logs/http.error.log info;
server {
    listen 127.0.0.1:8080;
    root html;
    error_log logs/server.error.log info;
    location /scoped/ { error_log logs/location.error.log info; }
}
server {
    listen 127.0.0.1:8081;
    root html;
}";

#[test]
fn error_log_in_http_server_and_location() {
    let server = Instance::http(SCOPED);
    server.get("/scoped/missing-in-location");
    server.get("/missing-in-server");
    server.request_to(8081, get("/missing-in-http"));
    server.wait_for_line("logs/location.error.log", "missing-in-location");
    server.wait_for_line("logs/server.error.log", "missing-in-server");
    server.wait_for_line("logs/http.error.log", "missing-in-http");
    let in_file = |file: &str| -> Vec<String> {
        messages_at("error", &server.read(file))
            .iter()
            .map(|message| (*message).to_owned())
            .collect()
    };
    let location = in_file("logs/location.error.log");
    let scoped = in_file("logs/server.error.log");
    let http = in_file("logs/http.error.log");
    assert_eq!(location.len(), 1, "{location:?}");
    assert_eq!(scoped.len(), 1, "{scoped:?}");
    assert!(scoped[0].contains("missing-in-server"));
    assert_eq!(http.len(), 1, "{http:?}");
    assert!(http[0].contains("missing-in-http"));
    // The main error log only gets what no http-level log takes.
    assert!(
        !server.error_log().contains("missing-in"),
        "{}",
        server.error_log()
    );
}

/// Each worker writes its counts of loop stalls by length at `notice` when it exits, in
/// the form bench/threadpool.sh reads.
#[test]
fn each_worker_writes_its_loop_stall_counts_when_it_exits() {
    let mut server = Instance::builder(
        "worker_processes 2;
        error_log logs/notice.error.log notice;
        events {
        }
        http {
            server { listen 127.0.0.1:8080; location / { return 200 ok; } }
        }",
    )
    .start();
    assert_eq!(server.get("/").body_text(), "ok");
    assert!(server.stop().success());
    let log = server.read("logs/notice.error.log");
    let counts: Vec<&str> = log
        .lines()
        .filter_map(|line| {
            line.split_once("worker loop stalls: ")
                .map(|(_, rest)| rest)
        })
        .collect();
    assert_eq!(counts.len(), 2, "one line per worker:\n{log}");
    for line in log
        .lines()
        .filter(|line| line.contains("worker loop stalls: "))
    {
        assert!(line.contains("[notice]"), "{line}");
    }
    for rest in counts {
        let parts: Vec<&str> = rest.split(", ").collect();
        assert_eq!(parts.len(), 3, "{rest}");
        for (part, threshold) in parts.iter().zip(["10", "100", "1000"]) {
            let (count, unit) = part.split_once(" of ").expect("N of T ms or more");
            assert!(count.parse::<u64>().is_ok(), "{rest}");
            assert_eq!(unit, format!("{threshold} ms or more"), "{rest}");
        }
    }
}
