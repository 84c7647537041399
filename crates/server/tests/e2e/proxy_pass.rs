//! `proxy_pass`: how the target's URI part maps the request's, what a location given
//! without its slash does, and the configuration errors nginx reports for it.

use crate::support::cli::{assert_http_body_fails, test_http_body};
use crate::support::proxy::{OK, SIMPLE, proxy_with};

#[test]
fn proxy_pass_uri_part_replaces_the_location_prefix() {
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
fn proxy_pass_location_with_a_slash_redirects_the_uri_without() {
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
