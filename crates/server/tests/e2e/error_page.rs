//! `error_page` (URI, `=code`, `=`, named locations, redirects, inheritance,
//! `recursive_error_pages`), `internal`, named locations, `limit_except`, the
//! internal-redirect limit, and `msie_padding` of nginx's own pages. Every expectation here
//! was checked against nginx as well (`PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use crate::support::cli::assert_http_body_fails;
use crate::support::log::messages_at;
use crate::support::{Instance, get_host};

const PAGES: &str = r#"
server {
    listen 127.0.0.1:8080;
    server_name localhost;
    error_page 404 /pages/404.html;

    location /pages/ { internal; }

    location /missing/ { }
    location /own/ {
        error_page 404 =200 /pages/found.html;
    }
    location /any-status/ {
        error_page 404 = /answer;
    }
    location /answer { return 202 "answered $request_method"; }
    location /named/ {
        error_page 404 @fallback;
    }
    location @fallback { return 200 "fallback for $uri"; }
    location /no-such-named/ {
        error_page 404 @nowhere;
    }
    location /external/ {
        error_page 404 http://example.com/gone;
    }
    location /external-301/ {
        error_page 404 =301 http://example.com/moved;
    }
    location /with-args/ {
        error_page 404 /echo-args?from=page;
    }
    location /echo-args { return 200 "args=$args"; }
    location /forbidden {
        error_page 403 /pages/403-missing.html;
        return 403;
    }
    location /recursive {
        recursive_error_pages on;
        error_page 403 /recursive-second;
        error_page 404 /pages/404.html;
        return 403;
    }
    location /recursive-second {
        recursive_error_pages on;
        error_page 404 /pages/404.html;
        return 404;
    }
    location /not-recursive {
        error_page 403 /not-recursive-second;
        return 403;
    }
    location /not-recursive-second {
        error_page 404 /pages/404.html;
        return 404;
    }
    location /cycle {
        recursive_error_pages on;
        error_page 404 /cycle;
        return 404;
    }
    location /redirected {
        error_page 301 /answer;
        return 301 /elsewhere;
    }
}
"#;

fn started() -> Instance {
    Instance::http_builder(PAGES)
        .file("html/pages/404.html", "custom not found\n")
        .file("html/pages/found.html", "found instead\n")
        .start()
}

#[test]
fn an_error_page_keeps_the_status_and_serves_the_uri() {
    let server = started();
    let response = server.get("/missing/file");
    assert_eq!(response.status, 404);
    assert_eq!(response.body_text(), "custom not found\n");
    assert_eq!(response.header("Content-Type"), Some("text/html"));
}

#[test]
fn an_internal_location_answers_404_to_clients() {
    let server = started();
    let response = server.get("/pages/404.html");
    assert_eq!(response.status, 404);
    // The 404 of the internal location gets the error page of its server: the page
    // itself, reached by an internal redirect this time.
    assert_eq!(response.body_text(), "custom not found\n");
}

#[test]
fn equals_code_replaces_the_status() {
    let server = started();
    let response = server.get("/own/x");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "found instead\n");
}

#[test]
fn a_bare_equals_takes_the_status_the_page_answers_and_the_method_becomes_get() {
    let server = started();
    let response = server.get("/any-status/x");
    assert_eq!(response.status, 202);
    assert_eq!(response.body_text(), "answered GET");
    let response = server.request(
        "POST /any-status/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\
         Connection: close\r\n\r\nabc",
    );
    assert_eq!(response.status, 202);
    assert_eq!(response.body_text(), "answered GET");
}

#[test]
fn named_locations() {
    let server = started();
    let response = server.get("/named/x");
    assert_eq!(response.status, 404);
    assert_eq!(response.body_text(), "fallback for /named/x");
    let response = server.get("/no-such-named/x");
    assert_eq!(response.status, 500);
    let line = server.wait_for_error_log("could not find named location");
    assert!(
        messages_at("error", &line)
            .iter()
            .any(|message| message.starts_with("*2 could not find named location \"@nowhere\"")),
        "{line}"
    );
}

#[test]
fn a_url_page_is_a_redirect() {
    let server = started();
    let response = server.get("/external/x");
    assert_eq!(response.status, 302);
    assert_eq!(response.header("Location"), Some("http://example.com/gone"));
    let response = server.get("/external-301/x");
    assert_eq!(response.status, 301);
    assert_eq!(
        response.header("Location"),
        Some("http://example.com/moved")
    );
}

