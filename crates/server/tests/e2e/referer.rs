//! `valid_referers` and `$invalid_referer`: none, blocked, hosts with wildcards and URI
//! prefixes, regexes, the server's own names (written after the directive too), and the
//! hash-size directives.

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;

const CONF: &str = "
server {
    listen 127.0.0.1:8080;
    server_name localhost ~^re\\d+$;
    referer_hash_bucket_size 128;
    referer_hash_max_size 4096;
    location /hosts {
        valid_referers none blocked *.example.com www.example.org/uri ~\\.example\\.net$;
        return 200 \"[$invalid_referer]\";
    }
    location /names {
        valid_referers server_names;
        return 200 \"[$invalid_referer]\";
    }
    location /open {
        return 200 \"[$invalid_referer]\";
    }
    server_name late;
}";

fn check(server: &Instance, path: &str, referer: Option<&str>) -> bool {
    let header = referer.map_or(String::new(), |value| format!("Referer: {value}\r\n"));
    let response = server.request(format!(
        "GET {path} HTTP/1.0\r\nHost: localhost\r\n{header}\r\n"
    ));
    assert_eq!(response.status, 200);
    match response.body_text().as_str() {
        "[]" => true,
        "[1]" => false,
        other => panic!("not the variable: {other}"),
    }
}

#[test]
fn referers_are_judged_as_nginx_judges_them() {
    let server = Instance::http(CONF);
    assert!(check(&server, "/hosts", None));
    assert!(check(&server, "/hosts", Some("www.example.org")));
    assert!(check(&server, "/hosts", Some("http://a.b.example.com/x")));
    assert!(!check(&server, "/hosts", Some("http://example.com/")));
    assert!(check(
        &server,
        "/hosts",
        Some("https://www.example.org:8080/urix")
    ));
    assert!(!check(
        &server,
        "/hosts",
        Some("http://www.example.org/URI")
    ));
    assert!(check(&server, "/hosts", Some("http://www.EXAMPLE.net")));
    assert!(!check(&server, "/hosts", Some("http://www.example.net/")));
    assert!(check(&server, "/names", Some("http://LocalHost/page")));
    assert!(check(&server, "/names", Some("http://late")));
    assert!(check(&server, "/names", Some("http://re42/")));
    assert!(!check(&server, "/names", Some("http://re/")));
    assert!(!check(&server, "/names", None));
    assert!(check(&server, "/open", Some("http://anywhere.example")));
}

#[test]
fn bad_referers_fail_the_load() {
    assert_http_body_fails(
        "server { location / { valid_referers ~(; } }",
        "pcre2_compile() failed: missing closing parenthesis in \"(\" in {conf}:4",
    );
    assert_http_body_fails(
        "server { location / { valid_referers www.*.org; } }",
        "invalid hostname or wildcard \"www.*.org\" in {conf}:4",
    );
}
