//! `proxy_cookie_flags` and `proxy_limit_rate`: the `Set-Cookie` attributes of proxied
//! responses, and the rate the upstream's body is read at.

use std::time::{Duration, Instant};

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

fn upstream_with(port: u16, answer: &'static str) -> MockUpstream {
    MockUpstream::start(port, move |mut conn| {
        while conn.read_request().is_some() {
            conn.write(answer);
        }
    })
}

/// Flags are set (replacing the upstream's), removed, matched by name, variable or
/// case-insensitive regex, and `off` turns them off in a nested location.
#[test]
fn proxy_cookie_flags_sets_and_removes_attributes() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_cookie_flags a secure httponly samesite=lax;
                proxy_cookie_flags $arg_name nosecure nosamesite;
                proxy_cookie_flags ~^SESS httponly;
                location /off/ {
                    proxy_pass http://127.0.0.1:8081;
                    proxy_cookie_flags off;
                }
            }
        }",
    );
    let _upstream = upstream_with(
        builder.port(8081),
        "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/;secure;SameSite=None\r\n\
         Set-Cookie: b=2; Secure; SameSite=Strict; Path=/\r\n\
         Set-Cookie: session=3\r\nSet-Cookie: other=4; Secure\r\nContent-Length: 0\r\n\r\n",
    );
    let server = builder.start();
    let cookies = |path: &str| -> Vec<String> {
        let response = server.get(path);
        response
            .header_all("Set-Cookie")
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        cookies("/?name=b"),
        [
            "a=1; Path=/; Secure; HttpOnly; SameSite=Lax",
            "b=2; Path=/",
            "session=3; HttpOnly",
            "other=4; Secure",
        ]
    );
    assert_eq!(cookies("/off/")[0], "a=1; Path=/;secure;SameSite=None");
}

/// `proxy_limit_rate` paces the reads from the upstream: 40 KiB at 16 KiB/s (a second's
/// worth at once, then more as the clock's second changes, as nginx allows) take more than
/// a second; `0` does not limit; a rate from `$upstream_http_x_rate` paces as well.
#[test]
fn proxy_limit_rate_paces_the_upstream_body() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location / {
                proxy_pass http://127.0.0.1:8081;
                proxy_limit_rate 16k;
                proxy_buffers 4 16k;
            }
            location /free/ {
                proxy_pass http://127.0.0.1:8081;
                proxy_limit_rate 0;
            }
            location /told/ {
                proxy_pass http://127.0.0.1:8081;
                proxy_limit_rate $upstream_http_x_rate;
                proxy_buffers 4 16k;
            }
            location /bad/ {
                proxy_pass http://127.0.0.1:8081;
                proxy_limit_rate $upstream_http_x_rate$arg_junk;
            }
        }",
    );
    let body = "x".repeat(40 * 1024);
    let answer: &'static str = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\nX-Rate: 16k\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_boxed_str(),
    );
    let _upstream = upstream_with(builder.port(8081), answer);
    let server = builder.expect_log("[error]").start();
    let started = Instant::now();
    let limited = server.get("/data");
    let took = started.elapsed();
    assert_eq!(limited.body.len(), 40 * 1024);
    assert!(
        took >= Duration::from_millis(450),
        "read at the rate: {took:?}"
    );
    let free = server.get("/free/data");
    assert_eq!(free.body.len(), 40 * 1024);
    // The rate from a variable of the upstream's response (nginx 1.27.0).
    let started = Instant::now();
    let told = server.get("/told/data");
    let took = started.elapsed();
    assert_eq!(told.body.len(), 40 * 1024);
    assert!(
        took >= Duration::from_millis(450),
        "read at the upstream's rate: {took:?}"
    );
    // A value that is not a size is logged, as nginx logs it, and means no limit.
    let bad = server.get("/bad/data?junk=z");
    assert_eq!(bad.body.len(), 40 * 1024);
    let line = server.wait_for_error_log("invalid size");
    assert!(
        line.contains("[error]") && line.contains("invalid size \"16kz\""),
        "{line}"
    );
}