#[test]
fn a_page_uri_with_arguments() {
    let server = started();
    let response = server.get("/with-args/x?orig=1");
    assert_eq!(response.status, 404);
    assert_eq!(response.body_text(), "args=from=page");
}

#[test]
fn a_missing_page_falls_back_to_the_status_page() {
    let server = started();
    let response = server.get("/forbidden");
    // The page's own 404 gets no second error page.
    assert_eq!(response.status, 404);
    assert!(
        response
            .body_text()
            .contains("<title>404 Not Found</title>")
    );
}

#[test]
fn recursive_error_pages() {
    let server = started();
    let response = server.get("/recursive");
    assert_eq!(response.status, 404);
    assert_eq!(response.body_text(), "custom not found\n");
    let response = server.get("/not-recursive");
    assert_eq!(response.status, 404);
    assert!(
        response
            .body_text()
            .contains("<title>404 Not Found</title>")
    );
}

#[test]
fn error_pages_stop_at_the_redirect_limit() {
    let server = started();
    let response = server.get("/cycle");
    assert_eq!(response.status, 500);
    let line = server.wait_for_error_log("rewrite or internal redirection cycle");
    assert!(
        line.contains("while internally redirecting to \"/cycle\""),
        "{line}"
    );
}

#[test]
fn redirect_statuses_have_error_pages_too() {
    let server = started();
    let response = server.request(get_host("/redirected", "localhost"));
    assert_eq!(response.status, 301);
    assert_eq!(response.body_text(), "answered GET");
}

#[test]
fn limit_except_applies_its_block_to_other_methods() {
    let server = Instance::http(
        r#"
server {
    listen 127.0.0.1:8080;
    location / {
        limit_except GET {
            deny all;
        }
        return 200 "method $request_method";
    }
}
"#,
    );
    assert_eq!(server.get("/").body_text(), "method GET");
    let mut client = server.connect();
    client.write("HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(client.read_head_response().status, 200);
    // Other methods use the block's settings, which have no `return`: access denies them.
    let response = server.request(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(response.status, 403);
    server.wait_for_error_log("access forbidden by rule");
    let response =
        server.request("DELETE / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(response.status, 403);
}

#[test]
fn error_page_and_limit_except_errors_read_like_nginx() {
    for (body, message) in [
        (
            "server { location / { error_page 404; } }",
            "invalid number of arguments in \"error_page\" directive in {conf}:4",
        ),
        (
            "server { location / { error_page 200 /x; } }",
            "value \"200\" must be between 300 and 599 in {conf}:4",
        ),
        (
            "server { location / { error_page 499 /x; } }",
            "invalid value \"499\" in {conf}:4",
        ),
        (
            "server { location / { error_page 40x /x; } }",
            "invalid value \"40x\" in {conf}:4",
        ),
        (
            "server { location / { error_page =200 /x; } }",
            "invalid value \"=200\" in {conf}:4",
        ),
        (
            "server { location / { error_page 404 =abc /x; } }",
            "invalid value \"=abc\" in {conf}:4",
        ),
        (
            "server { location / { limit_except FOO { } } }",
            "invalid method \"FOO\" in {conf}:4",
        ),
        (
            "server { location / { limit_except GET { } limit_except POST { } } }",
            "\"limit_except\" directive is duplicate in {conf}:4",
        ),
        (
            "server { location / { limit_except GET { return 200; } } }",
            "\"return\" directive is not allowed here in {conf}:4",
        ),
        (
            "server { location / { internal; internal; } }",
            "\"internal\" directive is duplicate in {conf}:4",
        ),
        (
            "server { internal; }",
            "\"internal\" directive is not allowed here in {conf}:4",
        ),
    ] {
        assert_http_body_fails(body, message);
    }
}

/// `msie_padding`: nginx's own error pages get a padding comment for MSIE and Chrome, so
/// that they show the page and not their own; other browsers and `off` get none.
#[test]
fn msie_padding_pads_error_pages_for_msie_and_chrome() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            location / { return 404; }
            location /off/ { msie_padding off; return 404; }
        }",
    );
    let padded = |path: &str, agent: &str| {
        let response = server.request(format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {agent}\r\nConnection: close\r\n\r\n"
        ));
        assert_eq!(response.status, 404);
        response
            .body_text()
            .contains("<!-- a padding to disable MSIE and Chrome friendly error page -->")
    };
    let msie = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)";
    let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36";
    let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";
    assert!(padded("/", msie));
    assert!(padded("/", chrome));
    assert!(!padded("/", firefox));
    assert!(!padded("/off/", msie));
}
