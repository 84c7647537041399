//! The `max_fails` parameter of an `upstream` block's `server`: servers taken out after
//! failures, the log lines nginx writes for them, and `no live upstreams`.

use crate::support::Instance;
use crate::support::log::messages_at;

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
